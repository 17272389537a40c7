import type { Logger } from 'moleculer';
import { settledWithin } from '../../libs/at-once';
import { broadcast, call, type Caller } from '../../libs/contracts';
import type { Broadcaster } from '../../libs/contracts/call';
import {
  DELIVERY_CANCELLED_EVENT,
  DELIVERY_PAID_EVENT,
  DELIVERY_STATUS_CHANGED_EVENT,
  type DeliveryEventPayload,
  type OrderEvents,
} from '../../libs/contracts/order';
import { payerOf, type PaymentOutcome } from '../../libs/contracts/payment';
import type { DeliveryRecord } from './delivery-record';
import { isMatchingEligible, isTerminal, type Effect, type Share } from './lifecycle';
import { searchNotAfter, searchStartsAt } from './scheduling';
import type { Announcer } from './announcer';
import type { Outbox } from './outbox';
import type { ProofChecks } from './proofs';
import { hasWork, type OrderStore, type TransitionRecord, type WorkFlag } from './store';

export function deliveryEvent(delivery: DeliveryRecord, at: Date): DeliveryEventPayload {
  return {
    deliveryId: delivery._id,
    userId: delivery.userId,
    apiKeyId: delivery.apiKeyId,
    trackingId: delivery.trackingId,
    status: delivery.lifecycle.status,
    p2pStatus: delivery.lifecycle.p2pStatus,
    matchingEligible: isMatchingEligible(delivery.lifecycle),
    courierMatching: delivery.courierMatching,
    courierId: delivery.assignment?.courierId ?? null,
    at: at.toISOString(),
  };
}

/**
 * The effects tried first, in this order: the cash a courier collected is on their account
 * before they are free to be offered more pay-on-delivery (what the cash limit reads, decision
 * 110), and the courier is free before other money moves. Tried, not waited for: a payment
 * service away frees the courier all the same (an outage must not hold every courier who
 * collected cash), and until the sweep records that cash the limit reads their debt without it.
 */
const FIRST_EFFECTS: Effect['kind'][] = ['REMIT_COLLECTED', 'END_MATCHING'];

function effectRank(effect: Effect): number {
  const rank = FIRST_EFFECTS.indexOf(effect.kind);
  return rank === -1 ? FIRST_EFFECTS.length : rank;
}

export interface SettlementDeps {
  store: OrderStore;
  /** ORDER_SCHEDULED_SEARCH_LEAD_MS. */
  scheduledSearchLeadMs: number;
  /**
   * How long the writer of a change waits for its follow-up (`afterTransition`) before it
   * answers: half of REQUEST_TIMEOUT_MS, so that a slow service answers a change that was
   * made as made, never as the gateway's 504 (whose retry would be refused as done).
   */
  answerWithinMs: number;
  announcer: Announcer;
  outbox: Outbox;
  proofs: ProofChecks;
  services: () => Caller & Broadcaster;
  logger: () => Logger;
}

/**
 * Carries out what a transition requires of other services — money given back, packages
 * released, matching told — each idempotent by its reference, so a transition settled twice
 * (by its writer and by the sweep) moves money once.
 */
export class Settlement {
  constructor(private readonly deps: SettlementDeps) {}

  /** The sweep's part: a transition's effects carried out, and recorded as settled. */
  async settle(delivery: DeliveryRecord, transition: TransitionRecord): Promise<void> {
    await this.carryOut(delivery, transition);
    await this.deps.store.workDone(transition, ['unsettled']);
  }

  /**
   * The transition's effects, each idempotent; recorded as settled by the caller. Each is tried
   * whatever became of the others: one service away (matching restarting) must not hold up a
   * refund or a release. The first failure is thrown once all were tried, and the sweep tries
   * them all again.
   */
  private async carryOut(delivery: DeliveryRecord, transition: TransitionRecord): Promise<void> {
    const effects = [...transition.effects].sort((a, b) => effectRank(a) - effectRank(b));
    const failures: unknown[] = [];
    for (const effect of effects) {
      await this.carryOutOne(delivery, transition, effect).catch((err) => failures.push(err));
    }
    if (failures.length > 1) {
      this.deps.logger().warn('delivery effects failed; the sweep retries them', {
        deliveryId: delivery._id,
        failed: failures.map((err) => (err as Error).message),
      });
    }
    if (failures.length > 0) throw failures[0];
  }

