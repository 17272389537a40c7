import type { ServerResponse } from 'node:http';
import { Errors } from 'moleculer';
import { badRequest, UNDECODABLE_BODY, validationError, type FieldError } from '../../libs/errors';
import { clipForJson } from '../../libs/text';
import { bodyLetGo } from '../../libs/transfer';
import type { Middleware } from './edge';
import type { GatewayRequest } from './http';
import { isFields } from '../../libs/fields';
import { templateCandidates } from './routes';

/**
 * How moleculer-web finds the alias of a request and runs its route, replaced for the
 * gateway's routes: the same results, without the work moleculer-web does on every request
 * for options the gateway does not use (docs/performance.md, session 19).
 */

/** A moleculer-web alias, as far as routing reads it. */
export interface WebAlias {
  method: string;
  /** The route's path and the alias's, without a trailing slash: `/api/package/:packageId`. */
  fullPath: string;
  isMethod(method: string): boolean;
  /** The path's params, or false when the alias does not match it. */
  match(url: string): Record<string, string> | false;
}

export interface FoundAlias<Alias extends WebAlias = WebAlias> {
  alias: Alias;
  params: Record<string, string>;
  /**
   * A path param that is not percent-encoded UTF-8 (`%E0%A4%A`): refused once the route's
   * middlewares ran, so that it is logged, counted and authenticated as any other 400.
   */
  undecodable?: string;
}

/** moleculer-web's `match` throws this for a path param `decodeURIComponent` refuses. */
const UNDECODABLE_PARAM = 'UNABLE_DECODE_PARAM';

function matchOf<Alias extends WebAlias>(alias: Alias, url: string): FoundAlias<Alias> | false {
  try {
    const params = alias.match(url);
    return params && { alias, params };
  } catch (err) {
    const { type, data } = err as { type?: unknown; data?: { param?: unknown } };
    if (type !== UNDECODABLE_PARAM) throw err;
    return { alias, params: {}, undecodable: String(data?.param ?? '') };
  }
}

/** The 400 of a path param that is not percent-encoded UTF-8. */
export const undecodablePathParam = (raw: string) =>
  badRequest(
    `The path's ${clipForJson(raw, 100)} is not percent-encoded UTF-8: encode each path segment with encodeURIComponent`,
  );

/** Only plain templates are filed by their segments: a `:param` is one segment, the rest literal. */
const PLAIN_TEMPLATE = /^[\w\-.~/:]*$/;

/**
 * moleculer-web's `resolveAlias`: the first alias, in moleculer-web's order, with the method
 * that matches the path. moleculer-web tests every alias in turn (some 40 for a GET, about 1
 * µs a request); this tests only those `templateCandidates` files with the path, each by
 * moleculer-web's own `match`. The index is made again whenever moleculer-web's list of
 * aliases is replaced or grows; with a template it cannot file, every alias is tested.
 */
export function aliasResolver<Alias extends WebAlias>(): (
  aliases: Alias[],
  url: string,
  method?: string,
) => FoundAlias<Alias> | false {
  let indexed: { aliases: Alias[]; length: number; candidates?: (path: string) => Alias[] };
  return (aliases, url, method = 'GET') => {
    if (indexed?.aliases !== aliases || indexed.length !== aliases.length) {
      indexed = {
        aliases,
        length: aliases.length,
        candidates: aliases.every((alias) => PLAIN_TEMPLATE.test(alias.fullPath))
          ? templateCandidates(aliases)
          : undefined,
      };
    }
    for (const alias of indexed.candidates?.(url) ?? aliases) {
      if (!alias.isMethod(method)) continue;
      const found = matchOf(alias, url);
      if (found) return found;
    }
    return false;
  };
}

/** What the route handler reads of a moleculer-web route. */
export interface WebRoute {
  middlewares: Middleware[];
  /** The route's base (`/api`), which moleculer-web matches as a bare string prefix. */
  path?: string;
}

/**
 * Whether the request only shares the route's base as text (`/apix` under `/api`): moleculer-web
 * matches routes by `startsWith`, and would run the route's guards (a 401 without a key) for a
 * path that is not under it. Such a request is the root route's (`/`, logged and measured as
 * every request is), which has no alias for it: a 404.
 */
export function outsideRoute(route: WebRoute, req: GatewayRequest): boolean {
  const base = route.path ?? '';
  if (base === '' || base.endsWith('/')) return false;
  const next = (req.parsedUrl ?? req.originalUrl ?? '').charAt(base.length);
  return next !== '' && next !== '/' && next !== '?';
}

/** What the route handler calls back into: moleculer-web's own `aliasHandler`, its routes. */
export interface RoutingService<Alias> {
  aliasHandler(req: GatewayRequest, res: ServerResponse, alias: Alias): Promise<unknown>;
  routes?: WebRoute[];
  /** Whether the request's alias (`req.$alias`) is a page a link opens. */
  isLinkedPage?(req: GatewayRequest): boolean;
}

