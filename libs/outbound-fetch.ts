import { isFields } from './fields';

/**
 * Calling a server we do not run (a payment provider, an SMS gateway, OSRM, a geocoder): one
 * request with a deadline that covers the answer's body too, an answer read up to a byte cap,
 * and no redirect followed. Every failure comes back as a value saying what kind it was, so
 * each caller answers it as it answers any failed call (a 502/503/504, a retry, a fallback).
 *
 * A webhook receiver is called with `node:http` instead (services/webhook/poster.ts): its
 * connection needs the SSRF-checking `lookup`, which fetch cannot take. It too follows no
 * redirect, says so with `redirectNotFollowed`, and reads only an excerpt of the answer.
 */

/** Longest server text quoted in a failure reason, so one bad answer cannot flood a log. */
const MAX_QUOTED_CHARS = 200;

export function quote(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > MAX_QUOTED_CHARS ? `${flat.slice(0, MAX_QUOTED_CHARS)}...` : flat;
}

/** `: <quoted text>`, or nothing for an empty body. */
export const quoted = (text: string): string => (text.trim() ? `: ${quote(text)}` : '');

/**
 * A redirect is never followed: the configured server answers itself, and a redirect could
 * send the request (a secret key in its header or body, the text geocoded) anywhere, an
 * address inside our network included, past every check of the URL. A 3xx is a failure.
 */
export const isRedirect = (status: number) => status >= 300 && status <= 399;

/** Why a 3xx is a failure, naming where it pointed. */
export const redirectNotFollowed = (status: number, location: string | null | undefined) =>
  `HTTP ${status}: redirect not followed${location ? ` (to ${quote(location)})` : ''}`;

/**
 * Where a redirect of a call to `url` points, as a failure logged on our side names it: its
 * server alone. Its path and query may carry what was asked (an address geocoded, a person's
 * point routed), and the logs are no place for those.
 */
export function redirectServer(url: string, location: string | null): string | null {
  if (!location) return null;
  try {
    const { origin } = new URL(location, url);
    // `null` for a URL with no server (`mailto:`, `data:`): said as what it is.
    return origin === 'null' ? 'an address that names no server' : origin;
  } catch {
    return 'an unreadable address';
  }
}

/**
 * fetch hides the socket error (ECONNREFUSED, ENOTFOUND...) in `cause`. Duck-typed, not
 * `instanceof`: fetch's errors and DOMException may come from another realm (jest's vm).
 */
function describeFetchError(err: unknown, timeoutMs: number): Failed {
  if (!isFields(err)) return unreachable(`request failed: ${String(err)}`);
  if (err.name === 'TimeoutError') {
    return { ok: false, failure: 'timeout', reason: `timed out after ${timeoutMs} ms` };
  }
  const cause = err.cause;
  if (isFields(cause) && typeof cause.code === 'string') {
    return unreachable(`request failed: ${cause.code}`);
  }
  return unreachable(
    `request failed: ${typeof err.message === 'string' ? err.message : String(err)}`,
  );
}

const unreachable = (reason: string): Failed => ({ ok: false, failure: 'unreachable', reason });

/**
 * Why there is no answer to use. `unreachable`: no connection, or it broke before the answer
 * was read; `timeout`: none within the deadline; `redirect`: a 3xx; `too-large`: an answer
 * over the cap (`status` says which answer it was).
 */
export type Failed =
  | { ok: false; failure: 'unreachable' | 'timeout'; reason: string }
  | { ok: false; failure: 'redirect' | 'too-large'; reason: string; status: number };

/** An answer read whole (or its first `maxAnswerBytes` with `overLimit: 'cut'`), or why not. */
export type Fetched = { ok: true; status: number; text: string } | Failed;

export interface OutboundRequest {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** Budget of the whole call, body included. */
  timeoutMs: number;
  /** Largest answer body read, in bytes. */
  maxAnswerBytes: number;
  /**
   * `fail` (the default): a larger answer is a `too-large` failure, refused on its
   * Content-Length before reading when it declares one. `cut`: its first `maxAnswerBytes` are
   * the text, for a caller that needs only the status and an excerpt to quote.
   */
  overLimit?: 'fail' | 'cut';
  /**
   * Whether the body of an answer with this status is read; when not, it is dropped unread
   * and the text is empty (a caller that needs nothing of a success but its status: a body
   * sent slowly then cannot turn a success into a timeout). Every body is read unless told.
   */
  readsBody?: (status: number) => boolean;
}

/**
 * The body read chunk by chunk up to `maxBytes`, whatever Content-Length said (a server may
 * send none, or lie); `over` when more came, which is then never received.
 */
async function readCapped(body: ReadableStream<Uint8Array>, maxBytes: number) {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { text: Buffer.concat(chunks).toString('utf8'), over: false };
    if (size + value.byteLength > maxBytes) {
      chunks.push(value.subarray(0, maxBytes - size));
      // Closes the connection: the rest of the answer is never received.
      await reader.cancel().catch(() => undefined);
      return { text: Buffer.concat(chunks).toString('utf8'), over: true };
    }
    size += value.byteLength;
    chunks.push(value);
  }
}

/** One call to a server we do not run. Never throws. */
export async function fetchOutbound(url: string, request: OutboundRequest): Promise<Fetched> {
  const { timeoutMs, maxAnswerBytes: maxBytes } = request;
  const cut = request.overLimit === 'cut';
  try {
    // The signal also bounds reading the body, not only the headers.
    const response = await fetch(url, {
      method: request.method ?? 'GET',
      headers: request.headers,
      body: request.body,
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'manual',
    });
    const { status } = response;
    if (isRedirect(status)) {
      await response.body?.cancel();
      const reason = redirectNotFollowed(
        status,
        redirectServer(url, response.headers.get('location')),
      );
      return { ok: false, failure: 'redirect', reason, status };
    }
    if (request.readsBody && !request.readsBody(status)) {
      await response.body?.cancel();
      return { ok: true, status, text: '' };
    }
    const tooLarge = `HTTP ${status}: answer over the ${maxBytes}-byte limit`;
    const declared = Number(response.headers.get('content-length') ?? 0);
    if (!cut && declared > maxBytes) {
      await response.body?.cancel();
      const reason = `${tooLarge} (Content-Length ${declared})`;
      return { ok: false, failure: 'too-large', reason, status };
    }
    const read = response.body ? await readCapped(response.body, maxBytes) : undefined;
    if (read?.over && !cut) return { ok: false, failure: 'too-large', reason: tooLarge, status };
    return { ok: true, status, text: read?.text ?? '' };
  } catch (err) {
    return describeFetchError(err, timeoutMs);
  }
}
