import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ObjectId } from 'mongodb';
import { call } from '../../libs/contracts';
import {
  FakePaystack,
  fund,
  type FakeTransaction,
  outcomeListener,
  walletFundingParams,
  walletOf,
} from '../support/checkout';
import { eventually } from '../support/eventually';
import { adminHeaders, expectErrorEnvelope, request } from '../support/http';
import { useMerchantStack, type MerchantStack } from '../support/merchant-stack';
import { openServiceDatabase, startNode, type NodeProcess } from '../support/stack';

/**
 * Paystack-compatible checkouts whose payment the provider confirms only after the checkout's
 * time (CHECKOUT_TTL_SECONDS, for tests): the payer's money was taken, so the checkout is paid
 * and credited once, whether the sweep or a late webhook reports it. Two stacks: one sweeping
 * every 100 ms, one whose sweep never comes within a test, so that only the webhook can.
 */

const SECRET = 'sk_test_waybill_fake_late_0123456789';
const fake = new FakePaystack(SECRET);
const envWithSweep = (interval: string): Record<string, string> => ({
  PAYMENT_PROVIDER: 'paystack',
  PAYSTACK_SECRET_KEY: SECRET,
  PAYSTACK_TIMEOUT_MS: '1000',
  CHECKOUT_TTL_SECONDS: '1',
  PAYMENT_SWEEP_INTERVAL_MS: interval,
});
const sweepingEnv = envWithSweep('100');
const unsweptEnv = envWithSweep('600000');
beforeAll(async () => {
  await fake.start();
  sweepingEnv.PAYSTACK_BASE_URL = unsweptEnv.PAYSTACK_BASE_URL = fake.url;
  lateCheckingEnv.PAYSTACK_BASE_URL = fake.url;
});
const listener = outcomeListener();
const sweeping = useMerchantStack({
  internal: ['payment'],
  own: [listener.schema],
  env: sweepingEnv,
});
const unswept = useMerchantStack({ internal: ['payment'], env: unsweptEnv });
/** Late checks of expired checkouts every few hundred milliseconds (an hour and more, live). */
const LATE_CHECKS_MS = [300, 600, 900];
const lateCheckingEnv: Record<string, string> = {
  ...envWithSweep('100'),
  // Longer than the checkout's time: an opening may answer after it.
  PAYSTACK_TIMEOUT_MS: '3000',
  CHECKOUT_LATE_CHECKS_MS: LATE_CHECKS_MS.join(','),
};
const lateChecking = useMerchantStack({ internal: ['payment'], env: lateCheckingEnv });
afterAll(() => fake.stop());

const statusOf = async (stack: MerchantStack, reference: string) =>
  (await call(stack.client, 'payment.checkout', { reference }))?.status;

/** A funding checkout of Alice's, opened at the fake provider (not paid there yet). */
async function opened(stack: MerchantStack, amount: number) {
  const reply = await fund(stack.node.url, stack.alice.key, amount);
  expect(reply.status).toBe(201);
  return reply.body.data.data.reference as string;
}

/** The outcome events the listener received for a checkout, by name, in order. */
const eventsOf = (reference: string) => listener.log.of(reference).map((e) => e.name);

/** The verifications the fake provider was asked of a transaction. */
const verificationsOf = (providerReference: string) =>
  fake.calls.filter((c) => c.path === `/transaction/verify/${providerReference}`);

/** The provider answers every verification with a 500 while `during` runs. */
async function whileVerifyFails(during: () => Promise<void>): Promise<void> {
  Object.assign(fake.fail, { verify: 1_000_000, mode: 'error' });
  try {
    await during();
  } finally {
    fake.fail.verify = 0;
  }
}

/**
 * The wait, from a checkout's opening, for an event of its expiry: its time (one second)
 * and a sweep (every 100 ms), with room for a loaded machine.
 */
const WITHIN_A_SWEEP_OF_ITS_TIME = 3_000;

const paidAtProvider = (reference: string) => {
  (fake.transactions.get(reference) as { status: string }).status = 'success';
};

/** Alice's wallet entries of a checkout's credit. */
const creditsOf = async (stack: MerchantStack, reference: string) =>
  (await walletOf(stack.node.url, stack.alice.key)).entries.filter(
    (e) => (e as { reference: string }).reference === `checkout:${reference}`,
  );

