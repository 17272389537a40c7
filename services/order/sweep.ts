import type { Logger } from 'moleculer';
import type { Config } from '../../libs/config';
import { Periodic } from '../../libs/periodic';
import type { Announcer } from './announcer';
import type { DeliveryRequests } from './requests';
import { ScheduledSearches } from './scheduled-searches';
import type { Settlement } from './settlement';
import type { OrderStore } from './store';
import type { DeliveryTransitions } from './transitions';

/** Work items one sweep takes of each kind; the next sweep takes the rest. */
const BATCH = 100;
/** A transition's own writer settles it at once; the sweep waits this long before helping. */
const SETTLE_GRACE_MS = 15_000;

export interface SweepDeps {
  config: Config['order'];
  store: OrderStore;
  requests: DeliveryRequests;
  transitions: DeliveryTransitions;
  settlement: Settlement;
  announcer: Announcer;
  logger: () => Logger;
}

/**
 * The order service's recovery: requests stopped half-way are finished or undone,
 * transitions whose effects (refunds, releases) did not all happen are settled and their
 * webhook events published, and SCHEDULED deliveries' searches started on their date
 * (./scheduled-searches). Every step is idempotent, so replicas may sweep together. The
 * notification outbox has its own sender (libs/messaging/outbox-sender.ts), which runs more often.
 */
export class OrderSweep {
  private readonly periodic: Periodic;
  private readonly scheduled: ScheduledSearches;
  /** The last request the sweep read, when its batch was full. */
  private requestsAfter = '';

  constructor(private readonly deps: SweepDeps) {
    this.scheduled = new ScheduledSearches(deps);
    this.periodic = new Periodic(
      deps.config.sweepIntervalMs,
      () => this.sweepOnce(new Date()),
      (err) => deps.logger().warn('order sweep failed; the next one retries', { err }),
    );
  }

  start(): void {
    this.periodic.start();
  }

  stop(): Promise<void> {
    return this.periodic.stop();
  }

  /** One sweep, as the timer runs it (tests call it). */
  async sweepOnce(now: Date): Promise<void> {
    await this.step('requests', () => this.recoverRequests(now));
    await this.step('transitions', () => this.finishTransitions(now));
    await this.step('scheduled searches', () => this.scheduled.startDue(now));
  }

  private async step(name: string, work: () => Promise<void>): Promise<void> {
    try {
      await work();
    } catch (err) {
      this.deps.logger().warn(`order sweep: ${name} not done; next sweep retries`, { err });
    }
  }

  private async recoverRequests(now: Date): Promise<void> {
    const { store, requests, config } = this.deps;
    const olderThan = new Date(now.getTime() - config.staleRequestMs);
    const stale = await store.stalePending(olderThan, BATCH, this.requestsAfter);
    // The next sweep reads on from here: a batch's worth that cannot be taken over for long
    // (its payment service away) holds back no request behind it.
    this.requestsAfter = stale.length < BATCH ? '' : (stale.at(-1)?._id ?? '');
    for (const pending of stale) {
      try {
        const ended = await requests.recover(pending);
        this.deps.logger().warn('delivery request stopped half-way, taken over', {
          deliveryId: pending._id,
          stage: pending.stage,
          ended,
        });
      } catch (err) {
        // One request that cannot be finished yet (its payment service away) holds no other.
        this.deps.logger().warn('delivery request not taken over yet; next sweep retries', {
          deliveryId: pending._id,
          err: (err as Error).message,
        });
      }
    }
  }

  /**
   * Transitions whose writer did not finish their work (marked in `transition_work`): effects
   * settled, then events handed over, then each mark ended if nothing is left.
   */
  private async finishTransitions(now: Date): Promise<void> {
    const { store, transitions, settlement, announcer } = this.deps;
    const marked = await store.markedWork(new Date(now.getTime() - SETTLE_GRACE_MS), BATCH);
    const stored = marked.flatMap((m) => (m.transition ? [m.transition] : []));
    for (const transition of stored.filter((t) => t.unsettled)) {
      try {
        const delivery = await transitions.current(transition.deliveryId);
        if (delivery) await settlement.settle(delivery, transition);
      } catch (err) {
        // One transition whose effect fails (a service down) leaves the others to settle.
        this.deps.logger().warn('transition not settled; next sweep retries', {
          transitionId: transition._id,
          err: (err as Error).message,
        });
      }
    }
    await this.step('announcements', () => announcer.sweep(stored.filter((t) => t.unannounced)));
    for (const { mark } of marked) await store.finishWork(mark, now);
  }
}
