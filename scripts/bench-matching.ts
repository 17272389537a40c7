/**
 * Courier matching benchmark, in two parts (docs/couriers.md#performance):
 *
 * (a) the nearest available courier among 100,000 couriers spread over Lagos, from the Redis
 *     index of positions by H3 cell (`CourierPositions.nearest`), next to a naive scan of every
 *     position measured in the same run; every answer of the index is checked against the
 *     scan's (a mismatch fails the run);
 * (b) location reports per second through `POST /courier/location`, with the gateway and
 *     courier-matching in separate processes over NATS, at 50 connections.
 *
 * Timings never fail the run; a wrong answer or an unexpected status does (exit 1).
 */
import { randomUUID } from 'node:crypto';
import { availableParallelism } from 'node:os';
import Redis from 'ioredis';
import { haversineKm, type GeoPoint } from '../libs/geodesy';
import {
  CourierPositions,
  type NearCourier,
  type NearestQuery,
} from '../services/courier-matching/positions';
import { eventually } from '../test/support/eventually';
import { adminHeaders, request } from '../test/support/http';
import { percentile, send } from '../test/support/load';
import { dropDatabases, isolation, startNodes, type NodeProcess } from '../test/support/stack';
import {
  asDeployed,
  option,
  requireInfrastructure,
  runMain,
  showHelpIfAsked,
  inParallel,
} from './bench-support';

showHelpIfAsked(`
npm run bench:matching [-- --couriers N --queries Q --naive S --count R --concurrency C --warm-up W --tokens T]
  (or: scripts/tsx scripts/bench-matching.ts ...; needs scripts/infra up && eval "$(scripts/infra env)")

(a) The nearest available courier among N couriers spread over Lagos (lat 6.40-6.70,
    lon 3.10-3.60), from the Redis H3 index, against a naive scan of every position (read
    from Redis, and already in memory) in the same run; prints p50/p99 of each and the
    ratio. Every answer of the index is checked against the scan's: a mismatch exits 1.
(b) Location reports through POST /courier/location, the gateway and courier-matching in
    separate processes over NATS (geo too, to create the couriers): reports/s, p50, p99.
    Any answer but 200 exits 1. Timings never fail the run.

  --couriers N      couriers in the index of (a)                 BENCH_COURIERS     100000
  --queries Q       searches of (a) through the index             BENCH_QUERIES      2000
  --naive S         searches of (a) by naive scan (slow)          BENCH_NAIVE        20
  --count R         measured location reports of (b)              BENCH_COUNT        20000
  --concurrency C   connections of (b), one report after another  BENCH_CONCURRENCY  50
  --warm-up W       unmeasured reports of (b) first               BENCH_WARM_UP      1000
  --tokens T        couriers (each with its token) reporting in (b) BENCH_TOKENS     1000
`);

const COURIERS = option('couriers', 100_000);
const QUERIES = option('queries', 2_000);
const NAIVE = option('naive', 20);
const COUNT = option('count', 20_000);
const CONCURRENCY = option('concurrency', 50);
const WARM_UP = option('warm-up', 1_000);
const TOKENS = option('tokens', 1_000);

requireInfrastructure(['MONGO_URL', 'NATS_URL', 'REDIS_URL']);

const LAGOS = { lat: [6.4, 6.7], lon: [3.1, 3.6] } as const;
const ONLINE_MS = 120_000;
/** Fleet types by share of couriers: bikes most, trucks few. */
const FLEETS = [
  { id: randomUUID(), share: 0.55 },
  { id: randomUUID(), share: 0.25 },
  { id: randomUUID(), share: 0.15 },
  { id: randomUUID(), share: 0.05 },
];
/** Couriers holding an offer or a delivery: out of the available sets. */
const BUSY_SHARE = 0.1;
/** Couriers whose last report is older than COURIER_ONLINE_MS. */
const STALE_SHARE = 0.05;
const GIVE_UP_MS = 30_000;

