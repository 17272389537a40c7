import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Answering } from '../../libs/answering';

/** The request as moleculer-web hands it to our hooks. */
export interface GatewayRequest extends IncomingMessage {
  originalUrl?: string;
  /** The path moleculer-web matches aliases against: no query, no trailing slash. */
  parsedUrl?: string;
  $ctx?: { meta: Record<string, unknown>; requestID?: string | null };
  /** The matched alias: its action and its path template (`/api/package/:packageId`). */
  $alias?: { action?: string; fullPath?: string };
  /** Path, query and body params moleculer-web merged (what a function alias reads). */
  $params?: Record<string, unknown>;
  /** The service endpoint moleculer-web resolved for the alias. */
  $endpoint?: { local?: boolean; id?: string; action?: { name?: string } };
  /** The alias's call, once made (web-routing's `aliasSettled` waits for it). */
  $called?: Promise<unknown>;
  /** What `describeRequest` found for the URL it read (`raw`). */
  $description?: { raw: string; described: RequestDescription };
}

/** The action the matched alias calls (`package.save`), stream aliases included; '' for none. */
/** The user a request's credential authenticated (`apiKeyGuard`), if any. */
export const requestUserId = (meta: Record<string, unknown> | undefined): string | undefined =>
  (meta?.user as { id?: string } | undefined)?.id;

export function aliasAction(req: GatewayRequest): string {
  return req.$alias?.action?.replace(/^stream:/, '') ?? '';
}

export interface RequestDescription {
  method: string;
  path: string;
  url: string;
}

/**
 * A path that `new URL` would give back unchanged: no dot segments, escapes or backslashes
 * to normalise, and not `//host` (which a base URL reads as a host). Most requests' paths
 * are such, and parsing a URL was a measurable part of a request's cost.
 */
const PLAIN_PATH = /^\/(?!\/)[\w\-~/]*$/;

/** The path of a request URL as `new URL` reads it, without its query. */
export function requestPath(raw: string): string {
  const path = raw.split('?')[0] || '/';
  if (PLAIN_PATH.test(path)) return path;
  try {
    return new URL(raw, 'http://x').pathname;
  } catch {
    return path; // only echoed back
  }
}

/**
 * `path` and `url` of the error envelope: the path without query, and the full URL. Described
 * once per request URL (the access log, the method check, the metrics and errors all ask) and
 * kept on the request itself. A plain object: a getter in this literal (to build the URL only
 * for an error) made V8 give every description its own shape, and cost the gateway some 14 µs
 * a request (docs/performance.md, session 18).
 */
export function describeRequest(req: GatewayRequest): RequestDescription {
  const raw = req.originalUrl ?? req.url ?? '/';
  const known = req.$description;
  if (known?.raw === raw) return known.described;
  const described = {
    method: req.method ?? 'GET',
    path: requestPath(raw),
    url: requestUrl(req, raw),
  };
  req.$description = { raw, described };
  return described;
}

/** The tracking id or checkout reference a page's path starts with (routes match any case). */
const CAPABILITY_IN_PATH = /^\/(track|checkout)\/[^/]+/i;
const HIDDEN: Record<string, string> = { track: ':trackingId', checkout: ':reference' };

/**
 * The request as logged: a tracking id or a checkout reference in a page's path is the key to
 * what it names (whoever holds it reads the page), and logs are read by more people than may
 * hold one; the log says which page, not which delivery's. The URL is the origin and the path
 * as logged, without the query, which may name people (`?email=`), a file's key (`?after=`) or
 * a page's capability again (a raw path such as `/./track/<id>` is not kept either).
 */
export function describeForLog(req: GatewayRequest): RequestDescription {
  const described = describeRequest(req);
  const path = described.path.replace(
    CAPABILITY_IN_PATH,
    (_, page: string) => `/${page}/${HIDDEN[page.toLowerCase()]}`,
  );
  const { url } = described;
  const origin = url.slice(0, url.indexOf('/', url.indexOf('://') + 3));
  return { ...described, path, url: `${origin}${path}` };
}

function requestUrl(req: GatewayRequest, raw: string): string {
  const forwardedProto = String(req.headers['x-forwarded-proto'] ?? '')
    .split(',')[0]
    .trim();
  const proto = forwardedProto === 'https' ? 'https' : 'http';
  return `${proto}://${req.headers.host ?? 'localhost'}${raw}`;
}

/**
 * A JSON answer. Never stored by a cache on the way or in the browser (answers carry API keys
 * as they are created, webhook secrets, recipients' contacts) and never read as anything but
 * JSON.
 */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  sendSerializedJson(res, status, JSON.stringify(body));
}

/** `sendJson` of a body serialized already (one kept for every request, as the OpenAPI document). */
export function sendSerializedJson(res: ServerResponse, status: number, payload: string): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Length', Buffer.byteLength(payload));
  res.end(payload);
}

