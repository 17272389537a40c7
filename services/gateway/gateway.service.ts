import type { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { Context, Logger, ServiceBroker } from 'moleculer';
import ApiGateway from 'moleculer-web';
import type { Config } from '../../libs/config';
import { errorEnvelope, successEnvelope } from '../../libs/envelope';
import { notFound, toHttpError } from '../../libs/errors';
import { registerHealthCheck } from '../../libs/health';
import { connectRedis, createRedis, redisReady } from '../../libs/redis';
import type { ServiceDefinition } from '../../libs/service';
import { StreamFlows, receiveFlow, type FlowMeta } from '../../libs/stream-flow';
import { version } from '../../package.json';
import { API_KEY_REVOKED_EVENT } from '../../libs/contracts/account';
import { ApiKeyAuthenticator, type ResolvedApiKey } from './api-key-auth';
import { accessLog, adminGuard, apiKeyGuard } from './edge';
import { clientRequestId, describeRequest, sendJson, type GatewayRequest } from './http';
import { recordHttpAnswer, registerHttpMetrics, routeTemplates } from './http-metrics';
import { IdempotencyStore, REPLAYED_HEADER, claimForRequest } from './idempotency';
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
  const idempotency = new IdempotencyStore(redis, `${config.namespace}:idempotency:`, {
    pendingMs: Math.max(2 * config.requestTimeoutMs, 60_000),
    keepMs: 24 * 3600_000,
  });
  const flows = new StreamFlows('gateway');
  const templateOf = routeTemplates(entries.map((e) => ({ ...e, method: e.http.method })));
  const measure = (req: GatewayRequest, status: number, seconds: number) => {
    const { method, path } = describeRequest(req);
    const route = req.$alias?.fullPath ?? templateOf(method, path);
    recordHttpAnswer(broker, { method, route, status, seconds });
  };
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
  const describeStreamBody = (
    ctx: { meta: Record<string, unknown> },
    _route: unknown,
    req: GatewayRequest,
  ) => {
    ctx.meta.contentType = req.headers['content-type'];
    const length = Number(req.headers['content-length']);
    if (Number.isSafeInteger(length) && length >= 0) ctx.meta.contentLength = length;
  };

  const backendRoutes = (['api', 'file', 'admin'] as const).flatMap((group) => {
    const auth =
      group === 'admin'
        ? adminGuard(config.adminToken)
        : apiKeyGuard(group, { config, quota, authenticator: () => authenticator });
    return (['json', 'stream'] as const).map((body) => ({
      ...common,
      // Files take longer than JSON calls: an upload's timeout covers its whole body.
      callOptions:
        group === 'file'
          ? { ...common.callOptions, timeout: config.files.timeoutMs }
          : common.callOptions,
      name: `${group}-${body}`,
      path: GROUP_BASE[group],
      aliases: aliasesFor(entries, group, body),
      bodyParsers: body === 'json' ? jsonBody : false,
      use: [accessLog(() => logger, measure), auth],
      // The raw body goes to the service as a stream; it needs the headers that describe it.
      ...(body === 'stream' ? { onBeforeCall: describeStreamBody } : {}),
    }));
  });

  const opsRoute = {
    ...common,
    name: 'ops',
    path: '/',
    bodyParsers: false,
    use: [accessLog(() => logger, measure)],
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
      // moleculer-web would take any X-Request-ID as is, however long.
      rootCallOptions(options: { requestID?: string }, req: GatewayRequest) {
        options.requestID = clientRequestId(req.headers);
      },
      log4XXResponses: false,
      logRequest: null,
      logResponse: null,
      onError(req: GatewayRequest, res: ServerResponse, err: unknown) {
        const httpError = toHttpError(err);
        if (httpError.internal) {
          logger.error('request failed', {
            ...describeRequest(req),
            requestId: req.$ctx?.requestID,
            error: err,
          });
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
    actions: {
      /** Credit for request bodies streamed to services on other nodes (libs/stream-flow). */
      streamCredit: flows.action(),
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
      /**
       * moleculer-web's callAction, except that a request body streamed to another node
       * goes through a credit gate, so the client is read no faster than the service consumes.
       */
      async callAction(
        route: { callOptions?: Record<string, unknown>; onAfterCall?: typeof common.onAfterCall },
        _actionName: string,
        req: GatewayRequest,
        res: ServerResponse,
        params: Record<string, unknown>,
        isStream: boolean,
      ) {
        const ctx = req.$ctx as Context<unknown, Record<string, unknown>>;
        const endpoint = req.$endpoint ?? {};
        const opts: Record<string, unknown> = { ...route.callOptions };
        let flow: ReturnType<StreamFlows['open']> | undefined;
        if (isStream && endpoint.local) {
          opts.stream = req;
        } else if (isStream) {
          flow = flows.open(req, broker.nodeID);
          ctx.meta.$flow = flow.meta;
          opts.stream = flow.stream;
        }
        const claim = isStream
          ? undefined
          : await claimForRequest(idempotency, req, ctx.meta, params);
        if (claim?.kind === 'replay') {
          const { status, headers, body } = claim.response;
          res.statusCode = status;
          res.setHeader(REPLAYED_HEADER, 'true');
          ctx.meta.$responseHeaders = headers;
          this.sendResponse(req, res, body);
          return true;
        }
        try {
          let data = await ctx.call(endpoint as unknown as string, params, opts);
          if (route.onAfterCall)
            data = await route.onAfterCall.call(this, ctx, route, req, res, data);
          const stored = await claim?.complete({
            status: res.statusCode,
            headers: responseHeaders(ctx.meta),
            body: data,
          });
          if (stored === false) {
            logger.warn('answer not stored for its Idempotency-Key; a retry will wait', {
              ...describeRequest(req),
            });
          }
          this.sendResponse(req, res, data, endpoint.action);
          return true;
        } catch (err) {
          await claim?.fail(err);
          throw err;
        } finally {
          if (flow) {
            flow.close();
            if (!req.readableEnded) req.resume(); // the service stopped early: drain the rest
          }
        }
      },
      // Our own writer: envelopes and 201s without noise, streams for downloads.
      sendResponse(req: GatewayRequest, res: ServerResponse, data: unknown) {
        if (res.headersSent) return;
        const meta = req.$ctx?.meta ?? {};
        for (const [name, value] of Object.entries(responseHeaders(meta))) {
          res.setHeader(name, value);
        }
        if (data == null) {
          res.end();
        } else if (data instanceof Readable) {
          if (!res.hasHeader('Content-Type'))
            res.setHeader('Content-Type', 'application/octet-stream');
          // A stream from another node comes gated: credit it as the client reads.
          const flow = meta.$responseFlow as FlowMeta | undefined;
          const body = flow ? receiveFlow(data, flow, (a, p, o) => broker.call(a, p, o)) : data;
          body.on('error', () => res.destroy());
          // A client that leaves mid-download must not leave the source (an S3 socket) open.
          res.once('close', () => {
            if (!body.readableEnded) {
              body.destroy();
              data.destroy();
            }
          });
          body.pipe(res);
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
      registerHttpMetrics(broker);
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

/** Headers a service asked for through `meta`: its own, and `Location`. */
function responseHeaders(meta: Record<string, unknown>): Record<string, string> {
  const headers = { ...((meta.$responseHeaders ?? {}) as Record<string, string>) };
  if (typeof meta.$location === 'string') headers.Location = meta.$location;
  return headers;
}
