import type { Agent, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { Context, Logger } from 'moleculer';
import ApiGateway from 'moleculer-web';
import { retriesFor, type Retry } from '../../libs/contracts';
import { errorEnvelope, successEnvelope } from '../../libs/envelope';
import {
  BODY_TOO_LARGE_WHEN_READ,
  badRequest,
  isWaybillError,
  notFound,
  payloadTooLarge,
  toHttpError,
  upstreamFailed,
} from '../../libs/errors';
import { PAGE_HEADERS, errorPage } from '../../libs/html';
import { bytesMoved } from '../../libs/reclaim';
import type { HttpRoute } from '../../libs/service';
import {
  DOWNLOAD_TICKET_META,
  OPEN_UPLOAD_ACTION,
  clientGone,
  giveUpBody,
  pullBody,
  pushBody,
  type TransferTicket,
} from '../../libs/transfer';
import {
  aliasAction,
  carriesBody,
  cutAnswer,
  describeForLog,
  describeRequest,
  sendJson,
  type GatewayRequest,
  UNREAD_BODY_GRACE_MS,
} from './http';
import { readOptionHeaders } from './option-headers';
import { aliasResolver, routeHandler, type WebAlias } from './web-routing';
import {
  REPLAYED_HEADER,
  claimForRequest,
  outcomeUnknownLead,
  outcomeUnknownMessage,
  type IdempotencyRouteFields,
  type IdempotencyStore,
} from './idempotency';

/**
 * The gateway's replacements for moleculer-web internals, as plain functions of their
 * dependencies. `webOverrides` binds them for the service schema.
 */

type Meta = Record<string, unknown>;

/** A route's `onAfterCall` hook, as moleculer-web calls it. */
export type AfterCall = (
  ctx: { meta: Meta },
  route: unknown,
  req: GatewayRequest,
  res: ServerResponse,
  data: unknown,
) => unknown;

/** What `callAction` reads of the matched route. */
export interface CallRoute {
  callOptions?: Record<string, unknown>;
  onAfterCall?: AfterCall;
}

/** Headers a service asked for through `meta`: its own, and `Location`. */
export function responseHeaders(meta: Meta): Record<string, string> {
  const headers = { ...((meta.$responseHeaders ?? {}) as Record<string, string>) };
  if (typeof meta.$location === 'string') headers.Location = meta.$location;
  return headers;
}

/** The `http` declaration of a routed action, by its name (what a hook reads of it). */
export type HttpOf<K extends keyof HttpRoute> = (
  actionName: string,
) => Pick<HttpRoute, K> | undefined;

/**
 * `onAfterCall`: the status a service set in `meta.$statusCode`, else the route's; `204`
 * answers nothing; bytes and streams go out as they are; anything else in a success envelope.
 */
export function afterCall(httpOf: HttpOf<'status' | 'message' | 'page'>): AfterCall {
  return (ctx, _route, req, res, data) => {
    const http = httpOf(aliasAction(req));
    const status = Number(ctx.meta.$statusCode ?? http?.status ?? 200);
    res.statusCode = status;
    if (status === 204) return null;
    if (http?.page) {
      for (const [name, value] of Object.entries(PAGE_HEADERS)) res.setHeader(name, value);
      return Buffer.from(String(data), 'utf8');
    }
    if (data instanceof Readable || Buffer.isBuffer(data)) return data;
    return successEnvelope(http?.message ?? 'OK', data);
  };
}

export interface ErrorDeps {
  environment: string;
  logger: () => Pick<Logger, 'error'>;
  /** Whether the request is for a page (the sandbox checkout): its errors are pages too. */
  isPage?: (req: GatewayRequest) => boolean;
  /**
   * The retry kind an action declares: a request whose outcome is unknown (a timeout) says how
   * to retry it safely unless its action is `safe`.
   */
  retryOf?: (actionName: string) => Retry | undefined;
}

/**
 * The rest of a body its answer did not wait for is read and passed over (Node's own, so that
 * the connection can serve the next request) for `UNREAD_BODY_GRACE_MS` after the answer at
 * most: an upload refused at its first part, a webhook over its size, a body sent to a route
 * that reads none (a probe's, a page's).
 */
function cutUnreadBody(req: GatewayRequest, res: ServerResponse): void {
  res.once('finish', () => {
    if (req.readableEnded) return;
    const cut = setTimeout(() => req.destroy(), UNREAD_BODY_GRACE_MS);
    cut.unref();
    const read = () => clearTimeout(cut);
    req.once('end', read);
    req.once('close', read);
  });
}

/** The `Retry-After` of a 503 that names no time of its own (a service or dependency away). */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/**
 * `onError`: every error, thrown anywhere, as the error envelope. What is ours to fix is
 * logged; an error after the headers went out can only cut the connection.
 */
export function writeError(
  deps: ErrorDeps,
  req: GatewayRequest,
  res: ServerResponse,
  err: unknown,
): void {
  const httpError = toHttpError(err);
  const lead = outcomeUnknownLead(err);
  const kind = lead ? deps.retryOf?.(aliasAction(req)) : undefined;
  const message =
    lead && kind && kind !== 'safe'
      ? outcomeUnknownMessage(lead, kind, req.$ctx?.meta.idempotencyToken !== undefined)
      : httpError.message;
  if (httpError.internal) {
    deps.logger().error('request failed', {
      ...describeForLog(req),
      requestId: req.$ctx?.requestID,
      error: err,
    });
  }
  if (res.headersSent) {
    cutAnswer(res, httpError.status);
    return;
  }
  // Every 503 says to retry in a few seconds: one that names no time of its own says how many.
  const retryAfter =
    httpError.retryAfter ??
    (httpError.status === 503 ? UNAVAILABLE_RETRY_AFTER_SECONDS : undefined);
  if (retryAfter !== undefined) res.setHeader('Retry-After', String(retryAfter));
  if (deps.isPage?.(req)) {
    const page = Buffer.from(errorPage(httpError.status, message), 'utf8');
    for (const [name, value] of Object.entries(PAGE_HEADERS)) res.setHeader(name, value);
    res.statusCode = httpError.status;
    res.setHeader('Content-Length', page.length);
    res.end(page);
    return;
  }
  sendJson(
    res,
    httpError.status,
    errorEnvelope({
      statusCode: httpError.status,
      ...describeRequest(req),
      message,
      environment: deps.environment,
      errors: httpError.errors,
    }),
  );
}

/** The 404 of a request no alias matched. */
function routeNotFound(req: GatewayRequest) {
  const { method, path } = describeRequest(req);
  return notFound(`No route for ${method} ${path}; see /docs for the routes`);
}

/** `sendResponse`: envelopes and 201s without noise, streams for downloads. */
/**
 * What a source's failure mid-answer is: its own typed error (a download past
 * FILE_TIMEOUT_MS: 504), or the source's (S3, or a file service that cut its transfer): 502.
 */
const sourceFailure = (err: unknown) =>
  isWaybillError(err) ? err : upstreamFailed('The file could not be read to the end; retry');

/**
 * Answers `data`: a stream (a download) is piped; should its source fail before its first
 * byte went out, the client gets `onError`'s envelope instead of a cut connection.
 */
export function sendResponse(
  req: GatewayRequest,
  res: ServerResponse,
  data: unknown,
  onError?: (req: GatewayRequest, res: ServerResponse, err: unknown) => void,
): void {
  // Nobody will read this answer: one was begun already, or the client has left (its `close`
  // came before any listener here could hear it). A source (S3, a transfer) is closed now, not
  // at FILE_TIMEOUT_MS: it holds a slot of the file service and an S3 connection.
  if (res.headersSent || clientGone(res)) {
    if (data instanceof Readable) data.destroy();
    return;
  }
  const headers = responseHeaders(req.$ctx?.meta ?? {});
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  if (data == null) {
    res.end();
  } else if (data instanceof Readable) {
    if (!res.hasHeader('Content-Type')) res.setHeader('Content-Type', 'application/octet-stream');
    data.on('error', (err) => {
      const failure = sourceFailure(err);
      if (res.headersSent || !onError) {
        cutAnswer(res, toHttpError(failure).status);
        return;
      }
      // Nothing went out: the download's own headers give way to the error's (the others,
      // a request id, CORS, stay).
      for (const name of [...Object.keys(headers), 'Content-Type']) res.removeHeader(name);
      onError(req, res, failure);
    });
    data.on('data', (chunk: Buffer) => bytesMoved(chunk.length));
    // A client that leaves mid-download must not leave the source (S3, a transfer) open.
    res.once('close', () => {
      if (!data.readableEnded) data.destroy();
    });
    data.pipe(res);
  } else if (Buffer.isBuffer(data)) {
    if (!res.hasHeader('Content-Type')) res.setHeader('Content-Type', 'application/octet-stream');
    res.setHeader('Content-Length', data.length);
    res.end(data);
  } else {
    sendJson(res, res.statusCode || 200, data);
  }
}

export interface CallDeps {
  /** Connections to file services on other nodes, for bodies and downloads (libs/transfer). */
  transfers: Agent;
  idempotency: IdempotencyStore;
  /** Which routes take an `Idempotency-Key` is read from their declarations. */
  httpOf: HttpOf<IdempotencyRouteFields | 'optionHeaders' | 'page'>;
  /** The retry kind an action declares (undefined for an unknown one: never retried). */
  retryOf: (actionName: string) => Retry | undefined;
  logger: () => Pick<Logger, 'warn'>;
  send: (req: GatewayRequest, res: ServerResponse, data: unknown) => void;
}

/** What a transfer needs of the call that opens it. */
type CallOptions = Meta & { timeout?: number };

/**
 * A request body for a service on another node: the service hands out a ticket over
 * moleculer (bound to the caller, after its own early checks: load, type, size), then the
 * body goes to it over one direct HTTP connection, never NATS, and its answer comes back
 * on that connection.
 */
async function transferBody(
  deps: Pick<CallDeps, 'transfers'>,
  ctx: Context<unknown, Meta>,
  endpoint: NonNullable<GatewayRequest['$endpoint']>,
  req: GatewayRequest,
  res: ServerResponse,
  opts: CallOptions,
): Promise<unknown> {
  const action = String(endpoint.action?.name);
  const service = action.slice(0, action.lastIndexOf('.'));
  const ticket = (await ctx.call(
    `${service}.${OPEN_UPLOAD_ACTION}`,
    { action },
    { ...opts, nodeID: endpoint.id },
  )) as TransferTicket;
  return pushBody(deps.transfers, ticket, req, Number(opts.timeout), res);
}

/**
 * A request body for an action in this process, the request itself its stream: given up
 * (`giveUpBody`) once the call fails (its timeout above all, which does not stop the action)
 * or the client leaves before the answer, so that the action deletes what it stored.
 */
async function callWithBody(
  ctx: Context<unknown, Meta>,
  endpoint: NonNullable<GatewayRequest['$endpoint']>,
  params: Meta,
  opts: CallOptions,
  req: GatewayRequest,
  res: ServerResponse,
): Promise<unknown> {
  const giveUp = () => giveUpBody(req);
  if (clientGone(res)) giveUp();
  else res.once('close', giveUp);
  try {
    return await ctx.call(endpoint as unknown as string, params, opts);
  } catch (err) {
    giveUp();
    throw err;
  } finally {
    res.off('close', giveUp);
  }
}

/**
 * `callAction`: moleculer-web's, except that a request body for another node goes there
 * directly, not over NATS (`transferBody`), bytes answered from another node are pulled the
 * same way, a JSON call with an `Idempotency-Key` is claimed first and its answer stored, or
 * replayed, and a call lost with its node is repeated on another as often as the action's
 * retry kind allows.
 */
export async function callAction(
  deps: CallDeps,
  route: CallRoute,
  req: GatewayRequest,
  res: ServerResponse,
  params: Meta,
  isStream: boolean,
): Promise<true> {
  const ctx = req.$ctx as Context<unknown, Meta>;
  const endpoint = req.$endpoint ?? {};
  const opts: CallOptions = { ...route.callOptions };
  const transfer = isStream && !endpoint.local;
  if (isStream && !transfer) opts.stream = req;
  const http = deps.httpOf(aliasAction(req));
  const options = readOptionHeaders(http, req.headers);
  if (options) ctx.meta.optionHeaders = options;
  const retry = deps.retryOf(aliasAction(req));
  const claim = await claimForRequest(deps.idempotency, req, http, ctx.meta, params, retry);
  opts.retries = retriesFor(retry ?? 'never', ctx.meta);
  if (claim?.kind === 'replay') {
    const { status, headers, body } = claim.response;
    res.statusCode = status;
    res.setHeader(REPLAYED_HEADER, 'true');
    ctx.meta.$responseHeaders = headers;
    deps.send(req, res, body);
    return true;
  }
  try {
    let data = transfer
      ? await transferBody(deps, ctx, endpoint, req, res, opts)
      : isStream
        ? await callWithBody(ctx, endpoint, params, opts, req, res)
        : await ctx.call(endpoint as unknown as string, params, opts);
    const ticket = ctx.meta[DOWNLOAD_TICKET_META] as TransferTicket | undefined;
    if (ticket) {
      delete ctx.meta[DOWNLOAD_TICKET_META];
      data = await pullBody(deps.transfers, ticket, Number(opts.timeout));
    }
    if (route.onAfterCall) data = await route.onAfterCall(ctx, route, req, res, data);
    const stored = await claim?.complete({
      status: res.statusCode,
      headers: responseHeaders(ctx.meta),
      body: data,
    });
    if (stored === false) {
      deps.logger().warn('answer not stored for its Idempotency-Key; a retry will wait', {
        ...describeForLog(req),
      });
    }
    deps.send(req, res, data);
    return true;
  } catch (thrown) {
    const err = endpoint.local ? thrown : unsentCall(thrown);
    await claim?.fail(err, aliasAction(req), Number(opts.retries ?? 0) > 0);
    throw err;
  } finally {
    if (transfer && !req.readableEnded) req.resume(); // the service stopped early: drain the rest
  }
}

/**
 * What a call to a service on another node failed with, as the client is told: the gateway's
 * own message refused by NATS as past its `max_payload` (1 MB by default) is the 413 of a body
 * within BODY_LIMIT that grew past it once read (`1e20` written out in full). Nothing ran. An
 * error of that service's own calls comes back naming its node, and stays what it is.
 */
export function unsentCall(err: unknown): unknown {
  const e = err as { code?: unknown; nodeID?: unknown } | null;
  if (e?.code !== 'MAX_PAYLOAD_EXCEEDED' || e.nodeID !== undefined) return err;
  return payloadTooLarge(BODY_TOO_LARGE_WHEN_READ);
}

/**
 * A request target in absolute form (`GET http://host/api/countries`, RFC 9112 3.2.2), as its
 * origin form (`/api/countries`): the routes match paths. The authority is the host it names.
 */
function toOriginForm(req: GatewayRequest): void {
  const target = /^https?:\/\/([^/?#]*)(.*)$/is.exec(req.url ?? '');
  if (!target) return;
  const [, authority, rest] = target;
  req.url = rest.startsWith('/') ? rest : `/${rest}`;
  if (authority) req.headers.host = authority;
}

const NO_HOST = 'The request names no host: send the Host header, as every HTTP/1.1 request must';

/**
 * What the gateway does with every request before moleculer-web's handler: its body is not
 * left arriving for long after its answer, whatever answered it (`cutUnreadBody`); a target in
 * absolute form is read as its path; and an HTTP/1.1 request without a Host is refused (400)
 * in the envelope, where Node would answer a bare one (the server lets it through,
 * `requireHostHeader`). Answers the refusal, if any.
 */
export function beforeHandling(req: GatewayRequest, res: ServerResponse): Error | undefined {
  if (carriesBody(req) && !req.readableEnded) cutUnreadBody(req, res);
  toOriginForm(req);
  if (req.headers.host === undefined && req.httpVersion === '1.1') return badRequest(NO_HOST);
  return undefined;
}

/** moleculer-web's request handler, which the gateway's runs each request through. */
type HttpHandler = (req: GatewayRequest, res: ServerResponse, next?: unknown) => unknown;
const webHttpHandler = (ApiGateway.methods as unknown as { httpHandler: HttpHandler }).httpHandler;

export interface OverrideDeps
  extends Omit<ErrorDeps, 'retryOf'>, Omit<CallDeps, 'send' | 'logger'> {
  logger: () => Pick<Logger, 'error' | 'warn'>;
}

/**
 * The moleculer-web settings and methods the gateway replaces. Every error, moleculer-web's
 * own 404 included, goes to `onError`; moleculer-web would log each 5xx with its stack,
 * `onError` logs only what is ours to fix. The alias lookup and the route handler are leaner
 * for the routes the gateway declares (web-routing).
 */
export function webOverrides(deps: OverrideDeps) {
  const onError = (req: GatewayRequest, res: ServerResponse, err: unknown) =>
    writeError(deps, req, res, err);
  const send = (req: GatewayRequest, res: ServerResponse, data: unknown) =>
    sendResponse(req, res, data, onError);
  const resolveAlias = aliasResolver<WebAlias>();
  return {
    onError,
    methods: {
      httpHandler(this: unknown, req: GatewayRequest, res: ServerResponse, next?: unknown) {
        // A request behind one refused with its connection closing (continueOnRead): it could
        // never be answered, so it is not run.
        if (req.socket?.writableEnded) {
          req.socket.destroy();
          return undefined;
        }
        const refusal = beforeHandling(req, res);
        if (refusal) {
          // As Node answers a request it cannot place: nothing more on this connection.
          res.setHeader('Connection', 'close');
          return onError(req, res, refusal);
        }
        return webHttpHandler.call(this, req, res, next);
      },
      send404: (req: GatewayRequest, res: ServerResponse) => onError(req, res, routeNotFound(req)),
      errorHandler: onError,
      callAction: (
        route: CallRoute,
        _actionName: string,
        req: GatewayRequest,
        res: ServerResponse,
        params: Meta,
        isStream: boolean,
      ) => callAction({ ...deps, send }, route, req, res, params, isStream),
      sendResponse: send,
      resolveAlias(this: { aliases: WebAlias[] }, url: string, method?: string) {
        return resolveAlias(this.aliases, url, method);
      },
      routeHandler,
      isLinkedPage: (req: GatewayRequest) => deps.httpOf(aliasAction(req))?.page === true,
    },
  };
}
