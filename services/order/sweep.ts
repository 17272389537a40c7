import type { Logger } from 'moleculer';
import type { Config } from '../../libs/config';
import { Periodic } from '../../libs/periodic';
import type { Announcer } from './announcer';
import { isMatchingEligible } from './lifecycle';
import type { DeliveryRequests } from './requests';
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
 * transitions whose effects (refunds, releases) did not all happen are settled, and their
 * webhook events published. Every step is idempotent, so replicas may sweep together. The
 * notification outbox has its own sender (libs/messaging/outbox-sender.ts), which runs more often.
 */
export class OrderSweep {
  private readonly periodic: Periodic;

  constructor(private readonly deps: SweepDeps) {
    this.periodic = new Periodic(
      deps.config.sweepIntervalMs,
      () => this.sweep(new Date()),
      (err) => deps.logger().warn('order sweep failed; the next one retries', { err }),
    );
  }

  start(): void {
    this.periodic.start();
  }

  stop(): Promise<void> {
    return this.periodic.stop();
  }

  private async sweep(now: Date): Promise<void> {
    await this.step('requests', () => this.recoverRequests(now));
    await this.step('transitions', () => this.finishTransitions(now));
    await this.step('scheduled searches', () => this.startDueSearches(now));
  }

  /**
   * SCHEDULED deliveries whose search is due: started if the delivery still waits for a
   * courier (not cancelled meanwhile), then taken off the list. A search starts once however
   * often it is asked, so replicas may do this together.
   */
  private async startDueSearches(now: Date): Promise<void> {
    const { store, transitions, settlement } = this.deps;
    for (const deliveryId of await store.dueSearches(now, BATCH)) {
      try {
        const delivery = await transitions.current(deliveryId);
        if (delivery && isMatchingEligible(delivery.lifecycle)) await settlement.search(delivery);
        await store.dropScheduledSearch(deliveryId);
      } catch (err) {
        // Matching unreachable: this one stays on the list, the others go on.
        this.deps.logger().warn('scheduled search not started; next sweep retries', {
          deliveryId,
          err: (err as Error).message,
        });
      }
    }
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
    const stale = await store.stalePending(new Date(now.getTime() - config.staleRequestMs), BATCH);
    for (const pending of stale) {
      const ended = await requests.recover(pending);
      this.deps.logger().warn('delivery request stopped half-way, taken over', {
        deliveryId: pending._id,
        stage: pending.stage,
        ended,
      });
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
