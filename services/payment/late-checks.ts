import type { Logger } from 'moleculer';
import { forEachAtOnce } from '../../libs/at-once';
import type { Config } from '../../libs/config';
import { RELEASE_MARGIN_MS } from '../../libs/mongo';
import { LOOK_BEHIND_EVERY_MS, type Bucket } from '../../libs/time-buckets';
import { ATTEMPT_GRACE_MS, expiryVerdict } from './checkout';
import type { CheckoutProvider } from './checkout-providers';
import {
  lateCheckListedIn,
  type CheckoutStore,
  type LateCheckRecord,
  type SessionRecord,
} from './checkout-store';

/** Buckets a sweep reads at most: a day and a bit; one down longer catches up over several. */
const BUCKETS_PER_TICK = 300;

/** Checks one sweep makes at most; the rest stay listed for the next. */
const CHECKS_PER_TICK = 100;

/** Checks asked of the provider at once (each may wait PAYSTACK_TIMEOUT_MS on it). */
const CHECKS_AT_ONCE = 10;

export interface LateCheckDeps {
  config: Config['payment'];
  store: CheckoutStore;
  provider: CheckoutProvider;
  logger: () => Pick<Logger, 'warn'>;
  /** How often a charge still under way is looked at again. */
  recheckMs: number;
  /** Credits a checkout its provider reports paid, once whoever else reports it. */
  pay(session: SessionRecord, providerReference: string): Promise<unknown>;
  /** Lists a payment of another amount for an operator to refund. */
  uncredited(session: SessionRecord, providerReference: string, why: string): Promise<unknown>;
}

/**
 * The late checks of expired checkouts (`CHECKOUT_LATE_CHECKS_MS`, docs/payments.md): the
 * provider is asked once more whether a transaction handed out was paid after all, a payment
 * whose webhook never came. Listed in 5-minute buckets of their next check's time, read by
 * `_id` from the sweep's cursor to now (libs/time-buckets): a sweep costs what is due, not
 * the days of abandoned checkouts still watched.
 */
export class LateChecks {
  /** When this replica last read the buckets behind the cursor (ms since the epoch). */
  private lookedBehindAt = -Infinity;

  constructor(private readonly deps: LateCheckDeps) {}

  /** Lists an expired checkout whose transaction was handed out for its late checks, once. */
  async watch(session: SessionRecord): Promise<void> {
    if (this.deps.config.provider === 'sandbox') return;
    const now = new Date();
    const [first] = this.deps.config.lateChecksMs;
    await this.deps.store.watchLate(session._id, now, new Date(now.getTime() + first));
  }

  /**
   * Makes the checks due in the buckets from the cursor to now, oldest first, and moves the
   * cursor past the buckets they all left. Every `LOOK_BEHIND_EVERY_MS` it first reads the
   * hour behind the cursor: a check listed there after the cursor passed it (a writer paused
   * for minutes, or a clock behind) would otherwise never be made.
   */
  async sweep(now: Date): Promise<void> {
    const { store } = this.deps;
    if (now.getTime() - this.lookedBehindAt >= LOOK_BEHIND_EVERY_MS) {
      this.lookedBehindAt = now.getTime();
      const behind = (await store.lateChecksBehind(now)).flatMap((b) => b.items);
      if (behind.length > 0) {
        this.deps.logger().warn('late checks found behind the sweep’s cursor; making them', {
          references: behind.map((c) => c._id),
        });
        await this.handle(behind, now);
      }
    }
    const buckets = await store.lateCheckBucketsDue(now, BUCKETS_PER_TICK);
    const left = await this.handle(
      buckets.flatMap((b: Bucket<LateCheckRecord>) => b.items),
      now,
    );
    await store.lateCheckBuckets.passDone(buckets, (check) => left.has(check._id), now);
  }

