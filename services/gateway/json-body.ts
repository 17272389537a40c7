import { isFields } from '../../libs/fields';
import { badRequest, unsupportedMediaType } from '../../libs/errors';
import { tooLarge } from './raw-body';
import type { Middleware } from './edge';
import { carriesBody, declaredLength, type GatewayRequest } from './http';

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

/**
 * Whether the body is typed JSON, as body-parser reads it: only spaces and tabs (HTTP's
 * whitespace, not JavaScript's `\s`, which holds U+00A0) may stand before the parameters.
 */
const isJsonType = (req: GatewayRequest) =>
  /^application\/json[ \t]*(;|$)/i.test(req.headers['content-type'] ?? '');

/** A `charset` parameter that names UTF-8 without its hyphen, as some clients send it. */
const UNHYPHENATED_UTF8 = /(;[ \t]*charset[ \t]*=[ \t]*)("?)utf8\2([ \t]*(;|$))/i;

/**
 * `charset=utf8` is read as the UTF-8 it means: body-parser takes only names that begin
 * `utf-`, and would refuse it as a charset that is not a UTF (415).
 */
function spellUtf8(req: GatewayRequest): void {
  const type = req.headers['content-type'];
  if (type && UNHYPHENATED_UTF8.test(type)) {
    req.headers['content-type'] = type.replace(UNHYPHENATED_UTF8, '$1$2utf-8$2$3');
  }
}

/** Whether the request says a JSON body comes with it (what body-parser would read). */
const declaresJsonBody = (req: GatewayRequest) => carriesBody(req) && isJsonType(req);

/** The methods whose body holds an operation's fields (a GET's and a DELETE's are its query). */
const FIELDS_IN_BODY = new Set(['POST', 'PUT', 'PATCH']);

export const NOT_JSON_BODY =
  'The body was not read: send it as JSON, with the header Content-Type: application/json';

const NOT_READ =
  'The request body could not be read: the connection closed before it was; send the request again';

/**
 * Follows the bytes of a request as they arrive, alongside whoever reads them: `onChunk` for
 * each, `onEnd` once the body ended, `onClose` when the connection closed before it did.
 * Returns the listeners' removal.
 */
function followBody(
  req: GatewayRequest,
  onChunk: (chunk: Buffer) => void,
  onEnd: () => void,
  onClose: () => void,
): () => void {
  const closed = () => {
    if (!req.readableEnded) onClose();
  };
  req.on('data', onChunk);
  req.once('end', onEnd);
  req.once('close', closed);
  return () => {
    req.off('data', onChunk);
    req.off('end', onEnd);
    req.off('close', closed);
  };
}

/**
 * `next`, called once whoever calls first (the parser, or a follower of the body's bytes),
 * after `stop` (the follower's listeners removed); `done` once it was.
 */
function settleOnce(
  next: (err?: unknown) => void,
  stop: () => void,
): ((err?: unknown) => void) & { done: boolean } {
  const settle = Object.assign(
    (err?: unknown) => {
      if (settle.done) return;
      settle.done = true;
      stop();
      next(err);
    },
    { done: false },
  );
  return settle;
}

/**
 * A chunked body of no declared type on an operation whose fields come in the body: read to
 * see whether it is empty (a client streaming a bodiless POST, passed) or not (415: it would
 * be passed over, and the operation run without its fields).
 */
function refuseUntypedBytes(req: GatewayRequest, next: (err?: unknown) => void): void {
  if (req.readableEnded) return next();
  // Its client gone while the credential was checked: no byte nor end will come.
  if (req.destroyed) return next(badRequest(NOT_READ));
  const settle = settleOnce(next, () => stop());
  const stop = followBody(
    req,
    (chunk) => {
      if (chunk.length > 0) settle(unsupportedMediaType(NOT_JSON_BODY));
    },
    () => settle(),
    () => settle(badRequest(NOT_READ)),
  );
}

/**
 * `parse` (body-parser, with a limit of `limitBytes`), with what it does not do:
 * - a body over `limitBytes` as sent is refused (413) as soon as that is known, from its
 *   `Content-Length` or its bytes as they arrive, not once body-parser has read it all to the
 *   end to throw it away (a chunked body could go on until Node's request timeout); one over
 *   it only once decoded is body-parser's 413, at its end;
 * - a body that is not JSON, or of an encoding the document does not state, is refused (415);
 * - a body that was never read is refused: body-parser passes over the body of a request whose
 *   connection is no longer readable (its client gone or half-closed while the credential was
 *   checked), and the call would then run with no params at all — an `Idempotency-Key` bound
 *   to an empty request, its retry with the real body refused.
 */
export function bodyArrived(parse: Middleware, limitBytes: number): Middleware {
  return (req, res, next) => {
    const encoding =
      String(req.headers['content-encoding'] ?? '')
        .trim()
        .toLowerCase() || 'identity';
    const declared = declaredLength(req);
    // A body of another type would be passed over, and the operation run without its fields
    // (an API key made server-only by default, from a body `curl -d` sent as a form).
    if (FIELDS_IN_BODY.has(req.method ?? '') && carriesBody(req) && !isJsonType(req)) {
      if (req.headers['content-type'] === undefined && declared === undefined) {
        return refuseUntypedBytes(req, next);
      }
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
    if (declaresJsonBody(req) && declared !== undefined && declared > limitBytes) {
      return next(tooLarge(limitBytes));
    }
    if (isJsonType(req)) spellUtf8(req);
    let stop = () => {};
    const settle = settleOnce(next, () => stop());
    parse(req, res, (err?: unknown) => {
      if (err) return settle(err);
      if ((req as GatewayRequest & { body?: unknown }).body !== undefined) return settle();
      if (!declaresJsonBody(req)) return settle();
      if (!req.complete || !req.socket?.readable) return settle(badRequest(NOT_READ));
      // Arrived whole, yet passed over as another type than this file reckons JSON: never run
      // without its fields.
      settle(
        FIELDS_IN_BODY.has(req.method ?? '') ? unsupportedMediaType(NOT_JSON_BODY) : undefined,
      );
    });
    // Counted beside body-parser, whose listeners came first in this same turn (nothing flows
    // before the next): it reads every byte, and refuses a body too large only at its end.
    if (declaresJsonBody(req) && declared === undefined && !settle.done) {
      let size = 0;
      stop = followBody(
        req,
        (chunk) => {
          size += chunk.length;
          if (size > limitBytes) settle(tooLarge(limitBytes));
        },
        () => undefined,
        () => undefined,
      );
    }
  };
}
