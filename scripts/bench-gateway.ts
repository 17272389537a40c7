/**
 * Gateway benchmark: what a request costs in our gateway against what it costs in bare Node
 * and in moleculer-web alone (the framework's floor), in one process and across processes
 * over NATS, all in one run. See USAGE.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { eventually } from '../test/support/eventually';
import { createUserWithKey } from '../test/support/http';
import {
  cpuTimeMs,
  dropDatabases,
  freePort,
  isolation,
  startNodes,
  type Isolation,
  type NodeProcess,
} from '../test/support/stack';
import {
  BUILD_RUN,
  FROM_SOURCE,
  compiledBenchScript,
  cpuProfileArgs,
  option,
  profileDir,
  requireInfrastructure,
  runMain,
  showHelpIfAsked,
  startBareServer,
} from './bench-support';
import { NOOP_ANSWER, NOOP_PATH } from './bench-gateway-node';

const USAGE = `
npm run bench:gateway [-- --connections 50 --duration 5 --warmup 2 --rounds 3 --profile DIR --tsx]

Measures, with autocannon in this process and the servers in their own, in one run:
  bare        node:http answering fixed JSON
  floor       moleculer-web answering a no-op action (the framework's floor)
  direct      node:http calling the same no-op through the broker, in moleculer-web's place:
              the floor of a front of our own, and by difference what moleculer-web costs
  fleet-types our gateway on GET /api/fleet-types (API key, quota, log, metrics, geo's list)
  no-op       our gateway on GET ${NOOP_PATH}: a no-op action the benchmark adds to its own
              processes only, through the whole /api pipeline (API key, quota, log, metrics)
each floor and ours in one process (in memory) and across processes over NATS (the action in
a second process). Prints req/s, p50/p99, the servers' CPU time per request, and the ratios:
ours vs bare (goal >= 0.5x in one process) and ours vs the floor in the same topology (goal
>= 0.8x), by req/s and by CPU per request (which a busy shared machine hardly moves).

  --connections N   concurrent connections (BENCH_CONNECTIONS, default 50)
  --duration S      seconds measured per target (BENCH_DURATION, default 5)
  --warmup S        seconds of load before each measure (BENCH_WARMUP, default 2)
  --rounds N        rounds through every target; the median is shown (BENCH_ROUNDS, default 3)
  --profile DIR     run our gateway processes under node --cpu-prof, profiles written to DIR
  --tsx             run the servers' TypeScript through tsx, as the tests do, instead of
                    compiled by tsc as the image runs them (the default; built in .local/)

Needs scripts/infra up && eval "$(scripts/infra env)". Ports are free ones picked at start;
every database the run creates is dropped and every child process stopped at the end.
`;

showHelpIfAsked(`npm run bench:gateway\n${USAGE}`);

const CONNECTIONS = option('connections', 50);
const DURATION_S = option('duration', 5);
const WARM_UP_S = option('warmup', 2);
const PROFILE_DIR = profileDir();

const ROUNDS = option('rounds', 3);

const SOURCE_SCRIPT = join(__dirname, 'bench-gateway-node.ts');
/** The servers' script: compiled as the image's code is, unless --tsx (set by main). */
let nodeScript = SOURCE_SCRIPT;
const ONE = '1 process';
const NATS = 'NATS, 2 processes';
const loads = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

interface Measured {
  rps: number;
  cpuUs: number;
  p50: number;
  p99: number;
  failures: number;
}

interface Target {
  url: string;
  headers?: Record<string, string>;
  /** The processes that serve it, whose CPU time is counted per request. */
  pids: number[];
}

const load = (target: Target, seconds: number) =>
  autocannon({
    url: target.url,
    headers: target.headers,
    connections: CONNECTIONS,
    duration: seconds,
  });

async function measure(target: Target): Promise<Measured> {
  await load(target, WARM_UP_S);
  const cpuBefore = target.pids.reduce((sum, pid) => sum + cpuTimeMs(pid), 0);
  const result = await load(target, DURATION_S);
  const cpu = target.pids.reduce((sum, pid) => sum + cpuTimeMs(pid), 0) - cpuBefore;
  return {
    rps: result.requests.average,
    // What a request costs the servers, whatever else the shared machine runs meanwhile.
    cpuUs: (cpu * 1000) / Math.max(1, result.requests.total),
    p50: result.latency.p50,
    p99: result.latency.p99,
    failures: result.errors + result.timeouts + result.non2xx,
  };
}

