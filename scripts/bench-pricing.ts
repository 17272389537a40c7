/**
 * Pricing benchmark: Mode B quotes through the gateway, with gateway, account, geo and
 * pricing each in its own process over NATS (the production shape), next to a bare Node
 * `http` server answering a fixed JSON body and to the framework's floor in the same shape
 * (moleculer-web calling no-op actions in other processes over NATS, one hop and two, as a
 * quote takes: scripts/lib/framework-floor.ts), measured the same way in the same run; the
 * 2-hop floor also with our broker settings, to tell what they cost from what our services do.
 *
 *   scripts/infra up && eval "$(scripts/infra env)"
 *   npm run bench:pricing                          (or: scripts/tsx scripts/bench-pricing.ts)
 *   npm run bench:pricing -- --connections 50 --duration 15
 *
 * The load generator (autocannon) runs in this process; the servers run in their own. Every
 * database the benchmark creates is dropped at the end. Any error or non-2xx answer during a
 * run is reported and makes the script exit non-zero.
 */
import { availableParallelism, loadavg } from 'node:os';
import autocannon from 'autocannon';
import { createUserWithKey } from '../test/support/http';
import { QUOTE as QUOTE_BODY, waitForQuote } from '../test/support/quote';
import {
  cpuTimeMs,
  dropDatabases,
  isolation,
  startNodes,
  type NodeProcess,
} from '../test/support/stack';
import {
  BUILD_RUN,
  FROM_SOURCE,
  asDeployed,
  buildAsTheImage,
  podMemories,
  removePodMemories,
  cpuProfileArgs,
  option,
  profileDir,
  requireInfrastructure,
  showHelpIfAsked,
  startBareServer,
} from './bench-support';
import { FLOOR_ROLES, startFloor, type Floor } from './lib/framework-floor';

showHelpIfAsked(`
npm run bench:pricing -- [--connections N] [--duration S] [--warmup S] [--profile DIR] [--tsx]
                         [--pod-memory]
  --connections N  concurrent connections (default 50)
  --duration S     seconds measured per target (default 15)
  --warmup S       seconds of load before each measure (default 3)
  --profile DIR    run our processes under node --cpu-prof, a profile per process in DIR
                   (the file names carry the pids the run prints)
  --tsx            run our services' TypeScript through tsx, as the tests do, instead of
                   compiled as the image runs them (npm run build, dist/: the default)
  --pod-memory     run each of our processes in a memory cgroup of its pod's limit
                   (deploy/k8s), as Kubernetes does: Node sizes V8's heap from that limit.
                   Needs root and cgroup v1, or a v2 that delegates memory; exits otherwise.
Every process of ours runs with its pod's NODE_OPTIONS (deploy/k8s, decision 87).
Measures, in turn: bare node:http; the framework's floor (moleculer-web calling no-op actions
over NATS, one hop and two) with moleculer's defaults, and the 2-hop floor again with the
broker settings our processes run with; Mode B quotes and routes through our gateway.
Needs the local infrastructure: scripts/infra up && eval "$(scripts/infra env)"`);

const CONNECTIONS = option('connections', 50);
const DURATION_S = option('duration', 15);
const WARM_UP_S = option('warmup', 3);
const POD_MEMORY = process.argv.includes('--pod-memory');

requireInfrastructure(['MONGO_URL', 'NATS_URL', 'REDIS_URL']);

const QUOTE = JSON.stringify(QUOTE_BODY);

interface Measured {
  rps: number;
  p50: number;
  p99: number;
  failures: number;
  /** CPU time the target's processes spent per request, in µs: steadier than req/s on a shared machine. */
  cpuUs: number;
  /** The same, by process, in the order of the target's `pids`. */
  cpuUsByProcess: number[];
}

/** CPU time (user + system) a process has used so far, in µs. */
const cpuTimeUs = (pid: number | undefined): number =>
  pid === undefined ? 0 : cpuTimeMs(pid) * 1000;

const SERVICES = ['gateway', 'account', 'geo', 'pricing'];
const ROUTE = JSON.stringify({ origin: QUOTE_BODY.origin, destination: QUOTE_BODY.destination });

async function load(target: Target, seconds: number) {
  return autocannon({
    url: target.url,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...target.headers },
    body: target.body,
    connections: CONNECTIONS,
    duration: seconds,
  });
}

interface Target {
  url: string;
  body: string;
  headers?: Record<string, string>;
  /** The processes that serve it, whose CPU time is counted. */
  pids: (number | undefined)[];
}

async function measure(target: Target): Promise<Measured> {
  await load(target, WARM_UP_S);
  const cpu = () => target.pids.map(cpuTimeUs);
  const before = cpu();
  const result = await load(target, DURATION_S);
  const requests = Math.max(1, result.requests.total);
  const used = cpu().map((after, i) => (after - before[i]) / requests);
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    failures: result.errors + result.timeouts + result.non2xx,
    cpuUs: used.reduce((sum, us) => sum + us, 0),
    cpuUsByProcess: used,
  };
}

const row = (name: string, m: Measured) =>
  `${name.padEnd(28)} ${m.rps.toFixed(0).padStart(8)} ${m.p50.toFixed(1).padStart(8)} ${m.p99
    .toFixed(1)
    .padStart(8)} ${m.cpuUs.toFixed(0).padStart(8)} ${String(m.failures).padStart(8)}`;

