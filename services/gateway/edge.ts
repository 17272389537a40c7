import type { ServerResponse } from 'node:http';
import type { Logger } from 'moleculer';
import type { Config } from '../../libs/config';
import { FILE_RETRY_AFTER_SECONDS } from '../../libs/contracts/file';
import { forbidden, quotaExceeded, toHttpError, tooManyRequests } from '../../libs/errors';
import { authUserOf, operatorOf, type RequestMeta, type RouteGroup } from '../../libs/service';
import { isRepeatedRefusal } from '../../libs/lookup-cache';
import { clientGone } from '../../libs/transfer';
import { presentsOperatorToken, type AdminAuthenticator } from './admin-auth';
import type { ResolvedApiKey } from '../../libs/contracts/account';
import { allowanceShareOf, shareCounter, shareHolderHas } from '../../libs/contracts/file';
import type { ApiKeyAuthenticator } from './api-key-auth';
import type { CourierTokenAuthenticator } from './courier-auth';
import { clientAddress, type AuthFailureThrottle } from './auth-throttle';
import {
  cutStatus,
  describeForLog,
  describeRequest,
  isPreflight,
  requestUserId,
  type GatewayRequest,
} from './http';
import {
  quotaHeaders,
  quotaStoreUnavailable,
  type Quota,
  type QuotaDecision,
  type QuotaLimiter,
} from './quota';
import type { UploadLease, UploadLeases } from './upload-leases';
import { GROUP_BASE } from './routes';
import { aliasSettled } from './web-routing';

/** Express-style middleware, as moleculer-web runs them on a route. */
export type Next = (err?: unknown) => void;
export type Middleware = (req: GatewayRequest, res: ServerResponse, next: Next) => void;

/** Wraps an async middleware so that a rejection reaches moleculer-web's error path. */
const middleware =
  (fn: (req: GatewayRequest, res: ServerResponse) => Promise<boolean | void>): Middleware =>
  (req, res, next) => {
    fn(req, res).then(
      (handled) => (handled === true ? undefined : next()),
      (err: unknown) => next(err),
    );
  };

const FILE_CORS_HEADERS = 'api-key, content-type, x-request-id';
const EXPOSED_HEADERS =
  'Content-Disposition, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After, X-Request-ID';

/**
 * The status recorded for a request whose client left before its answer was sent in full
 * (nginx's "client closed request"): a slow request given up on, a tracking page closed or
 * dropped for not reading. Never sent: nobody is left to read it.
 */
export const CLIENT_CLOSED_REQUEST = 499;

/**
 * One structured `http` line per request, probes at debug level; each answer is measured.
 * Recorded once, when the answer has been sent (`finish`) or, failing that, when the
 * connection closes: `finish` never comes for a request the client abandoned, which would
 * otherwise leave no line and no count, and make the slowest requests disappear from both.
 */
export function accessLog(
  logger: () => Logger,
  measure: (req: GatewayRequest, status: number, seconds: number) => void,
): Middleware {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    let recorded = false;
    const record = (status: number) => {
      if (recorded) return;
      recorded = true;
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const { method, path } = describeForLog(req);
      const line = {
        method,
        path,
        status,
        ms: Math.round(ms * 10) / 10,
        apiKeyId: req.$ctx?.meta.apiKeyId,
        courierId: (req.$ctx?.meta.courier as RequestMeta['courier'])?.id,
        ...operatorOf(req.$ctx?.meta as RequestMeta | undefined),
        requestId: req.$ctx?.requestID,
      };
      if (path.startsWith('/health')) logger().debug('http', line);
      else logger().info('http', line);
      measure(req, status, ms / 1000);
    };
    res.once('finish', () => record(res.statusCode));
    // After `finish` when the answer was sent; alone when the client left first, or when
    // the gateway cut an answer it could not finish (`cutAnswer`: its own status, a fault).
    res.once('close', () => record(cutStatus(res) ?? CLIENT_CLOSED_REQUEST));
    next();
  };
}

export interface ApiKeyGuardOptions {
  config: Pick<Config, 'quota' | 'trustProxyHops'>;
  authenticator: () => ApiKeyAuthenticator;
  quota: QuotaLimiter;
  authFailures: AuthFailureThrottle;
}

export const PUBLISHABLE_KEY_REFUSED =
  'This is a client-app (publishable) key; it may call /file endpoints only. Use a server-only key for /api';

