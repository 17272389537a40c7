import { setTimeout as sleep } from 'node:timers/promises';
import { call } from '../../libs/contracts';
import { checkoutOfAttempt } from '../../services/payment/checkout';
import { useFakePaystack } from '../support/checkout';
import {
  balanceOf,
  cancelDelivery,
  credit,
  entriesOf,
  getDelivery,
  requestDelivery,
  savePackage,
  type Party,
} from '../support/deliveries';
import { eventually } from '../support/eventually';
import { adminHeaders, createUserWithKey, request } from '../support/http';
import { useMerchantStack } from '../support/merchant-stack';

/**
 * Money a delivery's recipient paid through Paystack for a delivery that no longer uses it
 * goes back to them at the provider (decision 168), once, never to the merchant's wallet:
 * a share paid and then cancelled, a share paid after the cancel; retried by the sweep while
 * Paystack cannot answer, listed for an operator when it refuses or fails the refund.
 */

const { fake, env } = useFakePaystack('sk_test_waybill_fake_payer_refunds_0123456789', {
  PAYMENT_SWEEP_INTERVAL_MS: '100',
  PAYMENT_EVENT_RETRY_MS: '500',
  ORDER_SWEEP_INTERVAL_MS: '500',
});
const stack = useMerchantStack({ internal: ['payment'], env });
// Paystack's list of a transaction's refunds may list others: only this one's whole refund counts.
fake.listIgnoresFilter = true;
afterEach(() => {
  fake.fail.refund = 0;
  fake.fail.verify = 0;
});
const base = () => stack.node.url;

const signed = (event: string, data: Record<string, unknown>) =>
  fake.sendWebhook(base(), JSON.stringify({ event, data }));

async function merchant(): Promise<Party> {
  const who = await createUserWithKey(base());
  await credit(base(), who, 100_000);
  return who;
}

/** A delivery whose recipient pays all of it through their Paystack link. */
async function recipientPays(who: Party) {
  const reply = await requestDelivery(base(), who, [await savePackage(base(), who)], {
    deliveryFeePayer: 'RECIPIENT',
    paymentMethodType: 'CHECKOUT',
  });
  expect(reply.status).toBe(201);
  const { deliveryId, deliveryFee } = reply.body.data;
  const link = deliveryFee.recipient.checkoutUrl as string;
  // The fake's payment page is named after the transaction it opened.
  const transaction = new URL(link).pathname.slice(1);
  const amountKobo = Math.round(Number(deliveryFee.recipient.amount) * 100);
  return { deliveryId: deliveryId as string, transaction, amountKobo };
}

/** Waits until the delivery reads `share` paid. */
const paidShare = (who: Party, deliveryId: string, share: 'creator' | 'recipient' = 'recipient') =>
  eventually(
    async () =>
      expect((await getDelivery(base(), who, deliveryId)).body.data.payment[share].paid).toBe(true),
    { timeout: 20_000 },
  );

/** The recipient pays at Paystack, and its webhook comes. */
async function pay(transaction: string) {
  (fake.transactions.get(transaction) as { status: string }).status = 'success';
  const reply = await signed('charge.success', { reference: transaction, status: 'success' });
  expect(reply.status).toBe(200);
}

const refundsOf = (transaction: string) =>
  fake.refunds.filter((refund) => refund.transaction === transaction);

/** The refunds of `transaction` asked of Paystack, whatever it answered. */
const refundsAsked = (transaction: string) =>
  fake.calls.filter(
    (c) =>
      c.method === 'POST' &&
      c.path === '/refund' &&
      (c.body as { transaction?: string }).transaction === transaction,
  );

/** The merchant's wallet entries that give a checkout's money back. */
const creditedBack = async (who: Party, transaction: string) =>
  (await entriesOf(base(), who)).filter(
    (e) => e.reference === `refund:${checkoutOfAttempt(transaction)}`,
  );

async function uncreditedListing(transaction: string) {
  const reply = await request(base(), 'GET', '/admin/payments/uncredited?limit=200', {
    headers: adminHeaders,
  });
  expect(reply.status).toBe(200);
  return (reply.body.data as { providerReference: string; why: string }[]).find(
    (u) => u.providerReference === transaction,
  );
}

interface PayerRefundView {
  checkoutReference: string;
  providerReference: string;
  state: string;
}

