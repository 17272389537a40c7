import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { ServiceBroker, type ServiceSchema } from 'moleculer';
import mongoose from 'mongoose';
import { loadConfig, type Config, type ServiceName } from '../../libs/config';
import { toServiceSchema } from '../../libs/service';
import { serviceDefinition } from '../../services/catalog';
import { createBrokerOptions } from '../../moleculer.config';
import { eventually } from './eventually';

const ROOT = join(__dirname, '..', '..');

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

/**
 * Ports handed to test servers come from below the kernel's ephemeral range (32768+), which
 * outgoing connections (to FerretDB, NATS, Redis) draw from: a port picked there can be taken
 * by a client socket between our check and the server's listen.
 */
const TEST_PORT_MIN = 20_000;
const TEST_PORT_SPAN = 12_000;

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

export async function freePort(): Promise<number> {
  for (;;) {
    const port = TEST_PORT_MIN + Math.floor(Math.random() * TEST_PORT_SPAN);
    if (await canListen(port)) return port;
  }
}

/** An isolated slice of the shared infrastructure: own NATS namespace, Redis keys and databases. */
export interface Isolation {
  namespace: string;
  dbPrefix: string;
}

export function isolation(): Isolation {
  const id = randomBytes(4).toString('hex');
  return { namespace: `t-${id}`, dbPrefix: `t_${id}_` };
}

export interface NodeProcess {
  /** Base URL of the gateway (when this process runs it). */
  url: string;
  opsUrl: string;
  child: ChildProcess;
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** A command and its arguments turned into the command that runs them (in a cgroup, say). */
export type CommandWrap = (command: string, args: string[]) => [string, string[]];

export interface StartOptions {
  services: string;
  iso: Isolation;
  env?: Record<string, string | undefined>;
  /**
   * Wait for /health/ready (default), only for the gateway to listen (false), or only for the
   * process to answer on its ops port (`ops-live`: whatever it serves, however it waits).
   */
  waitReady?: boolean | 'ops-live';
  /**
   * The entry point run instead of `bin/server.ts`: a benchmark's own server, or the compiled
   * `dist/bin/server.js` (run without tsx).
   */
  entry?: string;
  /** Node options put before the entry point, such as `--cpu-prof`. */
  nodeArgs?: string[];
  /** Starts Node through another command: inside a memory cgroup (scripts/lib/pod-memory). */
  wrapCommand?: CommandWrap;
  /**
   * Read the process's output and let it go, as a log collector would, instead of keeping
   * it for `output()`: a benchmark's access log would fill the memory.
   */
  discardOutput?: boolean;
}

/**
 * Starts one process per group of services at once, adding each to `nodes` in the groups'
 * order. allSettled, not all: when one fails to start, those that did are in `nodes` for the
 * caller to stop, and the first failure is thrown.
 */
export async function startNodes(
  nodes: NodeProcess[],
  groups: readonly string[],
  options: Omit<StartOptions, 'services'> & {
    /** What each group's process takes over the rest: a benchmark starts each as deployed. */
    perProcess?: (services: string) => Pick<StartOptions, 'env' | 'wrapCommand'>;
  },
): Promise<NodeProcess[]> {
  const { perProcess, ...common } = options;
  const settled = await Promise.allSettled(
    groups.map((services) => startNode({ ...common, services, ...perProcess?.(services) })),
  );
  for (const s of settled) if (s.status === 'fulfilled') nodes.push(s.value);
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  return nodes;
}

/** Starts a server as its own process: `bin/server.ts` through tsx unless `entry` says otherwise. */
export async function startNode(options: StartOptions): Promise<NodeProcess> {
  // Another test worker may take a port between freePort() and the server's listen.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startNodeOnce(options);
    } catch (error) {
      if (attempt >= 3 || !String(error).includes('EADDRINUSE')) throw error;
    }
  }
}

