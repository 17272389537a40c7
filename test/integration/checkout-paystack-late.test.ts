import { call } from '../../libs/contracts';
import { FakePaystack, fund, outcomeListener, walletOf } from '../support/checkout';
import { eventually } from '../support/eventually';
import { request } from '../support/http';
import { useMerchantStack } from '../support/merchant-stack';

/**
 * Paystack-compatible checkouts whose payment the provider confirms only after the checkout's
 * time (CHECKOUT_TTL_SECONDS, for tests): the payer's money was taken, so the checkout is paid
 * and credited once, whether the sweep or a late webhook reports it.
 */

const SECRET = 'sk_test_waybill_fake_late_0123456789';
const fake = new FakePaystack(SECRET);
const env: Record<string, string> = {
  PAYMENT_PROVIDER: 'paystack',
  PAYSTACK_SECRET_KEY: SECRET,
  PAYSTACK_TIMEOUT_MS: '1000',
  CHECKOUT_TTL_SECONDS: '1',
  PAYMENT_SWEEP_INTERVAL_MS: '100',
};
beforeAll(async () => {
  await fake.start();
  env.PAYSTACK_BASE_URL = fake.url;
});
const listener = outcomeListener();
const stack = useMerchantStack({ internal: ['payment'], own: [listener.schema], env });
afterAll(() => fake.stop());

const statusOf = async (reference: string) =>
  (await call(stack.client, 'payment.checkout', { reference }))?.status;

/** A funding checkout of Alice's, opened at the fake provider (not paid there yet). */
async function opened(amount: number) {
  const reply = await fund(stack.node.url, stack.alice.key, amount);
  expect(reply.status).toBe(201);
  return reply.body.data.data.reference as string;
}

const paidAtProvider = (reference: string) => {
  (fake.transactions.get(reference) as { status: string }).status = 'success';
};

/** Alice's wallet entries of a checkout's credit. */
const creditsOf = async (reference: string) =>
  (await walletOf(stack.node.url, stack.alice.key)).entries.filter(
    (e) => (e as { reference: string }).reference === `checkout:${reference}`,
  );

function signedChargeSuccess(reference: string) {
  const body = JSON.stringify({
    event: 'charge.success',
    data: { reference, status: 'success', amount: 1, currency: 'NGN' },
  });
  return request(stack.node.url, 'POST', '/webhooks/paystack', {
    headers: { 'content-type': 'application/json', 'x-paystack-signature': fake.sign(body) },
    raw: body,
  });
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a Paystack payment confirmed after the checkout’s time', () => {
  it('is found by the sweep, paid and credited once', async () => {
    const reference = await opened(120);
    paidAtProvider(reference);
    await eventually(async () => expect(await statusOf(reference)).toBe('PAID'), {
      timeout: 15_000,
    });
    await eventually(() =>
      expect(listener.log.of(reference).map((e) => e.name)).toContain('payment.succeeded'),
    );
    await eventually(async () => expect(await creditsOf(reference)).toHaveLength(1));
    // Sweeps go on every 100 ms: none credits it again.
    await pause(500);
    const credits = await creditsOf(reference);
    expect(credits).toHaveLength(1);
    expect(credits[0]).toMatchObject({ amount: '120.00' });
  });

  it('is paid by a webhook that comes late, once, however the sweep races it', async () => {
    const reference = await opened(80);
    paidAtProvider(reference);
    await pause(1_100);
    const replies = await Promise.all([1, 2, 3].map(() => signedChargeSuccess(reference)));
    for (const reply of replies) expect(reply.status).toBe(200);
    // The sweep may have reported it first: then no webhook handled it.
    expect(replies.filter((r) => r.body.data.handled === true).length).toBeLessThanOrEqual(1);
    expect(await statusOf(reference)).toBe('PAID');
    await eventually(async () => expect(await creditsOf(reference)).toHaveLength(1));
    await pause(500);
    expect(await creditsOf(reference)).toHaveLength(1);
  });

  it('stays EXPIRED when the sweep expired it before the payment: nothing is credited', async () => {
    const reference = await opened(60);
    // Decided by the sweep (a checkout reads EXPIRED past its time before that).
    await eventually(
      () => expect(listener.log.of(reference).map((e) => e.name)).toContain('payment.failed'),
      { timeout: 15_000 },
    );
    paidAtProvider(reference);
    const reply = await signedChargeSuccess(reference);
    expect(reply.status).toBe(200);
    expect(reply.body.data).toEqual({ handled: false });
    expect(await statusOf(reference)).toBe('EXPIRED');
    await pause(500);
    expect(await creditsOf(reference)).toHaveLength(0);
  });
});
