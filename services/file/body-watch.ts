import { Transform, finished, type Readable, type TransformCallback } from 'node:stream';
import { bodyTimeout } from '../../libs/errors';
import { bytesMoved } from '../../libs/reclaim';

export interface BodyWatchOptions {
  /** The client may send nothing for this long while we could take more (FILE_IDLE_TIMEOUT_MS). */
  idleMs: number;
  /** The whole body must have arrived within this long (FILE_TIMEOUT_MS). */
  deadlineMs: number;
  /**
   * Bytes the client must send in every `idleMs` while we could take more
   * (FILE_MIN_UPLOAD_BYTES_PER_SECOND × the window); 0 or unset: no minimum.
   */
  minBytesPerWindow?: number;
  /** The most the whole body may weigh, and the error past it; unset: no most. */
  maxBytes?: { bytes: number; tooLarge: () => Error };
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

/**
 * Passes a request body through and destroys itself with a 408 when the client stalls: no
 * byte for `idleMs` although nothing waits here to be read, or the body still incomplete
 * after `deadlineMs`; and with `maxBytes`'s error once the body passes it. A consumer that is slower than the client (S3, the next file of a bulk
 * upload) leaves bytes waiting here, so backpressure is never taken for a stalled client.
 *
 * Without it an upload whose client goes quiet keeps its part buffer and its slot until the
 * gateway's call times out, and in one process (no flow to close) for as long as the client
 * keeps the connection open.
 */
export class BodyWatch extends Transform {
  private readonly idleTimer: NodeJS.Timeout;
  private readonly deadlineTimer: NodeJS.Timeout;
  private readonly rateTimer: NodeJS.Timeout | undefined;
  /** Bytes received in the current window of `idleMs`. */
  private windowBytes = 0;
  /** Whether the consumer held bytes back at some point of the window (not the client's doing). */
  private consumerBehind = false;
  /** Bytes received in all. */
  private totalBytes = 0;

  constructor(private readonly options: BodyWatchOptions) {
    super();
    this.idleTimer = setTimeout(() => this.idle(), options.idleMs);
    this.deadlineTimer = setTimeout(
      () =>
        this.destroy(
          bodyTimeout(
            `The upload did not arrive within ${seconds(options.deadlineMs)}; ` +
              'send smaller files, or from a faster connection',
          ),
        ),
      options.deadlineMs,
    );
    const minimum = options.minBytesPerWindow ?? 0;
    if (minimum > 0) {
      this.rateTimer = setInterval(() => this.checkRate(minimum), options.idleMs);
    }
    this.once('close', () => this.stopTimers());
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
    this.idleTimer.refresh();
    if (this.readableLength > 0) this.consumerBehind = true;
    this.windowBytes += chunk.length;
    this.totalBytes += chunk.length;
    bytesMoved(chunk.length);
    const most = this.options.maxBytes;
    if (most && this.totalBytes > most.bytes) return callback(most.tooLarge());
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback) {
    this.stopTimers();
    callback();
  }

  private stopTimers() {
    clearTimeout(this.idleTimer);
    clearTimeout(this.deadlineTimer);
    clearInterval(this.rateTimer);
  }

  /**
   * The end of a window: a client that sent less than `minimum` while nothing here waited for
   * the consumer is trickling (a byte every few seconds keeps the idle timer from firing, and
   * would hold an upload slot until the deadline). A window in which the consumer fell behind
   * says nothing of the client, and is not judged.
   */
  private checkRate(minimum: number) {
    const behind = this.consumerBehind || this.readableLength > 0 || this.writableLength > 0;
    const received = this.windowBytes;
    this.windowBytes = 0;
    this.consumerBehind = false;
    // Nothing at all is the idle timer's to report ("No data received").
    if (behind || received === 0 || received >= minimum) return;
    this.destroy(
      bodyTimeout(
        `The upload sent ${received} bytes in ${seconds(this.options.idleMs)}, less than the ${minimum} it must send in that time; ` +
          'send it from a faster connection',
      ),
    );
  }

  private idle() {
    // Bytes wait here for the consumer: the client is not the one keeping us waiting.
    if (this.readableLength > 0 || this.writableLength > 0) {
      this.idleTimer.refresh();
      return;
    }
    this.destroy(
      bodyTimeout(
        `No data received for ${seconds(this.options.idleMs)}; the upload was cancelled. ` +
          'Send the body without pauses and retry',
      ),
    );
  }
}

/**
 * `body` read through a BodyWatch; errors of `body` are forwarded, and so is its end before
 * its end: a body destroyed without an error, or before it came here (its client gone while
 * the upload waited), emits nothing more, and the upload would hold its slot until the idle
 * timeout.
 */
export function watchBody(body: Readable, options: BodyWatchOptions): BodyWatch {
  const watch = new BodyWatch(options);
  finished(body, (err) => {
    if (err) watch.destroy(err);
  });
  // Refused by the watch (too large, too slow): what the client still sends is read and
  // dropped, so that it can read the answer and its connection serve the next request (the
  // gateway cuts one that goes on sending past its grace). Unpiped, the body would wait.
  watch.once('error', () => {
    body.unpipe(watch);
    body.resume();
  });
  body.pipe(watch);
  return watch;
}
