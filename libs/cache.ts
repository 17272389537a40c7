/**
 * Numbers the loads of one value, which may finish out of order (a timer, an announcement and
 * an own write each start one): a load's result is kept only when no load started after it has
 * been kept, so an older, slower read never replaces a newer one.
 */
class LoadOrder {
  private started = 0;
  private kept = 0;

  /** The number of a load about to start. */
  start(): number {
    this.started += 1;
    return this.started;
  }

  /** Whether the load numbered `load` may be kept; if so, none started before it may be. */
  keep(load: number): boolean {
    if (load <= this.kept) return false;
    this.kept = load;
    return true;
  }

  /** Whether the load numbered `load` is still worth keeping: no change or newer load since. */
  current(load: number): boolean {
    return load > this.kept;
  }

  /** No load started so far may be kept: what each read may predate a change. */
  outdate(): void {
    this.kept = this.started;
  }
}

/** How long a `CachedValue` whose load failed answers its last value before it loads again. */
export const RETRY_AFTER_FAILURE_MS = 5_000;

/**
 * One value kept in memory: loaded on first use, reloaded once older than `maxAgeMs`, and
 * dropped by `invalidate()` when its owner announces a change. Callers that find it missing
 * or old at once share one load, so an expiry under load sends one read, not one a caller. A
 * load that began before an invalidation, or before a load already kept, is returned to its
 * callers but not kept, so a change is never hidden by a read that raced it.
 *
 * A load that fails while an earlier one succeeded answers that earlier value (reference data
 * a few minutes old beats none: matching would stop offering while geo restarts), tells
 * `onStale`, and answers it without loading for `RETRY_AFTER_FAILURE_MS` (at most `maxAgeMs`):
 * while its source hangs, callers are not each held up by a load that fails, nor the source
 * asked again at every call. An invalidation tries at once. Only a value never loaded fails
 * its callers.
 */
export class CachedValue<T> {
  private value: { loadedAt: number; data: T } | undefined;
  /** The last value kept, even after it expired or was invalidated: the fallback of a failure. */
  private lastKept: { data: T } | undefined;
  private readonly order = new LoadOrder();
  /** The load under way that callers join; dropped by an invalidation, which needs a new one. */
  private inFlight: { result: Promise<T>; startedAt: number } | undefined;
  /** Until when the last value answers without a load, after a load failed. */
  private retryAt = 0;

  constructor(
    private readonly load: () => Promise<T>,
    private readonly maxAgeMs: number,
    private readonly onStale: (err: unknown) => void = () => undefined,
  ) {}

  async get(): Promise<T> {
    const now = Date.now();
    if (this.value && now - this.value.loadedAt <= this.maxAgeMs) return this.value.data;
    if (this.lastKept && now < this.retryAt) return this.lastKept.data;
    return this.sharedLoad();
  }

  /**
   * The value loaded within `ageMs`, else loaded again (with a load under way, that one): for
   * a caller that did not find in it what it looked for and asks once more, without every such
   * caller reading it again, nor dropping it for the others.
   */
  async within(ageMs: number): Promise<T> {
    if (this.value && Date.now() - this.value.loadedAt <= ageMs) return this.value.data;
    return this.sharedLoad();
  }

  /**
   * The value of a load begun at `ms` or after (one under way, or a new one): for a caller that
   * was told at `ms` that what it read is no longer so (another service refused it), however
   * recently it was read; the callers told at once share one load.
   */
  async since(ms: number): Promise<T> {
    if (this.value && this.value.loadedAt >= ms) return this.value.data;
    if (this.inFlight && this.inFlight.startedAt >= ms) return this.inFlight.result;
    return this.newSharedLoad();
  }

  private sharedLoad(): Promise<T> {
    return this.inFlight?.result ?? this.newSharedLoad();
  }

  private newSharedLoad(): Promise<T> {
    const shared = { startedAt: Date.now(), result: this.loadAndKeep() };
    this.inFlight = shared;
    void shared.result
      .finally(() => {
        if (this.inFlight === shared) this.inFlight = undefined;
      })
      .catch(() => undefined);
    return shared.result;
  }

  invalidate(): void {
    this.order.outdate();
    this.value = undefined;
    this.inFlight = undefined;
    this.retryAt = 0;
  }

  /**
   * Reads the value again now and keeps it: for a caller that must not be answered from
   * before a change it may not have heard of. A failure fails it, never answered by the last
   * value (which may be the very one it must not get).
   */
  async fresh(): Promise<T> {
    this.invalidate();
    return this.loadAndKeep(false);
  }

  private async loadAndKeep(staleOnFailure = true): Promise<T> {
    const load = this.order.start();
    // Its age is counted from its start: a change made while it ran may not be in it.
    const startedAt = Date.now();
    let data: T;
    try {
      data = await this.load();
    } catch (err) {
      if (!staleOnFailure || !this.lastKept) throw err;
      this.onStale(err);
      // A load that a change overtook says nothing of the next: that one is tried at once.
      if (this.order.current(load)) {
        this.retryAt = Date.now() + Math.min(RETRY_AFTER_FAILURE_MS, this.maxAgeMs);
      }
      return this.lastKept.data;
    }
    if (this.order.keep(load)) {
      this.value = { loadedAt: startedAt, data };
      this.lastKept = { data };
    }
    return data;
  }
}

/**
 * A value always at hand in memory (read on every request), read again whenever something
 * says it may have changed: a timer, an announcement, the process's own write. Reloads may
 * overlap; the newest-started one that finishes is kept, whatever order they finish in.
 */
export class ReloadedValue<T> {
  private readonly order = new LoadOrder();

  constructor(
    private readonly load: () => Promise<T>,
    private value: T,
  ) {}

  get current(): T {
    return this.value;
  }

  /** Reads the value again; answers what is kept then (this read's, or a newer one's). */
  async reload(): Promise<T> {
    const load = this.order.start();
    const data = await this.load();
    if (this.order.keep(load)) this.value = data;
    return this.value;
  }
}
