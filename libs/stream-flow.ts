import { randomUUID } from 'node:crypto';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import Joi from './joi';
import { action } from './service';

/**
 * Flow control for streams between nodes. Moleculer sends a stream over the transporter as
 * fast as the sender reads it and the receiver buffers whatever it cannot use yet, so a
 * fast client and a slower consumer (S3) would pile the whole file up in memory. Here the
 * sender lets at most FLOW_WINDOW bytes be in flight; the receiver reports what it has
 * consumed, in FLOW_STEP steps, by calling the sender's `streamCredit` action.
 */
export const FLOW_WINDOW = 4 * 1024 * 1024;
export const FLOW_STEP = 512 * 1024;

/** Put in `ctx.meta` by the sender so that the receiver knows whom to credit. */
export interface FlowMeta {
  id: string;
  nodeID: string;
  /** Fully qualified credit action on the sender, e.g. `gateway.streamCredit`. */
  action: string;
}

/**
 * Passes bytes through while the sender has credit, then holds the source (and so, with
 * backpressure, the client's socket) until the receiver grants more.
 */
export class CreditGate extends Transform {
  private credit: number;
  private held: TransformCallback | undefined;
  private stallTimer: NodeJS.Timeout | undefined;

  /** `stallMs`: destroy the gate when it waits longer than this for credit (0: never). */
  constructor(
    window: number = FLOW_WINDOW,
    private readonly stallMs = 0,
  ) {
    super();
    this.credit = window;
    this.once('close', () => clearTimeout(this.stallTimer));
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
    this.credit -= chunk.length;
    this.push(chunk);
    if (this.credit > 0) {
      callback();
      return;
    }
    this.held = callback;
    if (this.stallMs > 0) {
      this.stallTimer = setTimeout(
        () => this.destroy(new Error(`no credit for ${this.stallMs} ms; the receiver is gone`)),
        this.stallMs,
      );
    }
  }

  grant(bytes: number): void {
    this.credit += bytes;
    if (this.credit <= 0 || !this.held) return;
    clearTimeout(this.stallTimer);
    const callback = this.held;
    this.held = undefined;
    callback();
  }
}

/**
 * The receiving side: passes the stream through and calls `report(bytes)` as they are
 * consumed downstream. Errors of the source are forwarded.
 */
export function creditReturn(
  source: Readable,
  report: (bytes: number) => void,
  step: number = FLOW_STEP,
): Readable {
  let unreported = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      unreported += chunk.length;
      if (unreported >= step) {
        report(unreported);
        unreported = 0;
      }
      callback(null, chunk);
    },
  });
  source.on('error', (err) => counter.destroy(err));
  return source.pipe(counter);
}

/** Gates a service sends from, by flow id, and the `streamCredit` action that feeds them. */
export class StreamFlows {
  private readonly gates = new Map<string, CreditGate>();

  constructor(private readonly serviceName: string) {}

  /** Gates `source` for a receiver on another node; `close()` releases it. */
  open(source: Readable, nodeID: string, stallMs = 0) {
    const id = randomUUID();
    const gate = new CreditGate(FLOW_WINDOW, stallMs);
    this.gates.set(id, gate);
    gate.once('close', () => this.gates.delete(id));
    source.on('error', (err) => gate.destroy(err));
    source.pipe(gate);
    const meta: FlowMeta = { id, nodeID, action: `${this.serviceName}.streamCredit` };
    const close = () => {
      this.gates.delete(id);
      gate.grant(Number.POSITIVE_INFINITY);
      source.unpipe(gate);
      if (!gate.writableEnded && !gate.destroyed) gate.end();
    };
    return { stream: gate, meta, close };
  }

  grant(id: string, bytes: number): void {
    this.gates.get(id)?.grant(bytes);
  }

  get size(): number {
    return this.gates.size;
  }

  /** The credit action, visible to other nodes but never routed over HTTP. */
  action() {
    return action({
      // Each credit adds to the window: a repeat would grant twice.
      retry: 'never',
      visibility: 'public',
      params: Joi.object({
        id: Joi.string().uuid().required(),
        bytes: Joi.number().integer().min(1).required(),
      }),
      handler: (ctx) => {
        this.grant(ctx.params.id, ctx.params.bytes);
        return null;
      },
    });
  }
}

/** A broker call, as `broker.call` makes it. */
export type Call = (action: string, params: object, opts: { nodeID: string }) => Promise<unknown>;

/** Delay before credit that could not be delivered is sent again. */
export const CREDIT_RETRY_MS = 100;
const CREDIT_ATTEMPTS = 100;

/**
 * Reads a stream that a remote sender gates, returning credit as it is consumed. Credit
 * calls go one at a time; one that fails is sent again (a receiver may get the first chunk
 * before it has discovered the sender's credit action), until the stream closes.
 */
export function receiveFlow(stream: Readable, flow: FlowMeta | undefined, call: Call): Readable {
  if (!flow) return stream;
  let owed = 0;
  let sending = false;
  let failures = 0;
  let closed = false;
  const send = () => {
    if (sending || owed === 0 || closed) return;
    const bytes = owed;
    owed = 0;
    sending = true;
    call(flow.action, { id: flow.id, bytes }, { nodeID: flow.nodeID }).then(
      () => {
        sending = false;
        failures = 0;
        send();
      },
      () => {
        sending = false;
        owed += bytes;
        // The sender is gone for good: its side of the call fails on its own.
        if (++failures < CREDIT_ATTEMPTS) setTimeout(send, CREDIT_RETRY_MS).unref();
      },
    );
  };
  const counted = creditReturn(stream, (bytes) => {
    owed += bytes;
    send();
  });
  counted.once('close', () => (closed = true));
  return counted;
}