function signedChargeSuccess(stack: MerchantStack, reference: string) {
  const body = JSON.stringify({
    event: 'charge.success',
    data: { reference, status: 'success', amount: 1, currency: 'NGN' },
  });
  return fake.sendWebhook(stack.node.url, body);
}

describe('a Paystack payment confirmed after the checkout’s time', () => {
  it('is found by the sweep, paid and credited once', async () => {
    const reference = await opened(sweeping, 120);
    paidAtProvider(reference);
    await eventually(async () => expect(await statusOf(sweeping, reference)).toBe('PAID'), {
      timeout: 15_000,
    });
    await eventually(() =>
      expect(listener.log.of(reference).map((e) => e.name)).toContain('payment.succeeded'),
    );
    await eventually(async () => expect(await creditsOf(sweeping, reference)).toHaveLength(1));
    // Sweeps go on every 100 ms: none credits it again.
    await sleep(500);
    const credits = await creditsOf(sweeping, reference);
    expect(credits).toHaveLength(1);
    expect(credits[0]).toMatchObject({ amount: '120.00' });
  });

  it('is found by the sweep on the transaction handed out when the first attempt failed', async () => {
    const params = walletFundingParams(sweeping.alice.userId, 9000);
    Object.assign(fake.fail, { initialize: 1, mode: 'refuse' });
    await expect(call(sweeping.client, 'payment.startCheckout', params)).rejects.toMatchObject({
      code: 502,
    });
    const { reference } = (await call(sweeping.client, 'payment.startCheckout', params)).data;
    paidAtProvider(`${reference}.1`);
    await eventually(async () => expect(await statusOf(sweeping, reference)).toBe('PAID'), {
      timeout: 15_000,
    });
    expect(fake.calls.map((c) => c.path)).toContain(`/transaction/verify/${reference}.1`);
    await eventually(async () => expect(await creditsOf(sweeping, reference)).toHaveLength(1));
  });

  it('is paid by a webhook that comes late, and credited once however often it comes', async () => {
    const reference = await opened(unswept, 80);
    paidAtProvider(reference);
    await sleep(1_100);
    expect(await statusOf(unswept, reference)).toBe('EXPIRED'); // as read: past its time
    const replies = await Promise.all([1, 2, 3].map(() => signedChargeSuccess(unswept, reference)));
    for (const reply of replies) expect(reply.status).toBe(200);
    // Sent at once, each may see the payment its twin decided: the credit is what is once.
    expect(replies.some((r) => r.body.data.handled === true)).toBe(true);
    expect(await statusOf(unswept, reference)).toBe('PAID');
    await eventually(async () => expect(await creditsOf(unswept, reference)).toHaveLength(1));
    await sleep(300);
    expect(await creditsOf(unswept, reference)).toHaveLength(1);
  });

  it('is not expired while its charge is still under way at the provider, and is paid once it settles', async () => {
    const reference = await opened(sweeping, 130);
    // A bank transfer the payer started before the checkout's time, not settled yet.
    (fake.transactions.get(reference) as { status: string }).status = 'ongoing';
    await sleep(2_500);
    expect(listener.log.of(reference)).toEqual([]);
    const verifies = fake.calls.filter((c) => c.path === `/transaction/verify/${reference}`);
    // Asked again, as often as the checkout lasted (one second here), not at every sweep.
    expect(verifies.length).toBeGreaterThanOrEqual(1);
    expect(verifies.length).toBeLessThanOrEqual(4);
    paidAtProvider(reference);
    await eventually(async () => expect(await statusOf(sweeping, reference)).toBe('PAID'), {
      timeout: 15_000,
    });
    await eventually(async () => expect(await creditsOf(sweeping, reference)).toHaveLength(1));
    expect(listener.log.of(reference).map((e) => e.name)).not.toContain('payment.failed');
  });

  it('stays EXPIRED when the sweep expired it before the payment, and its wallet is credited once all the same', async () => {
    const reference = await opened(sweeping, 60);
    // Decided by the sweep (a checkout reads EXPIRED past its time before that).
    await eventually(
      () => expect(listener.log.of(reference).map((e) => e.name)).toContain('payment.failed'),
      { timeout: 15_000 },
    );
    paidAtProvider(reference);
    const replies = await Promise.all(
      [1, 2, 3].map(() => signedChargeSuccess(sweeping, reference)),
    );
    for (const reply of replies) {
      expect(reply.status).toBe(200);
      expect(reply.body.data).toEqual({ handled: false });
    }
    await expectCreditedOnceThoughExpired(sweeping, reference, '60.00');
    await sleep(500);
    expect(await creditsOf(sweeping, reference)).toHaveLength(1);
  });

  it('credits a delivery’s checkout paid after the sweep expired it to its merchant’s wallet, once', async () => {
    const params = {
      ...walletFundingParams(sweeping.alice.userId, 4_500),
      purpose: { kind: 'DELIVERY' as const, id: randomUUID() },
    };
    const { reference } = (await call(sweeping.client, 'payment.startCheckout', params)).data;
    await eventually(
      () => expect(listener.log.of(reference).map((e) => e.name)).toContain('payment.failed'),
      { timeout: 15_000 },
    );
    paidAtProvider(reference);
    const replies = await Promise.all(
      [1, 2, 3].map(() => signedChargeSuccess(sweeping, reference)),
    );
    for (const reply of replies) expect(reply.body.data).toEqual({ handled: false });
    expect(await statusOf(sweeping, reference)).toBe('EXPIRED');
    const refunds = async () =>
      (await walletOf(sweeping.node.url, sweeping.alice.key)).entries.filter(
        (e) => (e as { reference: string }).reference === `refund:${reference}`,
      );
    expect(await refunds()).toEqual([expect.objectContaining({ type: 'CREDIT', amount: '45.00' })]);
    // Paid for the delivery that its expiry cancelled: no outcome is sent again.
    expect(listener.log.of(reference).map((e) => e.name)).not.toContain('payment.succeeded');
    expect(await uncreditedListed(sweeping, reference)).toBeUndefined();
  });

  it('is logged for a refund when the sweep finds it paid for another amount', async () => {
    const reference = await opened(sweeping, 70);
    Object.assign(fake.transactions.get(reference) as object, { status: 'success', amount: 6_900 });
    await eventually(
      () => expect(listener.log.of(reference).map((e) => e.name)).toContain('payment.failed'),
      { timeout: 15_000 },
    );
    expect(await statusOf(sweeping, reference)).toBe('EXPIRED');
    expect(await uncreditedLogged(sweeping, reference)).toContain(
      'the provider reports 6900 kobo, the checkout is for 7000',
    );
    // Listed for operators, once however often it is seen, until one records its refund.
    await signedChargeSuccess(sweeping, reference);
    const listed = await uncreditedListed(sweeping, reference);
    expect(listed).toMatchObject({
      checkoutReference: reference,
      userId: sweeping.alice.userId,
      why: 'the provider reports 6900 kobo, the checkout is for 7000',
      settlement: null,
    });
    const all = (await adminGet(sweeping, '/admin/payments/uncredited?limit=200')).body.data;
    expect(
      all.filter((p: { providerReference: string }) => p.providerReference === reference),
    ).toHaveLength(1);

    const settle = (note: string) =>
      request(sweeping.node.url, 'POST', `/admin/payments/uncredited/${reference}/settle`, {
        headers: adminHeaders,
        json: { note },
      });
    const settled = await settle('refunded at Paystack, ref RF-1');
    expect(settled.status).toBe(200);
    expect(settled.body.data.settlement).toMatchObject({
      note: 'refunded at Paystack, ref RF-1',
      settledBy: 'admin-token',
    });
    expect((await settle('refunded at Paystack, ref RF-1')).status).toBe(200);
    const again = await settle('refunded twice?');
    expect(again.status).toBe(409);
    expect(again.body.message).toContain('refunded at Paystack, ref RF-1');
    expect((await uncreditedListed(sweeping, reference))?.settlement).toMatchObject({
      note: 'refunded at Paystack, ref RF-1',
    });
    const unknown = await request(
      sweeping.node.url,
      'POST',
      '/admin/payments/uncredited/no-such-reference/settle',
      { headers: adminHeaders, json: { note: 'x' } },
    );
    expect(unknown.status).toBe(404);
  });

  it('pages the uncredited payments newest first, all of them or only the settled or unsettled', async () => {
    const references = [
      await opened(sweeping, 71),
      await opened(sweeping, 72),
      await opened(sweeping, 73),
    ];
    for (const reference of references) {
      Object.assign(fake.transactions.get(reference) as object, { status: 'success', amount: 100 });
    }
    await eventually(
      async () => {
        for (const reference of references) {
          expect(await uncreditedListed(sweeping, reference)).toBeDefined();
        }
      },
      { timeout: 15_000 },
    );
    const [settledOne, unsettledOne] = references;
    const settle = await request(
      sweeping.node.url,
      'POST',
      `/admin/payments/uncredited/${settledOne}/settle`,
      { headers: adminHeaders, json: { note: 'refunded at Paystack, ref RF-2' } },
    );
    expect(settle.status).toBe(200);

    const listed = async (query: string) => {
      const reply = await adminGet(sweeping, `/admin/payments/uncredited?${query}`);
      expect(reply.status).toBe(200);
      return (reply.body.data as { providerReference: string; settlement: unknown }[]).map(
        (p) => `${p.providerReference}:${p.settlement === null ? 'open' : 'settled'}`,
      );
    };
    const everything = await listed('limit=200');
    const unsettled = await listed('settled=false&limit=200');
    const settled = await listed('settled=true&limit=200');
    expect(unsettled).toContain(`${unsettledOne}:open`);
    expect(settled).toContain(`${settledOne}:settled`);
    expect(unsettled.every((p) => p.endsWith(':open'))).toBe(true);
    expect(settled.every((p) => p.endsWith(':settled'))).toBe(true);
    // Each filter keeps the full list's order; together they are the full list.
    expect(everything.filter((p) => p.endsWith(':open'))).toEqual(unsettled);
    expect(everything.filter((p) => p.endsWith(':settled'))).toEqual(settled);
    expect(everything).toHaveLength(unsettled.length + settled.length);

    // Page by page, one at a time, each list reads the same as at once.
    const idOf = (listedAs: string) => listedAs.split(':')[0];
    for (const [filter, whole] of [
      ['', everything],
      ['settled=false&', unsettled],
      ['settled=true&', settled],
    ] as const) {
      const pages: string[] = [];
      for (;;) {
        const after = pages.length > 0 ? `&after=${idOf(pages[pages.length - 1])}` : '';
        const page = await listed(`${filter}limit=1${after}`);
        if (page.length === 0) break;
        pages.push(...page);
      }
      expect(pages).toEqual(whole);
    }
    // An operator working through the unsettled ones settles the page they read: the next page
    // starts after it all the same, and skips none (an offset skipped one each time).
    const [first, second] = await listed('settled=false&limit=2');
    expect(second).toBeDefined();
    const settleIt = await request(
      sweeping.node.url,
      'POST',
      `/admin/payments/uncredited/${idOf(first)}/settle`,
      { headers: adminHeaders, json: { note: 'refunded at Paystack, ref RF-3' } },
    );
    expect(settleIt.status).toBe(200);
    expect(await listed(`settled=false&limit=1&after=${idOf(first)}`)).toEqual([second]);

    const bad = await adminGet(sweeping, '/admin/payments/uncredited?settled=maybe');
    expectErrorEnvelope(bad, 400);
    expectErrorEnvelope(
      await adminGet(sweeping, '/admin/payments/uncredited?after=no-such-payment'),
      404,
      /after: no uncredited payment no-such-payment/,
    );
    expectErrorEnvelope(await adminGet(sweeping, '/admin/payments/uncredited?offset=1'), 400);
  });

  it('credits the wallet once when the webhook finds the checkout expired as it confirms', async () => {
    const reference = await opened(unswept, 85);
    paidAtProvider(reference);
    // The sweep recorded EXPIRED and stopped before taking it off its list.
    await claimOutcome(unswept, reference, 'EXPIRED');
    const reply = await signedChargeSuccess(unswept, reference);
    expect(reply.status).toBe(200);
    expect(reply.body.data).toEqual({ handled: false });
    await expectCreditedOnceThoughExpired(unswept, reference, '85.00');
  });

  it('answers 503 to a webhook of an expired checkout whose charge is not settled yet, and credits the retry once', async () => {
    const reference = await opened(sweeping, 75);
    await eventually(() => expect(eventsOf(reference)).toEqual(['payment.failed']), {
      timeout: 15_000,
    });
    // Off the sweep's list: a 200 now would be the last anyone asks about this payment.
    const transaction = fake.transactions.get(reference) as FakeTransaction;
    transaction.status = 'pending';
    const pending = await signedChargeSuccess(sweeping, reference);
    expectErrorEnvelope(
      pending,
      503,
      /not report .* settled yet \(the provider reports it pending\)/,
    );
    expect(pending.headers.get('retry-after')).toBe('1');
    // Not known at the provider yet (its records behind its webhook): the same.
    fake.transactions.delete(reference);
    const unknown = await signedChargeSuccess(sweeping, reference);
    expectErrorEnvelope(unknown, 503, /the provider knows no such transaction/);
    fake.transactions.set(reference, transaction);
    // Given up by the payer: sending it again changes nothing, and it is acknowledged.
    transaction.status = 'abandoned';
    const abandoned = await signedChargeSuccess(sweeping, reference);
    expect(abandoned.status).toBe(200);
    expect(abandoned.body.data).toEqual({ handled: false });
    expect(await creditsOf(sweeping, reference)).toEqual([]);

    paidAtProvider(reference);
    const retried = await Promise.all([1, 2].map(() => signedChargeSuccess(sweeping, reference)));
    for (const reply of retried) {
      expect(reply.status).toBe(200);
      expect(reply.body.data).toEqual({ handled: false });
    }
    await expectCreditedOnceThoughExpired(sweeping, reference, '75.00');
    await sleep(300);
    expect(await creditsOf(sweeping, reference)).toHaveLength(1);
    expect(eventsOf(reference)).toEqual(['payment.failed']);
  });

  it('acknowledges a webhook of a checkout still open whose charge is not settled yet: the sweep asks again', async () => {
    const reference = await opened(unswept, 45);
    // Its time moved an hour on: still open, however long the opening took here.
    await setSessionExpiry(unswept, reference, new Date(Date.now() + 3_600_000));
    (fake.transactions.get(reference) as FakeTransaction).status = 'pending';
    const reply = await signedChargeSuccess(unswept, reference);
    expect(reply.status).toBe(200);
    expect(reply.body.data).toEqual({ handled: false });
    expect(await statusOf(unswept, reference)).toBe('PENDING');
  });

  it('answers 503 to a webhook of a checkout past its time, still listed, whose charge is not settled yet', async () => {
    // Its expiry is the sweep's to decide at any moment, on an answer the provider may have
    // given before this payment: a 200 now could be the last word on it.
    const reference = await opened(unswept, 55);
    await setSessionExpiry(unswept, reference, new Date(Date.now() - 1_000));
    (fake.transactions.get(reference) as FakeTransaction).status = 'pending';
    expectErrorEnvelope(await signedChargeSuccess(unswept, reference), 503, /settled yet/);
    paidAtProvider(reference);
    const settled = await signedChargeSuccess(unswept, reference);
    expect(settled.status).toBe(200);
    await eventually(async () => expect(await creditsOf(unswept, reference)).toHaveLength(1));
  });

  it('credits the wallet once when the sweep finds it paid but another sweep expired it while the provider was asked', async () => {
    const reference = await opened(sweeping, 95);
    // Another replica's sweep, told `abandoned` a moment earlier, claims EXPIRED while this
    // sweep's question is under way; by then the payer has finished.
    let raced = false;
    fake.beforeVerify = async (asked) => {
      if (asked !== reference || raced) return;
      raced = true;
      paidAtProvider(reference);
      await claimOutcome(sweeping, reference, 'EXPIRED');
    };
    try {
      await eventually(() => expect(eventsOf(reference)).toEqual(['payment.failed']), {
        timeout: 15_000,
      });
    } finally {
      fake.beforeVerify = undefined;
    }
    expect(raced).toBe(true);
    await expectCreditedOnceThoughExpired(sweeping, reference, '95.00');
    expect(await uncreditedListed(sweeping, reference)).toBeUndefined();
    await sleep(500);
    expect(await creditsOf(sweeping, reference)).toHaveLength(1);
    expect(eventsOf(reference)).toEqual(['payment.failed']);
  });

  it('credits a delivery’s checkout found paid after a sweep that stopped half-way had expired it, once', async () => {
    const params = {
      ...walletFundingParams(sweeping.alice.userId, 5_500),
      purpose: { kind: 'DELIVERY' as const, id: randomUUID() },
    };
    const { reference } = (await call(sweeping.client, 'payment.startCheckout', params)).data;
    paidAtProvider(reference);
    // A sweep claimed EXPIRED and stopped before carrying it out; no webhook comes.
    await claimOutcome(sweeping, reference, 'EXPIRED');
    await eventually(() => expect(eventsOf(reference)).toContain('payment.failed'), {
      timeout: 15_000,
    });
    expect(await statusOf(sweeping, reference)).toBe('EXPIRED');
    const refunds = async () =>
      (await walletOf(sweeping.node.url, sweeping.alice.key)).entries.filter(
        (e) => (e as { reference: string }).reference === `refund:${reference}`,
      );
    // The expiry's event waits for no provider: the credit may come a moment after it.
    await eventually(async () => expect(await refunds()).not.toEqual([]));
    expect(await refunds()).toEqual([expect.objectContaining({ type: 'CREDIT', amount: '55.00' })]);
    expect(await uncreditedListed(sweeping, reference)).toBeUndefined();
    await sleep(500);
    expect(await refunds()).toHaveLength(1);
    expect(eventsOf(reference)).not.toContain('payment.succeeded');
  });
});

