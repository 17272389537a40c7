import type { ServerResponse } from 'node:http';
import type { Logger } from 'moleculer';
import type { Config } from '../../libs/config';
import { forbidden, quotaExceeded, serviceUnavailable } from '../../libs/errors';
import type { RouteGroup } from '../../libs/service';
import { checkAdminToken } from './admin-auth';
import type { ResolvedApiKey } from '../../libs/contracts/account';
import type { ApiKeyAuthenticator } from './api-key-auth';
import { describeRequest, isPreflight, type GatewayRequest } from './http';
import { quotaHeaders, type QuotaLimiter } from './quota';
import { GROUP_BASE } from './routes';

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
  'RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After, X-Request-ID';

/** One structured `http` line per request, probes at debug level; each answer is measured. */
export function accessLog(
  logger: () => Logger,
  measure: (req: GatewayRequest, status: number, seconds: number) => void,
): Middleware {
  return (req, res, next) => {
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
        requestId: req.$ctx?.requestID,
      };
      if (path.startsWith('/health')) logger().debug('http', line);
      else logger().info('http', line);
      measure(req, res.statusCode, ms / 1000);
    });
    next();
  };
}

export interface ApiKeyGuardOptions {
  config: Pick<Config, 'quota'>;
  authenticator: () => ApiKeyAuthenticator;
  quota: QuotaLimiter;
}

/**
 * `/api` and `/file`: CORS rules for the group, the key, the quota, then the call runs as
 * the key's user. Browsers may call `/file` only with keys created `serverOnly: false`.
 */
export function apiKeyGuard(group: RouteGroup, options: ApiKeyGuardOptions): Middleware {
  async function consumeQuota(key: ResolvedApiKey, res: ServerResponse) {
    let decision;
    try {
      decision = await options.quota.consume(key.id, key.quota ?? options.config.quota);
    } catch {
      throw serviceUnavailable('The quota store is unavailable; retry in a few seconds');
    }
    for (const [name, value] of Object.entries(quotaHeaders(decision))) res.setHeader(name, value);
    if (!decision.allowed) throw quotaExceeded();
  }

  return middleware(async (req, res) => {
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
    const key = await options.authenticator().authenticate(req.headers['api-key']);
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
}

/** `/admin`: `Authorization: Bearer <ADMIN_TOKEN>`. */
export function adminGuard(adminToken: string | undefined): Middleware {
  return middleware(async (req) => {
    const header = req.headers.authorization;
    checkAdminToken(Array.isArray(header) ? header[0] : header, adminToken);
  });
}
