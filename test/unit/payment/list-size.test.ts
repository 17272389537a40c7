import { PROVIDER_LIST_PAGE } from '../../../services/payment/schemas';
import type {
  PayerRefundRecord,
  SettlementRecord,
  UncreditedRecord,
} from '../../../services/payment/checkout-store';
import { toPayerRefundView } from '../../../services/payment/reversal-admin';
import { PROVIDER_MAX_ANSWER_BYTES } from '../../../services/payment/checkout-providers';
import { toUncreditedView } from '../../../services/payment/uncredited-admin';
import { NATS_MAX_PAYLOAD, PACKET_ALLOWANCE, widest } from '../../support/message-size';

/**
 * A reason as records kept the provider's words before they were clipped: a whole answer's
 * worth of control characters, six bytes each in JSON.
 */
const KEPT_WHOLE = '\u0001'.repeat(PROVIDER_MAX_ANSWER_BYTES);
const REFERENCE = 'R'.repeat(200);
const pageBytes = (item: unknown) =>
  Buffer.byteLength(JSON.stringify(Array.from({ length: PROVIDER_LIST_PAGE.max }, () => item)));

describe('the operator’s lists of payments at the provider', () => {
  it('fit in one NATS message, reasons kept whole by older versions included: payer refunds', () => {
    const refund: PayerRefundRecord = {
      _id: REFERENCE,
      providerReference: REFERENCE,
      userId: '1c7e8d2f-3e4b-4c6d-9e0f-1a2b3c4d5e6f',
      amountKobo: 1e13,
      currency: 'NGN',
      note: `Refund of a payment for delivery ${REFERENCE}, which no longer needs it`,
      requestedAt: new Date(),
      state: 'FAILED',
      why: KEPT_WHOLE,
      refundId: 'I'.repeat(100),
      settledAt: new Date(),
      tries: 1_000_000,
    };
    expect(pageBytes(toPayerRefundView(refund)) + PACKET_ALLOWANCE).toBeLessThan(NATS_MAX_PAYLOAD);
  });

  it('fit in one NATS message, reasons kept whole by older versions included: uncredited', () => {
    const settlement: SettlementRecord = {
      _id: REFERENCE,
      note: widest(500),
      at: new Date(),
      by: widest(100),
    };
    const payment: UncreditedRecord & { settlement: SettlementRecord } = {
      _id: REFERENCE,
      checkoutReference: REFERENCE,
      userId: '1c7e8d2f-3e4b-4c6d-9e0f-1a2b3c4d5e6f',
      why: KEPT_WHOLE,
      at: new Date(),
      settlement,
    };
    expect(pageBytes(toUncreditedView(payment)) + PACKET_ALLOWANCE).toBeLessThan(NATS_MAX_PAYLOAD);
  });
});