describe('a checkout whose outcome was claimed but not carried out', () => {
  it('sends its expiry at once while the provider cannot answer, once, and credits what the provider reports paid later', async () => {
    const reference = await opened(sweeping, 35);
    // A sweep claimed EXPIRED and stopped before carrying it out.
    await claimOutcome(sweeping, reference, 'EXPIRED');
    await whileVerifyFails(async () => {
      await eventually(() => expect(eventsOf(reference)).toEqual(['payment.failed']), {
        timeout: WITHIN_A_SWEEP_OF_ITS_TIME,
      });
      // Every sweep asks the provider again, and none sends the event again.
      const asked = verificationsOf(reference).length;
      await eventually(() => expect(verificationsOf(reference).length).toBeGreaterThan(asked), {
        timeout: 10_000,
      });
      expect(eventsOf(reference)).toEqual(['payment.failed']);
      // Each failed look puts it behind the others on the list, not left first for good.
      const session = await documentOf(sweeping, 'checkout_sessions', reference);
      const pending = await pendingEntry(sweeping, reference);
      expect(pending?.expiresAt.getTime()).toBeGreaterThan(session?.expiresAt.getTime());
      expect(await documentOf(sweeping, 'checkout_sends', reference)).toMatchObject({
        sentAt: expect.any(Date),
      });
      // The payer had paid meanwhile, and no webhook comes.
      paidAtProvider(reference);
    });
    await eventually(async () => expect(await pendingEntry(sweeping, reference)).toBeNull());
    await expectCreditedOnceThoughExpired(sweeping, reference, '35.00');
    await sleep(500);
    expect(await creditsOf(sweeping, reference)).toHaveLength(1);
    expect(eventsOf(reference)).toEqual(['payment.failed']);
  });

  it('sends its expiry at once while the charge is still under way, and credits it once it settles', async () => {
    const reference = await opened(sweeping, 15);
    await claimOutcome(sweeping, reference, 'EXPIRED');
    (fake.transactions.get(reference) as FakeTransaction).status = 'ongoing';
    await eventually(() => expect(eventsOf(reference)).toEqual(['payment.failed']), {
      timeout: WITHIN_A_SWEEP_OF_ITS_TIME,
    });
    // Still listed, asked again as for any charge under way (a sweep's pace is the machine's).
    await eventually(() => expect(verificationsOf(reference).length).toBeGreaterThanOrEqual(2), {
      timeout: 10_000,
    });
    expect(await pendingEntry(sweeping, reference)).not.toBeNull();
    expect(eventsOf(reference)).toEqual(['payment.failed']);
    paidAtProvider(reference);
    await eventually(async () => expect(await creditsOf(sweeping, reference)).toHaveLength(1), {
      timeout: 5_000,
    });
    await expectCreditedOnceThoughExpired(sweeping, reference, '15.00');
    await eventually(async () => expect(await pendingEntry(sweeping, reference)).toBeNull());
    expect(eventsOf(reference)).toEqual(['payment.failed']);
  });

  it('carries out a payment without asking the provider', async () => {
    const reference = await opened(sweeping, 25);
    paidAtProvider(reference);
    // A sweep found it paid, claimed PAID and stopped before carrying it out.
    await claimOutcome(sweeping, reference, 'PAID');
    await whileVerifyFails(async () => {
      await eventually(() => expect(eventsOf(reference)).toEqual(['payment.succeeded']), {
        timeout: WITHIN_A_SWEEP_OF_ITS_TIME,
      });
    });
    expect(verificationsOf(reference)).toEqual([]);
    expect(await statusOf(sweeping, reference)).toBe('PAID');
    const credits = await creditsOf(sweeping, reference);
    expect(credits).toHaveLength(1);
    expect(credits[0]).toMatchObject({ amount: '25.00' });
    expect(await pendingEntry(sweeping, reference)).toBeNull();
  });
});

