import type { Logger } from 'moleculer';
import { forEachAtOnce } from '../../libs/at-once';
import { LOOK_BEHIND_EVERY_MS } from '../../libs/time-buckets';
import { isMatchingEligible } from './lifecycle';
import { SEARCH_BUCKET_MS } from './scheduling';
import type { Settlement } from './settlement';
import {
  listedBucket,
  type OrderStore,
  type ScheduledSearchRecord,
  type SearchBucket,
} from './store';
import type { DeliveryTransitions } from './transitions';

/**
 * Buckets a tick reads at most: a day and a bit. A sweep that was down longer catches up over
 * several ticks rather than reading everything since in one.
 */
export const BUCKETS_PER_TICK = 300;

/** Searches started at once: a tick's worth goes out in seconds without flooding matching. */
const STARTS_AT_ONCE = 10;

/**
 * How long a due search may keep failing before an operator is called. It is then listed again
 * under the current bucket: its old one no longer holds the cursor back, and a bucket that
 * failed for a day would otherwise keep the later ones out of the reads a tick allows.
 */
export const STUCK_SEARCH_MS = 60 * 60_000;

export interface ScheduledSearchDeps {
  store: OrderStore;
  transitions: DeliveryTransitions;
  settlement: Settlement;
  logger: () => Logger;
}

/**
 * SCHEDULED deliveries whose search is due, found through their buckets (`dueBucket`) from the
 * sweep's cursor up to now, each read by `_id`: what a tick costs follows the searches due, not
 * the bookings made ahead. Started if the delivery still waits for a courier (not cancelled
 * meanwhile), then dropped. A search starts once however often it is asked, so replicas may do
 * this together.
 */
export class ScheduledSearches {
  /** When this replica last read the buckets behind the cursor (ms since the epoch). */
  private lookedBehindAt = -Infinity;

  constructor(private readonly deps: ScheduledSearchDeps) {}

  async startDue(now: Date): Promise<void> {
    const { store } = this.deps;
    await this.lookBehind(now);
    const buckets = await store.waitingSearches(now, BUCKETS_PER_TICK);
    const started = await this.startAll(buckets, now);
    // A search still there (failing) stops the cursor before its bucket; the later buckets
    // were read all the same.
    await store.searchBuckets.passDone(buckets, (search) => started.has(search._id), now);
  }

  /**
   * Starts the searches of `buckets` that are due; the ids of those now over. `behindCursor`:
   * buckets the sweep has passed, which only the look behind reads.
   */
  private async startAll(
    buckets: SearchBucket[],
    now: Date,
    behindCursor = false,
  ): Promise<Set<string>> {
    const due = buckets.flatMap((b) =>
      b.items.filter((s) => new Date(s.dueAt).getTime() <= now.getTime()),
    );
    const started = new Set<string>();
    await forEachAtOnce(due, STARTS_AT_ONCE, async (search) => {
      if (await this.start(search, now, behindCursor)) started.add(search._id);
    });
    return started;
  }

  /**
   * Every `LOOK_BEHIND_EVERY_MS`, the buckets of the hour behind the cursor are read again: a
   * booking listed there after the sweep passed it, its writer told all was well (a clock more
   * than `BUCKET_GRACE_MS` behind the sweep's, or a writer paused that long between its check
   * and its add), would otherwise wait for a search forever, paid. Twelve reads by `_id`.
   */
  private async lookBehind(now: Date): Promise<void> {
    if (now.getTime() - this.lookedBehindAt < LOOK_BEHIND_EVERY_MS) return;
    this.lookedBehindAt = now.getTime();
    const behind = await this.deps.store.searchesBehind(now);
    const found = behind.flatMap((b) => b.items.map((s) => s._id));
    if (found.length === 0) return;
    this.deps.logger().warn('scheduled searches found behind the sweep’s cursor; starting them', {
      deliveryIds: found,
    });
    await this.startAll(behind, now, true);
  }

  /** Whether the search is over: started or not wanted, and dropped. */
  private async start(
    search: ScheduledSearchRecord,
    now: Date,
    behindCursor: boolean,
  ): Promise<boolean> {
    const { store, transitions, settlement } = this.deps;
    try {
      const delivery = await transitions.current(search._id);
      if (delivery && isMatchingEligible(delivery.lifecycle)) await settlement.search(delivery);
      await store.dropScheduledSearch(search._id);
      return true;
    } catch (err) {
      await this.failed(search, now, err as Error, behindCursor);
      return false;
    }
  }

  private async failed(
    search: ScheduledSearchRecord,
    now: Date,
    err: Error,
    behindCursor: boolean,
  ): Promise<void> {
    const lateMs = now.getTime() - new Date(search.dueAt).getTime();
    const context = { deliveryId: search._id, dueAt: search.dueAt, err: err.message };
    if (lateMs <= STUCK_SEARCH_MS) {
      // Matching unreachable, most likely: this one stays in its bucket, the others go on;
      // unless the sweep has passed its bucket, which the look behind reads for an hour only
      // (and every ten minutes): listed again at once, where the sweep reads.
      this.deps.logger().warn('scheduled search not started; next sweep retries', context);
      if (behindCursor) await this.relist(search, now);
      return;
    }
    this.deps
      .logger()
      .error(
        'scheduled search failing for over an hour: no courier is being searched for this ' +
          'delivery. Check that courier-matching is up and the delivery is intact (its ' +
          'addresses); the sweep keeps retrying. If it cannot be matched, cancel the delivery ' +
          '(its fee is refunded).',
        { ...context, lateMinutes: Math.round(lateMs / 60_000) },
      );
    const recent = listedBucket(search) + SEARCH_BUCKET_MS > now.getTime() - STUCK_SEARCH_MS;
    if (recent && !behindCursor) return;
    await this.relist(search, now);
  }

  private async relist(search: ScheduledSearchRecord, now: Date): Promise<void> {
    try {
      await this.deps.store.relistSearch(search._id, now);
    } catch {
      // Still in its bucket: the next sweep (or look behind) tries again.
    }
  }
}