const isUnauthorized = (err: unknown) => (err as { type?: unknown })?.type === 'UNAUTHORIZED';

/**
 * Runs an authentication with failures throttled per client address (gateway/auth-throttle).
 * A lookup of a credential the gateway has not accepted before is counted as a failure
 * before it is made, so that a burst of concurrent attempts gets no more lookups than the
 * limit, and forgiven once the credential is accepted; any other 401 (a malformed one, a
 * refusal cached) is counted after it. A request that sent none (`sent` false) guessed nothing
 * and is not counted: any web page can make a browser send one (an image, a form), and each
 * would count against the address it shares with the merchant's servers or the operator.
 * `credential` names what the 429 asks for. Requests `countedApart` count apart from the
 * address's others: `browsers` (a `/file` call with an `Origin`, which any page may make with
 * a made-up key), so that a page cannot shut the servers behind the same address out, only
 * browsers; `admin`, so that guesses at API keys cannot shut the operator out.
 */
async function throttled<T>(
  req: GatewayRequest,
  options: { config: Pick<Config, 'trustProxyHops'>; authFailures: FailureCount },
  {
    credential,
    sent,
    countedApart,
  }: { credential: string; sent: unknown; countedApart?: CountedApart },
  authenticate: (beforeLookup: () => Promise<void>) => Promise<T>,
): Promise<T> {
  // Read now: once the client has left, its socket no longer knows the peer's address.
  const address = countedAddress(clientAddress(req, options.config.trustProxyHops), countedApart);
  const { authFailures } = options;
  let countedBeforeLookup = false;
  /** Accepted, or refused as a credential we issued (an operator token expired): no guess. */
  let noGuess = false;
  try {
    const authenticated = await authenticate(async () => {
      try {
        await (authFailures.countLookup
          ? authFailures.countLookup(address, credential)
          : authFailures.countFailure(address, credential));
      } catch (err) {
        // Refused without a lookup: no failure was made, and a good key refused in a burst
        // must not hold its address back once the burst has passed.
        await authFailures.forgive(address);
        throw err;
      }
      countedBeforeLookup = true;
    });
    noGuess = true;
    return authenticated;
  } catch (err) {
    noGuess = isRepeatedRefusal(err);
    // A credential refused lately, sent again (a retired courier's app still reporting, a
    // server with an old key), is no new guess: counted once, when it was looked up, so that
    // it cannot shut out the others behind its address (a mobile carrier's NAT).
    if (isUnauthorized(err) && !countedBeforeLookup && isSent(sent) && !isRepeatedRefusal(err)) {
      await authFailures.countFailure(address, credential);
    }
    throw err;
  } finally {
    // A lookup that failed (the account service away) stays counted: made-up keys must not
    // be looked up without limit while it struggles. One that found a credential we issued,
    // expired, is given back: a script still sending it is not guessing.
    if (countedBeforeLookup && noGuess) await authFailures.forgive(address);
  }
}

/** What failed authentications `throttled` counts with (gateway/auth-throttle). */
type FailureCount = Pick<AuthFailureThrottle, 'countFailure' | 'forgive' | 'admit'> & {
  /** Counts a lookup about to be made, as `countFailure` does when this is not given. */
  countLookup?: AuthFailureThrottle['countFailure'];
};

/**
 * Failures counted apart from the client address's others: `browsers` (a `/file` call with an
 * `Origin`), `admin` (ADMIN_TOKEN, and what is no token at all), `operators` (operator tokens).
 */
type CountedApart = 'browsers' | 'admin' | 'operators';

const APART: Record<CountedApart, (client: string) => string> = {
  browsers: (client) => `${client} browsers`,
  admin: (client) => `admin ${client}`,
  operators: (client) => `operator-tokens ${client}`,
};

const countedAddress = (client: string, apart: CountedApart | undefined) =>
  apart ? APART[apart](client) : client;

/** Whether a request carried a credential header at all. */
const isSent = (header: unknown) =>
  (typeof header === 'string' && header.length > 0) || Array.isArray(header);

/** Browsers may not call a group that takes credentials apps and servers keep. */
const BROWSERS_REFUSED: Partial<Record<RouteGroup, string>> = {
  courier: `Browsers may not call ${GROUP_BASE.courier}; it is for the courier app, with its courier token`,
  admin: `Browsers may not call ${GROUP_BASE.admin}; call it from the operator's tools with ADMIN_TOKEN or an operator token`,
  checkout: `Scripts of other sites may not call ${GROUP_BASE.checkout}; open the checkout page itself`,
  track: `Scripts of other sites may not call ${GROUP_BASE.track}; open the tracking page itself`,
  webhooks: `Browsers may not call ${GROUP_BASE.webhooks}; it is for the payment provider's servers`,
};