/**
 * Claims the checkout's outcome as a sweep or a payer would, and stops there (as one that
 * crashed before carrying it out, or that has not yet): the checkout stays on the pending list.
 */
/** Sets when a checkout's time ends, as if it had been opened with another time limit. */
async function setSessionExpiry(stack: MerchantStack, reference: string, at: Date): Promise<void> {
  const db = await openServiceDatabase(stack.iso, 'payment');
  try {
    await db
      .collection('checkout_sessions')
      .updateOne({ _id: reference as unknown as ObjectId }, { $set: { expiresAt: at } });
  } finally {
    await db.close();
  }
}

async function claimOutcome(
  stack: MerchantStack,
  reference: string,
  status: 'PAID' | 'EXPIRED',
): Promise<void> {
  const db = await openServiceDatabase(stack.iso, 'payment');
  try {
    await db.collection('checkout_outcomes').insertOne({
      _id: reference as unknown as ObjectId,
      status,
      source: 'sweep',
      decidedAt: new Date(),
    });
  } finally {
    await db.close();
  }
}

/** The payment service's document `_id` in `collection`, or null. */
async function documentOf(stack: MerchantStack, collection: string, id: string) {
  const db = await openServiceDatabase(stack.iso, 'payment');
  try {
    return await db.collection(collection).findOne({ _id: id as unknown as ObjectId });
  } finally {
    await db.close();
  }
}

