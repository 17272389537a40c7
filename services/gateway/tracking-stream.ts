import type { ServerResponse } from 'node:http';
import type { Logger } from 'moleculer';
import type { Config } from '../../libs/config';
import {
  TRACKING_PATTERN,
  UNKNOWN_TRACKING_ID,
  type TrackingState,
} from '../../libs/contracts/order';
import { notFound, serviceBusy, tooManyRequests } from '../../libs/errors';
import { clientAddress } from './auth-throttle';
import type { GatewayRequest } from './http';

/**
 * The tracking page's live updates (`GET /track/:trackingId/events`, server-sent events). A
 * gateway process follows each tracking id once, however many pages watch it: one `Feed`
 * reads the state at once when the delivery's status changes (the order service's event),
 * every `refreshMs` while a courier is under way (their position), and otherwise at each
 * heartbeat: the event is sent once and may be missed (a process stopped after the change, a
 * broadcast lost), and a feed that only waited for it would show the old status for good. It
 * sends the state to its pages only when it changed. Streams are capped per client address
 * and in total.
 */

/** The stream's path under `/track`, next to its page. */
export const TRACKING_EVENTS_PATH = '/:trackingId/events';

export interface TrackingStreamOptions {
  config: Pick<Config, 'tracking' | 'trustProxyHops'>;
  /** The order service's state of a tracking id; null for an unknown one. */
  fetch: (trackingId: string) => Promise<TrackingState | null>;
  logger: () => Pick<Logger, 'warn'>;
}

interface Feed {
  pages: Set<ServerResponse>;
  state: TrackingState;
  /** The last state sent, serialised: a refresh that changes nothing sends nothing. */
  last: string;
  running: Promise<void> | undefined;
  /** A status change arrived while a read was under way: read once more after it. */
  again: boolean;
  timers: NodeJS.Timeout[];
}

/** A refused stream's `Retry-After`: a page left open frees its slot when closed. */
const RETRY_AFTER_SECONDS = 30;

/** One server-sent event; `json` is serialised JSON, one line whatever it holds. */
const sse = (event: string, json: string) => `event: ${event}\ndata: ${json}\n\n`;
const endEvent = (state: TrackingState) =>
  sse('end', JSON.stringify({ status: state.view.status }));

export class TrackingStreams {
  private readonly feeds = new Map<string, Feed>();
  private readonly perAddress = new Map<string, number>();
  private total = 0;

  constructor(private readonly options: TrackingStreamOptions) {}

  /** Streams open on this process, for tests and metrics. */
  get open(): number {
    return this.total;
  }

  /**
   * The moleculer-web alias: refusals go to `next(err)` (the error envelope); once the
   * headers are out, the stream lasts until the page leaves or the delivery is over.
   */
  handler() {
    return (req: GatewayRequest, res: ServerResponse, next: (err?: unknown) => void) => {
      this.attach(req, res).catch(next);
    };
  }

  /** The order service says the delivery's status changed: every page following it is told. */
  statusChanged(trackingId: string): void {
    const feed = this.feeds.get(trackingId);
    if (feed) void this.refresh(trackingId, feed);
  }

  /** Ends every stream (the gateway stops): pages reconnect to another process. */
  closeAll(): void {
    for (const [trackingId, feed] of this.feeds) {
      for (const page of feed.pages) page.end();
      this.dispose(trackingId, feed);
    }
  }

  private async attach(req: GatewayRequest, res: ServerResponse): Promise<void> {
    const params = (req.$params ?? {}) as { trackingId?: string };
    const trackingId = String(params.trackingId ?? '').toUpperCase();
    if (!TRACKING_PATTERN.test(trackingId)) throw notFound(UNKNOWN_TRACKING_ID);
    const address = clientAddress(req, this.options.config.trustProxyHops);
    const release = this.reserve(address);
    let feed: Feed | undefined;
    try {
      feed = this.feeds.get(trackingId);
      if (!feed) {
        const state = await this.options.fetch(trackingId);
        if (!state) throw notFound(UNKNOWN_TRACKING_ID);
        // Another page may have opened the feed while this one waited for the state.
        feed = this.feeds.get(trackingId);
        if (!feed) {
          feed = this.openFeed(trackingId, state);
          // A status change announced while the state was read found no feed to tell: read
          // once more now that the feed hears them.
          if (!state.view.terminal) void this.refresh(trackingId, feed);
        }
      }
      if (res.destroyed) throw new Error('client left');
      this.join(trackingId, feed, res, release);
    } catch (err) {
      release();
      // A page that left while the feed it opened read its first state: nobody follows it.
      if (feed && feed.pages.size === 0) this.dispose(trackingId, feed);
      throw err;
    }
  }

