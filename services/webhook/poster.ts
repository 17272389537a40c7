import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import {
  checkTargetUrl,
  guardedLookup,
  noPublicAddressNow,
  redirectForOwner,
  type OutboundPolicy,
  type Resolver,
} from '../../libs/outbound-url';
import { isRedirect, redirectNotFollowed } from '../../libs/outbound-fetch';
import { attemptError, EXCERPT_BYTES, excerpt } from './dispatch-rules';

/** What one POST to an endpoint gave: a status (any) or the reason there was none. */
export interface PostResult {
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  responseExcerpt: string | null;
}

export interface PostInput {
  url: string;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
  policy: OutboundPolicy;
  /** How the URL's host is looked up (the endpoint owner's turn, `OwnerLookups`). */
  resolve?: Resolver;
}

/**
 * POSTs a message. The URL is checked again here and every address its name resolves to is
 * checked at connection (`guardedLookup`): a name that pointed to a public address at
 * registration and to a private one now (DNS rebinding) is refused. Redirects are not followed
 * (a 3xx is a failure naming where it pointed), and at most an excerpt of the answer is read.
 */
export function post(input: PostInput): Promise<PostResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const checked = checkTargetUrl(input.url, input.policy);
  if (!checked.ok) {
    return Promise.resolve({
      statusCode: null,
      error: checked.reason,
      durationMs: 0,
      responseExcerpt: null,
    });
  }
  const url = checked.url;
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<PostResult>((resolve) => {
    let settled = false;
    const finish = (result: Omit<PostResult, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...result, durationMs: elapsed() });
    };
    /** The answer's status once its head came, and its excerpt so far. */
    let answered: { statusCode: number | null; excerptOf: () => string } | undefined;
    const req = send(
      url,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(input.body)),
          'user-agent': 'Waybill-Webhooks/1',
          ...input.headers,
        },
        lookup: guardedLookup(input.policy, input.resolve),
      },
      (res) => {
        const statusCode = res.statusCode ?? null;
        if (statusCode !== null && isRedirect(statusCode)) {
          // node:http follows no redirect (the next URL is one the SSRF checks never saw);
          // where it pointed (its query left out) is all the attempt keeps, as its error.
          res.destroy();
          const { location } = res.headers;
          const to = location ? redirectForOwner(input.url, location) : null;
          const error = attemptError(redirectNotFollowed(statusCode, to));
          finish({ statusCode, error, responseExcerpt: null });
          return;
        }
        const excerptOf = readExcerpt(res, (text) =>
          finish({ statusCode, error: null, responseExcerpt: text }),
        );
        answered = { statusCode, excerptOf };
      },
    );
    // One deadline for the whole exchange: connection, upload and answer. An answer whose
    // status came in time counts by its status, its body cut there: a 2xx sent slowly was
    // taken in, and sending it again would only make a duplicate.
    const timer = setTimeout(() => {
      req.destroy();
      if (answered) {
        const { statusCode, excerptOf } = answered;
        finish({ statusCode, error: null, responseExcerpt: excerptOf() });
        return;
      }
      finish({
        statusCode: null,
        error: `no answer within ${input.timeoutMs} ms`,
        responseExcerpt: null,
      });
    }, input.timeoutMs);
    req.on('error', (err: NodeJS.ErrnoException) => {
      finish({ statusCode: null, error: describeFailure(err), responseExcerpt: null });
    });
    req.end(input.body);
  });
}

/**
 * Reads the first bytes of the answer (an excerpt) and no more: once one byte past
 * `EXCERPT_BYTES` came (enough to tell that it was cut) the connection is closed, so a
 * receiver cannot keep the attempt (and a dispatcher's slot) busy streaming until the deadline.
 * Each byte kept is at least one byte of the excerpt (an undecodable one three, as U+FFFD).
 * Answers what came so far, for an answer the deadline cuts.
 */
function readExcerpt(res: IncomingMessage, done: (text: string) => void): () => string {
  const kept: Buffer[] = [];
  let size = 0;
  const soFar = () => excerpt(Buffer.concat(kept).toString('utf8'));
  const end = () => done(soFar());
  res.on('data', (chunk: Buffer) => {
    if (size > EXCERPT_BYTES) return;
    const part = chunk.subarray(0, EXCERPT_BYTES + 1 - size);
    kept.push(part);
    size += part.length;
    if (size > EXCERPT_BYTES) {
      end();
      res.destroy();
    }
  });
  res.on('end', end);
  res.on('error', end);
  return soFar;
}

/** Name errors that would tell which names exist in our network (see `noPublicAddressNow`). */
const NAME_ERRORS = new Set(['EUNSAFETARGET', 'ENOTFOUND', 'EAI_AGAIN', 'ENODATA']);

export function describeFailure(err: NodeJS.ErrnoException & { hostname?: string }): string {
  if (err.code && NAME_ERRORS.has(err.code) && err.hostname && isIP(err.hostname) === 0) {
    return attemptError(noPublicAddressNow(err.hostname));
  }
  return attemptError(err.code ? `${err.code}: ${err.message}` : err.message);
}