/** The checkout's entry on the sweep's list, or null once it is off it. */
const pendingEntry = (stack: MerchantStack, reference: string) =>
  documentOf(stack, 'checkout_pending', reference);

/** The checkout reads EXPIRED, and its wallet holds one credit of `amount` for it. */
async function expectCreditedOnceThoughExpired(
  stack: MerchantStack,
  reference: string,
  amount: string,
): Promise<void> {
  expect(await statusOf(stack, reference)).toBe('EXPIRED');
  const credits = await creditsOf(stack, reference);
  expect(credits).toHaveLength(1);
  expect(credits[0]).toMatchObject({ amount });
}

const adminGet = (stack: MerchantStack, path: string) =>
  request(stack.node.url, 'GET', path, { headers: adminHeaders });

/** The uncredited payment of `reference` as operators see it, if it is listed. */
async function uncreditedListed(stack: MerchantStack, reference: string) {
  const listed = (await adminGet(stack, '/admin/payments/uncredited?limit=200')).body.data as {
    providerReference: string;
    settlement: unknown;
  }[];
  return listed.find((p) => p.providerReference === reference);
}

/** The node's error log line that tells an operator to refund a payment of `reference`. */
async function uncreditedLogged(stack: MerchantStack, reference: string): Promise<string> {
  const logged = () =>
    stack.node
      .output()
      .split('\n')
      .find(
        (l) => l.includes('a payment at the provider is not credited') && l.includes(reference),
      );
  await eventually(() => expect(logged()).toBeDefined());
  const line = logged() as string;
  expect(line).toMatch(/"level":"error"|ERROR/i);
  return line;
}