/** The refunds to payers operators list (`GET /admin/payments/payer-refunds`), one page. */
async function payerRefunds(query = ''): Promise<PayerRefundView[]> {
  const reply = await request(base(), 'GET', `/admin/payments/payer-refunds?limit=200${query}`, {
    headers: adminHeaders,
  });
  expect(reply.status).toBe(200);
  return reply.body.data as PayerRefundView[];
}

const payerRefundOf = async (transaction: string, query = '') =>
  (await payerRefunds(query)).find((r) => r.providerReference === transaction);

describe('a refund recorded without its id', () => {
  /** A recipient's payment given back, its refund at Paystack recorded without its id. */
  async function refundWithoutId() {
    const who = await merchant();
    const paid = await recipientPays(who);
    await pay(paid.transaction);
    await paidShare(who, paid.deliveryId);
    // Paystack answers the refund without its id, and the look-up of it fails: recorded
    // without one.
    fake.refundsAnsweredWithoutId = true;
    fake.fail.mode = 'error';
    fake.fail.listRefunds = 1;
    try {
      expect((await cancelDelivery(base(), who, paid.deliveryId)).status).toBe(201);
      await eventually(
        async () =>
          expect(await payerRefundOf(paid.transaction)).toMatchObject({ state: 'QUEUED' }),
        { timeout: 20_000 },
      );
    } finally {
      fake.refundsAnsweredWithoutId = false;
      fake.fail.listRefunds = 0;
    }
    const [ours] = refundsOf(paid.transaction);
    const report = (id: number) => ({
      id,
      status: 'failed',
      transaction_reference: paid.transaction,
      amount: paid.amountKobo,
      currency: 'NGN',
      reason: 'Customer account closed',
    });
    return { paid, ours, report };
  }

  it('is not taken for failed by a failure of another refund of the transaction, while ours stands', async () => {
    const { paid, ours, report } = await refundWithoutId();
    // An earlier refund of the transaction failing, reported late: ours stands at Paystack.
    const another = await signed('refund.failed', report(ours.id - 1));
    expect([another.status, another.body.data]).toEqual([200, { handled: false }]);
    expect(await uncreditedListing(paid.transaction)).toBeUndefined();
    expect(await payerRefundOf(paid.transaction)).toMatchObject({ state: 'QUEUED' });
    // Ours failing: none stands, and an operator is told.
    ours.status = 'failed';
    const failed = await signed('refund.failed', report(ours.id));
    expect([failed.status, failed.body.data]).toEqual([200, { handled: true }]);
    expect(await uncreditedListing(paid.transaction)).toMatchObject({
      why: expect.stringMatching(/could not refund it: Customer account closed/),
    });
  });

  it('is taken for failed when the failure is its own, though Paystack still lists it as it was', async () => {
    const { paid, ours, report } = await refundWithoutId();
    // Reported at once, Paystack's list not caught up: the id names ours.
    const failed = await signed('refund.failed', report(ours.id));
    expect([failed.status, failed.body.data]).toEqual([200, { handled: true }]);
    expect(await uncreditedListing(paid.transaction)).toMatchObject({
      why: expect.stringMatching(/could not refund it: Customer account closed/),
    });
  });
});