/** An error passed to `next`, as moleculer-web hands it on: always a MoleculerError. */
export function asMoleculerError(err: unknown): Errors.MoleculerError {
  if (err instanceof Errors.MoleculerError) return err;
  if (err instanceof Error) {
    const { code, status, type } = err as Error & {
      code?: number | string;
      status?: number;
      type?: string;
    };
    // body-parser types its own errors; an untyped 400 of its with a string code is its
    // decompression stream's (zlib's `Z_DATA_ERROR`, brotli's `ERR__ERROR_FORMAT_…`): the body
    // is not what its Content-Encoding says. The string code is no status.
    const numeric = typeof code === 'number' ? code : undefined;
    const named =
      type ?? (status === 400 && typeof code === 'string' ? UNDECODABLE_BODY : undefined);
    // moleculer takes a missing code as 500 and keeps a missing type missing (its type says string).
    return new Errors.MoleculerError(err.message, numeric || status || 500, named as string);
  }
  return new Errors.MoleculerError(String(err));
}

/** Methods without a body: their fields are the query string's (the document's `in: query`). */
const QUERY_METHODS = new Set(['GET', 'HEAD', 'DELETE']);

const fieldsOf = (value: unknown): Record<string, unknown> => (isFields(value) ? value : {});

/**
 * An action's params from where the document places its fields: the body of a POST, PUT or
 * PATCH, the query string of a GET or DELETE, beside the path's params. A field sent in the
 * other place, or named like a path param (which the path already gives), is refused (400
 * naming each), as an unknown field is: the document lists no query parameters on an operation
 * with a body, and no path param in a body (`additionalProperties: false`). moleculer-web's
 * `Object.assign` of body, query and path took them all, a query's value over the body's.
 */
export function paramsOf(
  method: string | undefined,
  body: unknown,
  query: unknown,
  pathParams: Record<string, string>,
  linkedPage = false,
): Record<string, unknown> {
  const inQuery = QUERY_METHODS.has(method ?? 'GET');
  // A page's link may carry anything in its query (a payment's redirect adds `reference=`):
  // the path's own value stands, as the page ignores what else the link carries.
  const pathWins = linkedPage && inQuery;
  const sent = fieldsOf(inQuery ? query : body);
  const where = inQuery ? 'the query string' : 'the body';
  const elsewhere = inQuery ? 'the body' : 'the query string';
  const problems: FieldError[] = [
    ...Object.keys(fieldsOf(inQuery ? body : query)).map((field) => ({
      field,
      message: `${field} is not allowed in ${elsewhere}; send it in ${where}`,
    })),
    ...Object.keys(sent)
      .filter((field) => !pathWins && Object.hasOwn(pathParams, field))
      .map((field) => ({
        field,
        message: `${field} is in the path; leave it out of ${where}`,
      })),
  ];
  if (problems.length > 0) {
    throw validationError(problems);
  }
  return { ...sent, ...pathParams };
}

/**
 * Settles (never rejects) once the alias called for `req` has settled, and an action of this
 * process that took its body is done with it (`bodyLetGo`: a call that timed out goes on); at
 * once when none was called. What a middleware holds for the call (a transfer's lease) waits
 * for it: a call goes on after its client has left, and what it takes meanwhile must stay
 * counted.
 */
export function aliasSettled(req: GatewayRequest): Promise<void> {
  const letGo = () => bodyLetGo(req);
  return Promise.resolve(req.$called).then(letGo, letGo);
}

/**
 * moleculer-web's `routeHandler`, for routes that call declared aliases only (`mappingPolicy:
 * restrict`), take the params from where the document places them (`paramsOf`) and leave CORS
 * to our middlewares, as every gateway route does (route-table): the route's middlewares in
 * turn, then the alias with its params. Settled when the alias has answered, or when the answer is
 * sent by a middleware or an alias that does not call back. moleculer-web's own also logs the
 * alias on every request, at debug level but formatted whatever the level, and composes the
 * middlewares into a promise of their own.
 */
export function routeHandler<Alias extends WebAlias>(
  this: RoutingService<Alias>,
  _ctx: unknown,
  route: WebRoute,
  req: GatewayRequest & { $route?: WebRoute; body?: unknown; query?: Record<string, unknown> },
  res: ServerResponse & { $route?: WebRoute },
  found?: FoundAlias<Alias>,
): Promise<unknown> {
  req.$route = route;
  res.$route = route;
  if (outsideRoute(route, req)) {
    const root = this.routes?.find((r) => r.path === '/' || r.path === '');
    if (!root || root === route) return Promise.resolve(null);
    req.url = req.originalUrl ?? req.url;
    return routeHandler.call(this, _ctx, root, req, res);
  }
  return new Promise((resolve, reject) => {
    res.once('finish', () => resolve(true));
    res.once('close', () => resolve(true));
    res.once('error', reject);
    const { middlewares } = route;
    const next = (index: number, err?: unknown): void => {
      if (err) return reject(asMoleculerError(err));
      if (index < middlewares.length) {
        middlewares[index].call(this, req, res, (failed?: unknown) => next(index + 1, failed));
        return;
      }
      if (!found) return resolve(null);
      if (found.undecodable !== undefined) return reject(undecodablePathParam(found.undecodable));
      req.$alias = found.alias;
      try {
        const linked = this.isLinkedPage?.(req) ?? false;
        req.$params = paramsOf(req.method, req.body, req.query, found.params, linked);
      } catch (refused) {
        return reject(refused);
      }
      req.$called = this.aliasHandler(req, res, found.alias);
      req.$called.then(resolve, reject);
    };
    try {
      next(0);
    } catch (err) {
      reject(err);
    }
  });
}
