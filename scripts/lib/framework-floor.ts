/**
 * The framework's floor across processes: moleculer-web in one process answering POSTs by
 * calling no-op actions in others over NATS. `POST /one` is one hop (web → a), `POST /two`
 * two, as a quote is (web → a → b). What our services add is measured against it.
 *
 * Its brokers take moleculer's defaults (JSON, no validator, metrics or middlewares of ours),
 * or, as `brokers: 'ours'`, the settings every Waybill process runs with (`createBrokerOptions`:
 * our transporter and logger, the context tracker, breaker, retries, deadlines, validator and
 * call metrics), so that what those settings cost is told apart from what our services do.
 *
 * Run as a child process: `FLOOR_ROLE=web|a|b FLOOR_NAMESPACE=... NATS_URL=...` (and
 * `FLOOR_BROKERS=ours FLOOR_OPS_PORT=...`); the web process prints its port once both
 * actions are reachable.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { ServiceBroker, type BrokerOptions, type Context } from 'moleculer';
import ApiGateway from 'moleculer-web';
import { loadConfig } from '../../libs/config';
import { createBrokerOptions } from '../../moleculer.config';
import { freePort } from '../../test/support/stack';

/** The floor's processes, in the order of a `Floor`'s `children`. */
export const FLOOR_ROLES = ['web', 'a', 'b'] as const;

/** Whose broker settings the floor's processes run with. */
export type FloorBrokers = 'moleculer' | 'ours';

const ANSWER = { total: '2756.25' };

function brokerOptions(role: string, namespace: string, natsUrl: string): BrokerOptions {
  const nodeID = `floor-${role}-${process.pid}`;
  if (process.env.FLOOR_BROKERS !== 'ours') {
    return {
      namespace,
      nodeID,
      transporter: { type: 'NATS', options: { url: natsUrl } },
      logger: false,
    };
  }
  const config = loadConfig({
    ...process.env,
    NATS_URL: natsUrl,
    NAMESPACE: namespace,
    NODE_ID: nodeID,
    // Metrics on, as in every deployed process (the ops server answers /metrics on it).
    OPS_PORT: process.env.FLOOR_OPS_PORT,
    LOG_LEVEL: 'warn',
  });
  return createBrokerOptions(config);
}

async function runRole(role: string, namespace: string, natsUrl: string): Promise<void> {
  const broker = new ServiceBroker(brokerOptions(role, namespace, natsUrl));
  if (role === 'web') {
    broker.createService({
      name: 'floor-web',
      mixins: [ApiGateway],
      settings: {
        port: 0,
        ip: '127.0.0.1',
        routes: [
          {
            path: '/',
            bodyParsers: { json: true },
            aliases: { 'POST /one': 'floor-a.noop', 'POST /two': 'floor-a.chain' },
          },
        ],
      },
    });
  } else if (role === 'a') {
    broker.createService({
      name: 'floor-a',
      actions: {
        noop: () => ANSWER,
        chain: (ctx: Context<Record<string, unknown>>) => ctx.call('floor-b.noop', ctx.params),
      },
    });
  } else {
    broker.createService({ name: 'floor-b', actions: { noop: () => ANSWER } });
  }
  process.once('SIGTERM', () => void broker.stop().then(() => process.exit(0)));
  await broker.start();
  if (role === 'web') {
    await broker.waitForServices(['floor-a', 'floor-b'], 30_000);
    const web = broker.getLocalService('floor-web') as unknown as {
      server: { address(): { port: number } };
    };
    console.log(web.server.address().port);
  }
}

export interface Floor {
  url: string;
  children: ChildProcess[];
  stop(): Promise<void>;
}

/** Starts the three floor processes on `namespace`; resolves once the web one listens. */
export async function startFloor(
  namespace: string,
  brokers: FloorBrokers = 'moleculer',
): Promise<Floor> {
  // Only our settings serve metrics, each process on a port of its own.
  const opsPorts = await Promise.all(
    FLOOR_ROLES.map(async () => (brokers === 'ours' ? String(await freePort()) : undefined)),
  );
  const children = FLOOR_ROLES.map((role, i) =>
    spawn(process.execPath, ['--import', 'tsx', __filename], {
      cwd: join(__dirname, '..', '..'),
      env: {
        ...process.env,
        FLOOR_ROLE: role,
        FLOOR_NAMESPACE: namespace,
        FLOOR_BROKERS: brokers,
        FLOOR_OPS_PORT: opsPorts[i],
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    }),
  );
  const stop = async () => {
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGTERM');
          }),
      ),
    );
  };
  const web = children[0];
  try {
    const port = await new Promise<string>((resolve, reject) => {
      web.once('exit', (code) => reject(new Error(`floor web process exited with ${code}`)));
      web.stdout?.once('data', (data: Buffer) => resolve(data.toString().trim()));
    });
    return { url: `http://127.0.0.1:${port}`, children, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

if (require.main === module) {
  const { FLOOR_ROLE, FLOOR_NAMESPACE, NATS_URL } = process.env;
  if (!FLOOR_ROLE || !FLOOR_NAMESPACE || !NATS_URL) {
    console.error('FLOOR_ROLE, FLOOR_NAMESPACE and NATS_URL must be set');
    process.exit(1);
  }
  runRole(FLOOR_ROLE, FLOOR_NAMESPACE, NATS_URL).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