describe('a recipient’s payment for a delivery that no longer uses it', () => {
  it('goes back to the recipient at Paystack once when the delivery is cancelled after they paid; Paystack’s report of it takes nothing from the merchant', async () => {
    const who = await merchant();
    const { deliveryId, transaction, amountKobo } = await recipientPays(who);
    await pay(transaction);
    await paidShare(who, deliveryId);
    expect((await cancelDelivery(base(), who, deliveryId)).status).toBe(201);
    await eventually(() => expect(refundsOf(transaction)).toHaveLength(1), { timeout: 20_000 });
    expect(refundsOf(transaction)[0]).toMatchObject({ amount: amountKobo, currency: 'NGN' });
    // The processed refund, reported (twice): the merchant was credited nothing, owes nothing.
    const refund = {
      id: Math.floor(Math.random() * 1e12),
      status: 'processed',
      transaction_reference: transaction,
      amount: amountKobo,
      currency: 'NGN',
    };
    for (let i = 0; i < 2; i++) expect((await signed('refund.processed', refund)).status).toBe(200);
    // Order's and payment's sweeps run meanwhile: still one refund, nothing credited or taken.
    await sleep(1_500);
    expect(refundsAsked(transaction)).toHaveLength(1);
    expect(await creditedBack(who, transaction)).toEqual([]);
    expect(await balanceOf(base(), who)).toBe('100000.00');
    const reversals = await request(base(), 'GET', '/admin/payments/reversals?limit=200', {
      headers: adminHeaders,
    });
    expect(
      (reversals.body.data as { refundId: string; state: string }[]).find(
        (r) => r.refundId === String(refund.id),
      ),
    ).toMatchObject({ state: 'NEVER_CREDITED' });
    // Operators see it queued, with Paystack's id for it.
    expect(await payerRefundOf(transaction)).toEqual({
      checkoutReference: checkoutOfAttempt(transaction),
      providerReference: transaction,
      userId: who.userId,
      amount: (amountKobo / 100).toFixed(2),
      state: 'QUEUED',
      tries: 1,
      refundId: String(refundsOf(transaction)[0].id),
      why: null,
      note: expect.stringContaining(deliveryId),
      requestedAt: expect.any(String),
      settledAt: expect.any(String),
    });
    expect(await payerRefundOf(transaction, '&state=QUEUED')).toBeDefined();
    expect(await payerRefundOf(transaction, '&state=OPEN')).toBeUndefined();
  });

  it('goes back to the recipient when they pay after the cancel', async () => {
    const who = await merchant();
    const { deliveryId, transaction, amountKobo } = await recipientPays(who);
    expect((await cancelDelivery(base(), who, deliveryId)).status).toBe(201);
    await pay(transaction);
    await eventually(() => expect(refundsOf(transaction)).toHaveLength(1), { timeout: 20_000 });
    expect(refundsOf(transaction)[0].amount).toBe(amountKobo);
    await sleep(1_000);
    expect(refundsAsked(transaction)).toHaveLength(1);
    expect(await creditedBack(who, transaction)).toEqual([]);
    expect(await balanceOf(base(), who)).toBe('100000.00');
  });

  it('is asked for once however many give it back at once, and never for a checkout not paid (409)', async () => {
    const who = await merchant();
    const { deliveryId, transaction } = await recipientPays(who);
    const reference = checkoutOfAttempt(transaction);
    const unpaid = await call(stack.client, 'payment.giveBack', { reference }).catch(
      (err: { code?: number }) => err,
    );
    expect(unpaid).toMatchObject({ code: 409 });
    await pay(transaction);
    await paidShare(who, deliveryId);
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => call(stack.client, 'payment.giveBack', { reference })),
    );
    expect(answers).toEqual(Array.from({ length: 8 }, () => ({ to: 'PAYER' })));
    expect(refundsAsked(transaction)).toHaveLength(1);
    // The cancel gives it back again: the same refund.
    expect((await cancelDelivery(base(), who, deliveryId)).status).toBe(201);
    await sleep(1_500);
    expect(refundsAsked(transaction)).toHaveLength(1);
    expect(await creditedBack(who, transaction)).toEqual([]);
    // Nor is it credited to the merchant's wallet by a caller that would (an order node of the
    // version before).
    const credited = await call(stack.client, 'payment.credit', {
      userId: who.userId,
      amountKobo: 100,
      reference: `refund:${reference}`,
    }).catch((err: { code?: number }) => err);
    expect(credited).toMatchObject({ code: 409 });
    expect(await creditedBack(who, transaction)).toEqual([]);
  });

  it('is asked for again by the sweep while Paystack cannot answer, and once only when an answer was lost', async () => {
    const who = await merchant();
    const { deliveryId, transaction } = await recipientPays(who);
    await pay(transaction);
    await paidShare(who, deliveryId);
    // Two 500s, then one queued at Paystack whose answer comes after our timeout (1 s).
    fake.fail.refund = 2;
    fake.fail.mode = 'error';
    expect((await cancelDelivery(base(), who, deliveryId)).status).toBe(201);
    await eventually(() => expect(fake.fail.refund).toBe(0), { timeout: 20_000 });
    await eventually(() => expect(refundsOf(transaction)).toHaveLength(1), { timeout: 20_000 });
    expect(refundsAsked(transaction)).toHaveLength(3);

    const late = await merchant();
    const second = await recipientPays(late);
    await pay(second.transaction);
    await paidShare(late, second.deliveryId);
    fake.fail.refund = 1;
    fake.fail.mode = 'late';
    fake.fail.lateMs = 1_500;
    expect((await cancelDelivery(base(), late, second.deliveryId)).status).toBe(201);
    // Queued by the first call, whose answer was lost (the transaction still reads paid, its
    // refund pending): the next try finds it standing at Paystack and asks for no other.
    const transactionId = (fake.transactions.get(second.transaction) as { id: number }).id;
    await eventually(
      () =>
        expect(
          fake.calls.filter((c) => c.path.startsWith(`/refund?transaction=${transactionId}&`))
            .length,
        ).toBeGreaterThan(0),
      { timeout: 20_000 },
    );
    await sleep(1_000);
    expect(refundsAsked(second.transaction)).toHaveLength(1);
    expect(refundsOf(second.transaction)).toHaveLength(1);
    expect(await uncreditedListing(second.transaction)).toBeUndefined();
    expect(await creditedBack(late, second.transaction)).toEqual([]);
  });

  it('is listed for an operator when Paystack refuses it, or fails it after queueing it', async () => {
    const who = await merchant();
    const refused = await recipientPays(who);
    await pay(refused.transaction);
    const failed = await recipientPays(who);
    await pay(failed.transaction);
    for (const { deliveryId } of [refused, failed]) {
      await paidShare(who, deliveryId);
    }
    fake.fail.refund = 1;
    fake.fail.mode = 'refuse';
    expect((await cancelDelivery(base(), who, refused.deliveryId)).status).toBe(201);
    await eventually(
      async () =>
        expect(await uncreditedListing(refused.transaction)).toMatchObject({
          why: expect.stringMatching(/refused its refund/),
        }),
      { timeout: 20_000 },
    );
    expect(refundsOf(refused.transaction)).toHaveLength(0);
    expect(refundsAsked(refused.transaction)).toHaveLength(1);

    // Paystack slow to answer at first: its failure reported meanwhile is sent back (503).
    fake.fail.refund = 2;
    fake.fail.mode = 'hang';
    expect((await cancelDelivery(base(), who, failed.deliveryId)).status).toBe(201);
    await eventually(() => expect(refundsAsked(failed.transaction).length).toBeGreaterThan(0), {
      timeout: 20_000,
    });
    const report = (id: number) => ({
      id,
      status: 'failed',
      transaction_reference: failed.transaction,
      amount: failed.amountKobo,
      currency: 'NGN',
      // As long as Paystack's signed body may be: records keep 512 bytes of it.
      reason: `Customer account closed${'!'.repeat(60_000)}`,
    });
    const early = await signed('refund.failed', report(1));
    expect(early.status).toBe(503);
    await eventually(() => expect(refundsOf(failed.transaction)).toHaveLength(1), {
      timeout: 20_000,
    });
    const [queued] = refundsOf(failed.transaction);
    // Another refund of the transaction than ours (one failed before ours): not ours, once
    // ours is recorded (Paystack holds it a moment before its answer reaches us: 503 then).
    await eventually(
      async () => {
        const another = await signed('refund.failed', report(queued.id + 1));
        expect([another.status, another.body.data]).toEqual([200, { handled: false }]);
      },
      { timeout: 20_000 },
    );
    expect(await uncreditedListing(failed.transaction)).toBeUndefined();
    const first = await signed('refund.failed', report(queued.id));
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual({ handled: true });
    expect((await signed('refund.failed', report(queued.id))).body.data).toEqual({
      handled: false,
    });
    const uncredited = await uncreditedListing(failed.transaction);
    expect(uncredited).toMatchObject({
      why: expect.stringMatching(/could not refund it: Customer account closed!+…$/),
    });
    expect(Buffer.byteLength(uncredited?.why ?? '')).toBe(512);
    // Neither was credited to the merchant meanwhile.
    await sleep(1_000);
    expect(await balanceOf(base(), who)).toBe('100000.00');
    // Operators see both, the newest first, and why each stands so; a page after the failed
    // one holds the refused one, not it.
    const listed = await payerRefunds();
    const [failedAt, refusedAt] = [failed, refused].map((p) =>
      listed.findIndex((r) => r.providerReference === p.transaction),
    );
    expect(failedAt).toBeGreaterThanOrEqual(0);
    expect(refusedAt).toBeGreaterThan(failedAt);
    expect(listed[failedAt]).toMatchObject({
      state: 'FAILED',
      refundId: String(queued.id),
      why: `Customer account closed${'!'.repeat(512 - 23 - 3)}…`,
    });
    expect(listed[refusedAt]).toMatchObject({
      state: 'REFUSED',
      refundId: null,
      why: expect.stringMatching(/Duplicate Transaction Reference/),
      tries: 1,
    });
    const after = `&after=${listed[failedAt].checkoutReference}`;
    expect(await payerRefundOf(failed.transaction, after)).toBeUndefined();
    expect(await payerRefundOf(refused.transaction, after)).toBeDefined();
    expect(await payerRefundOf(refused.transaction, '&state=REFUSED')).toBeDefined();
    const unknown = await request(base(), 'GET', '/admin/payments/payer-refunds?after=ck-nope', {
      headers: adminHeaders,
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.message).toMatch(/after: no refund to a payer of checkout ck-nope/);
  });

  it('goes one way only when an order node of the version before credits it at the same time', async () => {
    for (let round = 0; round < 4; round++) {
      const who = await merchant();
      const { deliveryId, transaction, amountKobo } = await recipientPays(who);
      const reference = checkoutOfAttempt(transaction);
      await pay(transaction);
      await paidShare(who, deliveryId);
      const creditIt = () =>
        call(stack.client, 'payment.credit', {
          userId: who.userId,
          amountKobo,
          reference: `refund:${reference}`,
        }).then(
          () => 'credited',
          (err: { code?: number }) => err.code,
        );
      const giveItBack = () =>
        call(stack.client, 'payment.giveBack', { reference }).then((given) => given.to);
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? creditIt() : giveItBack())),
      );
      await sleep(500);
      const credited = (await creditedBack(who, transaction)).length;
      const asked = refundsAsked(transaction).length;
      // Exactly one way, whichever came first, and every caller told which.
      expect(credited + asked).toBe(1);
      if (credited === 1) {
        expect(new Set(answers)).toEqual(new Set(['credited', 'WALLET']));
      } else {
        expect(new Set(answers)).toEqual(new Set([409, 'PAYER']));
      }
    }
  });

  it('of a checkout the merchant paid goes to their wallet, once however many give it back at once', async () => {
    const who = await merchant();
    const reply = await requestDelivery(base(), who, [await savePackage(base(), who)], {
      paymentMethodType: 'CHECKOUT',
    });
    expect(reply.status).toBe(201);
    const reference = reply.body.data.data.reference as string;
    const deliveryId = (reply.headers.get('location') as string).split('/').pop() as string;
    const transaction = new URL(reply.body.data.data.authorization_url as string).pathname.slice(1);
    await pay(transaction);
    await paidShare(who, deliveryId, 'creator');
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        call(stack.client, 'payment.giveBack', { reference, payer: 'RECIPIENT' }),
      ),
    );
    // The checkout's own word (its payer, the merchant) comes before the caller's.
    expect(answers).toEqual(Array.from({ length: 8 }, () => ({ to: 'WALLET' })));
    expect(await creditedBack(who, transaction)).toHaveLength(1);
    expect(refundsAsked(transaction)).toHaveLength(0);
  });
});