const between = ([min, max]: readonly [number, number]) => min + Math.random() * (max - min);
const lagosPoint = (): GeoPoint => ({ lat: between(LAGOS.lat), lon: between(LAGOS.lon) });

function fleetOf(x: number): string {
  let sum = 0;
  for (const fleet of FLEETS) {
    sum += fleet.share;
    if (x < sum) return fleet.id;
  }
  return FLEETS[0].id;
}

const ms = (values: number[]) =>
  `p50 ${percentile(values, 50).toFixed(2).padStart(8)} ms  p99 ${percentile(values, 99).toFixed(2).padStart(8)} ms`;

interface IndexedCourier {
  id: string;
  point: GeoPoint;
  fleet: string;
  busy: boolean;
  stale: boolean;
}

/** The scan a service without the index would make: every courier, by exact distance. */
function scan(
  all: readonly {
    id: string;
    lat: number;
    lon: number;
    at: number;
    fleet: string;
    busy: boolean;
  }[],
  q: NearestQuery,
  now: number,
): NearCourier[] {
  const fleets = new Set(q.fleetTypeIds);
  const found: NearCourier[] = [];
  for (const c of all) {
    if (c.busy || now - c.at >= ONLINE_MS || !fleets.has(c.fleet)) continue;
    const distanceKm = haversineKm(q, c);
    if (distanceKm <= q.maxDistanceKm) found.push({ courierId: c.id, distanceKm });
  }
  return found
    .sort((a, b) => a.distanceKm - b.distanceKm || (a.courierId < b.courierId ? -1 : 1))
    .slice(0, q.limit);
}

/** Every courier's hash, read from Redis in pipelined batches: what the naive scan starts with. */
async function readAll(redis: Redis, prefix: string, ids: readonly string[]) {
  const all: { id: string; lat: number; lon: number; at: number; fleet: string; busy: boolean }[] =
    [];
  for (let i = 0; i < ids.length; i += 2_000) {
    const batch = ids.slice(i, i + 2_000);
    const pipeline = redis.pipeline();
    for (const id of batch)
      pipeline.hmget(`${prefix}pos:${id}`, 'lat', 'lon', 'at', 'fleet', 'busy');
    const answers = (await pipeline.exec()) ?? [];
    answers.forEach(([, value], j) => {
      const [lat, lon, at, fleet, busy] = value as (string | null)[];
      if (lat === null || lon === null || at === null || fleet === null) return;
      all.push({
        id: batch[j],
        lat: Number(lat),
        lon: Number(lon),
        at: Number(at),
        fleet,
        busy: busy === '1',
      });
    });
  }
  return all;
}

const sameAnswer = (a: NearCourier[], b: NearCourier[]) =>
  a.length === b.length &&
  a.every(
    (x, i) => x.courierId === b[i].courierId && Math.abs(x.distanceKm - b[i].distanceKm) < 1e-9,
  );

