import { randomUUID } from 'node:crypto';
import { call } from '../../libs/contracts';
import {
  fund,
  outcomeListener,
  pagePath,
  postForm,
  SERVICES_WITHOUT_ORDER,
  walletOf,
} from '../support/checkout';
import { eventually } from '../support/eventually';
import { useMerchantStack } from '../support/merchant-stack';

/** Checkouts that nobody answers expire (CHECKOUT_TTL_SECONDS, for tests), by the sweep. */

const listener = outcomeListener();
const stack = useMerchantStack({
  services: SERVICES_WITHOUT_ORDER,
  internal: ['payment'],
  own: [listener.schema],
  env: {
    PAYMENT_PROVIDER: 'sandbox',
    CHECKOUT_TTL_SECONDS: '1',
    PAYMENT_SWEEP_INTERVAL_MS: '100',
    PAYMENT_EVENT_RETRY_MS: '300',
  },
});

describe('checkout expiry', () => {
  it('expires an unanswered checkout, says so, and pays nothing afterwards', async () => {
    const before = await walletOf(stack.node.url, stack.alice.key);
    const opened = await fund(stack.node.url, stack.alice.key, 75);
    expect(opened.status).toBe(201);
    const { reference, authorization_url: url } = opened.body.data.data;
    await eventually(
      () => expect(listener.log.of(reference).map((e) => e.name)).toContain('payment.failed'),
      { timeout: 15_000 },
    );
    expect(listener.log.of(reference)[0].payload).toMatchObject({
      reference,
      reason: 'EXPIRED',
      purpose: { kind: 'WALLET_FUNDING', id: stack.alice.userId },
      amountKobo: 7500,
    });
    expect(await call(stack.client, 'payment.checkout', { reference })).toMatchObject({
      status: 'EXPIRED',
    });
    const path = pagePath(url);
    expect((await postForm(stack.node.url, `${path}/pay`)).status).toBe(303);
    const page = await (await fetch(`${stack.node.url}${path}`)).text();
    expect(page).toContain('data-status="EXPIRED"');
    expect(page).not.toContain('<form');
    expect(await walletOf(stack.node.url, stack.alice.key)).toEqual(before);
  });

  it('does not open or hand out a checkout again, for its key, once it has ended (409)', async () => {
    const start = (idempotencyKey: string) =>
      call(stack.client, 'payment.startCheckout', {
        userId: stack.alice.userId,
        amountKobo: 4_200,
        purpose: { kind: 'WALLET_FUNDING', id: stack.alice.userId },
        email: 'alice@example.com',
        merchantName: 'Alice',
        idempotencyKey,
      });
    const key = randomUUID();
    const opened = await start(key);
    expect(await start(key)).toEqual(opened);
    const { reference } = opened.data;
    await eventually(
      () => expect(listener.log.of(reference).map((e) => e.name)).toContain('payment.failed'),
      { timeout: 15_000 },
    );
    await expect(start(key)).rejects.toMatchObject({
      code: 409,
      message: `Checkout ${reference} of this Idempotency-Key has ended (expired); start a new one with a new key`,
    });
    const another = await start(randomUUID());
    expect(another.data.reference).not.toBe(reference);
  });

  it('expires a delivery’s checkout and sends payment.failed until acknowledged', async () => {
    const deliveryId = randomUUID();
    const start = await call(stack.client, 'payment.startCheckout', {
      userId: stack.bob.userId,
      amountKobo: 1000,
      purpose: { kind: 'DELIVERY', id: deliveryId },
      email: 'bob@example.com',
      merchantName: 'Bob',
      idempotencyKey: deliveryId,
    });
    const { reference } = start.data;
    await eventually(() => expect(listener.log.of(reference).length).toBeGreaterThanOrEqual(2), {
      timeout: 15_000,
    });
    expect(new Set(listener.log.of(reference).map((e) => e.name))).toEqual(
      new Set(['payment.failed']),
    );
    expect(await call(stack.client, 'payment.acknowledge', { reference })).toEqual({
      acknowledged: true,
    });
  });
});
