import type { ServerResponse } from 'node:http';
import type { Logger } from 'moleculer';
import type { Config } from '../../libs/config';
import {
  TRACKING_PATTERN,
  UNKNOWN_TRACKING_ID,
  type TrackingState,
} from '../../libs/contracts/order';
import { notFound, serviceBusy, tooManyRequests } from '../../libs/errors';
import { countIn } from '../../libs/open-counts';
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
 * and in total, each stream's life by `streamLifetimeMs`, and what a page has not taken yet by
 * `MAX_UNSENT_BYTES`. A stream that ends before the delivery is over (its lifetime, the process
 * stopping) ends cleanly: the page's EventSource reconnects by itself, after `RECONNECT_MS`.
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

/**
 * Live pages of one delivery's tracking at most in a process, from any addresses: its recipient
 * and sender follow it in a few tabs. More is someone holding the process's streams with the id
 * of a delivery of their own, from addresses they have plenty of (a home's IPv6 /56 is 256 of
 * the /64s the address cap counts by).
 */
export const MAX_PAGES_PER_TRACKING_ID = 20;

/**
 * Bytes a page may leave unsent in this process (Node's buffer, beyond what the kernel took)
 * before it is dropped: a dozen states or more. A client that stops reading would otherwise be
 * buffered a state every refresh and a heartbeat every beat, for as long as it stays connected.
 */
export const MAX_UNSENT_BYTES = 64 * 1024;

/** How long a page's EventSource waits to reconnect after its stream ended: the `retry` field. */
export const RECONNECT_MS = 2_000;

/**
 * A page ended (its lifetime, the process stopping) that has not taken its last bytes after
 * this is cut: a client that stops reading would keep the connection, and a stop, waiting.
 */
const END_GRACE_MS = 1_000;

/** One server-sent event; `json` is serialised JSON, one line whatever it holds. */
const sse = (event: string, json: string) => `event: ${event}\ndata: ${json}\n\n`;
/** Sets the page's reconnection delay; dispatches no event. */
const retryField = `retry: ${RECONNECT_MS}\n\n`;
const endEvent = (state: TrackingState) =>
  sse('end', JSON.stringify({ status: state.view.status }));

export class TrackingStreams {
  private readonly feeds = new Map<string, Feed>();
  private readonly perAddress = new Map<string, number>();
  private readonly perTrackingId = new Map<string, number>();
  private total = 0;
  /** The process is stopping: streams are ended, new ones sent elsewhere. */
  private closing = false;

  constructor(private readonly options: TrackingStreamOptions) {}

  /** Streams open on this process, for tests and metrics. */
  get open(): number {
    return this.total;
  }

  /**
   * The moleculer-web alias: refusals go to `next(err)` (the error envelope); once the
   * headers are out, the stream lasts until the page leaves, the delivery is over, its lifetime
   * ends or the process stops, and so does its request for moleculer, which a stop waits for:
   * `closeAll` is run as the stop begins, before that wait.
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

  /**
   * Ends every stream, and every one asked for from now on (the gateway stops): the pages
   * reconnect, to another process. Settled once each page's connection is done with.
   */
  async closeAll(): Promise<void> {
    this.closing = true;
    const closed: Promise<void>[] = [];
    for (const [trackingId, feed] of this.feeds) {
      for (const page of feed.pages) closed.push(this.endPage(page));
      // A read under way sends nothing more to them.
      feed.pages.clear();
      this.dispose(trackingId, feed);
    }
    await Promise.all(closed);
  }

  private async attach(req: GatewayRequest, res: ServerResponse): Promise<void> {
    const params = (req.$params ?? {}) as { trackingId?: string };
    const trackingId = String(params.trackingId ?? '').toUpperCase();
    if (!TRACKING_PATTERN.test(trackingId)) throw notFound(UNKNOWN_TRACKING_ID);
    if (this.closing) return this.sendElsewhere(res);
    const address = clientAddress(req, this.options.config.trustProxyHops);
    const release = this.reserve(address, trackingId);
    let feed: Feed | undefined;
    try {
      feed = this.feeds.get(trackingId);
      if (!feed) {
        const state = await this.options.fetch(trackingId);
        if (!state) throw notFound(UNKNOWN_TRACKING_ID);
        if (this.closing) {
          release();
          return this.sendElsewhere(res);
        }
        // Another page may have opened the feed while this one waited for the state.
        feed = this.feeds.get(trackingId);
        if (!feed) {
          feed = this.openFeed(trackingId, state);
          // A status change announced while the state was read found no feed to tell: read
          // once more now that the feed hears them.
          if (!state.view.terminal) void this.refresh(trackingId, feed);
        }
      }
      // A feed's state may be older than the page, rendered from a read made just now (a
      // change whose broadcast this process missed, read again within a heartbeat): the page
      // passes over a state older than its own (`TrackingView.version`).
      if (res.destroyed) {
        // The page left while its feed's first state was read: nobody to answer, no error of
        // ours (the access log records its 499).
        release();
        if (feed.pages.size === 0) this.dispose(trackingId, feed);
        return;
      }
      this.join(trackingId, feed, res, release);
    } catch (err) {
      release();
      // A page that left while the feed it opened read its first state: nobody follows it.
      if (feed && feed.pages.size === 0) this.dispose(trackingId, feed);
      throw err;
    }
  }

