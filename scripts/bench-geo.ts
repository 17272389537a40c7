/**
 * Gazetteer benchmark: load time, memory, city search and nearest-city latency, and the
 * resident memory of a real geo process (production build, production NODE_OPTIONS).
 * Queries are generated from the data with a fixed seed, so runs are comparable.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { resolvePlace } from '../services/geo/address';
import { geocodeText, gazetteer, nearestCity, searchCities } from '../services/geo/gazetteer';
import type { CityTable } from '../services/geo/gazetteer/city-table';
import { dropDatabases, freePort, isolation, rssKb } from '../test/support/stack';
import { showHelpIfAsked } from './bench-support';
import { deployedNodeOptions } from './lib/manifests';

showHelpIfAsked(`
npm run bench:geo       (builds first; or: scripts/tsx scripts/bench-geo.ts after npm run build)

Times the gazetteer in this process (load, city search, nearest city, coordinate resolution,
text geocoding) next to a reference (sorting 200 numbers, timed the same way: its p99 and max
show what the machine's load alone does), then starts a geo process from dist/ with the
production NODE_OPTIONS and reads its resident memory. That part needs MONGO_URL
(scripts/infra up && eval "$(scripts/infra env)") and is skipped without it.
Takes about 15 s. Run it with NODE_OPTIONS=--expose-gc to see the heap after a full GC.
`);

const TARGETS = { searchP99Ms: 0.5, searchMaxMs: 5, nearestP99Ms: 1, resolveP99Ms: 1, rssMb: 150 };
const SEARCH_LIMIT = 50;
const SEARCH_QUERIES = 3000;
const NEAREST_QUERIES = 5000;
const GEOCODE_QUERIES = 500;
const WARM_UP = 300;

/** mulberry32: small, seedable, good enough to pick test queries. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const mb = (bytes: number) => bytes / 2 ** 20;

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

interface Timing {
  p50: number;
  p99: number;
  max: number;
  perSecond: number;
}

/** Runs each input once after a warm-up, timing every call in milliseconds. */
function time<T>(inputs: readonly T[], run: (input: T) => unknown): Timing {
  for (const input of inputs.slice(0, WARM_UP)) run(input);
  const samples: number[] = [];
  const started = process.hrtime.bigint();
  for (const input of inputs) {
    const t0 = process.hrtime.bigint();
    run(input);
    samples.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const totalMs = Number(process.hrtime.bigint() - started) / 1e6;
  samples.sort((a, b) => a - b);
  return {
    p50: percentile(samples, 50),
    p99: percentile(samples, 99),
    max: samples[samples.length - 1],
    perSecond: (inputs.length / totalMs) * 1000,
  };
}

/** Counts the garbage collector's pauses until `stop()`: what the slowest calls wait for. */
function watchGc(): { stop(): Promise<{ count: number; longest: number }> } {
  let count = 0;
  let longest = 0;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries() as PerformanceEntry[]) {
      count++;
      longest = Math.max(longest, entry.duration);
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  return {
    async stop() {
      // Node reports each pause from the event loop, after the synchronous calls timed.
      await new Promise((resolve) => setTimeout(resolve, 50));
      observer.disconnect();
      return { count, longest };
    },
  };
}

/** Exact names, prefixes of 1–6 letters and names with one typo, a third each. */
function searchQueries(cities: CityTable, rand: () => number): string[] {
  const pick = () => {
    // Half from the 5,000 most important cities (what people type), half from anywhere.
    const pool = rand() < 0.5 ? Math.min(5000, cities.size) : cities.size;
    return cities.nameOf(Math.floor(rand() * pool));
  };
  const queries = ['lagos', 'abuja', 'port', 'kano', 'ibadn', 'lagso', 'sao paulo', 'a', 'l'];
  while (queries.length < SEARCH_QUERIES) {
    const name = pick();
    const kind = queries.length % 3;
    if (kind === 0) queries.push(name);
    else if (kind === 1) queries.push(name.slice(0, 1 + Math.floor(rand() * 6)));
    else if (name.length >= 5) {
      const at = 1 + Math.floor(rand() * (name.length - 2));
      const chars = [...name];
      const edit = Math.floor(rand() * 3);
      if (edit === 0) chars.splice(at, 1);
      else if (edit === 1) [chars[at], chars[at + 1]] = [chars[at + 1], chars[at]];
      else chars[at] = 'x';
      queries.push(chars.join(''));
    }
  }
  return queries;
}

/**
 * Starts `dist/bin/server.js` with SERVICES=geo, waits until it is ready, and reads its
 * resident memory from /proc: what an operator sees for the pod.
 */
async function measureGeoProcess(): Promise<{ readyMs: number; rssMb: number } | string> {
  if (!process.env.MONGO_URL) return 'skipped: MONGO_URL is not set';
  const opsPort = await freePort();
  // Databases of its own, dropped after: never the local platform's.
  const iso = isolation();
  const started = performance.now();
  const child = spawn(process.execPath, [join(__dirname, '..', 'dist', 'bin', 'server.js')], {
    env: {
      ...process.env,
      SERVICES: 'geo',
      NATS_URL: '',
      OPS_PORT: String(opsPort),
      NAMESPACE: iso.namespace,
      MONGO_DB_PREFIX: iso.dbPrefix,
      LOG_LEVEL: 'warn',
      NODE_OPTIONS: deployedNodeOptions('geo'),
    },
    stdio: 'ignore',
  });
  const pid = child.pid;
  if (pid === undefined) return 'the geo process did not start';
  try {
    for (let i = 0; i < 300; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const ready = await fetch(`http://127.0.0.1:${opsPort}/health/ready`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (!ready) continue;
      const readyMs = performance.now() - started;
      await new Promise((r) => setTimeout(r, 2000)); // let it settle
      return { readyMs, rssMb: rssKb(pid) / 1024 };
    }
    return 'the geo process did not become ready in 30 s';
  } finally {
    const exited = child.exitCode !== null || child.signalCode !== null;
    const exit = exited ? Promise.resolve() : once(child, 'exit');
    child.kill();
    await exit;
    await dropDatabases(iso);
  }
}

async function main(): Promise<void> {
  const rssBefore = process.memoryUsage().rss;
  const t0 = performance.now();
  const g = gazetteer();
  const loadMs = performance.now() - t0;
  const afterLoad = process.memoryUsage();
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const afterGc = gc ? process.memoryUsage() : undefined;

  const rand = random(20240601);
  const numbers = Array.from({ length: 200 }, rand);
  const reference = time(
    Array.from({ length: SEARCH_QUERIES }, (_, i) => i),
    (i) => numbers.slice(i % 7).sort((a, b) => a - b),
  );
  const pauses = watchGc();
  const search = time(searchQueries(g.cities, rand), (q) => searchCities(q, SEARCH_LIMIT));
  const gcDuringSearch = await pauses.stop();
  const points = Array.from(
    { length: NEAREST_QUERIES },
    (_, i) =>
      i % 2 === 0
        ? { lat: 4 + rand() * 10, lon: 2.5 + rand() * 12.5 } // Nigeria
        : { lat: -60 + rand() * 130, lon: -180 + rand() * 360 }, // anywhere inhabited-ish
  );
  const nearest = time(points, (p) => nearestCity(p.lat, p.lon));
  // Each by a known place: a point more than MAX_PLACE_DISTANCE_KM from any is refused.
  const placed = points.map((p) => {
    const near = nearestCity(p.lat, p.lon);
    return near ? { lat: near.city.lat + 0.01, lon: near.city.lon } : p;
  });
  const resolve = time(placed, (p) => resolvePlace({ lat: p.lat, lon: p.lon }, 'bench'));
  const texts = Array.from({ length: GEOCODE_QUERIES }, (_, i) => {
    const city = g.cities.nameOf(Math.floor(rand() * 2000));
    return i % 2 === 0 ? `${1 + (i % 90)} Some Street, ${city}` : `${city}, Nigeria`;
  });
  const geocode = time(texts, (t) => geocodeText(t));
  const rssEnd = process.memoryUsage().rss;
  const verdict = (value: number, target: number) => (value < target ? 'PASS' : 'MISS');
  const f = (n: number, digits = 3) => n.toFixed(digits);
  const geoProcess = await measureGeoProcess();
  const geoRows =
    typeof geoProcess === 'string'
      ? [{ metric: 'geo process RSS (MB)', measured: geoProcess, target: '', verdict: '' }]
      : [
          {
            metric: 'geo process start to ready (ms)',
            measured: f(geoProcess.readyMs, 0),
            target: '',
            verdict: '',
          },
          {
            metric: 'geo process RSS (MB)',
            measured: f(geoProcess.rssMb, 0),
            target: `< ${TARGETS.rssMb}`,
            verdict: verdict(geoProcess.rssMb, TARGETS.rssMb),
          },
        ];

  console.log(
    `Gazetteer: ${g.countries.length} countries, ${g.states.length} states, ${g.cities.size} cities\n`,
  );
  console.table([
    { metric: 'load time (ms)', measured: f(loadMs, 0), target: '', verdict: '' },
    { metric: 'RSS before load (MB)', measured: f(mb(rssBefore), 0), target: '', verdict: '' },
    {
      metric: 'RSS after load, this process (MB)',
      measured: f(mb(afterLoad.rss), 0),
      target: '',
      verdict: '',
    },
    ...geoRows,
    {
      metric: 'heap used after load (MB)',
      measured: f(mb(afterLoad.heapUsed), 0),
      target: '',
      verdict: '',
    },
    ...(afterGc
      ? [
          {
            metric: 'heap used after GC (MB)',
            measured: f(mb(afterGc.heapUsed), 0),
            target: '',
            verdict: '',
          },
        ]
      : []),
    { metric: 'RSS after benchmark (MB)', measured: f(mb(rssEnd), 0), target: '', verdict: '' },
    {
      metric: `searchCities p50 (ms, limit ${SEARCH_LIMIT})`,
      measured: f(search.p50),
      target: '',
      verdict: '',
    },
    {
      metric: `searchCities p99 (ms, limit ${SEARCH_LIMIT})`,
      measured: f(search.p99),
      target: `< ${TARGETS.searchP99Ms}`,
      verdict: verdict(search.p99, TARGETS.searchP99Ms),
    },
    {
      metric: 'GC pauses during the searches (count, longest ms)',
      measured: `${gcDuringSearch.count}, ${f(gcDuringSearch.longest)}`,
      target: '',
      verdict: '',
    },
    {
      metric: 'searchCities max (ms)',
      measured: f(search.max),
      target: `< ${TARGETS.searchMaxMs}`,
      verdict: verdict(search.max, TARGETS.searchMaxMs),
    },
    {
      metric: 'searchCities throughput (/s)',
      measured: f(search.perSecond, 0),
      target: '',
      verdict: '',
    },
    {
      metric: 'reference: sort 200 numbers p50 (ms)',
      measured: f(reference.p50),
      target: '',
      verdict: '',
    },
    {
      metric: 'reference: sort 200 numbers p99 (ms)',
      measured: f(reference.p99),
      target: '',
      verdict: '',
    },
    {
      metric: 'reference: sort 200 numbers max (ms)',
      measured: f(reference.max),
      target: '',
      verdict: '',
    },
    { metric: 'nearestCity p50 (ms)', measured: f(nearest.p50), target: '', verdict: '' },
    {
      metric: 'nearestCity p99 (ms)',
      measured: f(nearest.p99),
      target: `< ${TARGETS.nearestP99Ms}`,
      verdict: verdict(nearest.p99, TARGETS.nearestP99Ms),
    },
    {
      metric: 'nearestCity throughput (/s)',
      measured: f(nearest.perSecond, 0),
      target: '',
      verdict: '',
    },
    {
      metric: 'resolve coordinates p99 (ms)',
      measured: f(resolve.p99),
      target: `< ${TARGETS.resolveP99Ms}`,
      verdict: verdict(resolve.p99, TARGETS.resolveP99Ms),
    },
    {
      metric: 'resolve coordinates throughput (/s)',
      measured: f(resolve.perSecond, 0),
      target: '',
      verdict: '',
    },
    { metric: 'geocodeText p50 (ms)', measured: f(geocode.p50), target: '', verdict: '' },
    { metric: 'geocodeText p99 (ms)', measured: f(geocode.p99), target: '', verdict: '' },
  ]);
  console.log(
    `\n${SEARCH_QUERIES} searches (exact, prefix 1-6 letters, one typo), ${NEAREST_QUERIES} nearest`,
    `(half in Nigeria), ${GEOCODE_QUERIES} geocodes; ${WARM_UP} warm-up calls each. Node ${process.version}.`,
    `Load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} on ${availableParallelism()} CPUs.`,
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
