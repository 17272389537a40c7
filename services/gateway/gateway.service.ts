import type { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { Logger } from 'moleculer';
import ApiGateway from 'moleculer-web';
import type { Config } from '../../libs/config';
import { errorEnvelope, successEnvelope } from '../../libs/envelope';
import {
  forbidden,
  notFound,
  quotaExceeded,
  serviceUnavailable,
  toHttpError,
} from '../../libs/errors';
import { readiness, registerHealthCheck } from '../../libs/health';
import { connectRedis, createRedis, redisReady } from '../../libs/redis';
import type { RouteGroup, ServiceDefinition } from '../../libs/service';
import { API_KEY_REVOKED_EVENT } from '../account/account.service';
import { checkAdminToken } from './admin-auth';
import { ApiKeyAuthenticator, type ResolvedApiKey } from './api-key-auth';
import { DOCS_HTML, sendDocsAsset } from './docs-page';
import { describeRequest, isPreflight, sendJson, type GatewayRequest } from './http';
import { buildOpenApi } from './openapi';
import { QuotaLimiter, quotaHeaders } from './quota';
import { GROUP_BASE, aliasesFor, collectRoutes } from './routes';
import { version } from '../../package.json';

type Next = (err?: unknown) => void;
type Middleware = (req: GatewayRequest, res: ServerResponse, next: Next) => void;

/** Wraps an async middleware so that a rejection reaches moleculer-web's error path. */
const middleware =
  (fn: (req: GatewayRequest, res: ServerResponse) => Promise<boolean | void>): Middleware =>
  (req, res, next) => {
    fn(req, res).then(
      (handled) => (handled === true ? undefined : next()),
      (err: unknown) => next(err),
    );
  };

const FILE_CORS_HEADERS = 'api-key, content-type';
const EXPOSED_HEADERS = 'RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After';

export function createGatewayService(
  config: Config,
  backends: ServiceDefinition[],
): ServiceDefinition {
  const entries = collectRoutes(backends);
  const httpByAction = new Map(entries.map((e) => [e.actionName, e.http]));
  const redis = createRedis(config.redisUrl, `${config.namespace}-gateway`, (err) =>
    logger?.warn('Redis unreachable; quota checks answer 503 until it is back', {
      error: err.message,
    }),
  );
  const quota = new QuotaLimiter(redis, `${config.namespace}:quota:`);
  let openApi: ReturnType<typeof buildOpenApi> | undefined;
  let logger: Logger;
  let authenticator: ApiKeyAuthenticator;

  const accessLog: Middleware = (req, res, next) => {
    const started = process.hrtime.bigint();
    res.once('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const { method, path } = describeRequest(req);
      const line = {
        method,
        path,
        status: res.statusCode,
        ms: Math.round(ms * 10) / 10,
        apiKeyId: req.$ctx?.meta.apiKeyId,
      };
      if (path.startsWith('/health')) logger.debug('http', line);
      else logger.info('http', line);
    });
    next();
  };

  async function consumeQuota(key: ResolvedApiKey, res: ServerResponse) {
    let decision;
    try {
      decision = await quota.consume(key.id, key.quota ?? config.quota);
    } catch {
      throw serviceUnavailable('The quota store is unavailable; retry in a few seconds');
    }
    for (const [name, value] of Object.entries(quotaHeaders(decision))) res.setHeader(name, value);
    if (!decision.allowed) throw quotaExceeded();
  }

  const apiKeyAuth = (group: RouteGroup) =>
    middleware(async (req, res) => {
      const origin = req.headers.origin;
      if (isPreflight(req)) {
        if (group !== 'file' || !origin) {
          throw forbidden(
            `Browsers may not call ${GROUP_BASE[group]}; call it from your server with your API key`,
          );
        }
        res.writeHead(204, {
          'Access-Control-Allow-Origin': origin,
          'Access-Control-Allow-Methods': 'POST, OPTIONS',
          'Access-Control-Allow-Headers': FILE_CORS_HEADERS,
          'Access-Control-Max-Age': '600',
          Vary: 'Origin',
        });
        res.end();
        return true;
      }
      const key = await authenticator.authenticate(req.headers['api-key']);
      if (group === 'file' && origin) {
        res.setHeader('Access-Control-Allow-Origin', origin);
        res.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS);
        res.setHeader('Vary', 'Origin');
        if (key.serverOnly) {
          throw forbidden(
            'This API key is server-only; browser calls to /file need a key created with serverOnly: false',
          );
        }
      }
      await consumeQuota(key, res);
      if (req.$ctx) {
        req.$ctx.meta.user = key.user;
        req.$ctx.meta.apiKeyId = key.id;
      }
    });

  const adminAuth = middleware(async (req) => {
    const header = req.headers.authorization;
    checkAdminToken(Array.isArray(header) ? header[0] : header, config.adminToken);
  });

  const common = {
    mappingPolicy: 'restrict',
    autoAliases: false,
    logging: false,
    callOptions: { timeout: config.requestTimeoutMs, retries: 0 },
    onAfterCall(
      ctx: { meta: Record<string, unknown> },
      _route: unknown,
      req: GatewayRequest,
      res: ServerResponse,
      data: unknown,
    ) {
      const http = httpByAction.get(req.$alias?.action?.replace(/^stream:/, '') ?? '');
      const status = Number(ctx.meta.$statusCode ?? http?.status ?? 200);
      res.statusCode = status;
      if (status === 204) return null;
      if (data instanceof Readable || Buffer.isBuffer(data)) return data;
      return successEnvelope(http?.message ?? 'OK', data);
    },
  };
  const jsonBody = { json: { strict: true, limit: config.bodyLimit }, urlencoded: false };

  const backendRoutes = (['api', 'file', 'admin'] as const).flatMap((group) => {
    const auth = group === 'admin' ? adminAuth : apiKeyAuth(group);
    return (['json', 'stream'] as const).map((body) => ({
      ...common,
      name: `${group}-${body}`,
      path: GROUP_BASE[group],
      aliases: aliasesFor(entries, group, body),
      bodyParsers: body === 'json' ? jsonBody : false,
      use: [accessLog, auth],
    }));
  });

  const opsRoute = {
    ...common,
    name: 'ops',
    path: '/',
    bodyParsers: false,
    use: [accessLog],
    aliases: {
      'GET /'(_req: GatewayRequest, res: ServerResponse) {
        sendJson(
          res,
          200,
          successEnvelope('Waybill API', { docs: '/docs', openapi: '/openapi.json', version }),
        );
      },
      'GET /health/live'(_req: GatewayRequest, res: ServerResponse) {
        sendJson(res, 200, successEnvelope('Live', { status: 'ok' }));
      },
      async 'GET /health/ready'(
        this: { broker: Parameters<typeof readiness>[0] },
        req: GatewayRequest,
        res: ServerResponse,
      ) {
        const state = await readiness(this.broker);
        if (state.ready) {
          sendJson(res, 200, successEnvelope('Ready', state));
          return;
        }
        const failing = Object.keys(state.checks).filter((k) => !state.checks[k]);
        sendJson(
          res,
          503,
          errorEnvelope({
            statusCode: 503,
            ...describeRequest(req),
            message: `Not ready: ${failing.join(', ')} down`,
            environment: config.appEnv,
          }),
        );
      },
      'GET /openapi.json'(_req: GatewayRequest, res: ServerResponse) {
        openApi ??= buildOpenApi(backends, version);
        sendJson(res, 200, openApi);
      },
      'GET /docs'(_req: GatewayRequest, res: ServerResponse) {
        res.statusCode = 200;
        res.setHeader('Content-Type', 'text/html; charset=utf-8');
        res.end(DOCS_HTML);
      },
      'GET /docs/assets/:file'(
        req: GatewayRequest & { $params?: { file?: string } },
        res: ServerResponse,
        next: Next,
      ) {
        if (!sendDocsAsset(String(req.$params?.file ?? ''), res)) {
          next(notFound('No such docs asset'));
        }
      },
    },
  };

  return {
    name: 'gateway',
    mixins: [ApiGateway],
    settings: {
      port: config.port,
      ip: config.host,
      path: '',
      routes: [...backendRoutes, opsRoute],
      log4XXResponses: false,
      logRequest: null,
      logResponse: null,
      onError(req: GatewayRequest, res: ServerResponse, err: unknown) {
        const httpError = toHttpError(err);
        if (httpError.internal) {
          logger.error('request failed', { ...describeRequest(req), error: err });
        }
        if (res.headersSent) {
          res.destroy();
          return;
        }
        sendJson(
          res,
          httpError.status,
          errorEnvelope({
            statusCode: httpError.status,
            ...describeRequest(req),
            message: httpError.message,
            environment: config.appEnv,
            errors: httpError.errors,
          }),
        );
      },
    },
    events: {
      [API_KEY_REVOKED_EVENT]: {
        handler(ctx: { params: { hash?: string } }) {
          if (ctx.params.hash) authenticator.forget(ctx.params.hash);
        },
      },
    },
    methods: {
      send404(req: GatewayRequest, res: ServerResponse) {
        const { method, path } = describeRequest(req);
        this.sendError(
          req,
          res,
          notFound(`No route for ${method} ${path}; see /docs for the routes`),
        );
      },
      // moleculer-web logs every 5xx with its stack; onError logs what is ours to fix.
      errorHandler(req: GatewayRequest, res: ServerResponse, err: unknown) {
        this.sendError(req, res, err);
      },
      // Our own writer: envelopes and 201s without noise, streams for downloads.
      sendResponse(req: GatewayRequest, res: ServerResponse, data: unknown) {
        if (res.headersSent) return;
        const meta = req.$ctx?.meta ?? {};
        const headers = (meta.$responseHeaders ?? {}) as Record<string, string>;
        for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
        if (typeof meta.$location === 'string') res.setHeader('Location', meta.$location);
        if (data == null) {
          res.end();
        } else if (data instanceof Readable) {
          if (!res.hasHeader('Content-Type'))
            res.setHeader('Content-Type', 'application/octet-stream');
          data.on('error', () => res.destroy());
          data.pipe(res);
        } else if (Buffer.isBuffer(data)) {
          if (!res.hasHeader('Content-Type'))
            res.setHeader('Content-Type', 'application/octet-stream');
          res.setHeader('Content-Length', data.length);
          res.end(data);
        } else {
          sendJson(res, res.statusCode || 200, data);
        }
      },
    },
    created() {
      logger = this.logger;
      const broker = this.broker;
      authenticator = new ApiKeyAuthenticator({
        prefix: config.apiKeyPrefix,
        environment: config.appEnv,
        cacheMs: config.apiKeyCacheSeconds * 1000,
        lookup: (hash) =>
          broker.call<ResolvedApiKey | null, { hash: string }>('account.resolveApiKey', { hash }),
      });
      registerHealthCheck(broker, 'redis', () => redisReady(redis));
    },
    started() {
      // Not awaited: without Redis the gateway still starts, reports not ready and answers 503.
      connectRedis(redis).catch(() => {
        // Reported by the client's error listener; it keeps reconnecting in the background.
      });
    },
    async stopped() {
      redis.disconnect();
    },
  };
}
