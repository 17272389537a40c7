/**
 * The framework's floor across processes: moleculer-web in one process answering POSTs by
 * calling no-op actions in others over NATS, moleculer's defaults throughout (JSON, no
 * validator, metrics or middlewares of ours). `POST /one` is one hop (web → a), `POST /two`
 * two, as a quote is (web → a → b). What our services add is measured against it.
 *
 * Run as a child process: `FLOOR_ROLE=web|a|b FLOOR_NAMESPACE=... NATS_URL=...`; the web
 * process prints its port once both actions are reachable.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { ServiceBroker, type Context } from 'moleculer';
import ApiGateway from 'moleculer-web';

const ANSWER = { total: '2756.25' };

async function runRole(role: string, namespace: string, natsUrl: string): Promise<void> {
  const broker = new ServiceBroker({
    namespace,
    nodeID: `floor-${role}-${process.pid}`,
    transporter: { type: 'NATS', options: { url: natsUrl } },
    logger: false,
  });
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
export async function startFloor(namespace: string): Promise<Floor> {
  const children = ['web', 'a', 'b'].map((role) =>
    spawn(process.execPath, ['--import', 'tsx', __filename], {
      cwd: join(__dirname, '..', '..'),
      env: { ...process.env, FLOOR_ROLE: role, FLOOR_NAMESPACE: namespace },
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
