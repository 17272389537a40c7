/**
 * The servers `npm run bench:gateway` measures, one role per process (BENCH_ROLE):
 *
 *   floor    moleculer-web and/or a no-op action on a plain broker (BENCH_WEB, BENCH_NOOP):
 *            the framework's floor, with our transporter and serializer and nothing else;
 *            BENCH_WEB=direct puts node:http calling the broker in moleculer-web's place (the
 *            floor of a front of our own: what moleculer-web itself costs)
 *   waybill  our services (SERVICES), exactly as bin/server.ts runs them, plus the no-op
 *            action (BENCH_NOOP) routed through the whole `/api` pipeline of our gateway
 *
 * floor prints its port on stdout once it listens; waybill is watched through its
 * health endpoint like any node (test/support/stack). Not an entry point of its own.
 */
import { createServer } from 'node:http';
import Joi from '../libs/joi';
import { ServiceBroker, type ServiceSchema } from 'moleculer';
import ApiGateway from 'moleculer-web';
import { loadConfig, type Config } from '../libs/config';
import { stopAndExit } from '../libs/resilience';
import { action, toServiceSchema, type ServiceDefinition } from '../libs/service';
import { createBrokerOptions } from '../moleculer.config';
import { backendDefinitions, serviceDefinition } from '../services/catalog';
import { createGatewayService } from '../services/gateway/gateway.service';

/** The answer every target gives, about the size of our envelope around an empty object. */
export const NOOP_ANSWER = { success: true, message: 'ok', data: {} };

/** The no-op path, under the gateway's `/api` in both the floor and ours. */
export const NOOP_PATH = '/api/bench/noop';

/**
 * The benchmark's own action, declared as any action with `http` is: the gateway routes it
 * through the API key, the quota, the access log and the metrics like every `/api` route.
 * It exists only in this benchmark's processes, never in the served API.
 */
const benchNoop: ServiceDefinition = {
  name: 'bench',
  actions: {
    noop: action({
      retry: 'safe',
      http: {
        group: 'api',
        method: 'GET',
        path: '/bench/noop',
        message: 'ok',
        summary: 'Benchmark no-op',
      },
      params: Joi.object({}),
      handler: () => ({}),
    }),
  },
};

const wanted = (name: string) => process.env[name] === '1';

function listening(port: number): void {
  console.log(String(port));
}

async function floor(config: Config): Promise<void> {
  const ours = createBrokerOptions(config);
  const broker = new ServiceBroker({
    namespace: ours.namespace,
    nodeID: ours.nodeID,
    transporter: ours.transporter,
    serializer: ours.serializer,
    logger: false,
  });
  if (wanted('BENCH_NOOP')) {
    broker.createService({ name: 'bench', actions: { noop: () => NOOP_ANSWER.data } });
  }
  if (wanted('BENCH_WEB')) {
    broker.createService({
      name: 'web',
      mixins: [ApiGateway],
      settings: {
        port: config.port,
        ip: '127.0.0.1',
        routes: [
          {
            path: '/api',
            aliases: { 'GET /bench/noop': 'bench.noop' },
            // The same envelope as ours, so that both write about the same bytes.
            onAfterCall: (
              _ctx: unknown,
              _route: unknown,
              _req: unknown,
              _res: unknown,
              data: object,
            ) => ({ ...NOOP_ANSWER, data }),
          },
        ],
        logRequest: null,
        logResponse: null,
      },
    } as ServiceSchema);
  }
  await broker.start();
  if (process.env.BENCH_WEB === 'direct') await directFront(broker, config.port);
  listening(config.port);
  process.on('SIGTERM', () => void broker.stop().then(() => process.exit(0)));
}

/**
 * node:http calling the no-op through the broker and writing the same envelope: the least a
 * front of our own in moleculer-web's place would cost, with no routing, key, quota or log.
 */
function directFront(broker: ServiceBroker, port: number): Promise<void> {
  const server = createServer((req, res) => {
    req.resume();
    if (req.url !== NOOP_PATH) {
      res.writeHead(404).end();
      return;
    }
    broker.call('bench.noop').then(
      (data) => {
        const body = JSON.stringify({ ...NOOP_ANSWER, data });
        res.writeHead(200, {
          'content-type': 'application/json; charset=utf-8',
          'content-length': Buffer.byteLength(body),
        });
        res.end(body);
      },
      () => res.writeHead(500).end(),
    );
  });
  return new Promise((listen) => server.listen(port, '127.0.0.1', listen));
}

async function waybill(config: Config): Promise<void> {
  const broker = new ServiceBroker(createBrokerOptions(config));
  for (const name of config.services) {
    const definition =
      name === 'gateway'
        ? createGatewayService(config, [...backendDefinitions(config), benchNoop])
        : serviceDefinition(name, config);
    broker.createService(toServiceSchema(definition));
  }
  if (wanted('BENCH_NOOP')) broker.createService(toServiceSchema(benchNoop));
  process.on(
    'SIGTERM',
    () => void stopAndExit(broker, (code) => process.exit(code), config.stopGraceMs),
  );
  await broker.start();
}

// Run by bench-gateway.ts as a child; imported by it only for the constants above.
if (require.main === module) {
  const role = process.env.BENCH_ROLE;
  if (role === 'floor') void floor(loadConfig()).catch(fail);
  else if (role === 'waybill') void waybill(loadConfig()).catch(fail);
  else fail(new Error(`BENCH_ROLE must be floor or waybill, not ${role}`));
}

function fail(err: unknown): void {
  console.error(err);
  process.exit(1);
}
