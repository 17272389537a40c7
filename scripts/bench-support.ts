/** What every benchmark script needs: its numeric `--flags` and the local infrastructure. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { deployedMemoryMb, deployedNodeOptions } from './lib/manifests';
import { podMemory, type PodMemory } from './lib/pod-memory';

/**
 * `--profile DIR`: where the processes a benchmark profiles write their `node --cpu-prof`
 * profiles; undefined without the flag.
 */
export function profileDir(argv: readonly string[] = process.argv): string | undefined {
  const at = argv.indexOf('--profile');
  if (at < 0) return undefined;
  const given = argv[at + 1];
  if (given === undefined || given.startsWith('--')) {
    refuseOption('--profile needs the directory to write the profiles in', argv);
  }
  const dir = resolve(given);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Whether `argv` is a benchmark script's own, run as itself (not a test importing it). */
const ranAsScript = (argv: readonly string[]) => /[\\/]scripts[\\/][\w-]+\.ts$/.test(argv[1] ?? '');

/**
 * A bad option: said in one line, exit 1, for a script run as itself (a stack trace tells its
 * user nothing); thrown for a caller that passed its own arguments.
 */
function refuseOption(message: string, argv: readonly string[]): never {
  if (!ranAsScript(argv)) throw new Error(message);
  console.error(`${message}; run with --help for the options`);
  process.exit(1);
}

/** Node arguments that profile a process into `dir`, none without one. */
export const cpuProfileArgs = (dir: string | undefined): string[] =>
  dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [];

/**
 * `--name N` from the command line, else `BENCH_NAME` from the environment (`--warm-up` reads
 * `BENCH_WARM_UP`), a positive number, else `fallback`.
 */
export function option(
  name: string,
  fallback: number,
  argv: readonly string[] = process.argv,
  env: NodeJS.ProcessEnv = process.env,
): number {
  return optionIfGiven(name, argv, env) ?? fallback;
}

/**
 * `--name N`, else `BENCH_NAME`, a positive number; undefined when neither is given, for an
 * option that turns a part of a benchmark on.
 */
export function optionIfGiven(
  name: string,
  argv: readonly string[] = process.argv,
  env: NodeJS.ProcessEnv = process.env,
): number | undefined {
  return numberOption(name, argv, env, (v) => Number.isFinite(v) && v > 0, 'a positive number');
}

/**
 * `--name N`, else `BENCH_NAME`, a whole number, zero allowed (how many of a part to run beside
 * the load: `--couriers 0` runs none), else `fallback`.
 */
export function countOption(
  name: string,
  fallback: number,
  argv: readonly string[] = process.argv,
  env: NodeJS.ProcessEnv = process.env,
): number {
  const isCount = (v: number) => Number.isInteger(v) && v >= 0;
  return numberOption(name, argv, env, isCount, 'a whole number, 0 or more') ?? fallback;
}

/** `--name N`, else `BENCH_NAME`, as a number `accepts`; undefined when neither is given. */
function numberOption(
  name: string,
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  accepts: (value: number) => boolean,
  rule: string,
): number | undefined {
  const given = stringOption(name, argv, env);
  if (given === undefined || given === '') return undefined;
  const value = Number(given);
  if (!accepts(value)) refuseOption(`--${name} must be ${rule}`, argv);
  return value;
}

/** `--name V` from the command line, else `BENCH_NAME` from the environment, as given. */
export function stringOption(
  name: string,
  argv: readonly string[] = process.argv,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const at = argv.indexOf(`--${name}`);
  return at >= 0 ? argv[at + 1] : env[`BENCH_${name.toUpperCase().replace(/-/g, '_')}`];
}

/**
 * Prints `usage` and exits 0 on `--help` or `-h`; exits 1 naming a `--flag` that `usage` does
 * not mention (`--duraton 60` would otherwise run with the default duration). Call it before
 * anything else runs.
 */
export function showHelpIfAsked(usage: string, argv: readonly string[] = process.argv): void {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(usage.trim());
    process.exit(0);
  }
  // Only for a script run as itself: a test that imports one runs under jest's own flags.
  const unknown = ranAsScript(argv) ? unknownFlags(usage, argv) : [];
  if (unknown.length > 0) {
    console.error(`unknown option ${unknown.join(', ')}; run with --help for the options`);
    process.exit(1);
  }
}

