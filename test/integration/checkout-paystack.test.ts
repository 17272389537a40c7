import { randomUUID } from 'node:crypto';
import { call } from '../../libs/contracts';
import {
  FakePaystack,
  fund,
  outcomeListener,
  walletFundingParams,
  walletOf,
} from '../support/checkout';
import { eventually } from '../support/eventually';
import { expectErrorEnvelope, request } from '../support/http';
import { useMerchantStack } from '../support/merchant-stack';

/** The Paystack-compatible provider, against a fake one the test runs. */

const SECRET = 'sk_test_waybill_fake_0123456789';
const fake = new FakePaystack(SECRET);
const env: Record<string, string> = {
  PAYMENT_PROVIDER: 'paystack',
  PAYSTACK_SECRET_KEY: SECRET,
  PAYSTACK_TIMEOUT_MS: '1000',
  PAYMENT_SWEEP_INTERVAL_MS: '200',
};
beforeAll(async () => {
  await fake.start();
  env.PAYSTACK_BASE_URL = fake.url;
});
const listener = outcomeListener();
const stack = useMerchantStack({ internal: ['payment'], own: [listener.schema], env });
afterAll(() => fake.stop());

beforeEach(() => {
  Object.assign(fake.fail, { initialize: 0, verify: 0, mode: 'error', lateMs: 0 });
});

const webhook = (body: string, headers: Record<string, string> = {}) =>
  request(stack.node.url, 'POST', '/webhooks/paystack', {
    headers: { 'content-type': 'application/json', ...headers },
    raw: body,
  });

const chargeSuccess = (reference: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    event: 'charge.success',
    data: { reference, status: 'success', amount: 1, currency: 'NGN', ...extra },
  });

const signed = (body: string) => fake.sendWebhook(stack.node.url, body);

/** A funding checkout of Alice's, opened at the fake provider. */
async function opened(amount: number) {
  const reply = await fund(stack.node.url, stack.alice.key, amount);
  expect(reply.status).toBe(201);
  return reply.body.data.data.reference as string;
}

const statusOf = async (reference: string) =>
  (await call(stack.client, 'payment.checkout', { reference }))?.status;