  /**
   * Makes the checks due (`CHECKS_PER_TICK` at most, the most overdue first) and moves those
   * listed before their time (a node of the version before set it) to their bucket. The ids of
   * those that left their bucket: made, moved, or put behind after failing.
   */
  private async handle(checks: LateCheckRecord[], now: Date): Promise<Set<string>> {
    const { store } = this.deps;
    const dueAt = (c: LateCheckRecord) => new Date(c.nextCheckAt).getTime();
    const due = checks
      .filter((c) => dueAt(c) <= now.getTime())
      .sort((a, b) => dueAt(a) - dueAt(b))
      .slice(0, CHECKS_PER_TICK);
    const early = checks.filter(
      (c) =>
        dueAt(c) > now.getTime() &&
        store.lateCheckBuckets.bucketOf(dueAt(c)) > lateCheckListedIn(c),
    );
    const left = new Set<string>();
    const moved = (check: LateCheckRecord, to: number | null | undefined) => {
      if (to === null || (to !== undefined && to > lateCheckListedIn(check))) left.add(check._id);
    };
    await forEachAtOnce(early, CHECKS_AT_ONCE, async (check) => {
      try {
        moved(check, await store.relistLate(check));
      } catch (err) {
        // Left where it is, holding the cursor there: the next sweep moves it.
        this.deps.logger().warn('late check not moved to its bucket; a later sweep retries', {
          reference: check._id,
          err,
        });
      }
    });
    await forEachAtOnce(due, CHECKS_AT_ONCE, async (check) => {
      try {
        moved(check, await this.claimed(check));
      } catch (err) {
        // One failing again and again (the provider refusing to answer about it) goes behind
        // the others, so that no number of such ones holds up the rest of the list.
        this.deps.logger().warn('late check skipped; a later sweep retries', {
          reference: check._id,
          err,
        });
        const later = new Date(Date.now() + this.deps.config.sweepIntervalMs);
        moved(
          check,
          await store.lateChecked(check._id, check.checks, later).catch(() => undefined),
        );
      }
    });
    return left;
  }

  /**
   * Makes a check if this replica claims it: the bucket it is listed in after (null: none, it
   * is over), or undefined when another replica holds it and may still be at it. A check that
   * fails gives its claim up for the next sweep.
   */
  private async claimed(check: LateCheckRecord): Promise<number | null | undefined> {
    // Its holder's call must be over by then: the provider's timeout and the writes after;
    // and a failed check gives it back in time (`RELEASE_MARGIN_MS` before its end).
    const leaseMs = this.deps.config.paystack.timeoutMs + ATTEMPT_GRACE_MS + RELEASE_MARGIN_MS;
    const claim = await this.deps.store.claimLateCheck(check._id, check.checks, leaseMs);
    if (!claim) return undefined;
    try {
      return await this.make(check);
    } catch (err) {
      await this.deps.store.releaseLateCheck(claim);
      throw err;
    }
  }

  /**
   * A claimed check: the provider asked, and what it says carried out. Paid, the checkout is
   * credited as a late webhook would credit it; paid another amount, it is listed uncredited;
   * otherwise the next check is set, or none after the last. A charge still under way waits
   * for the next check.
   */
  private async make(check: LateCheckRecord): Promise<number | null> {
    const { store } = this.deps;
    const session = await store.session(check._id);
    if (!session) return store.lateChecked(check._id, check.checks, null);
    const opened = await store.opened(session._id);
    if (!opened) return store.lateChecked(check._id, check.checks, null);
    const { providerReference } = opened;
    const verified = await this.deps.provider.verify(providerReference);
    // Read as the expiry reads it.
    const verdict = expiryVerdict(session, verified, new Date(), this.deps.recheckMs);
    if ('pay' in verdict) {
      await this.deps.pay(session, providerReference);
      return store.lateChecked(check._id, check.checks, null);
    }
    if ('expire' in verdict && verdict.uncredited) {
      await this.deps.uncredited(session, providerReference, verdict.uncredited);
      return store.lateChecked(check._id, check.checks, null);
    }
    const checks = check.checks + 1;
    const delay = this.deps.config.lateChecksMs[checks];
    const next = delay === undefined ? null : new Date(new Date(check.expiredAt).getTime() + delay);
    return store.lateChecked(check._id, checks, next);
  }
}
