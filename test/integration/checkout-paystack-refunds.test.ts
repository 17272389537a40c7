import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { call } from '../../libs/contracts';
import { fund, useFakePaystack, walletOf } from '../support/checkout';
import { eventually } from '../support/eventually';
import { adminHeaders, expectErrorEnvelope, request } from '../support/http';
import { useMerchantStack, type MerchantStack } from '../support/merchant-stack';
import { openServiceDatabase } from '../support/stack';

/**
 * Money the provider gives back to a payer after we credited it (decision 146): a Paystack
 * `refund.processed` takes it back from the wallet its checkout credited, once per refund, as
 * far as the wallet holds it and then from what it is credited next (the sweep runs every
 * 100 ms here).
 */

const { fake, env } = useFakePaystack('sk_test_waybill_fake_refunds_0123456789', {
  PAYMENT_SWEEP_INTERVAL_MS: '100',
});
const stack = useMerchantStack({ internal: ['payment'], env });

const signed = (event: string, data: Record<string, unknown>) =>
  fake.sendWebhook(stack.node.url, JSON.stringify({ event, data }));

/** Paystack's report of a processed refund of a transaction. */
const refundProcessed = (transactionReference: string, amount: number | string, id = randomId()) =>
  signed('refund.processed', {
    id,
    status: 'processed',
    transaction_reference: transactionReference,
    refund_reference: `rf_${id}`,
    amount,
    currency: 'NGN',
    domain: 'test',
  });

const randomId = () => Math.floor(Math.random() * 1e12);

/** A checkout of `who`'s wallet for `amount` NGN, paid at the provider and credited. */
async function funded(who: MerchantStack['alice'], amount: number): Promise<string> {
  const reply = await fund(stack.node.url, who.key, amount);
  expect(reply.status).toBe(201);
  const reference = reply.body.data.data.reference as string;
  await paid(reference);
  await eventually(async () =>
    expect(await entriesOf(who, `checkout:${reference}`)).toHaveLength(1),
  );
  return reference;
}

/** Paid at the provider, and its webhook received. */
async function paid(reference: string) {
  (fake.transactions.get(reference) as { status: string }).status = 'success';
  const reply = await signed('charge.success', { reference, status: 'success', amount: 1 });
  expect(reply.status).toBe(200);
}

/** The wallet's entries under references starting with `prefix`, oldest first. */
async function entriesOf(who: MerchantStack['alice'], prefix: string) {
  const { entries } = await walletOf(stack.node.url, who.key);
  return (entries as { reference: string; amount: string; type: string }[])
    .filter((e) => e.reference.startsWith(prefix))
    .map((e) => [e.reference, e.type, e.amount])
    .reverse();
}

async function balanceKobo(who: MerchantStack['alice']): Promise<number> {
  return Math.round(Number((await walletOf(stack.node.url, who.key)).balance) * 100);
}

/** The wallet's entries taking back refund `id`, oldest first: [reference, type, amount]. */
const takenBack = (who: MerchantStack['alice'], id: number | string) =>
  entriesOf(who, `reversal:${id}:`);

/** Refund `id` as operators list it (`GET /admin/payments/reversals`). */
async function listed(id: number, query = '') {
  const reply = await request(
    stack.node.url,
    'GET',
    `/admin/payments/reversals?limit=200${query}`,
    {
      headers: adminHeaders,
    },
  );
  expect(reply.status).toBe(200);
  return (reply.body.data as { refundId: string }[]).find((r) => r.refundId === String(id));
}

const spend = (who: MerchantStack['alice'], amountKobo: number) =>
  call(stack.client, 'payment.debit', {
    userId: who.userId,
    amountKobo,
    reference: `spent-${randomUUID()}`,
  });