  private async carryOutOne(
    delivery: DeliveryRecord,
    transition: TransitionRecord,
    effect: Effect,
  ): Promise<void> {
    const services = this.deps.services();
    switch (effect.kind) {
      case 'REFUND':
        return this.refund(delivery, effect.share);
      case 'CLOSE_CHECKOUT': {
        const reference = delivery.payment[effect.share].checkoutReference;
        if (reference) {
          await call(services, 'payment.closeCheckout', {
            reference,
            payer: payerOf(effect.share),
          });
        }
        return;
      }
      case 'RELEASE_PACKAGES':
        await call(services, 'package.release', { deliveryId: delivery._id });
        return;
      case 'MATCHING_ELIGIBLE':
        // Settled late by the sweep (matching was away) after the delivery ended: a search
        // started now would offer couriers a delivery that is over, until END_MATCHING.
        if (isTerminal(delivery.lifecycle.status)) return;
        return this.startMatching(delivery, transition.at);
      case 'END_MATCHING':
        await call(services, 'courier-matching.endMatching', { deliveryId: delivery._id });
        // Ended while its search waited for its date: its bucket no longer holds it live. Only
        // a delivery with a date can have waited (a write saved on every other one).
        if (searchStartsAt(delivery, this.deps.scheduledSearchLeadMs)) {
          await this.deps.store.dropScheduledSearch(delivery._id);
        }
        return;
      case 'REMIT_COLLECTED':
        return this.remitCollected(delivery);
      case 'COURIER_ON_THE_WAY':
        return this.deps.outbox.courierOnTheWay(delivery, transition.at);
      case 'SEND_RETURN_CODE':
        return this.deps.proofs.sendReturnCode(delivery);
      case 'WITHDRAW_MESSAGES':
        return this.deps.outbox.withdrawUnsent(delivery, transition.at);
      default: {
        // Every effect has its case (a compile error otherwise). One of a later version, read
        // during a rollout or after a rollback, keeps its transition unsettled: a node that
        // knows it settles it, the others' effects being idempotent.
        const unknown: never = effect;
        throw new Error(
          `delivery effect ${(unknown as Effect).kind} is unknown to this version; a newer node settles it`,
        );
      }
    }
  }

  /**
   * Every share is paid: matching looks for a courier (a SCHEDULED delivery's search waits for
   * its date, `./scheduling`), and the others are told.
   */
  async startMatching(delivery: DeliveryRecord, at: Date): Promise<void> {
    const { store } = this.deps;
    const from = searchStartsAt(delivery, this.deps.scheduledSearchLeadMs);
    const waits =
      from !== null &&
      from.getTime() > Date.now() &&
      (await store.scheduleSearch(delivery._id, from));
    if (!waits) {
      await this.search(delivery);
      // A retry after its date, or one the sweep read past: no sweep is to start it again.
      if (from) await store.dropScheduledSearch(delivery._id);
    }
    await this.announce(DELIVERY_PAID_EVENT, delivery, at);
  }

  /**
   * Asks matching to look for the delivery's courier (again: it starts a search once), until
   * its slot closes when it has one.
   */
  async search(delivery: DeliveryRecord): Promise<void> {
    const [origin, destination] = await Promise.all([
      this.deps.store.address(delivery.originId),
      this.deps.store.address(delivery.destinationId),
    ]);
    if (!origin || !destination) throw new Error(`delivery ${delivery._id} lost its addresses`);
    const notAfter = searchNotAfter(delivery);
    await call(this.deps.services(), 'courier-matching.startSearch', {
      deliveryId: delivery._id,
      userId: delivery.userId,
      pickup: { lat: origin.fields.lat, lon: origin.fields.lon },
      dropoff: { lat: destination.fields.lat, lon: destination.fields.lon },
      fleetTypeId: delivery.fleetType.id,
      weightGrams: delivery.packages.totalWeightGrams,
      courierSelection: delivery.courierMatching,
      courierId: delivery.courierId,
      simulate: delivery.simulation ?? null,
      // Each sent only when there is one: a matching of the version before refuses the field.
      ...(notAfter ? { notAfter } : {}),
      ...(delivery.payOnDelivery ? { collectKobo: delivery.payOnDelivery.collectAmountKobo } : {}),
    });
  }

  /**
   * What the courier collected on delivery (pay-on-delivery): the collecting courier owes it
   * (their cash account) and the merchant's wallet, or a courier's, is credited with it. The
   * payment service posts each once per delivery, so a retry of the effect posts what is left.
   */
  private async remitCollected(delivery: DeliveryRecord): Promise<void> {
    const pod = delivery.payOnDelivery;
    if (!pod || pod.collectAmountKobo <= 0) return;
    const collector = delivery.assignment?.courierId;
    if (!collector) throw new Error(`delivery ${delivery._id}: delivered by no courier`);
    const toCourier = pod.remitTo === 'COURIER_WALLET';
    await call(this.deps.services(), 'payment.collectOnDelivery', {
      deliveryId: delivery._id,
      courierId: collector,
      remitToUserId: toCourier ? (pod.courierProfileId ?? collector) : delivery.userId,
      amountKobo: pod.collectAmountKobo,
      description: `Collected on delivery ${delivery.trackingId}`,
    });
  }

