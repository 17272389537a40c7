import type { Logger } from 'moleculer';
import { broadcast, call, type Caller } from '../../libs/contracts';
import type { Broadcaster } from '../../libs/contracts/call';
import {
  DELIVERY_PAID_EVENT,
  type DeliveryEventPayload,
  type OrderEvents,
} from '../../libs/contracts/order';
import type { PaymentOutcome } from '../../libs/contracts/payment';
import type { DeliveryRecord } from './delivery-record';
import { isMatchingEligible, type Share } from './lifecycle';
import type { OrderStore, TransitionRecord } from './store';

/** The ledger reference of money given back for a checkout: once per checkout, ever. */
export const checkoutRefundReference = (checkoutReference: string) => `refund:${checkoutReference}`;

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
    at: at.toISOString(),
  };
}

export interface SettlementDeps {
  store: OrderStore;
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

  async settle(delivery: DeliveryRecord, transition: TransitionRecord): Promise<void> {
    const services = this.deps.services();
    for (const effect of transition.effects) {
      if (effect.kind === 'REFUND') await this.refund(delivery, effect.share);
      if (effect.kind === 'RELEASE_PACKAGES') {
        await call(services, 'package.release', { deliveryId: delivery._id });
      }
      if (effect.kind === 'MATCHING_ELIGIBLE') {
        await this.announce(DELIVERY_PAID_EVENT, delivery, transition.at);
      }
    }
    await this.deps.store.settled(transition);
  }

  /** Gives a paid share back to the creator's wallet: the recipient has no wallet with us. */
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
      await call(services, 'payment.credit', {
        userId: delivery.userId,
        amountKobo: paid.amountKobo,
        reference: checkoutRefundReference(paid.checkoutReference),
        description,
      });
    }
  }

  /**
   * Money a checkout took for a delivery that cannot use it (cancelled first, or a request
   * that never became a delivery) goes to the merchant's wallet, once.
   */
  async creditLateMoney(outcome: PaymentOutcome): Promise<void> {
    await call(this.deps.services(), 'payment.credit', {
      userId: outcome.userId,
      amountKobo: outcome.amountKobo,
      reference: checkoutRefundReference(outcome.reference),
      description: 'Paid for a delivery that was no longer waiting for it',
    });
    this.deps.logger().info('late checkout payment credited to the wallet', {
      reference: outcome.reference,
      deliveryId: outcome.purpose.id,
    });
  }

  async announce(
    event: keyof OrderEvents,
    delivery: DeliveryRecord,
    at: Date = new Date(),
  ): Promise<void> {
    await broadcast(this.deps.services(), event, deliveryEvent(delivery, at));
  }
}
