import type { ServerResponse } from 'node:http';
import type { ServiceBroker } from 'moleculer';
import { CachedValue } from '../../libs/cache';
import type { AppEnvironment } from '../../libs/config';
import { errorEnvelope, successEnvelope } from '../../libs/envelope';
import { failing, readiness } from '../../libs/health';
import type { ServiceDefinition } from '../../libs/service';
import { DOCS_HEADERS, DOCS_HTML, docsAssetRoute } from './docs-page';
import { describeRequest, sendJson, sendSerializedJson, type GatewayRequest } from './http';
import { buildOpenApi } from './openapi';
import { UNAVAILABLE_RETRY_AFTER_SECONDS } from './web-overrides';
import type { MountedGroups } from './routes';

export interface OpsRoutesOptions {
  environment: AppEnvironment;
  backends: ServiceDefinition[];
  /** The route groups this gateway serves: the document shows no other. */
  mounted?: MountedGroups;
  version: string;
  broker: () => ServiceBroker;
}

/**
 * How long one reading of readiness answers `/health/ready`: the route needs no credential on
 * the public port, and each reading pings every dependency (S3 on the uploads' own connection
 * pool, each database, Redis), so a flood of probes shares one reading a second.
 */
export const READINESS_REUSE_MS = 1_000;

/**
 * Routes without credentials: index, health probes, the OpenAPI document and its docs page;
 * each answers HEAD as GET (uptime monitors and load balancers probe with it), Node sending
 * the headers only.
 */
export function opsAliases(options: OpsRoutesOptions) {
  return answeringHead(opsGetAliases(options));
}

/** Each `GET <path>` alias also as `HEAD <path>`, the same handler. */
function answeringHead<Aliases extends Record<string, unknown>>(aliases: Aliases) {
  const heads = Object.entries(aliases)
    .filter(([route]) => route.startsWith('GET '))
    .map(([route, handler]) => [`HEAD ${route.slice('GET '.length)}`, handler]);
  return { ...aliases, ...(Object.fromEntries(heads) as Record<string, Aliases[keyof Aliases]>) };
}

function opsGetAliases(options: OpsRoutesOptions) {
  // Serialized once: the route needs no credential, and the document is some hundreds of KB.
  let openApi: string | undefined;
  const ready = new CachedValue(() => readiness(options.broker()), READINESS_REUSE_MS);
  return {
    'GET /'(_req: GatewayRequest, res: ServerResponse) {
      const data = { docs: '/docs', openapi: '/openapi.json', version: options.version };
      sendJson(res, 200, successEnvelope('Waybill API', data));
    },
    'GET /health/live'(_req: GatewayRequest, res: ServerResponse) {
      sendJson(res, 200, successEnvelope('Live', { status: 'ok' }));
    },
    async 'GET /health/ready'(req: GatewayRequest, res: ServerResponse) {
      const state = await ready.get();
      if (state.ready) {
        const without = state.degraded.length
          ? `; degraded: ${state.degraded.join(', ')} down`
          : '';
        sendJson(res, 200, successEnvelope(`Ready${without}`, state));
        return;
      }
      const envelope = errorEnvelope({
        statusCode: 503,
        ...describeRequest(req),
        message: `Not ready: ${failing(state).join(', ')} down`,
        environment: options.environment,
      });
      res.setHeader('Retry-After', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
      sendJson(res, 503, envelope);
    },
    'GET /openapi.json'(_req: GatewayRequest, res: ServerResponse) {
      openApi ??= JSON.stringify(
        buildOpenApi(options.backends, options.version, options.mounted, options.environment),
      );
      sendSerializedJson(res, 200, openApi);
    },
    'GET /docs'(_req: GatewayRequest, res: ServerResponse) {
      res.statusCode = 200;
      for (const [name, value] of Object.entries(DOCS_HEADERS)) res.setHeader(name, value);
      res.end(DOCS_HTML);
    },
    'GET /docs/assets/:file': docsAssetRoute(),
  };
}
