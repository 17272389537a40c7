import { call } from '../../libs/contracts';
import type { PaymentFailure, PaymentOutcome } from '../../libs/contracts/payment';
import { shareOfCheckout } from './delivery-record';
import type { LifecycleEvent, Share } from './lifecycle';
import type { SettlementDeps, Settlement } from './settlement';
import type { DeliveryTransitions } from './transitions';

export interface PaymentOutcomeDeps extends Pick<SettlementDeps, 'store' | 'services' | 'logger'> {
  transitions: DeliveryTransitions;
  settlement: Settlement;
}

/**
 * A delivery checkout's outcome, as the payment service sends it until acknowledged: it marks
 * its share paid (or cancels the delivery when declined or expired). Every copy is handled
 * the same way — the transition chain makes it count once — and money that came for a
 * delivery no longer waiting for it goes back to its payer.
 */
export class PaymentOutcomes {
  constructor(private readonly deps: PaymentOutcomeDeps) {}

  succeeded(outcome: PaymentOutcome): Promise<void> {
    return this.handle(outcome, (share) => ({ kind: 'PAID', share }), true);
  }

  failed(outcome: PaymentFailure): Promise<void> {
    return this.handle(outcome, (share) => ({ kind: 'PAYMENT_FAILED', share }), false);
  }

  private async handle(
    outcome: PaymentOutcome,
    eventFor: (share: Share) => LifecycleEvent,
    paid: boolean,
  ): Promise<void> {
    if (outcome.purpose.kind !== 'DELIVERY') return;
    const { transitions, settlement, store } = this.deps;
    const deliveryId = outcome.purpose.id;
    let delivery = await transitions.current(deliveryId);
    if (!delivery) {
      // Still being created: not acknowledged, so the payment service sends it again.
      if (await store.pending(deliveryId)) return;
      // Stored between the two reads: a request stores its delivery before it drops its
      // pending document, so one neither read found is one stored meanwhile, or none.
      delivery = await transitions.current(deliveryId);
    }
    if (!delivery) {
      if (paid) await settlement.giveBackLateMoney(outcome, null);
    } else {
      const share = shareOfCheckout(delivery, outcome.reference);
      const applied = share
        ? await transitions.apply(deliveryId, eventFor(share), { known: delivery })
        : null;
      if (applied?.applied) {
        await settlement.afterTransition(applied.delivery, applied.transition);
        if (applied.delivery.lifecycle.status === 'CANCELLED') {
          await settlement.announceCancelled(applied.delivery);
        }
      } else if (paid && !(share && applied?.delivery.lifecycle.paid[share])) {
        await settlement.giveBackLateMoney(outcome, share);
      }
    }
    await call(this.deps.services(), 'payment.acknowledge', { reference: outcome.reference });
  }
}