async function nearestPart(namespace: string): Promise<string[]> {
  const problems: string[] = [];
  const prefix = `${namespace}:couriers:`;
  // Many reports in flight at once: auto-pipelining sends them in a few round trips.
  const redis = new Redis(process.env.REDIS_URL as string, { enableAutoPipelining: true });
  const positions = new CourierPositions(redis, { keyPrefix: prefix, onlineMs: ONLINE_MS });
  try {
    const now = Date.now();
    const couriers: IndexedCourier[] = Array.from({ length: COURIERS }, () => ({
      id: randomUUID(),
      point: lagosPoint(),
      fleet: fleetOf(Math.random()),
      busy: Math.random() < BUSY_SHARE,
      stale: Math.random() < STALE_SHARE,
    }));
    const filled = performance.now();
    for (let i = 0; i < couriers.length; i += 1_000) {
      await Promise.all(
        couriers.slice(i, i + 1_000).map(async (c) => {
          if (c.busy) await positions.setBusy(c.id, true);
          const at = new Date(c.stale ? now - 2 * ONLINE_MS : now - Math.random() * 10_000);
          await positions.report({ id: c.id, fleetTypeId: c.fleet }, c.point.lat, c.point.lon, at);
        }),
      );
    }
    console.log(
      `(a) ${COURIERS} couriers in Lagos indexed in ${((performance.now() - filled) / 1000).toFixed(1)} s (${FLEETS.length} fleet types, ${BUSY_SHARE * 100}% busy, ${STALE_SHARE * 100}% offline)`,
    );

    const query = (): NearestQuery => ({
      ...lagosPoint(),
      fleetTypeIds: [Math.random() < 0.8 ? FLEETS[0].id : FLEETS[3].id],
      maxDistanceKm: 10,
      limit: Math.random() < 0.8 ? 1 : 5,
    });
    const indexed: number[] = [];
    const asked: { q: NearestQuery; found: NearCourier[] }[] = [];
    for (let i = 0; i < QUERIES; i++) {
      const q = query();
      const t0 = performance.now();
      const found = await positions.nearest(q);
      indexed.push(performance.now() - t0);
      if (i < NAIVE) asked.push({ q, found });
    }
    const fromRedis: number[] = [];
    const inMemory: number[] = [];
    let all: Awaited<ReturnType<typeof readAll>> = [];
    const ids = couriers.map((c) => c.id);
    for (const { q, found } of asked) {
      const t0 = performance.now();
      all = await readAll(redis, prefix, ids);
      const answer = scan(all, q, Date.now());
      fromRedis.push(performance.now() - t0);
      const t1 = performance.now();
      scan(all, q, Date.now());
      inMemory.push(performance.now() - t1);
      if (!sameAnswer(found, answer)) {
        problems.push(
          `nearest ${JSON.stringify(q)}: index ${JSON.stringify(found)}, scan ${JSON.stringify(answer)}`,
        );
      }
    }
    const p50 = percentile(indexed, 50);
    console.log(
      `  nearest, H3 index              ${ms(indexed)}  (${QUERIES} searches, limit 1 or 5, 10 km)`,
    );
    console.log(
      `  naive scan, read from Redis     ${ms(fromRedis)}  (${asked.length} searches)  ${(percentile(fromRedis, 50) / p50).toFixed(0)}× the index at p50`,
    );
    console.log(
      `  naive scan, already in memory   ${ms(inMemory)}  ${(percentile(inMemory, 50) / p50).toFixed(1)}× the index at p50`,
    );
    console.log(
      `  answers: ${asked.length - problems.length} of ${asked.length} searches the same as the scan's\n`,
    );
    console.log(
      `bench:matching nearest p50=${p50.toFixed(3)} p99=${percentile(indexed, 99).toFixed(3)} | naive p50=${percentile(fromRedis, 50).toFixed(1)} p99=${percentile(fromRedis, 99).toFixed(1)} | in-memory p50=${percentile(inMemory, 50).toFixed(2)} | ratio p50=${(percentile(fromRedis, 50) / p50).toFixed(0)}`,
    );
  } finally {
    await removeKeys(redis, prefix);
    redis.disconnect();
  }
  return problems;
}

/** Every Redis key of the run under `prefix`: couriers' hashes, the cells' sets, counters. */
async function removeKeys(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 5_000);
    if (keys.length > 0) await redis.unlink(...keys);
    cursor = next;
  } while (cursor !== '0');
}

async function admin(url: string, method: string, path: string, json?: unknown) {
  const reply = await request(url, method, path, { headers: adminHeaders, json });
  if (reply.status >= 300) throw new Error(`${method} ${path}: ${reply.status} ${reply.text}`);
  return reply.body.data;
}

interface Reporter {
  token: string;
  point: GeoPoint;
}