  /**
   * Counts a stream against its address's cap, its tracking id's and the total; the answer
   * gives it back.
   */
  private reserve(address: string, trackingId: string): () => void {
    const { maxStreams, maxStreamsPerAddress } = this.options.config.tracking;
    if ((this.perAddress.get(address) ?? 0) >= maxStreamsPerAddress) {
      throw tooManyRequests(
        `Too many live tracking pages open from your address (${maxStreamsPerAddress}); close some of them, or reload later`,
        RETRY_AFTER_SECONDS,
      );
    }
    if ((this.perTrackingId.get(trackingId) ?? 0) >= MAX_PAGES_PER_TRACKING_ID) {
      throw tooManyRequests(
        `Too many live pages of this delivery's tracking open (${MAX_PAGES_PER_TRACKING_ID}); close some of them, or reload later`,
        RETRY_AFTER_SECONDS,
      );
    }
    if (this.total >= maxStreams) {
      throw serviceBusy(
        'Too many live tracking pages open right now; reload the page in a minute',
        RETRY_AFTER_SECONDS,
      );
    }
    countIn(this.perAddress, address, 1);
    countIn(this.perTrackingId, trackingId, 1);
    this.total++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      countIn(this.perAddress, address, -1);
      countIn(this.perTrackingId, trackingId, -1);
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
      for (const page of feed.pages) this.send(page, ': heartbeat\n\n');
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
    startStream(res);
    res.write(retryField + sse('state', feed.last));
    if (feed.state.view.terminal) {
      res.end(endEvent(feed.state));
      release();
      if (feed.pages.size === 0) this.dispose(trackingId, feed);
      return;
    }
    feed.pages.add(res);
    // Up to a tenth shorter at random: pages opened together (a process's, as it stopped)
    // do not all come back together again.
    const { streamLifetimeMs } = this.options.config.tracking;
    const lifetime = setTimeout(
      () => void this.endPage(res),
      streamLifetimeMs * (1 - Math.random() / 10),
    );
    lifetime.unref();
    res.once('close', () => {
      clearTimeout(lifetime);
      release();
      feed.pages.delete(res);
      if (feed.pages.size === 0) this.dispose(trackingId, feed);
    });
  }

  /** The process is stopping: an empty stream, after which the page reconnects elsewhere. */
  private sendElsewhere(res: ServerResponse): void {
    startStream(res);
    res.end(retryField);
  }

  /** Sends `text` to a page still open; one that has left too much unsent is dropped. */
  private send(page: ServerResponse, text: string): void {
    if (page.writableEnded || page.destroyed) return;
    if (page.writableLength > MAX_UNSENT_BYTES) {
      // Not reading, or far too slowly: its EventSource, if any, reconnects to a fresh state.
      page.destroy();
      return;
    }
    page.write(text);
  }

  /** Ends a page with `last`, and cuts it if it does not take it soon; settled once closed. */
  private endPage(page: ServerResponse, last?: string): Promise<void> {
    if (page.destroyed) return Promise.resolve();
    const closed = new Promise<void>((resolve) => page.once('close', () => resolve()));
    if (!page.writableEnded) page.end(last);
    const cut = setTimeout(() => page.destroy(), END_GRACE_MS);
    cut.unref();
    return closed.finally(() => clearTimeout(cut));
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
      // The pages keep what they show; the next status change or tick reads again. The id is
      // not logged: it opens the page to whoever reads it.
      this.options.logger().warn('tracking state not read; the next refresh retries', {
        error: (err as Error).message,
      });
      return;
    }
    // A feed let go while the state was read (its pages left, the process is stopping) has
    // nobody to tell.
    if (!state || this.feeds.get(trackingId) !== feed) return;
    if (isOlder(state, feed.state)) return;
    feed.state = state;
    const serialised = JSON.stringify(state);
    if (serialised !== feed.last) {
      feed.last = serialised;
      for (const page of feed.pages) this.send(page, sse('state', serialised));
    }
    if (state.view.terminal) {
      // Over: nothing more will come. The pages' script closes its EventSource on `end`.
      for (const page of feed.pages) void this.endPage(page, endEvent(state));
      this.dispose(trackingId, feed);
    }
  }
}

/** The answer's head of an event stream, sent at once. */
function startStream(res: ServerResponse): void {
  res.statusCode = 200;
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('X-Accel-Buffering', 'no'); // nginx would hold events back otherwise
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.flushHeaders();
}

/**
 * Whether `read` is of an older version of the delivery than `shown`: a read answered by an
 * order node that read before another's later write. Views without versions (order nodes
 * before session 64) are not compared.
 */
function isOlder(read: TrackingState, shown: TrackingState): boolean {
  const [was, is] = [shown.view.version, read.view.version];
  return was !== undefined && is !== undefined && is < was;
}
