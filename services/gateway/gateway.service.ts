import type { ActionSchema, Logger, ServiceBroker } from 'moleculer';
import type { Server } from 'node:http';
import ApiGateway from 'moleculer-web';
import type { Config } from '../../libs/config';
import { call } from '../../libs/contracts';
import { API_KEY_REVOKED_EVENT, OPERATOR_TOKEN_REVOKED_EVENT } from '../../libs/contracts/account';
import { AdminAuthenticator } from './admin-auth';
import { COURIER_TOKENS_CHANGED_EVENT } from '../../libs/contracts/matching';
import {
  DELIVERY_CANCELLED_EVENT,
  DELIVERY_PAID_EVENT,
  DELIVERY_STATUS_CHANGED_EVENT,
  type DeliveryEventPayload,
} from '../../libs/contracts/order';
import { ENTRY_POINT } from '../../libs/entry-points';
import { readyWithoutTransporter, registerHealthCheck } from '../../libs/health';
import { connectRedisWithin, redisReady, REDIS_START_WAIT_MS } from '../../libs/redis';
import { whenStopping } from '../../libs/resilience';
import type { ServiceDefinition } from '../../libs/service';
import { transferAgent } from '../../libs/transfer';
import { version } from '../../package.json';
import { ApiKeyAuthenticator } from './api-key-auth';
import { AuthFailureThrottle } from './auth-throttle';
import { CourierTokenAuthenticator } from './courier-auth';
import {
  accessLog,
  adminGuard,
  apiKeyGuard,
  courierGuard,
  fileAnswersReadable,
  pageThrottle,
  opsPreflightsRefused,
  preflightsRefused,
  transferGuard,
} from './edge';
import {
  clientRequestId,
  continueOnRead,
  describeRequest,
  drainOnStop,
  type GatewayRequest,
} from './http';
import { httpAnswerRecorder, routeTemplates, type HttpAnswer } from './http-metrics';
import { IdempotencyStore } from './idempotency';
import { aliasRoutes, allowedMethods, methodGuard } from './method-check';
import { opsAliases } from './ops-routes';
import { QuotaLimiter, quotaStoreClient } from './quota';
import { gatewayRoutes } from './route-table';
import { rawBodyReader } from './raw-body';
import { GROUP_BASE, collectRoutes, type MountedGroups } from './routes';
import { TRACKING_EVENTS_PATH, TrackingStreams } from './tracking-stream';
import { UploadLeases, transferLeaseMs } from './upload-leases';
import { afterCall, webOverrides } from './web-overrides';
import { answerClientError } from './client-errors';

/**
 * moleculer-web, its `rest` action (which carries each HTTP request in) marked as an entry
 * point: not a call between services (libs/entry-points).
 */
const HttpGateway = {
  ...ApiGateway,
  actions: {
    ...ApiGateway.actions,
    // moleculer-web defines `rest` as an object; its declared type allows a bare handler too.
    rest: { ...(ApiGateway.actions?.rest as ActionSchema), ...ENTRY_POINT },
  },
};