  /**
   * After a transition its writer applied: the status change is broadcast to the services
   * listening now (the tracking streams), its webhook events are handed over (announcer), and
   * its effects are carried out; what is done is recorded on the transition in one write, and
   * what fails here stays for the sweep, the change itself standing. Waited for at most
   * `answerWithinMs`: past it the writer answers, and the follow-up goes on (what it leaves
   * undone, the sweep does).
   */
  async afterTransition(delivery: DeliveryRecord, transition: TransitionRecord): Promise<void> {
    await settledWithin(this.followUp(delivery, transition), this.deps.answerWithinMs);
  }

  private async followUp(delivery: DeliveryRecord, transition: TransitionRecord): Promise<void> {
    // For the services listening now (the tracking streams, which also read again at their
    // next heartbeat): first, since it needs nothing else, and the announcer waits on the
    // webhook, geo and courier services, any of which may be slow; a broadcast lost holds up
    // none of the effects.
    if (transition.step && !transition.step.hidden) {
      await this.announce(DELIVERY_STATUS_CHANGED_EVENT, delivery, transition.at).catch(
        (err: unknown) =>
          this.deps.logger().warn('delivery status change not broadcast', {
            deliveryId: delivery._id,
            err: (err as Error).message,
          }),
      );
    }
    let announced = false;
    try {
      announced = await this.deps.announcer.applied(delivery, transition);
    } catch (err) {
      this.deps.logger().warn('delivery events not published yet; the sweep retries', {
        deliveryId: delivery._id,
        err: (err as Error).message,
      });
    }
    let settled = false;
    try {
      await this.carryOut(delivery, transition);
      settled = true;
    } catch (err) {
      this.deps.logger().warn('delivery transition not settled yet; the sweep retries', {
        deliveryId: delivery._id,
        event: transition.event.kind,
        err: (err as Error).message,
      });
    }
    if (!hasWork(transition)) return;
    const done: WorkFlag[] = [];
    if (transition.unsettled && settled) done.push('unsettled');
    if (transition.unannounced && announced) done.push('unannounced');
    const left: TransitionRecord = {
      ...transition,
      unsettled: transition.unsettled && !settled,
      unannounced: transition.unannounced && !announced,
    };
    try {
      await this.deps.store.workDone(transition, done);
      // Its mark goes when nothing is left; a mark left here is ended by the sweep.
      if (!hasWork(left)) await this.deps.store.finishWork(transition, new Date(), left);
    } catch {
      // The sweep finds the transition by its mark and finishes what is left.
    }
  }

  /**
   * Gives a paid share back to whoever paid it: a wallet debit to the creator's wallet, a
   * checkout to its payer (the creator's wallet, or the recipient at the provider: they have no
   * wallet with us; decision 168).
   */
  async refund(delivery: DeliveryRecord, share: Share): Promise<void> {
    const paid = delivery.payment[share];
    const services = this.deps.services();
    const description = `Refund of delivery ${delivery.trackingId}`;
    if (paid.method === 'WALLET') {
      await call(services, 'payment.refund', {
        userId: delivery.userId,
        debitReference: delivery._id,
        description,
      });
    } else if (paid.checkoutReference) {
      await call(services, 'payment.giveBack', {
        reference: paid.checkoutReference,
        payer: payerOf(share),
        description,
      });
    }
  }

  /**
   * Money a checkout took for a delivery that cannot use it (cancelled first, or a request
   * that never became a delivery) goes back to its payer, once: the share it paid, when known,
   * says who that is for a checkout opened before checkouts named their payer.
   */
  async giveBackLateMoney(outcome: PaymentOutcome, share: Share | null): Promise<void> {
    const { to } = await call(this.deps.services(), 'payment.giveBack', {
      reference: outcome.reference,
      ...(share ? { payer: payerOf(share) } : {}),
      description: 'Paid for a delivery that was no longer waiting for it',
    });
    this.deps.logger().info('late checkout payment given back', {
      reference: outcome.reference,
      deliveryId: outcome.purpose.id,
      to,
    });
  }

  async announce(
    event: keyof OrderEvents,
    delivery: DeliveryRecord,
    at: Date = new Date(),
  ): Promise<void> {
    await broadcast(this.deps.services(), event, deliveryEvent(delivery, at));
  }

  /**
   * A cancel made, told to the tracking pages (which also read again at their next heartbeat):
   * a lost broadcast is logged, never thrown, for it must not turn a cancel that happened into
   * an error, and whatever would repeat it finds the delivery cancelled and announces nothing.
   */
  async announceCancelled(delivery: DeliveryRecord): Promise<void> {
    await this.announce(DELIVERY_CANCELLED_EVENT, delivery).catch((err: unknown) =>
      this.deps.logger().warn('delivery cancel not announced', { deliveryId: delivery._id, err }),
    );
  }
}
