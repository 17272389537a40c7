import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import type { EventEmitter } from 'node:events';
import type { AddressInfo } from 'node:net';
import { pipeline, type Readable } from 'node:stream';
import { Errors } from 'moleculer';
import { Answering } from './answering';
import { serviceUnavailable } from './errors';
import { bytesMoved } from './reclaim';

/**
 * Direct byte transfer between nodes. File bodies do not ride NATS: moleculer carries the
 * control (who, what, the answer), one HTTP connection between the two processes carries the
 * bytes, with TCP's own backpressure end to end. The node that holds the bytes' consumer or
 * source (the file service) listens on an internal port (`TransferDesk`) and hands out tickets
 * over moleculer; the gateway presents one to push an upload's body (`pushBody`) or to pull a
 * download (`pullBody`). See docs/files.md, "How bytes move".
 *
 * A ticket is a capability: a random id in the URL and a 256-bit random token, kept in the
 * issuing process only (which is also the one that checks it, so no secret is shared), good
 * once and for TICKET_MS. It travels only over moleculer, never to clients.
 */

/** What the gateway needs to reach a transfer: where, and the proof it was given one. */
export interface TransferTicket {
  url: string;
  token: string;
}

/** The request header that carries a ticket's token. */
const TOKEN_HEADER = 'x-waybill-transfer-token';

/** How long a ticket waits for its transfer to start: the gateway starts it at once. */
const TICKET_MS = 10_000;

/**
 * The action a service with `body: 'stream'` routes exposes on every node: `{action}` (the
 * routed action's full name) in, a ticket to push the body to out, bound to the caller's meta.
 */
export const OPEN_UPLOAD_ACTION = 'openUpload';

/** `ctx.meta` key under which an action answering a remote caller hands a download's ticket. */
export const DOWNLOAD_TICKET_META = '$transferTicket';

/** An error as it crosses the transfer connection: what the gateway's error mapping reads. */
interface PlainError {
  name?: string;
  message: string;
  code: number;
  type?: string;
  data?: unknown;
}

/** The answer to a pushed body: the handler's result, or its error. */
type PushAnswer = { ok: true; data: unknown } | { ok: false; error: PlainError };

function plainError(err: unknown): PlainError {
  const e = (err ?? {}) as Partial<PlainError>;
  return {
    name: typeof e.name === 'string' ? e.name : 'Error',
    message: typeof e.message === 'string' ? e.message : String(err),
    code: typeof e.code === 'number' ? e.code : 500,
    type: typeof e.type === 'string' ? e.type : undefined,
    data: e.data,
  };
}

/** The same error on the receiving side, typed as moleculer's own, like one off NATS. */
function restoreError(plain: PlainError): Errors.MoleculerError {
  const err = new Errors.MoleculerError(plain.message, plain.code, plain.type ?? '', plain.data);
  if (plain.name) err.name = plain.name;
  return err;
}

/** A 503 for a transfer that could not be made: the file service went away, or the ticket. */
const unreachable = () =>
  serviceUnavailable('The file service could not be reached; retry in a few seconds');

/** Longest answer to a push we read: a bulk upload's seven URLs or errors. */
const MAX_ANSWER_BYTES = 256 * 1024;

/**
 * How a gateway gives back a ticket it will not use (its client left before the transfer
 * began): with the ticket's token, like the transfer itself.
 */
const HAND_BACK = 'DELETE';

interface Pending {
  method: 'POST' | 'GET';
  token: Buffer;
  timer: NodeJS.Timeout;
  serve(req: http.IncomingMessage, res: http.ServerResponse): void;
  expire(): void;
}

export interface TransferDeskOptions {
  /** Interface to bind (HOST). */
  host: string;
  /** Port to listen on; 0 picks a free one, announced in the tickets. */
  port: number;
  /** Address other nodes reach this one at; default: `host` when it names one, else `fallbackHost`. */
  advertisedHost?: string;
  /** Used when neither names a reachable address (`host` is 0.0.0.0): this node's first IP. */
  fallbackHost: string;
  ticketMs?: number;
}

const ANY_ADDRESS = new Set(['0.0.0.0', '::', '']);

/** How often a stop looks again for tickets not yet claimed (`TransferDesk.idle`). */
const IDLE_POLL_MS = 50;