const browsersRefused = (group: RouteGroup) =>
  forbidden(
    BROWSERS_REFUSED[group] ??
      `Browsers may not call ${GROUP_BASE[group]}; call it from your server with your API key`,
  );

/**
 * The groups with no CORS of their own (the pages, the provider's webhook) refuse a browser's
 * preflight: moleculer-web routes a preflight as the call it asks about, so a preflight of
 * `POST /checkout/:reference/pay` paid the sandbox checkout, and one of a tracking page's
 * stream opened it.
 */
export function preflightsRefused(group: RouteGroup): Middleware {
  return (req, _res, next) => next(isPreflight(req) ? browsersRefused(group) : undefined);
}

/**
 * The routes without credentials (probes, the OpenAPI document, its page) have no CORS either:
 * a preflight of one ran its GET (readiness pinged every dependency) and answered it.
 */
export const opsPreflightsRefused: Middleware = (req, _res, next) =>
  next(
    isPreflight(req)
      ? forbidden(
          `Scripts of other sites may not call ${describeRequest(req).path}; fetch it from your server, or open it`,
        )
      : undefined,
  );

/**
 * `/file`'s answers to a page's calls are the page's to read, its refusals included (a 405, a
 * 401, a 429): set before anything may refuse. A preflight is `apiKeyGuard`'s to answer.
 */
export const fileAnswersReadable: Middleware = (req, res, next) => {
  const origin = req.headers.origin;
  if (origin && !isPreflight(req)) {
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS);
    res.setHeader('Vary', 'Origin');
  }
  next();
};

/**
 * `/api` and `/file`: CORS rules for the group, the key (failures throttled per client
 * address), what its kind may call, the quota, then the call runs as the key's user. Keys
 * created `serverOnly: false` are publishable: shipped in apps and web pages, they may call
 * `/file` only, from a browser or not; `/api` needs a server-only key.
 */
