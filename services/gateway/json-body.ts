import { isFields } from '../../libs/fields';
import { badRequest, unsupportedMediaType } from '../../libs/errors';
import type { Middleware } from './edge';
import { carriesBody, type GatewayRequest } from './http';

/**
 * Parsed JSON bodies are cleaned before anything reads them. JSON.parse makes `"__proto__"`
 * an own key, which moleculer-web's `Object.assign` of the params then turns into the
 * params' prototype (a body could stand in for its fields in one process and not over NATS),
 * and deep nesting overflows any recursive reader. A reviver cannot do this: V8 revives
 * recursively, so it overflows on the very bodies it should refuse.
 */

/** Deepest nesting of objects and arrays accepted; the body itself is level 1. */
export const MAX_JSON_DEPTH = 400;

/** Keys that name prototype machinery: no field of ours is called so, and none may reach a service. */
export const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype'];

/**
 * Removes the prototype keys at every depth, in place, and refuses (400) a value nested
 * deeper than `maxDepth`, or a number JSON.parse read as Infinity (`1e400`): sent to another
 * node it becomes `null`, which a nullable field takes with another meaning (a courier rule's
 * radius, "any distance"). Iterative, so no nesting overflows it; linear in the value's size.
 */
export function cleanJsonBody(value: unknown, maxDepth = MAX_JSON_DEPTH): void {
  const pending: [object, number][] = [];
  const visit = (child: unknown, depth: number) => {
    if (child !== null && typeof child === 'object') pending.push([child, depth]);
    else if (typeof child === 'number' && !Number.isFinite(child)) {
      throw badRequest(
        'The JSON body holds a number too large to read; send numbers within ±1.7976931348623157e308',
      );
    }
  };
  visit(value, 1);
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [node, depth] = next;
    if (depth > maxDepth) {
      throw badRequest(
        `The JSON body is nested more than ${maxDepth} levels deep; send at most ${maxDepth} levels of objects and arrays`,
      );
    }
    if (!Array.isArray(node)) {
      for (const key of PROTOTYPE_KEYS) {
        if (Object.hasOwn(node, key)) delete (node as Record<string, unknown>)[key];
      }
    }
    for (const child of Object.values(node)) visit(child, depth + 1);
  }
}

/**
 * Refuses (400) a JSON body that is not an object: an operation's fields are the keys of one
 * object, as the document says (`type: object`). An array would otherwise become no fields at
 * all, and a number, a string or null would be read as nothing.
 */
export function refuseNonObject(body: unknown): void {
  if (body === undefined || isFields(body)) return;
  const sent = Array.isArray(body) ? 'an array' : body === null ? 'null' : `a ${typeof body}`;
  throw badRequest(
    `The JSON body must be an object of the operation's fields, like {"name": "..."}; got ${sent}`,
  );
}

/** The middleware of JSON routes: runs after the body parser, before the params are built. */
export const jsonBodyGuard: Middleware = (req, _res, next) => {
  try {
    const { body } = req as GatewayRequest & { body?: unknown };
    refuseNonObject(body);
    cleanJsonBody(body);
    next();
  } catch (err) {
    next(err);
  }
};

/** The `Content-Encoding`s of a JSON body docs/api-conventions.md states (415 for others). */
const JSON_BODY_ENCODINGS = new Set(['identity', 'gzip', 'deflate', 'br']);

const isJsonType = (req: GatewayRequest) =>
  /^application\/json\s*(;|$)/i.test(req.headers['content-type'] ?? '');

/** Whether the request says a JSON body comes with it (what body-parser would read). */
const declaresJsonBody = (req: GatewayRequest) => carriesBody(req) && isJsonType(req);

/** The methods whose body holds an operation's fields (a GET's and a DELETE's are its query). */
const FIELDS_IN_BODY = new Set(['POST', 'PUT', 'PATCH']);

export const NOT_JSON_BODY =
  'The body was not read: send it as JSON, with the header Content-Type: application/json';

/**
 * `parse` (body-parser), refusing a body that was never read: body-parser passes over the body
 * of a request whose connection is no longer readable (its client gone or half-closed while the
 * credential was checked), and the call would then run with no params at all — an
 * `Idempotency-Key` bound to an empty request, its retry with the real body refused.
 */
export function bodyArrived(parse: Middleware): Middleware {
  return (req, res, next) => {
    const encoding =
      String(req.headers['content-encoding'] ?? '')
        .trim()
        .toLowerCase() || 'identity';
    // A body of another type would be passed over, and the operation run without its fields
    // (an API key made server-only by default, from a body `curl -d` sent as a form). A chunked
    // body of no declared type may be empty (a client streaming a bodiless POST): passed.
    const typed = req.headers['content-type'] !== undefined;
    const sentBody = Number(req.headers['content-length']) > 0 || (typed && carriesBody(req));
    if (FIELDS_IN_BODY.has(req.method ?? '') && sentBody && !isJsonType(req)) {
      return next(unsupportedMediaType(NOT_JSON_BODY));
    }
    // What the document states (415 otherwise), whatever else this Node's parser would inflate.
    if (declaresJsonBody(req) && !JSON_BODY_ENCODINGS.has(encoding)) {
      return next(
        unsupportedMediaType(
          'Unsupported content encoding; send the body in gzip, deflate or br, or without one',
        ),
      );
    }
    return parse(req, res, (err?: unknown) => {
      if (err) return next(err);
      const unread =
        (req as GatewayRequest & { body?: unknown }).body === undefined &&
        declaresJsonBody(req) &&
        (!req.complete || !req.socket?.readable);
      if (unread) {
        return next(
          badRequest(
            'The request body could not be read: the connection closed before it was; send the request again',
          ),
        );
      }
      next();
    });
  };
}