/** A child of ours that prints its port once it listens (bench-gateway-node's floor, the bare server). */
interface Child {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

function startChild(env: Record<string, string | undefined>): Promise<Child> {
  const loader = nodeScript.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const child: ChildProcess = spawn(process.execPath, [...loader, nodeScript], {
    env: { ...process.env, LOG_LEVEL: 'warn', ...env } as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  return new Promise((resolvePort, reject) => {
    child.once('exit', (code) => reject(new Error(`${env.BENCH_ROLE} exited with ${code}`)));
    child.stdout?.once('data', (port: Buffer) =>
      resolvePort({ url: `http://127.0.0.1:${port.toString().trim()}`, pid: child.pid ?? 0, stop }),
    );
  });
}

/** Until `url` answers 200: a gateway answers 503 until it has seen the other node's services. */
const answering = (url: string, headers: Record<string, string> = {}) =>
  eventually(
    async () => {
      const res = await fetch(url, { headers });
      await res.body?.cancel();
      if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
    },
    { timeout: 30_000, interval: 200 },
  );

/** The front (moleculer-web, or node:http direct) and the no-op: in one process without a transporter, or two over NATS. */
async function startFloor(
  iso: Isolation,
  overNats: boolean,
  front: '1' | 'direct',
): Promise<Child[]> {
  // A namespace of its own: over NATS, the no-op of another target's process (the other
  // front's, or our geo process's) must not answer this front's calls.
  const common = {
    BENCH_ROLE: 'floor',
    NAMESPACE: `${iso.namespace}-${front === '1' ? 'floor' : 'direct'}`,
  };
  const web = { ...common, BENCH_WEB: front, PORT: String(await freePort()) };
  if (!overNats) return [await startChild({ ...web, BENCH_NOOP: '1', NATS_URL: undefined })];
  const started = await Promise.allSettled([
    startChild(web),
    startChild({ ...common, BENCH_NOOP: '1' }),
  ]);
  const children = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failed = started.find((s) => s.status === 'rejected');
  if (failed) {
    await Promise.all(children.map((c) => c.stop()));
    throw failed.reason;
  }
  return children;
}

/** Ours: gateway, account and geo with the no-op in one process, or the gateway alone and the rest in a second over NATS. */
async function startWaybill(iso: Isolation, overNats: boolean, nodes: NodeProcess[]) {
  const groups = overNats ? ['gateway', 'account,geo'] : ['gateway,account,geo'];
  const env = {
    QUOTA_LIMIT: '100000000',
    // The production default: one access log line per request is part of what is measured.
    LOG_LEVEL: 'info',
    NATS_URL: overNats ? process.env.NATS_URL : undefined,
  };
  const profiled = (services: string) =>
    cpuProfileArgs(services.startsWith('gateway') ? PROFILE_DIR : undefined);
  // Each group its own array, so that the gateway's is known whichever starts first.
  const byGroup = groups.map((): NodeProcess[] => []);
  const started = await Promise.allSettled(
    groups.map((services, at) =>
      startNodes(byGroup[at], [services], {
        iso,
        entry: nodeScript,
        discardOutput: true,
        nodeArgs: profiled(services),
        env: {
          ...env,
          BENCH_ROLE: 'waybill',
          BENCH_NOOP: services.includes('geo') ? '1' : undefined,
        },
      }),
    ),
  );
  nodes.push(...byGroup.flat());
  const failed = started.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  return byGroup[0][0];
}

const pad = (text: string, width: number) => text.padStart(width);
const row = (name: string, m: Measured) =>
  `${name.padEnd(34)} ${pad(m.rps.toFixed(0), 8)} ${pad(m.p50.toFixed(1), 7)} ${pad(m.p99.toFixed(1), 7)} ${pad(m.cpuUs.toFixed(0), 11)} ${pad(String(m.failures), 7)}`;
const ratio = (ours: Measured, reference: Measured, goal: number) => {
  const r = ours.rps / reference.rps;
  return `${r.toFixed(2)}x (goal >= ${goal}x: ${r >= goal ? 'met' : 'NOT met'})`;
};

/** Every target, its servers started, ready to measure. */
async function startTargets(
  iso: Isolation,
  children: Child[],
  nodes: NodeProcess[],
): Promise<Map<string, Target>> {
  const targets = new Map<string, Target>();
  const bare = await startBareServer(NOOP_ANSWER);
  const exited = new Promise<void>((done) => bare.child.once('exit', () => done()));
  children.push({
    url: bare.url,
    pid: bare.child.pid ?? 0,
    stop: () => (bare.child.kill(), exited),
  });
  targets.set('bare node:http', { url: bare.url, pids: [bare.child.pid ?? 0] });
  for (const overNats of [false, true]) {
    const topology = overNats ? NATS : ONE;
    for (const [name, front] of [
      ['floor', '1'],
      ['direct', 'direct'],
    ] as const) {
      const floor = await startFloor(iso, overNats, front);
      children.push(...floor);
      await answering(`${floor[0].url}${NOOP_PATH}`);
      targets.set(`${name} no-op, ${topology}`, {
        url: `${floor[0].url}${NOOP_PATH}`,
        pids: floor.map((c) => c.pid),
      });
    }
    const before = nodes.length;
    const gateway = await startWaybill(iso, overNats, nodes);
    const pids = nodes.slice(before).map((n) => n.child.pid ?? 0);
    const { key } = await eventually(() => createUserWithKey(gateway.url), {
      timeout: 30_000,
      interval: 200,
    });
    const headers = { 'api-key': key };
    for (const [name, path] of [
      ['no-op', NOOP_PATH],
      ['fleet-types', '/api/fleet-types'],
    ]) {
      await answering(`${gateway.url}${path}`, headers);
      targets.set(`ours ${name}, ${topology}`, { url: `${gateway.url}${path}`, headers, pids });
    }
  }
  return targets;
}

/** The round of median req/s: the machine is shared, a single round can be a bad one. */
function median(rounds: Measured[]): Measured {
  const sorted = [...rounds].sort((a, b) => a.rps - b.rps);
  return {
    ...sorted[Math.floor((sorted.length - 1) / 2)],
    failures: rounds.reduce((sum, r) => sum + r.failures, 0),
  };
}

async function main(): Promise<number> {
  requireInfrastructure(['MONGO_URL', 'NATS_URL', 'REDIS_URL']);
  if (!FROM_SOURCE) nodeScript = compiledBenchScript(SOURCE_SCRIPT);
  const measured = new Map<string, Measured[]>();
  const iso = isolation();
  const children: Child[] = [];
  const nodes: NodeProcess[] = [];
  try {
    const targets = await startTargets(iso, children, nodes);
    console.log(
      `bench:gateway — ${availableParallelism()} CPUs, Node ${process.version}, ${BUILD_RUN}, ${CONNECTIONS} connections, ${ROUNDS} rounds of ${WARM_UP_S} s warm-up + ${DURATION_S} s per target, load ${loads()}`,
    );
    // Rounds through every target in turn, so that a burst of other work on the machine
    // falls on one round of each rather than on all of one target.
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, target] of targets) {
        const rounds = measured.get(name) ?? [];
        rounds.push(await measure(target));
        measured.set(name, rounds);
      }
    }
  } finally {
    await Promise.all([...children.map((c) => c.stop()), ...nodes.map((n) => n.stop())]);
    await dropDatabases(iso);
  }
  const results = new Map([...measured].map(([name, rounds]) => [name, median(rounds)]));