export function apiKeyGuard(group: RouteGroup, options: ApiKeyGuardOptions): Middleware {
  async function consumeQuota(key: ResolvedApiKey, res: ServerResponse) {
    const decision = await counted(options.quota, key.id, key.quota ?? options.config.quota, res);
    if (!decision.allowed) throw quotaExceeded();
  }

  const authenticate = (req: GatewayRequest) =>
    throttled(
      req,
      options,
      {
        credential: 'API key',
        sent: req.headers['api-key'],
        countedApart: group === 'file' && req.headers.origin !== undefined ? 'browsers' : undefined,
      },
      (beforeLookup) => options.authenticator().authenticate(req.headers['api-key'], beforeLookup),
    );

  return middleware(async (req, res) => {
    const origin = req.headers.origin;
    if (isPreflight(req)) {
      if (group !== 'file' || !origin) throw browsersRefused(group);
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
    const key = await authenticate(req);
    if (group === 'file' && origin) {
      if (key.serverOnly) {
        throw forbidden(
          'This API key is server-only; browser calls to /file need a key created with serverOnly: false',
        );
      }
    }
    if (group !== 'file' && !key.serverOnly) throw forbidden(PUBLISHABLE_KEY_REFUSED);
    await consumeQuota(key, res);
    if (req.$ctx) {
      req.$ctx.meta.user = authUserOf(key.user);
      req.$ctx.meta.apiKeyId = key.id;
      if (!key.serverOnly) req.$ctx.meta.publishableKey = true;
    }
  });
}

export interface TransferGuardOptions {
  leases: UploadLeases;
  /** FILE_MAX_UPLOADS_PER_KEY or FILE_MAX_DOWNLOADS_PER_KEY. */
  limit: number;
  /** FILE_MAX_UPLOADS_PER_USER or FILE_MAX_DOWNLOADS_PER_USER: across an account's keys. */
  userLimit: number;
  /** What is limited, as the 429 says it: `uploads` or `downloads`. */
  what: string;
}

/** The lease of one more transfer of `subject`, or the 429 that names who holds `limit`. */
async function leaseFor(
  options: TransferGuardOptions,
  subject: string,
  limit: number,
  /** Who holds `limit`, and how many they hold: `This API key already has`. */
  holderHas: string,
): Promise<UploadLease> {
  let lease;
  try {
    lease = await options.leases.acquire(subject, limit);
  } catch {
    throw quotaStoreUnavailable();
  }
  if (lease) return lease;
  throw tooManyRequests(
    `${holderHas} ${limit} ${options.what} in progress; wait for one to ` +
      `finish, or retry in ${FILE_RETRY_AFTER_SECONDS} seconds`,
    FILE_RETRY_AFTER_SECONDS,
  );
}

/**
 * Uploads or downloads (after `apiKeyGuard`): at most `limit` in progress per API key and
 * `userLimit` per account (whose many keys would otherwise take every slot of the file
 * service) across every gateway replica, else 429; an account's publishable keys hold a
 * `userLimit` of their own (`AllowanceShare`), so that a leaked one cannot hold its servers'. The leases are given back once the answer
 * is sent or the client has left, and the call is over; if this process dies first, they
 * expire on their own. A client gone by the time they are taken gets nothing started.
 */
export function transferGuard(options: TransferGuardOptions): Middleware {
  return middleware(async (req, res) => {
    const keyId = req.$ctx?.meta.apiKeyId;
    if (typeof keyId !== 'string') return;
    const keyLease = await leaseFor(options, keyId, options.limit, 'This API key already has');
    const userId = requestUserId(req.$ctx?.meta);
    let userLease: UploadLease | undefined;
    if (typeof userId === 'string') {
      const share = allowanceShareOf(userId, req.$ctx?.meta ?? {});
      try {
        userLease = await leaseFor(
          options,
          `user:${shareCounter(share)}`,
          options.userLimit,
          shareHolderHas(share),
        );
      } catch (err) {
        void keyLease.release();
        throw err;
      }
    }
    const release = () => Promise.all([keyLease.release(), userLease?.release()]);
    if (res.writableEnded || clientGone(res)) {
      void release();
      return true;
    }
    // Not before the call is over: it goes on after its client left (S3 answering a download,
    // a ticket being asked for) and takes a slot of the file service meanwhile, which must not
    // be held without its lease, or one key would hold more than `limit` of them.
    res.once('close', () => void aliasSettled(req).then(release));
  });
}

export interface CourierGuardOptions {
  config: Pick<Config, 'trustProxyHops' | 'courierQuota'>;
  authenticator: () => CourierTokenAuthenticator;
  authFailures: AuthFailureThrottle;
  quota: QuotaLimiter;
}

/** The 429 of a courier past COURIER_QUOTA_LIMIT. */
export const COURIER_QUOTA_EXCEEDED = (seconds: number) =>
  `Too many requests from this courier; retry in ${seconds} seconds (the app should report its position every few seconds, not faster)`;

/**
 * `/courier`: the courier app's `Authorization: Bearer <courier token>` (failures throttled
 * per client address, as for API keys), then the courier's quota (COURIER_QUOTA_LIMIT, counted
 * per courier whichever of its tokens, with the API's rate-limit headers; uncounted while Redis
 * cannot be reached), then the call runs as the token's courier.
 */
export function courierGuard(options: CourierGuardOptions): Middleware {
  return middleware(async (req, res) => {
    if (isPreflight(req)) throw browsersRefused('courier');
    const sent = req.headers.authorization;
    const courier = await throttled(
      req,
      options,
      { credential: 'courier token', sent },
      (beforeLookup) => options.authenticator().authenticate(sent, beforeLookup),
    );
    // Uncounted while Redis cannot be reached: a courier's steps matter more than the limit.
    await unlessUncountable(async () => {
      const subject = `courier:${courier.courierId}`;
      const decision = await counted(options.quota, subject, options.config.courierQuota, res);
      if (!decision.allowed) {
        throw tooManyRequests(COURIER_QUOTA_EXCEEDED(decision.resetSeconds), decision.resetSeconds);
      }
    });
    if (req.$ctx) req.$ctx.meta.courier = { id: courier.courierId, tokenId: courier.tokenId };
  });
}

export interface AdminGuardOptions {
  config: Pick<Config, 'trustProxyHops'>;
  authenticator: () => AdminAuthenticator;
  authFailures: AuthFailureThrottle;
}

/**
 * `/admin`: `Authorization: Bearer <ADMIN_TOKEN or an operator token>` (gateway/admin-auth),
 * its failures throttled per client address as API keys' are (`throttled`), counted apart
 * from API keys and courier tokens (guesses at those from the operator's address must not
 * shut the operator out), and operator tokens apart from ADMIN_TOKEN: their lookups are
 * counted before they are made and stay counted when the account service does not answer,
 * which must not shut out ADMIN_TOKEN, the way in while it is away. ADMIN_TOKEN, compared in
 * memory without a lookup, then waits on the count: the right one is refused once the failures
 * counted before it reach the limit, so that a right guess in a burst looks like the wrong
 * ones, while an operator's own burst of calls is never held back. An operator token this
 * gateway accepted lately (cached) is not held back: it cannot be guessed, and it was proven. While Redis is unreachable nothing is counted and the token is still
 * checked (the admin API is what an operator repairs things with), but no operator token is
 * looked up that this gateway has not accepted lately (503): made-up ones would be looked up
 * without limit. The call then runs as the operator (`RequestMeta.operator`), whom the access
 * log and the records it makes name.
 */
export function adminGuard(options: AdminGuardOptions): Middleware {
  const authFailures = uncountedWhileAway(options.authFailures);
  return middleware(async (req) => {
    if (isPreflight(req)) throw browsersRefused('admin');
    const header = req.headers.authorization;
    const apart = presentsOperatorToken(header) ? 'operators' : 'admin';
    const credential = apart === 'operators' ? 'operator token' : 'admin token';
    // Read now, as `throttled` does: once the client has left, its socket no longer knows it.
    const subject = countedAddress(clientAddress(req, options.config.trustProxyHops), apart);
    let lookedUp = false;
    const operator = await throttled(
      req,
      { config: options.config, authFailures },
      { credential, sent: header, countedApart: apart },
      (beforeLookup) =>
        options.authenticator().authenticate(header, async () => {
          lookedUp = true;
          await beforeLookup();
        }),
    );
    // An operator token accepted without a lookup was looked up before: 256 random bits,
    // it is no guess of a burst, and is let through as a cached API key is.
    if (!lookedUp && apart === 'admin') await authFailures.admit(subject, credential);
    if (req.$ctx) req.$ctx.meta.operator = operator;
  });
}

/**
 * Failed authentications counted, or nothing counted while their store is unreachable; but a
 * lookup is not made uncounted (503).
 */
function uncountedWhileAway(throttle: AuthFailureThrottle): FailureCount {
  return {
    countFailure: (address, credential) =>
      unlessUncountable(() => throttle.countFailure(address, credential)),
    countLookup: (address, credential) => throttle.countFailure(address, credential),
    forgive: (address) => throttle.forgive(address),
    admit: (address, credential) => unlessUncountable(() => throttle.admit(address, credential)),
  };
}

export interface PageThrottleOptions {
  config: Pick<Config, 'pageRequests' | 'trustProxyHops'>;
  limiter: QuotaLimiter;
}

/**
 * Requests of the pages anyone with a link may open (a tracking page and its stream, a
 * checkout page) per client address, counted in Redis across replicas: past
 * `PAGE_REQUEST_LIMIT` in a window they get 429 with `Retry-After`. No key's quota covers
 * them, and each costs reads and calls (a tracking page: its delivery, stops and courier).
 * While Redis cannot be reached they are served uncounted, as the pages matter more.
 */
export function pageThrottle({ config, limiter }: PageThrottleOptions): Middleware {
  return middleware(async (req) => {
    const address = clientAddress(req, config.trustProxyHops);
    await unlessUncountable(async () => {
      const decision = await limiter.consume(address, config.pageRequests);
      if (decision.allowed) return;
      throw tooManyRequests(
        `Too many requests from your address; retry in ${decision.resetSeconds} seconds`,
        decision.resetSeconds,
      );
    });
  });
}

/** Counts one request of `subject` against `quota`, its RateLimit headers set on `res`. */
async function counted(
  limiter: QuotaLimiter,
  subject: string,
  quota: Quota,
  res: ServerResponse,
): Promise<QuotaDecision> {
  const decision = await limiter.consume(subject, quota);
  for (const [name, value] of Object.entries(quotaHeaders(decision))) res.setHeader(name, value);
  return decision;
}

/** Counts, unless the count's store is unreachable (its 503): then nothing is counted. */
async function unlessUncountable(count: () => Promise<void>): Promise<void> {
  try {
    await count();
  } catch (err) {
    if (toHttpError(err).status !== 503) throw err;
  }
}