describe('a Paystack checkout paid after it expired, whose webhook never comes', () => {
  /** Expired by the sweep of the late-checking stack: the provider asked once, at its time. */
  async function expiredUnpaid(amount: number) {
    const reference = await opened(lateChecking, amount);
    await eventually(async () => expect(verificationsOf(reference).length).toBeGreaterThan(0), {
      timeout: 15_000,
    });
    await eventually(async () => expect(await statusOf(lateChecking, reference)).toBe('EXPIRED'));
    return reference;
  }

  it('is credited once by a late check of the sweep', async () => {
    const reference = await expiredUnpaid(70);
    paidAtProvider(reference);
    await eventually(async () => expect(await creditsOf(lateChecking, reference)).toHaveLength(1), {
      timeout: 10_000,
    });
    const credit = (await creditsOf(lateChecking, reference))[0] as { amount: string };
    expect(credit.amount).toBe('70.00');
    expect(await statusOf(lateChecking, reference)).toBe('EXPIRED');
    // Nothing more is asked once it is credited, and nothing more credited.
    const asked = verificationsOf(reference).length;
    await sleep(LATE_CHECKS_MS.at(-1) as number);
    expect(verificationsOf(reference)).toHaveLength(asked);
    expect(await creditsOf(lateChecking, reference)).toHaveLength(1);
  });

  it('is not handed out when it ended while the provider opened it: nobody can pay what no late check watches', async () => {
    // The provider opens the transaction at once but answers after the checkout's time, while
    // the sweep, finding nothing opened yet, expires it.
    Object.assign(fake.fail, { initialize: 1, mode: 'late', lateMs: 1_600 });
    try {
      const reply = await fund(lateChecking.node.url, lateChecking.alice.key, 65);
      expectErrorEnvelope(
        reply,
        409,
        /^Checkout ck-\S+ ended \(expired\) while the payment provider opened it, and its page is not handed out/,
      );
    } finally {
      Object.assign(fake.fail, { initialize: 0, mode: 'error', lateMs: 0 });
    }
  });

  it('is asked about once at each late check and then no more, when nobody pays', async () => {
    const reference = await expiredUnpaid(80);
    const atExpiry = verificationsOf(reference).length;
    await eventually(
      () => expect(verificationsOf(reference)).toHaveLength(atExpiry + LATE_CHECKS_MS.length),
      { timeout: 10_000 },
    );
    await sleep(1_000);
    expect(verificationsOf(reference)).toHaveLength(atExpiry + LATE_CHECKS_MS.length);
    expect(await creditsOf(lateChecking, reference)).toEqual([]);
  });
});