/** The reversal operators list for a refund at Paystack (`GET /admin/payments/reversals`). */
async function reversalOf(refundId: number) {
  const reply = await request(base(), 'GET', '/admin/payments/reversals?limit=200', {
    headers: adminHeaders,
  });
  expect(reply.status).toBe(200);
  return (reply.body.data as Record<string, unknown>[]).find(
    (r) => r.refundId === String(refundId),
  );
}

/** Paystack's `refund.processed` of a refund made from its dashboard, answered 200. */
async function reportProcessed(refund: { id: number; transaction: string; amount: number }) {
  const reply = await signed('refund.processed', {
    id: refund.id,
    status: 'processed',
    transaction_reference: refund.transaction,
    amount: refund.amount,
    currency: 'NGN',
  });
  expect(reply.status).toBe(200);
}

/** The merchant's wallet entries of a reversal: what it took, and what was given back. */
const reversalEntries = async (who: Party, refundId: number) =>
  (await entriesOf(base(), who))
    .filter((e) => e.reference.includes(`reversal:${refundId}:`))
    .map((e) => [e.type, e.reference, e.amount])
    .sort();

describe('a recipient’s payment an operator refunded from Paystack’s dashboard, whose delivery is then cancelled', () => {
  it('gives the merchant back what its refund took from them, once; the recipient is refunded once', async () => {
    const who = await merchant();
    const { deliveryId, transaction, amountKobo } = await recipientPays(who);
    await pay(transaction);
    await paidShare(who, deliveryId);
    const amount = (amountKobo / 100).toFixed(2);
    // The delivery goes on; the merchant answers for its payment, which is taken back from them.
    const dashboard = fake.refundFromDashboard(transaction);
    await reportProcessed(dashboard);
    await eventually(async () =>
      expect(await reversalOf(dashboard.id)).toMatchObject({ state: 'TAKEN', taken: amount }),
    );
    expect(await balanceOf(base(), who)).toBe((100_000 - amountKobo / 100).toFixed(2));

    expect((await cancelDelivery(base(), who, deliveryId)).status).toBe(201);
    // Paystack refuses ours (refunded whole): the operator's refund stands for it.
    await eventually(
      async () => expect(await payerRefundOf(transaction, '&state=QUEUED')).toBeDefined(),
      {
        timeout: 20_000,
      },
    );
    expect(await payerRefundOf(transaction)).toMatchObject({ refundId: String(dashboard.id) });
    await eventually(async () =>
      expect(await reversalOf(dashboard.id)).toMatchObject({
        state: 'GIVEN_BACK',
        taken: amount,
        givenBack: amount,
        owed: '0.00',
      }),
    );
    // Order's and payment's sweeps run meanwhile: given back once, one refund at Paystack.
    await sleep(1_500);
    expect(await balanceOf(base(), who)).toBe('100000.00');
    expect(await reversalEntries(who, dashboard.id)).toEqual([
      ['DEBIT', `reversal:${dashboard.id}:1`, `-${amount}`],
      ['REFUND', `refund:reversal:${dashboard.id}:1`, amount],
    ]);
    expect(refundsOf(transaction)).toEqual([dashboard]);
    expect(refundsAsked(transaction)).toHaveLength(1);
    expect(await uncreditedListing(transaction)).toBeUndefined();
    // Reported again, it changes nothing.
    await reportProcessed(dashboard);
    await sleep(500);
    expect(await balanceOf(base(), who)).toBe('100000.00');
  });

  it('gives back what a part refund took while the wallet held less; ours refused is listed for an operator', async () => {
    const who = await createUserWithKey(base());
    await credit(base(), who, 1);
    const { deliveryId, transaction, amountKobo } = await recipientPays(who);
    await pay(transaction);
    await paidShare(who, deliveryId);
    const dashboard = fake.refundFromDashboard(transaction, Math.floor(amountKobo / 2));
    await reportProcessed(dashboard);
    await eventually(async () =>
      expect(await reversalOf(dashboard.id)).toMatchObject({ state: 'TAKING', taken: '1.00' }),
    );
    expect(await balanceOf(base(), who)).toBe('0.00');

    expect((await cancelDelivery(base(), who, deliveryId)).status).toBe(201);
    await eventually(
      async () =>
        expect(await uncreditedListing(transaction)).toMatchObject({
          why: expect.stringMatching(/refused its refund/),
        }),
      { timeout: 20_000 },
    );
    await eventually(async () =>
      expect(await reversalOf(dashboard.id)).toMatchObject({
        state: 'GIVEN_BACK',
        taken: '1.00',
        givenBack: '1.00',
        owed: '0.00',
        givenBackAt: expect.any(String),
        settledAt: expect.any(String),
      }),
    );
    // Nothing more is taken once the wallet is credited: it owes none of it.
    await credit(base(), who, 50);
    await sleep(1_500);
    expect(await balanceOf(base(), who)).toBe('51.00');
    expect(await reversalEntries(who, dashboard.id)).toEqual([
      ['DEBIT', `reversal:${dashboard.id}:1`, '-1.00'],
      ['REFUND', `refund:reversal:${dashboard.id}:1`, '1.00'],
    ]);
    expect(await payerRefundOf(transaction)).toMatchObject({ state: 'REFUSED' });
  });
});