/**
 * The `--flags` of `argv` (after the script) that `usage` does not mention. An argument right
 * after a flag `usage` mentions is its value, whatever it looks like (`--node-options
 * --max-semi-space-size=64`); `--flag=value` is no flag the options read (they take
 * `--flag value`), so it is named too.
 */
export function unknownFlags(usage: string, argv: readonly string[]): string[] {
  const known = new Set(usage.match(/--[a-z][a-z0-9-]*/g) ?? []);
  const args = argv.slice(2);
  return args.filter((arg, i) => {
    if (!arg.startsWith('--') || known.has(arg)) return false;
    const previous = args[i - 1];
    return !(previous !== undefined && known.has(previous));
  });
}

/** Exits with the command to run when the environment of `scripts/infra env` is missing. */
export function requireInfrastructure(names: readonly string[]): void {
  for (const name of names) {
    if (!process.env[name]) {
      console.error(
        `${name} is not set: run scripts/infra up && eval "$(scripts/infra env)" first`,
      );
      process.exit(1);
    }
  }
}

/** Runs a script's `main` and exits with the code it answers, or 1 when it throws. */
export function runMain(main: () => Promise<number>): void {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}

/** What the image runs (its `CMD`), relative to the project: test/unit/deploy checks it. */
export const IMAGE_ENTRY = 'dist/bin/server.js';

/**
 * `--tsx`: the services' TypeScript run through tsx, as the tests run it, instead of compiled
 * as the image runs them (the default of the benchmarks that start services).
 */
export const FROM_SOURCE = process.argv.includes('--tsx');

/** How a benchmark's services run, for its header line. */
export const BUILD_RUN = FROM_SOURCE
  ? 'TypeScript through tsx'
  : 'compiled by tsc, as the image runs them';

const ROOT = join(__dirname, '..');

/** Runs the project's tsc on `config` (relative to the project); throws with its output. */
function compile(config: string, what: string): void {
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const built = spawnSync(process.execPath, [tsc, '-p', config], { cwd: ROOT, encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`${what} failed:\n${built.stdout}${built.stderr}`);
}

/**
 * Compiles the services as the image does (`npm run build`: tsc into dist/) and answers the
 * entry point the image runs, `dist/bin/server.js`. A process run through tsx also carries
 * tsx's loader, esbuild's worker thread and the source maps of every module: not a pod's memory.
 */
export function buildAsTheImage(): string {
  compile('tsconfig.build.json', 'npm run build');
  return join(ROOT, IMAGE_ENTRY);
}

/**
 * A benchmark's own server script (`scripts/bench-gateway-node.ts`), compiled with the
 * services as `npm run build` compiles them, into `.local/bench-dist`: its path there. What a
 * request costs is then what it costs in the image, without tsx's loader and the helpers
 * esbuild adds to every function made (some are made per request).
 */
export function compiledBenchScript(script: string): string {
  const local = join(ROOT, '.local');
  mkdirSync(local, { recursive: true });
  const config = join(local, 'tsconfig.bench.json');
  const build = JSON.parse(readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8')) as {
    include: string[];
  };
  writeFileSync(
    config,
    JSON.stringify({
      extends: '../tsconfig.build.json',
      compilerOptions: { rootDir: '..', outDir: 'bench-dist' },
      include: [...build.include, relative(ROOT, script)].map((path) => `../${path}`),
    }),
  );
  compile(relative(ROOT, config), `compiling ${script}`);
  return join(local, 'bench-dist', relative(ROOT, script).replace(/\.ts$/, '.js'));
}

/** `env` with the service's NODE_OPTIONS from its k8s manifest added to `extra`, if any. */
export function withDeployedNodeOptions<Env extends Record<string, string | undefined>>(
  service: string,
  env: Env,
  extra = '',
): Env {
  const nodeOptions = [deployedNodeOptions(service), extra].filter(Boolean).join(' ');
  return nodeOptions ? { ...env, NODE_OPTIONS: nodeOptions } : env;
}

/**
 * `startNodes`' `perProcess` for a benchmark: a process that runs one service gets that
 * service's NODE_OPTIONS, as its pod runs it (V8's heap sized as deployed, decision 87), and
 * its pod's memory cgroup if `pods` has one; a process that runs several, which no pod does,
 * V8's defaults.
 */
export function asDeployed<Env extends Record<string, string | undefined>>(
  env: Env,
  pods?: ReadonlyMap<string, PodMemory>,
): (services: string) => { env: Env; wrapCommand?: PodMemory['wrap'] } {
  return (services) =>
    services.includes(',')
      ? { env }
      : { env: withDeployedNodeOptions(services, env), wrapCommand: pods?.get(services)?.wrap };
}

/**
 * A memory cgroup of its pod's limit (deploy/k8s) for each service, for `--pod-memory`: Node
 * then sizes V8's heap as in the pod. Throws with the reason where this machine cannot make one.
 */
export function podMemories(services: readonly string[]): Map<string, PodMemory> {
  const pods = new Map<string, PodMemory>();
  for (const service of new Set(services)) {
    const { limit } = deployedMemoryMb(service);
    if (limit === undefined) throw new Error(`deploy/k8s/${service}.yaml sets no memory limit`);
    const pod = podMemory(`waybill-bench-${process.pid}-${service}`, limit);
    if (typeof pod === 'string') {
      removePodMemories(pods);
      throw new Error(`--pod-memory: ${pod}`);
    }
    pods.set(service, pod);
  }
  return pods;
}

/** Removes the cgroups of `podMemories`, if any, once their processes have stopped. */
export function removePodMemories(pods: ReadonlyMap<string, PodMemory> | undefined): void {
  for (const pod of pods?.values() ?? []) {
    try {
      pod.remove();
    } catch (error) {
      // An empty cgroup left behind costs nothing; the benchmark's own result stands.
      console.warn(`could not remove a memory cgroup: ${(error as Error).message}`);
    }
  }
}

/** Setup calls a benchmark makes at once: kept light so that it does not time out on a loaded machine. */
export const SETUP_WIDTH = 8;

/** Runs `work` over `items`, `width` at a time, answering in the items' order. */
export async function inParallel<T, R>(
  items: readonly T[],
  work: (item: T) => Promise<R>,
  width = SETUP_WIDTH,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) {
        const at = next++;
        results[at] = await work(items[at]);
      }
    }),
  );
  return results;
}