async function main() {
  const iso = isolation();
  const nodes: NodeProcess[] = [];
  // Before anything starts: without a usable cgroup it fails, and nothing is left running.
  const pods = POD_MEMORY ? podMemories(SERVICES) : undefined;
  const bare = await startBareServer();
  let floor: Floor | undefined;
  let floorOurs: Floor | undefined;
  try {
    floor = await startFloor(`${iso.namespace}-floor`);
    floorOurs = await startFloor(`${iso.namespace}-floor-ours`, 'ours');
    const env = { QUOTA_LIMIT: '100000000', LOG_LEVEL: 'warn' };
    const profiles = profileDir();
    await startNodes(nodes, SERVICES, {
      iso,
      // What the image runs, unless --tsx: tsx adds its loader and esbuild's helpers.
      entry: FROM_SOURCE ? undefined : buildAsTheImage(),
      // Each with its pod's NODE_OPTIONS: V8's heap as deployed (decision 87).
      perProcess: asDeployed(env, pods),
      nodeArgs: cpuProfileArgs(profiles),
    });
    const gateway = nodes[0];
    const { key } = await createUserWithKey(gateway.url);
    const total = await waitForQuote(gateway.url, key);

    console.log(
      `bench:pricing — ${availableParallelism()} CPUs, Node ${process.version}, ${BUILD_RUN}, ${POD_MEMORY ? "in cgroups of the pods' memory limits" : 'no memory limit'}, ${CONNECTIONS} connections, ${WARM_UP_S} s warm-up + ${DURATION_S} s each, load average ${loadavg()[0].toFixed(2)}`,
    );
    console.log(`quote: Ikeja → Lekki, 3 kg, ₦20,000 declared → total ${total}`);
    const headers = { 'api-key': key };
    const pids = (children: { pid?: number }[]) => children.map((c) => c.pid);
    const ours = pids(nodes.map((n) => n.child));
    if (profiles) {
      const named = SERVICES.map((name, i) => `${name} ${ours[i]}`).join(', ');
      console.log(`CPU profiles in ${profiles}, by pid: ${named}`);
    }
    const baseline = await measure({ url: bare.url, body: QUOTE, pids: pids([bare.child]) });
    const floorPids = pids(floor.children);
    const floorOne = await measure({ url: `${floor.url}/one`, body: ROUTE, pids: floorPids });
    const floorTwo = await measure({ url: `${floor.url}/two`, body: QUOTE, pids: floorPids });
    // The same floor with the broker settings every Waybill process runs with.
    const floorTwoOurs = await measure({
      url: `${floorOurs.url}/two`,
      body: QUOTE,
      pids: pids(floorOurs.children),
    });
    const pricing = await measure({
      url: `${gateway.url}/api/pricing`,
      body: QUOTE,
      headers,
      pids: ours,
    });
    // One hop less (gateway → geo): what pricing itself adds to the platform's floor.
    const route = await measure({
      url: `${gateway.url}/api/route`,
      body: ROUTE,
      headers,
      pids: ours,
    });

    console.log(
      `\n${'target'.padEnd(28)} ${'req/s'.padStart(8)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'CPU µs'.padStart(8)} ${'errors'.padStart(8)}`,
    );
    console.log(row('bare node:http, fixed JSON', baseline));
    console.log(row('floor, 1 hop (web → a)', floorOne));
    console.log(row('floor, 2 hops (web → a → b)', floorTwo));
    console.log(row('floor, 2 hops, our brokers', floorTwoOurs));
    console.log(row('pricing via gateway, NATS', pricing));
    console.log(row('route via gateway (1 hop)', route));
    const rpsRatio = pricing.rps / baseline.rps;
    const p99Ratio = pricing.p99 / baseline.p99;
    console.log(
      `\nbench:pricing rps=${pricing.rps.toFixed(0)} p50=${pricing.p50} p99=${pricing.p99} | bare rps=${baseline.rps.toFixed(0)} p50=${baseline.p50} p99=${baseline.p99} | ratio rps=${rpsRatio.toFixed(3)} p99=${p99Ratio.toFixed(1)}`,
    );
    // Each target's processes, named in the order of its `pids`.
    const byProcess = (m: Measured, names: readonly string[] = SERVICES) =>
      names.map((name, i) => `${name} ${m.cpuUsByProcess[i].toFixed(0)}`).join(', ');
    const floorByProcess = (m: Measured) => byProcess(m, FLOOR_ROLES);
    console.log(
      `\nCPU µs per request, by process: quote: ${byProcess(pricing)}; route: ${byProcess(route)}`,
    );
    console.log(
      `the floor's, by process: 1 hop: ${floorByProcess(floorOne)}; 2 hops: ${floorByProcess(floorTwo)}; 2 hops, our brokers: ${floorByProcess(floorTwoOurs)}`,
    );
    console.log(
      `vs the framework floor in the same shape: quote/2-hop floor rps=${(pricing.rps / floorTwo.rps).toFixed(2)}, route/1-hop floor rps=${(route.rps / floorOne.rps).toFixed(2)}`,
    );
    console.log(
      `our broker settings on the 2-hop floor: ${(floorTwoOurs.cpuUs - floorTwo.cpuUs).toFixed(0)} CPU µs per request more (${floorTwoOurs.cpuUs.toFixed(0)} against ${floorTwo.cpuUs.toFixed(0)}); quote/that floor rps=${(pricing.rps / floorTwoOurs.rps).toFixed(2)}`,
    );
    const failed = { pricing, route, baseline, floorOne, floorTwo, floorTwoOurs };
    const failures = Object.entries(failed).filter(([, m]) => m.failures > 0);
    if (failures.length > 0) {
      console.error(
        `\nFAILED: requests that did not answer 2xx: ${failures.map(([name, m]) => `${name} ${m.failures}`).join(', ')}`,
      );
      process.exitCode = 1;
    }
  } finally {
    bare.child.kill();
    await floor?.stop();
    await floorOurs?.stop();
    await Promise.all(nodes.map((n) => n.stop()));
    removePodMemories(pods);
    await dropDatabases(iso);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