describe('a refund made at Paystack', () => {
  it('is taken back from the wallet its checkout funded, once however often and however many at once report it', async () => {
    const alice = stack.alice;
    const reference = await funded(alice, 120);
    const balance = await balanceKobo(alice);
    const id = randomId();
    const replies = await Promise.all(
      Array.from({ length: 6 }, () => refundProcessed(reference, 5000, id)),
    );
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(replies.filter((r) => r.body.data.handled)).not.toHaveLength(0);
    expect(await balanceKobo(alice)).toBe(balance - 5000);
    expect(await takenBack(alice, id)).toEqual([[`reversal:${id}:1`, 'DEBIT', '-50.00']]);
    // Reported again once settled: a repeat, acknowledged, nothing more taken.
    const again = await refundProcessed(reference, 5000, id);
    expect(again.body.data).toEqual({ handled: false });
    // A second part of the same payment, refunded apart (its amount written as a string).
    const second = randomId();
    expect((await refundProcessed(reference, '3000', second)).body.data).toEqual({
      handled: true,
    });
    expect(await balanceKobo(alice)).toBe(balance - 8000);
    expect(await takenBack(alice, second)).toEqual([[`reversal:${second}:1`, 'DEBIT', '-30.00']]);
  });

  it('takes what the wallet holds, then the rest from what it is credited next', async () => {
    const bob = stack.bob;
    const reference = await funded(bob, 100);
    await spend(bob, (await balanceKobo(bob)) - 2000);
    expect(await balanceKobo(bob)).toBe(2000);
    const id = randomId();
    expect((await refundProcessed(reference, 10_000, id)).status).toBe(200);
    expect(await balanceKobo(bob)).toBe(0);
    expect(await takenBack(bob, id)).toEqual([[`reversal:${id}:1`, 'DEBIT', '-20.00']]);
    expect(await listed(id, '&open=true')).toMatchObject({
      providerReference: reference,
      checkoutReference: reference,
      userId: bob.userId,
      amount: '100.00',
      taken: '20.00',
      owed: '80.00',
      state: 'TAKING',
      settledAt: null,
    });

    // Funded with less than is owed: all of it is taken by the sweep.
    await funded(bob, 50);
    await eventually(async () =>
      expect(await takenBack(bob, id)).toEqual([
        [`reversal:${id}:1`, 'DEBIT', '-20.00'],
        [`reversal:${id}:2`, 'DEBIT', '-50.00'],
      ]),
    );
    expect(await balanceKobo(bob)).toBe(0);
    // Then with more: the 30 still owed, and nothing after.
    await funded(bob, 100);
    await eventually(async () => expect(await takenBack(bob, id)).toHaveLength(3));
    expect((await takenBack(bob, id))[2]).toEqual([`reversal:${id}:3`, 'DEBIT', '-30.00']);
    await eventually(async () => expect(await balanceKobo(bob)).toBe(7000));
    await sleep(500);
    expect(await takenBack(bob, id)).toHaveLength(3);
    expect(await balanceKobo(bob)).toBe(7000);
    expect(await listed(id)).toMatchObject({ taken: '100.00', owed: '0.00', state: 'TAKEN' });
    expect(await listed(id, '&open=true')).toBeUndefined();
  });
});

describe('a refund made at Paystack of a checkout that', () => {
  it('paid for a delivery is taken back from the merchant’s wallet', async () => {
    const alice = stack.alice;
    await funded(alice, 100);
    const deliveryId = randomUUID();
    const { data } = await call(stack.client, 'payment.startCheckout', {
      userId: alice.userId,
      amountKobo: 4000,
      purpose: { kind: 'DELIVERY', id: deliveryId },
      email: 'recipient@example.com',
      merchantName: 'Alice',
      idempotencyKey: `${deliveryId}:creator`,
    });
    await paid(data.reference);
    await eventually(async () =>
      expect(
        (await call(stack.client, 'payment.checkout', { reference: data.reference }))?.status,
      ).toBe('PAID'),
    );
    const balance = await balanceKobo(alice);
    const id = randomId();
    expect((await refundProcessed(data.reference, 4000, id)).body.data).toEqual({ handled: true });
    expect(await balanceKobo(alice)).toBe(balance - 4000);
    expect(await takenBack(alice, id)).toEqual([[`reversal:${id}:1`, 'DEBIT', '-40.00']]);
  });

  it('has not credited its payment yet waits for the credit, then takes it back', async () => {
    const bob = stack.bob;
    const reply = await fund(stack.node.url, bob.key, 80);
    const reference = reply.body.data.data.reference as string;
    const id = randomId();
    // Reported before the payment's own webhook came: nothing to take back yet.
    expect((await refundProcessed(reference, 8000, id)).status).toBe(200);
    const balance = await balanceKobo(bob);
    await sleep(300);
    expect(await takenBack(bob, id)).toEqual([]);
    expect(await listed(id)).toMatchObject({ state: 'AWAITING_CREDIT', owed: '80.00' });
    await paid(reference);
    // Taken from what the wallet held as soon as the payment was decided, in one part or two
    // (the rest once its credit landed): 80 in all.
    const total = async () =>
      (await takenBack(bob, id)).reduce((sum, [, , amount]) => sum + Number(amount), 0);
    await eventually(async () => expect(await total()).toBe(-80));
    await eventually(async () =>
      expect(await entriesOf(bob, `checkout:${reference}`)).toHaveLength(1),
    );
    expect(await balanceKobo(bob)).toBe(balance);
  });

  it('never credited the payment (another amount than the checkout’s) takes nothing back', async () => {
    const alice = stack.alice;
    const reply = await fund(stack.node.url, alice.key, 70);
    const reference = reply.body.data.data.reference as string;
    // Paid more than the checkout's amount: refunded whole by an operator, as they are told to.
    Object.assign(fake.transactions.get(reference) as object, { amount: 8000 });
    await paid(reference);
    const uncredited = await request(
      stack.node.url,
      'GET',
      '/admin/payments/uncredited?limit=200',
      { headers: adminHeaders },
    );
    expect(
      uncredited.body.data.map((p: { providerReference: string }) => p.providerReference),
    ).toContain(reference);
    const balance = await balanceKobo(alice);
    const id = randomId();
    expect((await refundProcessed(reference, 8000, id)).body.data).toEqual({ handled: true });
    await sleep(300);
    expect(await takenBack(alice, id)).toEqual([]);
    expect(await balanceKobo(alice)).toBe(balance);
    expect(await listed(id, '&open=false')).toMatchObject({
      state: 'NEVER_CREDITED',
      taken: '0.00',
      owed: '0.00',
    });
  });
});