  /** Counts a stream against its address's cap and the total; the answer gives it back. */
  private reserve(address: string): () => void {
    const { maxStreams, maxStreamsPerAddress } = this.options.config.tracking;
    const mine = this.perAddress.get(address) ?? 0;
    if (mine >= maxStreamsPerAddress) {
      throw tooManyRequests(
        `Too many live tracking pages open from your address (${maxStreamsPerAddress}); close some of them, or reload later`,
        RETRY_AFTER_SECONDS,
      );
    }
    if (this.total >= maxStreams) {
      throw serviceBusy(
        'Too many live tracking pages open right now; reload the page in a minute',
        RETRY_AFTER_SECONDS,
      );
    }
    this.perAddress.set(address, mine + 1);
    this.total++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const left = (this.perAddress.get(address) ?? 1) - 1;
      if (left > 0) this.perAddress.set(address, left);
      else this.perAddress.delete(address);
    };
  }

  private openFeed(trackingId: string, state: TrackingState): Feed {
    const { refreshMs, heartbeatMs } = this.options.config.tracking;
    const feed: Feed = {
      pages: new Set(),
      state,
      last: JSON.stringify(state),
      running: undefined,
      again: false,
      timers: [],
    };
    const poll = setInterval(() => {
      if (feed.state.view.live) void this.refresh(trackingId, feed);
    }, refreshMs);
    const beat = setInterval(() => {
      for (const page of feed.pages) page.write(': heartbeat\n\n');
      // Not polled: a status change whose event this process missed shows within a beat.
      if (!feed.state.view.live) void this.refresh(trackingId, feed);
    }, heartbeatMs);
    // Neither keeps the process alive on its own.
    poll.unref();
    beat.unref();
    feed.timers.push(poll, beat);
    this.feeds.set(trackingId, feed);
    return feed;
  }

  private join(trackingId: string, feed: Feed, res: ServerResponse, release: () => void): void {
    res.statusCode = 200;
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Accel-Buffering', 'no'); // nginx would hold events back otherwise
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.flushHeaders();
    res.write(sse('state', feed.last));
    if (feed.state.view.terminal) {
      res.end(endEvent(feed.state));
      release();
      if (feed.pages.size === 0) this.dispose(trackingId, feed);
      return;
    }
    feed.pages.add(res);
    res.once('close', () => {
      release();
      feed.pages.delete(res);
      if (feed.pages.size === 0) this.dispose(trackingId, feed);
    });
  }

  private dispose(trackingId: string, feed: Feed): void {
    for (const timer of feed.timers) clearInterval(timer);
    feed.timers = [];
    if (this.feeds.get(trackingId) === feed) this.feeds.delete(trackingId);
  }

  /** Reads the state once (or once more after the read under way) and sends what changed. */
  private refresh(trackingId: string, feed: Feed): Promise<void> {
    if (feed.running) {
      feed.again = true;
      return feed.running;
    }
    feed.running = (async () => {
      do {
        feed.again = false;
        await this.readOnce(trackingId, feed);
      } while (feed.again && this.feeds.get(trackingId) === feed);
    })().finally(() => {
      feed.running = undefined;
    });
    return feed.running;
  }

  private async readOnce(trackingId: string, feed: Feed): Promise<void> {
    let state: TrackingState | null;
    try {
      state = await this.options.fetch(trackingId);
    } catch (err) {
      // The pages keep what they show; the next status change or tick reads again.
      this.options.logger().warn('tracking state not read; the next refresh retries', {
        trackingId,
        error: (err as Error).message,
      });
      return;
    }
    if (!state) return;
    feed.state = state;
    const serialised = JSON.stringify(state);
    if (serialised !== feed.last) {
      feed.last = serialised;
      for (const page of feed.pages) page.write(sse('state', serialised));
    }
    if (state.view.terminal) {
      // Over: nothing more will come. The pages' script closes its EventSource on `end`.
      for (const page of feed.pages) page.end(endEvent(state));
      this.dispose(trackingId, feed);
    }
  }
}
