import { badRequest, payloadTooLarge } from '../../libs/errors';
import type { Middleware } from './edge';
import { declaredLength, type GatewayRequest } from './http';

/** What a raw body may weigh: a provider's notification is a few kilobytes. */
export const RAW_BODY_LIMIT_BYTES = 64 * 1024;

/** The 413 of a body past `limit` bytes, as sent or as decoded. */
export const tooLarge = (limit: number) =>
  payloadTooLarge(`Request body is too large; at most ${limit} bytes are accepted here`);

/**
 * `body: 'raw'` routes: the exact bytes of the body (a signature is computed over them, so
 * nothing may parse or re-encode them first), capped at `limit`, become the params
 * `{rawBody: <base64>, headers: {...the named headers}}`: plain JSON, safe across NATS.
 */
export function rawBodyReader(headerNames: string[], limit = RAW_BODY_LIMIT_BYTES): Middleware {
  return (req, _res, next) => {
    const declared = declaredLength(req);
    if (declared !== undefined && declared > limit) {
      req.resume();
      next(tooLarge(limit));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (err?: unknown) => {
      if (done) return;
      done = true;
      if (err) {
        next(err);
        return;
      }
      const headers: Record<string, string> = {};
      for (const name of headerNames) {
        const value = req.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }
      (req as GatewayRequest & { body?: unknown }).body = {
        rawBody: Buffer.concat(chunks).toString('base64'),
        headers,
      };
      next();
    };
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > limit) {
        req.resume();
        finish(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => finish());
    // The client went away mid-body (Node's `aborted`): a 400 of the request, as body-parser
    // types the same for JSON routes, not an error of ours.
    req.once('error', () =>
      finish(badRequest('The request was cut off before its body ended; send it whole')),
    );
  };
}
