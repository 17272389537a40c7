import { loadConfig } from '../../../libs/config';
import { STILL_PAYING_GRACE_MS } from '../../../services/payment/checkout';
import {
  disputeNote,
  failedRefund,
  processedRefund,
  PROVIDER_WEBHOOK_RETRY_MS,
  reversalCreditWaitMs,
} from '../../../services/payment/reversals';

describe('a Paystack refund.failed, read', () => {
  const data = {
    id: 7001,
    status: 'failed',
    transaction_reference: 'ck-0123456789abcdef.1',
    reason: 'Customer account closed',
  };

  it('names the transaction, the refund and why', () => {
    expect(failedRefund(data)).toEqual({
      providerReference: 'ck-0123456789abcdef.1',
      refundId: '7001',
      why: 'Customer account closed',
    });
  });

  it('reads a refund without a usable id or reason as such, and one without a transaction as nothing', () => {
    expect(failedRefund({ ...data, reason: '' })).toMatchObject({ why: 'no reason given' });
    expect(failedRefund({ ...data, id: 'a b', reason: 3 })).toEqual({
      providerReference: 'ck-0123456789abcdef.1',
      refundId: null,
      why: 'no reason given',
    });
    for (const bad of [
      null,
      'x',
      {},
      { ...data, transaction_reference: '' },
      { ...data, transaction_reference: 9 },
    ]) {
      expect(failedRefund(bad)).toBeUndefined();
    }
  });
});

describe('a Paystack refund.processed, read', () => {
  const data = {
    id: 1234567,
    status: 'processed',
    transaction_reference: 'ck-0123456789abcdef.1',
    refund_reference: 'rf_1',
    amount: 10_000,
    currency: 'NGN',
  };

  it('names the refund, its transaction and its amount in kobo', () => {
    expect(processedRefund(data)).toEqual({
      refundId: '1234567',
      providerReference: 'ck-0123456789abcdef.1',
      amountKobo: 10_000,
      currency: 'NGN',
    });
    // Ids and amounts written as strings, as some of Paystack's events write them.
    expect(processedRefund({ ...data, id: 'rfnd_9', amount: '250' })).toMatchObject({
      refundId: 'rfnd_9',
      amountKobo: 250,
    });
  });

  it('names a refund without an id by its refund reference', () => {
    expect(processedRefund({ ...data, id: undefined, refund_reference: 'RF.1=x' })).toMatchObject({
      refundId: 'RF.1=x',
    });
    expect(processedRefund({ ...data, id: null })).toMatchObject({ refundId: 'rf_1' });
  });

  it.each([
    [{ ...data, id: undefined, refund_reference: undefined }, 'no refund id'],
    [{ ...data, id: 'a b' }, 'no refund id'],
    [{ ...data, id: 1.5 }, 'no refund id'],
    [{ ...data, transaction_reference: '' }, 'transaction_reference'],
    [{ ...data, transaction_reference: 7 }, 'transaction_reference'],
    [{ ...data, amount: 0 }, 'not a positive amount'],
    [{ ...data, amount: -1 }, 'not a positive amount'],
    [{ ...data, amount: '1e3' }, 'not a positive amount'],
    [{ ...data, amount: 10.5 }, 'not a positive amount'],
    [{ ...data, amount: Number.MAX_SAFE_INTEGER + 1 }, 'not a positive amount'],
    [{ ...data, currency: undefined }, 'currency'],
    [null, 'no refund id'],
    ['text', 'no refund id'],
  ])('says what %j lacks', (given, lacking) => {
    const read = processedRefund(given);
    expect(read).toHaveProperty('unreadable');
    expect((read as { unreadable: string }).unreadable).toContain(lacking);
  });
});

describe('a Paystack dispute event, noted', () => {
  it('keeps what operators need and nothing it cannot read', () => {
    expect(
      disputeNote({
        id: 42,
        refund_amount: 6000,
        status: 'resolved',
        resolution: 'merchant-accepted',
        transaction: { reference: 'ck-abc', amount: 6000 },
        customer: { email: 'payer@example.com' },
      }),
    ).toEqual({
      disputeId: '42',
      providerReference: 'ck-abc',
      refundAmountKobo: 6000,
      status: 'resolved',
      resolution: 'merchant-accepted',
    });
    expect(disputeNote(undefined)).toEqual({
      disputeId: null,
      providerReference: null,
      refundAmountKobo: null,
      status: null,
      resolution: null,
    });
  });
});

describe('reversalCreditWaitMs', () => {
  const DAY = 86_400_000;
  const defaults = loadConfig({}).payment;

  it('waits past the last late check a configuration can make, never less than 4 days', () => {
    // The defaults: 30 minutes to pay, the last check 3 days after the expiry, a day's grace.
    expect(reversalCreditWaitMs(defaults)).toBe(
      defaults.checkoutTtlMs + 3 * DAY + STILL_PAYING_GRACE_MS + DAY,
    );
    // A last check 7 days after the expiry: past it, not a fixed 4 days.
    const late = { checkoutTtlMs: 60 * 60_000, lateChecksMs: [3_600_000, 7 * DAY] };
    expect(reversalCreditWaitMs(late)).toBe(60 * 60_000 + 7 * DAY + STILL_PAYING_GRACE_MS + DAY);
    // Checks that end early still wait out the provider's webhook retries and more.
    const early = { checkoutTtlMs: 60_000, lateChecksMs: [100] };
    expect(reversalCreditWaitMs(early)).toBe(4 * DAY);
    expect(reversalCreditWaitMs(early)).toBeGreaterThan(PROVIDER_WEBHOOK_RETRY_MS);
  });
});