const cutStatuses = new WeakMap<ServerResponse, number>();

/**
 * Ends an answer already under way that this gateway cannot finish (its source failed after
 * the headers went out): the connection is closed, and the access log and the metrics record
 * `status` for it, not the 499 of a client that left.
 */
export function cutAnswer(res: ServerResponse, status: number): void {
  answeredElsewhere(res, status);
  res.destroy();
}

/**
 * The response was answered `status` on its socket, past it (Node refused the request
 * midway: `clientError`): the access log and the metrics record that, not a 499.
 */
export function answeredElsewhere(res: ServerResponse, status: number): void {
  if (!res.writableFinished) cutStatuses.set(res, status);
}

/**
 * The status recorded for an answer ended elsewhere than by its own `end` (`cutAnswer`,
 * `answeredElsewhere`); undefined for any other.
 */
export const cutStatus = (res: ServerResponse): number | undefined => cutStatuses.get(res);

/** `Content-Length` as a number, or undefined when the request has none. */
export function declaredLength(req: IncomingMessage): number | undefined {
  const header = req.headers['content-length'];
  return header === undefined ? undefined : Number(header);
}

/** Whether the request says a body comes with it. */
export const carriesBody = (req: IncomingMessage) =>
  req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length']) > 0;

/**
 * How long the rest of a body refused before it was read may go on arriving once the refusal
 * is out: enough for a client that sends its body whole before it reads the answer to send a
 * few megabytes more (cut at once, its connection's reset could lose it the answer), not for
 * one that goes on sending, holding the connection without a lease, for as long as it likes.
 */
export const UNREAD_BODY_GRACE_MS = 10_000;

/**
 * A request that sent `Expect: 100-continue` is told to send its body once something starts to
 * read it, not as its headers arrive (Node's way): one refused on them (its key, a quota, a
 * declared size, an upload cap) is answered before its client sends the body it would throw
 * away (RFC 9110, 10.1.1). Node closes the connection after such an answer; a client that
 * sends the body all the same (curl does after a second of waiting) has it read and passed
 * over for `UNREAD_BODY_GRACE_MS`, its connection closed gently: closed at once, with its
 * bytes unread, the connection is reset, and the client may lose the answer with it.
 */
export function continueOnRead(req: IncomingMessage, res: ServerResponse): void {
  let continued = false;
  const onListener = (event: string | symbol) => {
    if (event !== 'data' && event !== 'readable') return;
    req.off('newListener', onListener);
    if (!res.headersSent && !res.writableEnded) {
      res.writeContinue();
      continued = true;
    }
  };
  req.on('newListener', onListener);
  // Before Node's own listener, which closes the connection at once.
  res.prependOnceListener('finish', () => {
    if (continued || req.readableEnded) return;
    const { socket } = req;
    socket.destroySoon = () => {
      socket.end();
      // Closed once the body has come (Node reads it and passes it over), or after the grace.
      req.once('end', () => socket.destroy());
      const cut = setTimeout(() => socket.destroy(), UNREAD_BODY_GRACE_MS);
      cut.unref();
      socket.once('close', () => clearTimeout(cut));
    };
  });
}

export function isPreflight(req: IncomingMessage): boolean {
  return req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined;
}

/** Visible ASCII, short: an id a client may choose is echoed, logged and sent to services. */
const CLIENT_REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

/**
 * The client's own `X-Request-ID` (or `X-Correlation-ID`) when it is a sane id; otherwise
 * undefined, and moleculer makes one. Either way it names the request in every log line.
 */
export function clientRequestId(headers: IncomingMessage['headers']): string | undefined {
  const chosen = headers['x-correlation-id'] ?? headers['x-request-id'];
  return typeof chosen === 'string' && CLIENT_REQUEST_ID.test(chosen) ? chosen : undefined;
}

/**
 * What lets a server's kept-alive connections go as the process stops: the idle ones at once,
 * the others once they have answered (`Connection: close`), so that the stop's wait for them
 * (moleculer-web closes the server) is not the keep-alive's, longer than the stop's grace.
 * Its answer starts the drain, and settles once every answer under way is sent: a file piped
 * or pushed after its call returned, which moleculer's wait for calls does not see, is not cut
 * while the stop has time left (STOP_GRACE_MS bounds it).
 */
export function drainOnStop(server: Server): () => Promise<void> {
  let draining = false;
  /** Answers under way, which the drain tells to close their connection once sent. */
  const answering = new Answering();
  const lastAnswer = (res: ServerResponse) => {
    if (!res.headersSent) res.setHeader('Connection', 'close');
  };
  server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
    // Still taken until moleculer-web closes the server: one that came late is its last.
    if (draining) lastAnswer(res);
    answering.add(res);
  });
  return () => {
    draining = true;
    for (const res of answering) lastAnswer(res);
    server.closeIdleConnections();
    return answering.settled();
  };
}