async function startNodeOnce(options: StartOptions): Promise<NodeProcess> {
  const port = await freePort();
  const opsPort = await freePort();
  const env: Record<string, string | undefined> = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    OPS_PORT: String(opsPort),
    SERVICES: options.services,
    NAMESPACE: options.iso.namespace,
    MONGO_DB_PREFIX: options.iso.dbPrefix,
    ADMIN_TOKEN,
    LOG_LEVEL: 'warn',
    LOG_FORMAT: 'json',
    ...options.env,
  };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  const entry = options.entry ?? join(ROOT, 'bin', 'server.ts');
  // TypeScript through tsx; the compiled build (dist/, as the image runs it) as it is.
  const loader = entry.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const nodeArgv = [...(options.nodeArgs ?? []), ...loader, entry];
  const [command, args] = options.wrapCommand?.(process.execPath, nodeArgv) ?? [
    process.execPath,
    nodeArgv,
  ];
  const child = spawn(command, args, {
    cwd: ROOT,
    env: env as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (d: Buffer) => {
    if (!options.discardOutput) output += d.toString();
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const gone = new AbortController();
  child.once('exit', () => gone.abort());

  const node: NodeProcess = {
    url: `http://127.0.0.1:${port}`,
    opsUrl: `http://127.0.0.1:${opsPort}`,
    child,
    output: () => output,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
  const probe =
    options.waitReady === false
      ? `${node.url}/health/live`
      : `${node.opsUrl}/health/${options.waitReady === 'ops-live' ? 'live' : 'ready'}`;
  try {
    // Refused connections (not listening yet) and other answers than 200 are tried again.
    await eventually(
      async () => {
        const res = await fetch(probe);
        await res.body?.cancel();
        if (res.status !== 200) throw new Error(`${probe} answered ${res.status}`);
      },
      { timeout: 45_000, interval: 150, signal: gone.signal },
    );
    return node;
  } catch (error) {
    if (child.exitCode !== null || child.signalCode !== null) {
      const code = child.exitCode ?? child.signalCode;
      throw new Error(`server exited with ${code} before it was ready:\n${output}`);
    }
    await node.stop('SIGKILL');
    throw new Error(`server not ready within 45 s (${String(error)}):\n${output}`);
  }
}

/** Resident memory of a process, in kB (Linux). */
export function rssKb(pid: number): number {
  const match = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? 0);
}

/**
 * User + system CPU time a process has used so far, in ms (Linux): fields 14 and 15 of
 * /proc/PID/stat, in clock ticks of 10 ms. A shared machine's other load hardly changes it.
 */
export function cpuTimeMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * A broker in this process, without a transporter, on the isolation's databases: the test runs
 * services itself (and may reach into their classes), against the real servers. The config is
 * the environment's, over `env`. Start it, and stop it in afterAll.
 */
export function inProcessBroker(
  iso: Isolation,
  /** Services of ours the broker runs, as the catalog defines them. */
  services: Exclude<ServiceName, 'gateway'>[] = [],
  env: Record<string, string> = {},
): { broker: ServiceBroker; config: Config } {
  const config = loadConfig({
    ...process.env,
    NATS_URL: '',
    OPS_PORT: '0',
    NAMESPACE: iso.namespace,
    MONGO_DB_PREFIX: iso.dbPrefix,
    ...env,
  });
  const broker = new ServiceBroker({ ...createBrokerOptions(config), logger: false });
  for (const name of services) {
    broker.createService(toServiceSchema(serviceDefinition(name, config)));
  }
  return { broker, config };
}

/** Drops every database of this isolation. */
export async function dropDatabases(iso: Isolation): Promise<void> {
  const conn = await mongoose.createConnection(process.env.MONGO_URL as string).asPromise();
  try {
    const { databases } = await conn.listDatabases();
    for (const db of databases) {
      if (db.name.startsWith(iso.dbPrefix)) await conn.useDb(db.name).dropDatabase();
    }
  } finally {
    await conn.close();
  }
}

/**
 * A broker of the test's own on the isolation's NATS namespace, running no service: it calls
 * internal actions the gateway does not expose. Stop it in afterAll.
 */
export async function startClient(
  iso: Isolation,
  services: string[],
  /** Services of the test's own (an event listener standing in for a consumer). */
  own: ServiceSchema[] = [],
): Promise<ServiceBroker> {
  const config = loadConfig({ ...process.env, NAMESPACE: iso.namespace, OPS_PORT: '0' });
  const client = new ServiceBroker({ ...createBrokerOptions(config), logger: false });
  for (const schema of own) client.createService(schema);
  await client.start();
  await client.waitForServices(services);
  // A listener hears only the events sent after the other nodes learnt of it: wait for that.
  if (own.length > 0) await knownToOthers(client);
  return client;
}

/** Resolves once every other node's registry lists `client` (its INFO was taken). */
async function knownToOthers(client: ServiceBroker, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const others = client.registry
      .getNodeList({ onlyAvailable: true, withServices: false })
      .map((n: { id: string }) => n.id)
      .filter((id: string) => id !== client.nodeID);
    const lists = await Promise.all(
      others.map((nodeID: string) =>
        client.call<{ id: string }[], object>('$node.list', {}, { nodeID }).catch(() => []),
      ),
    );
    if (lists.every((list) => list.some((n) => n.id === client.nodeID))) return;
    if (Date.now() > deadline) throw new Error('the other nodes did not learn of the test broker');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** A connection of the test's own to one service's database (`account`, `order`, ...). */
export function openServiceDatabase(iso: Isolation, service: string): Promise<mongoose.Connection> {
  return mongoose
    .createConnection(process.env.MONGO_URL as string, { dbName: `${iso.dbPrefix}${service}` })
    .asPromise();
}