describe('a refund made at Paystack, recorded against', () => {
  it('a checkout opened before its transaction was recorded apart is taken back all the same', async () => {
    const alice = stack.alice;
    const reference = await funded(alice, 40);
    // As a checkout opened before attempts were recorded: its transaction is its reference.
    const db = await openServiceDatabase(stack.iso, 'payment');
    try {
      await db.collection('checkout_opened').deleteOne({ _id: reference as never });
    } finally {
      await db.close();
    }
    const balance = await balanceKobo(alice);
    const id = randomId();
    expect((await refundProcessed(reference, 4000, id)).body.data).toEqual({ handled: true });
    expect(await takenBack(alice, id)).toEqual([[`reversal:${id}:1`, 'DEBIT', '-40.00']]);
    expect(await balanceKobo(alice)).toBe(balance - 4000);
  });

  it('one transaction, is not moved to another by an event naming its id with another', async () => {
    const alice = stack.alice;
    const [first, second] = [await funded(alice, 30), await funded(alice, 30)];
    const id = randomId();
    expect((await refundProcessed(first, 3000, id)).body.data).toEqual({ handled: true });
    const balance = await balanceKobo(alice);
    expect((await refundProcessed(second, 3000, id)).body.data).toEqual({ handled: false });
    expect(await balanceKobo(alice)).toBe(balance);
    expect(await listed(id)).toMatchObject({ providerReference: first, state: 'TAKEN' });
  });
});

describe('refund and dispute events that move nothing', () => {
  it('are acknowledged: not ours, not readable, not fitting the checkout', async () => {
    const alice = stack.alice;
    const reference = await funded(alice, 60);
    const balance = await balanceKobo(alice);
    const reversals = (await entriesOf(alice, 'reversal:')).length;
    const refunds = [
      { id: randomId(), transaction_reference: 'not-ours-123', amount: 100, currency: 'NGN' },
      { transaction_reference: reference, amount: 100, currency: 'NGN' },
      { id: 'a b', transaction_reference: reference, amount: 100, currency: 'NGN' },
      { id: randomId(), amount: 100, currency: 'NGN' },
      { id: randomId(), transaction_reference: reference, amount: 'ten', currency: 'NGN' },
      { id: randomId(), transaction_reference: reference, amount: -100, currency: 'NGN' },
      { id: randomId(), transaction_reference: reference, amount: 100 },
      { id: randomId(), transaction_reference: reference, amount: 100, currency: 'USD' },
      { id: randomId(), transaction_reference: reference, amount: 6001, currency: 'NGN' },
    ];
    for (const data of refunds) {
      const reply = await signed('refund.processed', data);
      expect([reply.status, reply.body.data]).toEqual([200, { handled: false }]);
    }
    for (const event of [
      'charge.dispute.create',
      'charge.dispute.remind',
      'charge.dispute.resolve',
    ]) {
      const reply = await signed(event, {
        id: randomId(),
        refund_amount: 6000,
        status: 'awaiting-merchant-feedback',
        transaction: { reference, amount: 6000 },
      });
      expect([reply.status, reply.body.data]).toEqual([200, { handled: false }]);
    }
    // Pending, processing and failed refunds give nothing back yet.
    for (const event of ['refund.pending', 'refund.processing', 'refund.failed']) {
      const reply = await signed(event, {
        id: randomId(),
        transaction_reference: reference,
        amount: 6000,
        currency: 'NGN',
      });
      expect([reply.status, reply.body.data]).toEqual([200, { handled: false }]);
    }
    await sleep(300);
    expect(await balanceKobo(alice)).toBe(balance);
    expect(await entriesOf(alice, 'reversal:')).toHaveLength(reversals);
  });

  it('are listed page by page after the last one read, each once, as at once', async () => {
    const list = async (query: string) => {
      const reply = await request(stack.node.url, 'GET', `/admin/payments/reversals?${query}`, {
        headers: adminHeaders,
      });
      expect(reply.status).toBe(200);
      return (reply.body.data as { refundId: string }[]).map((r) => r.refundId);
    };
    const whole = await list('limit=200');
    expect(whole.length).toBeGreaterThanOrEqual(3);
    const pages: string[] = [];
    for (;;) {
      const after = pages.length > 0 ? `&after=${pages[pages.length - 1]}` : '';
      const page = await list(`limit=2${after}`);
      if (page.length === 0) break;
      pages.push(...page);
    }
    expect(pages).toEqual(whole);
    const unknown = await request(stack.node.url, 'GET', '/admin/payments/reversals?after=nope', {
      headers: adminHeaders,
    });
    expectErrorEnvelope(unknown, 404, /after: no reversal nope/);
  });
});