describe('Paystack-compatible initialize', () => {
  /** A delivery checkout of Bob's through the contract, keyed as the order service keys it. */
  const deliveryCheckout = (amountKobo: number) => {
    const deliveryId = randomUUID();
    return {
      userId: stack.bob.userId,
      amountKobo,
      purpose: { kind: 'DELIVERY' as const, id: deliveryId },
      email: 'bob@example.com',
      merchantName: 'Bob',
      idempotencyKey: `${deliveryId}:creator`,
    };
  };

  it('opens the transaction with the secret key, in kobo, and answers the provider’s payload', async () => {
    const reply = await fund(stack.node.url, stack.alice.key, 2500.5);
    expect(reply.status).toBe(201);
    const { reference } = reply.body.data.data;
    expect(reply.body.data).toEqual({
      status: true,
      message: 'Authorization URL created',
      data: {
        authorization_url: `https://checkout.paystack.test/${reference}`,
        access_code: `ac_${reference.slice(-8)}`,
        reference,
      },
    });
    const init = fake.calls.find(
      (c) =>
        c.path === '/transaction/initialize' &&
        (c.body as { reference?: string }).reference === reference,
    );
    expect(init).toEqual({
      method: 'POST',
      path: '/transaction/initialize',
      authorization: `Bearer ${SECRET}`,
      body: {
        email: expect.stringMatching(/@example\.com$/),
        amount: 250050,
        reference,
        currency: 'NGN',
        metadata: { purpose: { kind: 'WALLET_FUNDING', id: stack.alice.userId } },
      },
    });
  });

  it.each([
    ['an error', 'error', 503],
    ['no answer in time', 'hang', 504],
    ['a refusal', 'refuse', 502],
  ] as const)(
    'answers the provider’s %s (%s) with %d; a retry with the same key opens the checkout under a reference of its own',
    async (_what, mode, status) => {
      Object.assign(fake.fail, { initialize: 1, mode });
      const failed = await fund(stack.node.url, stack.alice.key, 10);
      expectErrorEnvelope(failed, status, /payment provider/);
      // The same through the contract, as the order service calls it, with its key.
      Object.assign(fake.fail, { initialize: 1, mode });
      const params = deliveryCheckout(1000);
      await expect(call(stack.client, 'payment.startCheckout', params)).rejects.toMatchObject({
        code: status,
      });
      const retried = await call(stack.client, 'payment.startCheckout', params);
      // Whether the failed call opened a transaction is unknown: its reference is not reused.
      expect(retried.data.authorization_url).toBe(
        `https://checkout.paystack.test/${retried.data.reference}.1`,
      );
      const again = await call(stack.client, 'payment.startCheckout', params);
      expect(again).toEqual(retried);
    },
  );

  it.each(
    [
      'javascript:alert(1)',
      'http://checkout.paystack.test/x',
      'not a link',
      // What the schemas' https URL refuses as well (isHttpsUrl).
      'https://user:secret@checkout.paystack.test/x',
      'https://10.0.0.1/x',
      'https://[::1]/x',
      'https://CHECKOUT.paystack.test/x',
      `https://checkout.paystack.test/${'x'.repeat(2048)}`,
    ].map((link) => [link.length > 80 ? `${link.length} characters` : link, link]),
  )('answers 502 rather than hand out a payment link that is not https (%s)', async (_, link) => {
    fake.paymentLink = () => link;
    try {
      const failed = await fund(stack.node.url, stack.alice.key, 10);
      expectErrorEnvelope(failed, 502, /payment link that is not https/);
    } finally {
      fake.paymentLink = (reference) => `https://checkout.paystack.test/${reference}`;
    }
    expect((await fund(stack.node.url, stack.alice.key, 10)).status).toBe(201);
  });

  it('opens, after an answer that came too late, a transaction the payer can pay, credited once', async () => {
    // The provider opens the transaction but answers after PAYSTACK_TIMEOUT_MS: it will
    // refuse that reference ever after ("Duplicate Transaction Reference").
    Object.assign(fake.fail, { initialize: 1, mode: 'late', lateMs: 1500 });
    const params = walletFundingParams(stack.alice.userId, 7000);
    await expect(call(stack.client, 'payment.startCheckout', params)).rejects.toMatchObject({
      code: 504,
    });
    const retried = await call(stack.client, 'payment.startCheckout', params);
    const { reference } = retried.data;
    expect(fake.transactions.has(reference)).toBe(true); // the late one, never handed out
    expect(retried.data.authorization_url).toBe(`https://checkout.paystack.test/${reference}.1`);

    const before = await walletOf(stack.node.url, stack.alice.key);
    (fake.transactions.get(`${reference}.1`) as { status: string }).status = 'success';
    const paid = await signed(chargeSuccess(`${reference}.1`));
    expect(paid.body.data).toEqual({ handled: true });
    expect(await statusOf(reference)).toBe('PAID');
    expect(fake.calls.map((c) => c.path)).toContain(`/transaction/verify/${reference}.1`);
    expect((await signed(chargeSuccess(`${reference}.1`))).body.data).toEqual({ handled: false });
    const after = await eventually(async () => {
      const now = await walletOf(stack.node.url, stack.alice.key);
      expect(now.entries.length).toBe(before.entries.length + 1);
      return now;
    });
    expect(after.entries[0]).toMatchObject({ reference: `checkout:${reference}`, amount: '70.00' });
  });

  it('opens one transaction for concurrent starts with one key: the others wait (503, Retry-After) and then get it', async () => {
    Object.assign(fake.fail, { initialize: 1, mode: 'late', lateMs: 300 });
    const params = deliveryCheckout(4200);
    const settled = await Promise.allSettled(
      Array.from({ length: 8 }, () => call(stack.client, 'payment.startCheckout', params)),
    );
    const answered = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const refused = settled.flatMap((s) => (s.status === 'rejected' ? [s.reason] : []));
    expect(answered.length).toBeGreaterThanOrEqual(1);
    for (const err of refused) {
      expect(err).toMatchObject({ code: 503, data: { retryAfter: expect.any(Number) } });
      expect(String(err.message)).toMatch(/being opened by another request/);
    }
    const reference = answered[0].data.reference;
    for (const answer of answered) expect(answer).toEqual(answered[0]);
    const again = await call(stack.client, 'payment.startCheckout', params);
    expect(again).toEqual(answered[0]);
    const initializations = fake.calls.filter(
      (c) =>
        c.path === '/transaction/initialize' &&
        (c.body as { reference: string }).reference.startsWith(reference),
    );
    expect(initializations).toHaveLength(1);
  });
});