/** The gateway: moleculer-web with our routes, middlewares and overrides, wired together. */
export function createGatewayService(
  config: Config,
  backends: ServiceDefinition[],
): ServiceDefinition {
  let logger: Logger;
  let broker: ServiceBroker;
  let authenticator: ApiKeyAuthenticator;
  let couriers: CourierTokenAuthenticator;
  let admins: AdminAuthenticator;
  let recordHttpAnswer: (answer: HttpAnswer) => void = () => undefined;

  // The sandbox's pages exist only with the sandbox, a provider's webhook only with it.
  const mounted: MountedGroups = (group) =>
    (group !== 'checkout' || config.payment.provider === 'sandbox') &&
    (group !== 'webhooks' || config.payment.provider === 'paystack');
  const entries = collectRoutes(backends, mounted);
  const rawHeaders = [...new Set(entries.flatMap((e) => e.http.headers ?? []))];
  const pagePrefix = `${GROUP_BASE.checkout}/`;
  // The tracking page itself, not its event stream: an EventSource reads no HTML.
  const trackingPage = new RegExp(`^${GROUP_BASE.track}/[^/]+/?$`, 'i');
  const isPage = (req: GatewayRequest) => {
    const path = describeRequest(req).path;
    return (
      (mounted('checkout') && path.toLowerCase().startsWith(pagePrefix)) || trackingPage.test(path)
    );
  };
  const httpByAction = new Map(entries.map((e) => [e.actionName, e.http]));
  const httpOf = (name: string) => httpByAction.get(name);
  const retryByAction = new Map(entries.map((e) => [e.actionName, e.retry]));
  const redis = quotaStoreClient(
    config.redisUrl,
    `${config.namespace}-gateway`,
    (err) =>
      logger?.warn('Redis unreachable; quota checks answer 503 until it is back', {
        error: err.message,
      }),
    config.redisCommandTimeoutMs,
  );
  const quota = new QuotaLimiter(redis, `${config.namespace}:quota:`);
  const authFailures = new AuthFailureThrottle(
    new QuotaLimiter(redis, `${config.namespace}:auth-failures:`),
    config.authFailures,
  );
  const pages = pageThrottle({
    config,
    limiter: new QuotaLimiter(redis, `${config.namespace}:page-requests:`),
  });
  const idempotency = new IdempotencyStore(redis, `${config.namespace}:idempotency:`, {
    pendingMs: Math.max(2 * config.requestTimeoutMs, 60_000),
    keepMs: 24 * 3600_000,
  });
  const transfers = transferAgent();
  const tracking = new TrackingStreams({
    config,
    fetch: (trackingId) => call(broker, 'order.trackingState', { trackingId }),
    logger: () => logger,
  });
  // The stream sits next to the page, served only where the page is.
  const trackingAliases = entries.some((e) => e.http.group === 'track')
    ? { [`GET ${TRACKING_EVENTS_PATH}`]: tracking.handler() }
    : {};
  const leases = (kind: string) =>
    new UploadLeases(redis, `${config.namespace}:${kind}:`, transferLeaseMs(config));
  const uploads = transferGuard({
    leases: leases('uploads'),
    limit: config.files.maxUploadsPerKey,
    userLimit: config.files.maxUploadsPerUser,
    what: 'uploads',
  });
  const downloads = transferGuard({
    leases: leases('downloads'),
    limit: config.files.maxDownloadsPerKey,
    userLimit: config.files.maxDownloadsPerUser,
    what: 'downloads',
  });

  const ops = opsAliases({
    environment: config.appEnv,
    backends,
    mounted,
    version,
    broker: () => broker,
  });
  // Every route the gateway answers, the services' and its own: an answer given before
  // moleculer-web names the alias (a refused key, a page's throttle) is labelled by it.
  const declaredRoutes = [
    ...entries.map((e) => ({ method: e.http.method, fullPath: e.fullPath })),
    ...aliasRoutes(ops),
    ...aliasRoutes(trackingAliases).map((r) => ({
      ...r,
      fullPath: `${GROUP_BASE.track}${r.fullPath}`,
    })),
  ];
  const templateOf = routeTemplates(declaredRoutes);
  const measure = (req: GatewayRequest, status: number, seconds: number) => {
    const { method, path } = describeRequest(req);
    const route = req.$alias?.fullPath ?? templateOf(method, path);
    recordHttpAnswer({ method, route, status, seconds });
  };
  const log = accessLog(() => logger, measure);

  const overrides = webOverrides({
    environment: config.appEnv,
    isPage,
    transfers,
    idempotency,
    httpOf,
    logger: () => logger,
    retryOf: (action) => retryByAction.get(action),
  });

  const methods = methodGuard(allowedMethods(declaredRoutes));
  const routes = gatewayRoutes({
    config,
    entries,
    onAfterCall: afterCall(httpOf),
    use: (group, body, readBody) => {
      // No credentials: the page's unguessable reference, the webhook's signature, are the
      // services' to check. No key's quota and no Idempotency-Key either: the pages count
      // per client address.
      if (group === 'checkout' || group === 'track') {
        return [log, methods, preflightsRefused(group), pages];
      }
      if (group === 'webhooks') {
        return [log, methods, preflightsRefused(group), rawBodyReader(rawHeaders)];
      }
      if (group === 'admin') {
        return [
          log,
          methods,
          adminGuard({ config, authFailures, authenticator: () => admins }),
          ...readBody,
        ];
      }
      if (group === 'courier') {
        return [
          log,
          methods,
          courierGuard({ config, authFailures, quota, authenticator: () => couriers }),
          ...readBody,
        ];
      }
      return [
        log,
        ...(group === 'file' ? [fileAnswersReadable] : []),
        methods,
        apiKeyGuard(group, { config, quota, authFailures, authenticator: () => authenticator }),
        // Read before a download's lease is taken: a body that trickles holds none.
        ...readBody,
        // `/file` takes uploads as streams and answers downloads to JSON requests.
        ...(group === 'file' ? [body === 'stream' ? uploads : downloads] : []),
      ];
    },
    ownAliases: { track: trackingAliases },
    ops: { use: [log, methods, opsPreflightsRefused], aliases: ops },
  });

  return {
    name: 'gateway',
    mixins: [HttpGateway],
    settings: {
      port: config.port,
      ip: config.host,
      path: '',
      routes,
      // moleculer-web would take any X-Request-ID as is, however long.
      rootCallOptions(options: { requestID?: string }, req: GatewayRequest) {
        options.requestID = clientRequestId(req.headers);
      },
      log4XXResponses: false,
      logRequest: null,
      logResponse: null,
      onError: overrides.onError,
    },
    events: {
      [API_KEY_REVOKED_EVENT]: {
        handler(ctx: { params: { hash?: string } }) {
          if (ctx.params.hash) authenticator.forget(ctx.params.hash);
        },
      },
      // A delivery's change reaches the tracking pages this gateway streams at once.
      ...Object.fromEntries(
        [DELIVERY_STATUS_CHANGED_EVENT, DELIVERY_PAID_EVENT, DELIVERY_CANCELLED_EVENT].map(
          (event) => [
            event,
            {
              handler(ctx: { params: Partial<DeliveryEventPayload> }) {
                const { trackingId } = ctx.params;
                if (typeof trackingId === 'string') tracking.statusChanged(trackingId);
              },
            },
          ],
        ),
      ),
      [OPERATOR_TOKEN_REVOKED_EVENT]: {
        handler(ctx: { params: { hash?: unknown } }) {
          if (typeof ctx.params.hash === 'string') admins.forget(ctx.params.hash);
        },
      },
      [COURIER_TOKENS_CHANGED_EVENT]: {
        handler(ctx: { params: { hashes?: unknown } }) {
          const { hashes } = ctx.params;
          if (!Array.isArray(hashes)) return;
          for (const hash of hashes) if (typeof hash === 'string') couriers.forget(hash);
        },
      },
    },
    methods: overrides.methods,
    created() {
      logger = this.logger;
      broker = this.broker;
      authenticator = new ApiKeyAuthenticator({
        prefix: config.apiKeyPrefix,
        environment: config.appEnv,
        cacheMs: config.apiKeyCacheSeconds * 1000,
        lookup: (hash) => call(broker, 'account.resolveApiKey', { hash }),
      });
      admins = new AdminAuthenticator({
        adminToken: config.adminToken,
        cacheMs: config.apiKeyCacheSeconds * 1000,
        lookup: (tokenHash) => call(broker, 'account.authenticateOperator', { tokenHash }),
      });
      couriers = new CourierTokenAuthenticator({
        cacheMs: config.courierTokenCacheSeconds * 1000,
        lookup: (tokenHash) => call(broker, 'courier-matching.authenticateCourier', { tokenHash }),
      });
      // Neither Redis nor NATS decides the gateway's readiness (docs/operations.md,
      // "Readiness"): every replica loses them together, so leaving the Service would only
      // swap our 503 envelopes for the ingress's own, and for Redis also cut /admin, the
      // pages and the webhooks, which do not need it. Reported as degraded instead.
      registerHealthCheck(broker, 'redis', () => redisReady(redis), { required: false });
      readyWithoutTransporter(broker);
      recordHttpAnswer = httpAnswerRecorder(broker);
      // moleculer-web made its HTTP server in its own `created`, which runs before this one.
      const { server } = this as unknown as { server: Server };
      // Node's 5 s would close connections a proxy in front still counts as open: it reuses
      // one just closed, and answers its client 502 (a POST it does not retry).
      server.keepAliveTimeout = config.httpKeepAliveMs;
      // Refused by the gateway's handler in the envelope, not by Node with a bare 400. The
      // option of `createServer`, read from the server at each request; not in Node's types.
      (server as Server & { requireHostHeader: boolean }).requireHostHeader = false;
      server.on('clientError', answerClientError(config.appEnv));
      // An `Expect` other than 100-continue: Node would answer a bare 417, unlogged and outside
      // the envelope. A server may ignore what it does not meet (RFC 9110, 10.1.1): the
      // request is answered as if it had none.
      server.on('checkExpectation', (req, res) => server.emit('request', req, res));
      server.on('checkContinue', (req, res) => {
        continueOnRead(req, res);
        server.emit('request', req, res);
      });
      // A stream lasts until it is ended: the stop's wait for requests in progress would wait
      // for it until it gave up, and `stopped` comes after that wait.
      whenStopping(broker, () => tracking.closeAll());
      // Kept alive HTTP_KEEP_ALIVE_MS, longer than a stop may last: let go as the stop begins.
      whenStopping(broker, drainOnStop(server));
    },
    async started() {
      // Without Redis the gateway still starts, ready, and answers /api and /file 503; with it,
      // its first requests are counted rather than refused while the connection opens.
      await connectRedisWithin(redis, REDIS_START_WAIT_MS);
    },
    async stopped() {
      // Done as the stop began, unless the broker runs no stopping hooks (a test's own).
      await tracking.closeAll();
      transfers.destroy();
      redis.disconnect();
    },
  };
}
