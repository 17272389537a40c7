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
 * (./scheduled-searches). Each of the three on a timer of its own: a service answering slowly
 * to one (payment timing out on a hundred requests' refunds) must not hold up the others (a
 * scheduled search due before its slot). Every step is idempotent, so replicas may sweep
 * together. The notification outbox has its own sender (libs/messaging/outbox-sender.ts), which
 * runs more often.
 */
export class OrderSweep {
  private readonly periodics: Periodic[];
  private readonly scheduled: ScheduledSearches;
  /** The last request the sweep read, when its batch was full. */
  private requestsAfter = '';

  constructor(private readonly deps: SweepDeps) {
    this.scheduled = new ScheduledSearches(deps);
    this.periodics = this.steps().map(
      ([name, work]) =>
        new Periodic(
          deps.config.sweepIntervalMs,
          () => work(new Date()),
          (err) => deps.logger().warn(`order sweep: ${name} not done; next sweep retries`, { err }),
        ),
    );
  }

  private steps(): [string, (now: Date) => Promise<void>][] {
    return [
      ['requests', (now) => this.recoverRequests(now)],
      ['transitions', (now) => this.finishTransitions(now)],
      ['scheduled searches', (now) => this.scheduled.startDue(now)],
    ];
  }

  start(): void {
    for (const periodic of this.periodics) periodic.start();
  }

  async stop(): Promise<void> {
    await Promise.all(this.periodics.map((periodic) => periodic.stop()));
  }

  /** Whether the sweep is stopping: a step between two items ends early. */
  private get stopping(): boolean {
    return this.periodics.some((periodic) => periodic.stopping);
  }

  /** One sweep, each step in turn (tests call it). */
  async sweepOnce(now: Date): Promise<void> {
    for (const [name, work] of this.steps()) await this.step(name, () => work(now));
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
      if (this.stopping) return;
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
      if (this.stopping) return;
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
