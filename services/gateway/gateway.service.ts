import type { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { Logger, ServiceBroker } from 'moleculer';
import ApiGateway from 'moleculer-web';
import type { Config } from '../../libs/config';
import { errorEnvelope, successEnvelope } from '../../libs/envelope';
import { notFound, toHttpError } from '../../libs/errors';
import { registerHealthCheck } from '../../libs/health';
import { connectRedis, createRedis, redisReady } from '../../libs/redis';
import type { ServiceDefinition } from '../../libs/service';
import { version } from '../../package.json';
import { API_KEY_REVOKED_EVENT } from '../account/account.service';
import { ApiKeyAuthenticator, type ResolvedApiKey } from './api-key-auth';
import { accessLog, adminGuard, apiKeyGuard } from './edge';
import { describeRequest, sendJson, type GatewayRequest } from './http';
import { opsAliases } from './ops-routes';
import { QuotaLimiter } from './quota';
import { GROUP_BASE, aliasesFor, collectRoutes } from './routes';

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
  let logger: Logger;
  let broker: ServiceBroker;
  let authenticator: ApiKeyAuthenticator;

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
    const auth =
      group === 'admin'
        ? adminGuard(config.adminToken)
        : apiKeyGuard(group, { config, quota, authenticator: () => authenticator });
    return (['json', 'stream'] as const).map((body) => ({
      ...common,
      name: `${group}-${body}`,
      path: GROUP_BASE[group],
      aliases: aliasesFor(entries, group, body),
      bodyParsers: body === 'json' ? jsonBody : false,
      use: [accessLog(() => logger), auth],
    }));
  });

  const opsRoute = {
    ...common,
    name: 'ops',
    path: '/',
    bodyParsers: false,
    use: [accessLog(() => logger)],
    aliases: opsAliases({
      environment: config.appEnv,
      backends,
      version,
      broker: () => broker,
    }),
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
      broker = this.broker;
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