/**
 * A bare `node:http` server in a child process answering every request with a fixed JSON
 * body: the reference a benchmark measures next to Waybill. Resolves with its URL.
 */
/** What the bare server answers unless told: about the size of a quote's total in our envelope. */
const BARE_ANSWER = { success: true, message: 'ok', data: { total: '2756.25' } };

export function startBareServer(
  answer: object = BARE_ANSWER,
): Promise<{ url: string; child: ChildProcess }> {
  const program = `
    const body = ${JSON.stringify(JSON.stringify(answer))};
    const server = require('node:http').createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      });
    });
    server.listen(0, '127.0.0.1', () => console.log(server.address().port));`;
  const child = spawn(process.execPath, ['-e', program], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`bare server exited with ${code}`)));
    child.stdout?.once('data', (port: Buffer) =>
      resolve({ url: `http://127.0.0.1:${port.toString().trim()}`, child }),
    );
  });
}

/** Calls made by a number of callers for a while: how many, how many failed, how long each took. */
export interface CallPhase {
  name: string;
  calls: number;
  failures: number;
  seconds: number;
  latenciesMs: number[];
}

/** Runs `call` from `workers` callers at once for `seconds`; counts and times each call. */
export async function measureCalls(
  name: string,
  workers: number,
  seconds: number,
  call: (worker: number) => Promise<unknown>,
): Promise<CallPhase> {
  const latenciesMs: number[] = [];
  let failures = 0;
  const started = performance.now();
  const until = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: workers }, async (_, worker) => {
      while (performance.now() < until) {
        const t0 = performance.now();
        try {
          await call(worker);
          latenciesMs.push(performance.now() - t0);
        } catch (err) {
          failures++;
          if (failures <= 3) console.error(`  ${name}: ${(err as Error).message}`);
        }
      }
    }),
  );
  return {
    name,
    calls: latenciesMs.length,
    failures,
    seconds: (performance.now() - started) / 1000,
    latenciesMs,
  };
}