describe('late checks with two payment replicas sweeping', () => {
  let replica: NodeProcess | undefined;
  beforeAll(async () => {
    replica = await startNode({ services: 'payment', iso: lateChecking.iso, env: lateCheckingEnv });
  });
  afterAll(() => replica?.stop());

  it('asks the provider once a check: the replica that claims it asks', async () => {
    const reference = await opened(lateChecking, 90);
    // Each answer takes a while: both replicas' sweeps find each check due while one asks.
    fake.beforeVerify = () => sleep(250);
    try {
      // The expiry's question, asked by one replica's sweep or by both within a sweep.
      await eventually(() => expect(verificationsOf(reference).length).toBeGreaterThan(0), {
        timeout: 15_000,
      });
      await sleep((LATE_CHECKS_MS.at(-1) as number) + 1_500);
      // Each check claimed once and never taken over (`~<turn>`): one replica asked for each.
      const db = await openServiceDatabase(lateChecking.iso, 'payment');
      try {
        const claims = await db
          .collection<{ _id: string }>('checkout_late_claims')
          .find()
          .toArray();
        expect(
          claims
            .map((c) => c._id)
            .filter((id) => id.startsWith(`${reference}#`))
            .sort(),
        ).toEqual(LATE_CHECKS_MS.map((_, check) => `${reference}#${check}`));
      } finally {
        await db.close();
      }
      // Then one question a check, beside the expiry's: asked by one replica's sweep, or by
      // both (each may find it due before the other ends it), however late the second comes.
      const atExpiry = verificationsOf(reference).length - LATE_CHECKS_MS.length;
      expect(atExpiry).toBeGreaterThanOrEqual(1);
      expect(atExpiry).toBeLessThanOrEqual(2);
    } finally {
      fake.beforeVerify = undefined;
    }
  });
});
