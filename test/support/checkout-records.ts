import { randomUUID } from 'node:crypto';
import type { PayerRefundRecord, SessionRecord } from '../../services/payment/checkout-store';

/** A Paystack checkout of a delivery's recipient, as the checkout store keeps it. */
export function recipientsCheckout(amountKobo: number, userId = randomUUID()): SessionRecord {
  const now = new Date();
  return {
    _id: `ck_${randomUUID()}`,
    userId,
    amountKobo,
    currency: 'NGN',
    purpose: { kind: 'DELIVERY', id: randomUUID() },
    email: 'payer@example.com',
    payer: 'RECIPIENT',
    merchantName: 'Shop',
    provider: 'paystack',
    authorizationUrl: null,
    accessCode: null,
    createdAt: now,
    expiresAt: now,
  };
}

/** The refund of the checkout to its payer as first claimed, after `tries` asked already. */
export function openPayerRefund(session: SessionRecord, tries = 0): PayerRefundRecord {
  return {
    _id: session._id,
    providerReference: session._id,
    userId: session.userId,
    amountKobo: session.amountKobo,
    currency: session.currency,
    note: 'Refund',
    requestedAt: new Date(),
    state: 'OPEN',
    why: null,
    refundId: null,
    settledAt: null,
    tries,
  };
}