  console.log(
    `\n${'target'.padEnd(34)} ${pad('req/s', 8)} ${pad('p50 ms', 7)} ${pad('p99 ms', 7)} ${pad('CPU µs/req', 11)} ${pad('errors', 7)}`,
  );
  for (const [name, m] of results) console.log(row(name, m));
  const get = (name: string) => results.get(name) as Measured;
  const baseline = get('bare node:http');
  console.log('\nratios (req/s):');
  for (const topology of [ONE, NATS]) {
    const floor = get(`floor no-op, ${topology}`);
    const direct = get(`direct no-op, ${topology}`);
    console.log(`  floor, ${topology}: ${(floor.rps / baseline.rps).toFixed(2)}x bare`);
    console.log(
      `  direct, ${topology}: ${(direct.rps / baseline.rps).toFixed(2)}x bare; moleculer-web's own ${(floor.cpuUs - direct.cpuUs).toFixed(0)} CPU µs a request`,
    );
    for (const name of ['no-op', 'fleet-types']) {
      const ours = get(`ours ${name}, ${topology}`);
      const vsBare =
        topology === ONE ? ratio(ours, baseline, 0.5) : `${(ours.rps / baseline.rps).toFixed(2)}x`;
      console.log(`  ours ${name}, ${topology}: ${vsBare} bare, ${ratio(ours, floor, 0.8)} floor`);
      // req/s on a shared machine follow its other load; CPU per request hardly does.
      console.log(
        `    by CPU per request: ${(baseline.cpuUs / ours.cpuUs).toFixed(2)}x bare, ${(floor.cpuUs / ours.cpuUs).toFixed(2)}x floor, ${(direct.cpuUs / ours.cpuUs).toFixed(2)}x direct`,
      );
    }
  }
  console.log(`load after: ${loads()}`);
  if (PROFILE_DIR) console.log(`CPU profiles of our gateway processes: ${PROFILE_DIR}`);
  const failures = [...results].filter(([, m]) => m.failures > 0);
  for (const [name, m] of failures)
    console.error(`FAILED: ${name}: ${m.failures} requests not 2xx`);
  return failures.length > 0 ? 1 : 0;
}

runMain(main);