/** The receiving end: an internal HTTP server that serves transfers by ticket, each once. */
export class TransferDesk {
  private server: http.Server | undefined;
  private base = '';
  private readonly pending = new Map<string, Pending>();
  /** Transfers under way, which a stop waits for (`idle`). */
  private readonly answering = new Answering();

  constructor(private readonly options: TransferDeskOptions) {}

  async listen(): Promise<void> {
    const server = http.createServer((req, res) => this.serve(req, res));
    // An upload lasts up to FILE_TIMEOUT_MS, enforced by the file service's own watch.
    server.requestTimeout = 0;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port, this.options.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    const { port } = server.address() as AddressInfo;
    const { advertisedHost, host, fallbackHost } = this.options;
    const address = advertisedHost || (ANY_ADDRESS.has(host) ? fallbackHost : host);
    this.base = `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
  }

  async close(): Promise<void> {
    for (const [id, pending] of this.pending) {
      this.pending.delete(id);
      clearTimeout(pending.timer);
      pending.expire();
    }
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /**
   * Settles once no ticket waits for its transfer (each is claimed, its transfer then counted,
   * or expires within TICKET_MS) and every transfer under way is over: a stop waits for it
   * before `close` cuts what is left (STOP_GRACE_MS bounds the wait), calls that ended in the
   * stop's wait for calls in progress having handed out tickets too.
   */
  async idle(): Promise<void> {
    for (;;) {
      await this.answering.settled();
      if (this.pending.size === 0) return;
      await delay(IDLE_POLL_MS);
    }
  }

  /** Transfers issued and not yet started. */
  get size(): number {
    return this.pending.size;
  }

  /**
   * A ticket for one body: pushed with it, the body is handed to `receive`, whose result or
   * error is the answer. `expired` runs instead when no push comes within the ticket's life.
   * `unanswered` runs when a result could not be handed back (the pusher left: its call timed
   * out, or it died), so that what `receive` made for nobody can be undone.
   */
  expectBody<T>(
    receive: (body: Readable) => Promise<T>,
    expired: () => void,
    unanswered: (data: T) => void = () => undefined,
  ): TransferTicket {
    return this.issue('POST', expired, (req, res) => {
      receive(req).then(
        (data) => answer(res, { ok: true, data }, () => unanswered(data)),
        (err: unknown) => answer(res, { ok: false, error: plainError(err) }),
      );
    });
  }

  /**
   * A ticket for `source`, streamed once to whoever pulls it; destroyed when unclaimed. With
   * its `length` (known for a stored object) the bytes go unframed: chunked encoding made the
   * puller's parser cut most socket reads in two, twice the chunks to pass on (measured: 6,400
   * instead of 3,200 for 200 MB, half of them under 8 KB).
   */
  offer(source: Readable, length?: number): TransferTicket {
    return this.issue(
      'GET',
      () => source.destroy(),
      (_req, res) => {
        res
          .writeHead(200, {
            'content-type': 'application/octet-stream',
            ...(length !== undefined ? { 'content-length': length } : {}),
          })
          .flushHeaders();
        // A puller that leaves closes `res`: pipeline then destroys the source (an S3 socket).
        pipeline(source, res, () => undefined);
        source.on('data', (chunk: Buffer) => bytesMoved(chunk.length));
      },
    );
  }

  private issue(
    method: Pending['method'],
    expire: () => void,
    serve: Pending['serve'],
  ): TransferTicket {
    if (!this.server) throw unreachable();
    const id = randomUUID();
    const token = randomBytes(32);
    const timer = setTimeout(() => {
      this.pending.delete(id);
      expire();
    }, this.options.ticketMs ?? TICKET_MS);
    timer.unref();
    this.pending.set(id, { method, token, timer, serve, expire });
    return { url: `${this.base}/transfers/${id}`, token: token.toString('base64url') };
  }

  private serve(req: http.IncomingMessage, res: http.ServerResponse): void {
    const id = /^\/transfers\/([0-9a-f-]{36})$/.exec(req.url ?? '')?.[1];
    const pending = id ? this.pending.get(id) : undefined;
    const presented = req.headers[TOKEN_HEADER];
    const given = typeof presented === 'string' ? Buffer.from(presented, 'base64url') : undefined;
    const handedBack = req.method === HAND_BACK;
    if (
      !id ||
      !pending ||
      (req.method !== pending.method && !handedBack) ||
      given?.length !== pending.token.length ||
      !timingSafeEqual(given, pending.token)
    ) {
      req.resume();
      res.writeHead(404, { connection: 'close' }).end();
      return;
    }
    this.pending.delete(id);
    clearTimeout(pending.timer);
    if (handedBack) {
      // Let go now, not at the ticket's end: an upload slot, a download's S3 stream.
      req.resume();
      pending.expire();
      res.writeHead(204).end();
      return;
    }
    this.answering.add(res);
    pending.serve(req, res);
  }
}

/** Writes the answer; `lost` runs when it cannot be written whole (the pusher is gone). */
function answer(res: http.ServerResponse, body: PushAnswer, lost?: () => void): void {
  if (res.destroyed) {
    lost?.();
    return;
  }
  if (lost) res.once('close', () => res.writableFinished || lost());
  const json = Buffer.from(JSON.stringify(body));
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': json.length });
  res.end(json);
}

/** Connections to file services, kept open between transfers. */
export function transferAgent(): http.Agent {
  return new http.Agent({ keepAlive: true });
}

/** A 504 for a transfer cut by the call's time limit, as a moleculer call would end. */
const timedOut = (url: string) =>
  new Errors.RequestTimeoutError({ action: 'transfer', nodeID: new URL(url).host });

function request(
  agent: http.Agent,
  ticket: TransferTicket,
  method: Pending['method'] | typeof HAND_BACK,
  timeoutMs: number,
): http.ClientRequest {
  const req = http.request(ticket.url, {
    method,
    agent,
    headers: {
      [TOKEN_HEADER]: ticket.token,
      ...(method === 'POST' ? { 'content-type': 'application/octet-stream' } : {}),
    },
  });
  if (Number.isFinite(timeoutMs) && timeoutMs > 0) {
    const timer = setTimeout(() => req.destroy(timedOut(ticket.url)), timeoutMs);
    req.once('close', () => clearTimeout(timer));
  }
  return req;
}

const isTimeout = (err: unknown) =>
  (err as { type?: unknown } | undefined)?.type === 'REQUEST_TIMEOUT';

/**
 * Gives `ticket` back to its receiver, which lets go of what it holds for it at once; settles
 * (never rejects) once answered, or once it cannot be, at the latest when the ticket would
 * have expired anyway. A ticket already used is refused (404), and its receiver, which saw its
 * transfer cut, cleans up on its own.
 */
function handBack(agent: http.Agent, ticket: TransferTicket): Promise<void> {
  return new Promise((resolve) => {
    const req = request(agent, ticket, HAND_BACK, TICKET_MS);
    req.once('error', () => resolve());
    req.once('response', (res) => {
      res.once('close', () => resolve());
      res.resume();
    });
    req.end();
  });
}

/** The answer a client waits for, as far as whether it is still there goes (a ServerResponse). */
export type ClientAnswer = EventEmitter & {
  readonly destroyed: boolean;
  readonly socket?: { readonly destroyed: boolean } | null;
};

/**
 * Whether nobody is left to read the answer: the client closed the connection, or the gateway
 * cut it. Its `close` has then been emitted, or is about to be: a listener added now may never
 * hear it, so what the request holds must be let go at once instead.
 */
export function clientGone(res: ClientAnswer): boolean {
  return res.destroyed || res.socket?.destroyed === true;
}

/**
 * Pushes `body` with `ticket` and resolves with the receiver's answer, or rejects with its
 * error. The receiver may answer before the body's end (a refusal): the rest is then no
 * longer sent, and the caller drains it. A body that is cut (the client left) cuts the push,
 * and so does the client leaving once its body was whole (`client`, the response it waits
 * for): the receiver then deletes what it stored, whose URL nobody would ever hold. A push cut
 * before it reached the receiver (the client gone while the ticket was asked for) would leave
 * the ticket holding its upload slot until it expires: the ticket is handed back first, and
 * the push settles once the receiver let go.
 */
export function pushBody(
  agent: http.Agent,
  ticket: TransferTicket,
  body: Readable,
  timeoutMs: number,
  client?: ClientAnswer,
): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request(agent, ticket, 'POST', timeoutMs);
    // Sent now, not with the first byte of the body: a client quiet from its headers on must
    // reach the receiver, which takes the ticket before it expires and times the silence
    // (408), as it does for a body that stops.
    req.flushHeaders();
    const count = (chunk: Buffer) => bytesMoved(chunk.length);
    const stop = () => {
      body.unpipe(req);
      body.off('close', cut);
      body.off('data', count);
      client?.off('close', left);
    };
    let abandoned = false;
    const abandon = (why: string) => {
      abandoned = true;
      req.destroy(new Error(why));
    };
    const cut = () => {
      if (!body.readableEnded) abandon('the body was cut before its end');
    };
    // A request's own 'close' comes once its body is read: only the response tells of a
    // client that left after sending it all.
    const left = () => abandon('the client left before the answer');
    body.once('close', cut);
    client?.once('close', left);
    // Gone while the ticket was asked for: its 'close' came before anyone listened.
    if (client && clientGone(client)) left();
    body.on('data', count);
    req.once('error', (err) => {
      stop();
      const failure = isTimeout(err) ? err : unreachable();
      if (abandoned) void handBack(agent, ticket).then(() => reject(failure));
      else reject(failure);
    });
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= MAX_ANSWER_BYTES) chunks.push(chunk);
      });
      res.once('end', () => {
        stop();
        // Answered before the whole body was sent: this connection cannot be reused.
        if (!req.writableFinished) req.destroy();
        if (res.statusCode !== 200 || size > MAX_ANSWER_BYTES) {
          reject(unreachable());
          return;
        }
        try {
          const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as PushAnswer;
          if (parsed.ok) resolve(parsed.data);
          else reject(restoreError(parsed.error));
        } catch {
          reject(unreachable());
        }
      });
      // Cut after the headers (the file service died or reset the connection): no answer
      // will come, so settle now rather than hold the upload's lease until it expires.
      res.once('close', () => {
        if (res.complete) return;
        stop();
        req.destroy();
        reject(unreachable());
      });
      res.once('error', () => undefined); // 'close' follows, and settles
    });
    body.pipe(req);
  });
}

/** Pulls the bytes offered with `ticket`: the response, to stream on (destroy it to stop). */
export function pullBody(
  agent: http.Agent,
  ticket: TransferTicket,
  timeoutMs: number,
): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(agent, ticket, 'GET', timeoutMs);
    req.once('error', (err) => reject(isTimeout(err) ? err : unreachable()));
    req.once('response', (res) => {
      if (res.statusCode === 200) {
        resolve(res);
        return;
      }
      res.resume();
      reject(unreachable());
    });
    req.end();
  });
}

/**
 * A body handed to an action in the caller's own process (moleculer's `stream`): the request
 * itself, with no transfer between them to close. moleculer's timeout rejects the call but
 * does not reach the action, which goes on storing what nobody will ever hold the URL of.
 * So the caller marks the body given up (`giveUpBody`) once its answer can no longer carry
 * the action's (a timeout, an error, its client gone), and the action reads the mark last,
 * with nothing awaited between it and its answer (`bodyGivenUp`); the caller also waits for
 * the action to be done with the body (`bodyLetGo`) before it gives back what the transfer
 * holds (its lease).
 */
interface LocalBody {
  givenUp: boolean;
  /** Settled once the action that took the body is done with it. */
  done?: Promise<void>;
}

const localBodies = new WeakMap<object, LocalBody>();

function localBody(body: object): LocalBody {
  let state = localBodies.get(body);
  if (!state) {
    state = { givenUp: false };
    localBodies.set(body, state);
  }
  return state;
}

/** The caller: nobody will read the action's answer for `body`. */
export function giveUpBody(body: object): void {
  localBody(body).givenUp = true;
}

/** The action: whether its caller gave up on `body` (always false for a body from another node). */
export function bodyGivenUp(body: object): boolean {
  return localBodies.get(body)?.givenUp === true;
}

/** The action: runs `work` on `body`, which the caller's `bodyLetGo` waits for. */
export function workOnBody<T>(body: object, work: () => Promise<T>): Promise<T> {
  const running = work();
  localBody(body).done = running.then(
    () => undefined,
    () => undefined,
  );
  return running;
}

/** The caller: settles once an action of this process is done with `body` (at once if none took it). */
export function bodyLetGo(body: object): Promise<void> {
  return localBodies.get(body)?.done ?? Promise.resolve();
}