async function reportsPart(): Promise<string[]> {
  const problems: string[] = [];
  const iso = isolation();
  const nodes: NodeProcess[] = [];
  try {
    const env = { LOG_LEVEL: 'warn' };
    const groups = ['gateway', 'courier-matching', 'geo'];
    await startNodes(nodes, groups, { iso, perProcess: asDeployed(env) });
    const url = nodes[0].url;
    // The gateway finds geo and courier-matching over NATS a moment after they are ready.
    const types = await eventually(
      async () => {
        await admin(url, 'GET', '/admin/couriers?limit=1');
        return (await admin(url, 'GET', '/admin/fleet-types')) as { id: string }[];
      },
      { timeout: 30_000, interval: 250 },
    );
    const reporters: Reporter[] = await inParallel(
      Array.from({ length: TOKENS }, (_, i) => i),
      async (i) => {
        const courier = await admin(url, 'POST', '/admin/couriers', {
          name: `Bench Courier ${i}`,
          phone: '+2348031234567',
          fleet: {
            typeId: types[i % types.length].id,
            regNo: `BENCH-${i}`,
            make: 'Bajaj',
            model: 'Boxer',
            colour: 'Red',
          },
        });
        const { token } = await admin(url, 'POST', `/admin/couriers/${courier.id}/tokens`);
        return { token, point: lagosPoint() };
      },
    );
    console.log(
      `(b) bench:matching — ${availableParallelism()} CPUs, Node ${process.version}; gateway, courier-matching and geo each in its own process over NATS`,
    );
    console.log(
      `    ${COUNT} reports (after ${WARM_UP} unmeasured) at ${CONCURRENCY} connections by ${TOKENS} couriers, each moving a few metres a report`,
    );

    const run = async (count: number) => {
      const latencies: number[] = [];
      const statuses = new Map<number, number>();
      let next = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < count) {
            const reporter = reporters[next++ % reporters.length];
            reporter.point = {
              lat: Math.min(6.7, reporter.point.lat + (Math.random() - 0.5) / 2_000),
              lon: Math.min(3.6, reporter.point.lon + (Math.random() - 0.5) / 2_000),
            };
            const t0 = performance.now();
            let status = 0;
            let text = '';
            try {
              ({ status, text } = await send(
                {
                  url: `${url}/courier/location`,
                  headers: { authorization: `Bearer ${reporter.token}` },
                  body: JSON.stringify(reporter.point),
                },
                GIVE_UP_MS,
              ));
            } catch (err) {
              text = String(err);
            }
            if (status === 200) latencies.push(performance.now() - t0);
            else if ((statuses.get(status) ?? 0) < 3)
              console.error(`    ${status || 'no answer'}: ${text.slice(0, 200)}`);
            statuses.set(status, (statuses.get(status) ?? 0) + 1);
          }
        }),
      );
      return { latencies, statuses, seconds: (performance.now() - started) / 1000 };
    };
    await run(WARM_UP);
    const measured = await run(COUNT);
    const rate = measured.latencies.length / measured.seconds;
    const byStatus = [...measured.statuses]
      .map(([status, n]) => `${status || 'no answer'} × ${n}`)
      .join(', ');
    console.log(
      `    POST /courier/location  ${rate.toFixed(0).padStart(6)} reports/s  ${ms(measured.latencies)}  (${byStatus})  ${(rate / 2_000).toFixed(2)}× the design load (10,000 couriers every 5 s)\n`,
    );
    console.log(
      `bench:matching reports rps=${rate.toFixed(0)} p50=${percentile(measured.latencies, 50).toFixed(1)} p99=${percentile(measured.latencies, 99).toFixed(1)}`,
    );
    const wrong = COUNT - measured.latencies.length;
    if (wrong > 0) problems.push(`${wrong} location reports answered other than 200 (${byStatus})`);
  } finally {
    await Promise.all(nodes.map((n) => n.stop()));
    await dropDatabases(iso);
    const redis = new Redis(process.env.REDIS_URL as string);
    await removeKeys(redis, `${iso.namespace}:`);
    redis.disconnect();
  }
  return problems;
}

async function main(): Promise<number> {
  const problems = [...(await nearestPart(isolation().namespace)), ...(await reportsPart())];
  if (problems.length > 0) {
    console.error('\nFAILED:');
    for (const p of problems.slice(0, 20)) console.error(`  ${p}`);
    return 1;
  }
  return 0;
}

runMain(main);