describe('POST /webhooks/paystack', () => {
  it('pays the checkout on a signed, verified charge.success, once however often it comes', async () => {
    const before = await walletOf(stack.node.url, stack.alice.key);
    const reference = await opened(300);
    (fake.transactions.get(reference) as { status: string }).status = 'success';
    const body = chargeSuccess(reference);
    const first = await signed(body);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      success: true,
      message: 'Event received',
      data: { handled: true },
    });
    expect(await statusOf(reference)).toBe('PAID');
    const verifies = fake.calls.filter((c) => c.path === `/transaction/verify/${reference}`);
    expect(verifies).toHaveLength(1);
    expect(verifies[0].authorization).toBe(`Bearer ${SECRET}`);

    const replayed = await Promise.all([signed(body), signed(body), signed(body)]);
    for (const reply of replayed) expect(reply.body.data).toEqual({ handled: false });
    const after = await eventually(async () => {
      const now = await walletOf(stack.node.url, stack.alice.key);
      expect(now.entries.length).toBe(before.entries.length + 1);
      return now;
    });
    expect(after.entries[0]).toMatchObject({
      reference: `checkout:${reference}`,
      amount: '300.00',
    });
  });

  it.each([
    ['unsigned', () => ({})],
    ['with an empty signature', () => ({ 'x-paystack-signature': '' })],
    [
      'forged (same length, other key)',
      (body: string) => ({ 'x-paystack-signature': new FakePaystack('sk_other').sign(body) }),
    ],
    ['of the wrong length', () => ({ 'x-paystack-signature': 'abcd' })],
    ['not hex', () => ({ 'x-paystack-signature': 'z'.repeat(128) })],
  ])('refuses a webhook %s with 401 and changes nothing', async (_what, headers) => {
    const reference = await opened(20);
    (fake.transactions.get(reference) as { status: string }).status = 'success';
    const body = chargeSuccess(reference);
    const reply = await webhook(body, headers(body));
    expectErrorEnvelope(reply, 401, /x-paystack-signature/);
    expect(await statusOf(reference)).toBe('PENDING');
  });

  it('answers 5xx while the provider cannot verify, so that it retries; the retry pays', async () => {
    const reference = await opened(40);
    (fake.transactions.get(reference) as { status: string }).status = 'success';
    fake.fail.verify = 1;
    const body = chargeSuccess(reference);
    const failed = await signed(body);
    expectErrorEnvelope(failed, 503, /payment provider/);
    expect(await statusOf(reference)).toBe('PENDING');
    const retried = await signed(body);
    expect(retried.status).toBe(200);
    expect(retried.body.data).toEqual({ handled: true });
    expect(await statusOf(reference)).toBe('PAID');
  });

  it('refuses a charge the provider reports for another amount, or not successful', async () => {
    const reference = await opened(50);
    const transaction = fake.transactions.get(reference) as { status: string; amount: number };
    transaction.status = 'success';
    transaction.amount = 100; // one naira instead of fifty
    const reply = await signed(chargeSuccess(reference));
    expect(reply.status).toBe(200);
    expect(reply.body.data).toEqual({ handled: false });
    expect(await statusOf(reference)).toBe('PENDING');
    transaction.amount = 5000;
    transaction.status = 'failed';
    expect((await signed(chargeSuccess(reference))).body.data).toEqual({ handled: false });
    expect(await statusOf(reference)).toBe('PENDING');
  });

  it('acknowledges events of other kinds, and references that are not ours, doing nothing', async () => {
    const other = JSON.stringify({ event: 'transfer.success', data: { reference: 'x' } });
    expect((await signed(other)).body.data).toEqual({ handled: false });
    const unknown = await signed(chargeSuccess(`ck-${'3'.repeat(40)}`));
    expect(unknown.status).toBe(200);
    expect(unknown.body.data).toEqual({ handled: false });
  });

  it('refuses a body over 64 KB with 413', async () => {
    const body = JSON.stringify({ event: 'charge.success', pad: 'x'.repeat(70_000) });
    const reply = await signed(body);
    expectErrorEnvelope(reply, 413);
  });

  it('refuses a signed body that is not JSON with 400', async () => {
    expectErrorEnvelope(await signed('not json'), 400);
  });

  it('refuses a browser’s preflight, never running the webhook for it', async () => {
    const reply = await request(stack.node.url, 'OPTIONS', '/webhooks/paystack', {
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expectErrorEnvelope(reply, 403, /Browsers may not call \/webhooks/);
  });
});

describe('with the Paystack provider', () => {
  it('has no sandbox pages', async () => {
    const reply = await request(stack.node.url, 'GET', `/checkout/ck-${'4'.repeat(40)}`);
    expectErrorEnvelope(reply, 404);
  });

  it('documents the webhook and no page in /openapi.json', async () => {
    const doc = (await request(stack.node.url, 'GET', '/openapi.json')).body;
    expect(doc.paths['/webhooks/paystack'].post).toMatchObject({
      operationId: 'payment.paystackWebhook',
      security: [],
      parameters: [{ name: 'x-paystack-signature', in: 'header', required: true }],
    });
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/checkout'))).toEqual([]);
    expect(doc.paths['/api/wallet/fund'].post.responses).toHaveProperty('502');
  });
});
