import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { call } from '../../libs/contracts';
import {
  fund,
  launchChromium,
  outcomeListener,
  pagePath,
  postForm,
  walletOf,
  SERVICES_WITHOUT_ORDER,
} from '../support/checkout';
import { eventually } from '../support/eventually';
import { adminHeaders, expectErrorEnvelope, request } from '../support/http';
import { useMerchantStack } from '../support/merchant-stack';

/** The sandbox provider (the staging default), its pages, its outcomes and wallet funding. */

const EVENT_RETRY_MS = 300;
const listener = outcomeListener();
const stack = useMerchantStack({
  services: SERVICES_WITHOUT_ORDER,
  internal: ['payment'],
  own: [listener.schema],
  env: {
    PAYMENT_PROVIDER: 'sandbox',
    PAYMENT_SWEEP_INTERVAL_MS: '100',
    PAYMENT_EVENT_RETRY_MS: String(EVENT_RETRY_MS),
  },
});

const get = (path: string) => fetch(`${stack.node.url}${path}`, { redirect: 'manual' });
const pageText = async (path: string) => (await get(path)).text();

/** A wallet-funding checkout of `amount` NGN for Alice: its reference and page path. */
async function aliceCheckout(amount = 2500.5) {
  const opened = await fund(stack.node.url, stack.alice.key, amount);
  expect(opened.status).toBe(201);
  const { reference, authorization_url: url } = opened.body.data.data;
  return { reference: reference as string, path: pagePath(url), url: url as string };
}

/** A delivery's checkout, opened as the order service will: through the contract. */
async function deliveryCheckout(amountKobo = 150_000) {
  const deliveryId = randomUUID();
  const start = await call(stack.client, 'payment.startCheckout', {
    userId: stack.bob.userId,
    amountKobo,
    purpose: { kind: 'DELIVERY', id: deliveryId },
    email: 'bob@example.com',
    merchantName: 'Bob’s Shop',
    idempotencyKey: deliveryId,
  });
  return {
    deliveryId,
    reference: start.data.reference,
    path: pagePath(start.data.authorization_url),
  };
}

describe('POST /api/wallet/fund (sandbox)', () => {
  it('answers the external checkout payload with our own page as authorization_url', async () => {
    const opened = await fund(stack.node.url, stack.alice.key, 2500.5);
    expect(opened.status).toBe(201);
    expect(opened.body).toEqual({
      success: true,
      message: 'Checkout created',
      data: {
        status: true,
        message: 'Authorization URL created',
        data: {
          authorization_url: expect.any(String),
          access_code: expect.any(String),
          reference: expect.stringMatching(/^ck-[0-9a-f]{40}$/),
        },
      },
    });
    const { reference, authorization_url: url } = opened.body.data.data;
    const port = new URL(stack.node.url).port;
    expect(url).toBe(`http://localhost:${port}/checkout/${reference}`);
  });

  it('answers the same checkout for the same Idempotency-Key, another for another', async () => {
    const key = randomUUID();
    const first = await fund(stack.node.url, stack.alice.key, 10, key);
    const again = await fund(stack.node.url, stack.alice.key, 10, key);
    const other = await fund(stack.node.url, stack.alice.key, 10);
    expect(again.status).toBe(201);
    expect(again.body.data.data.reference).toBe(first.body.data.data.reference);
    expect(other.body.data.data.reference).not.toBe(first.body.data.data.reference);
  });

  it.each([
    ['zero', 0],
    ['more than 10,000,000', 10_000_000.01],
    ['three decimals', 12.345],
    ['a string', '12'],
  ])('refuses an amount of %s (400)', async (_what, amount) => {
    const reply = await fund(stack.node.url, stack.alice.key, amount as number);
    expectErrorEnvelope(reply, 400);
    expect(reply.body.errors[0].field).toBe('amount');
  });

  it('still refuses a form-encoded body on /api (only the checkout pages take forms)', async () => {
    const reply = await request(stack.node.url, 'POST', '/api/wallet/fund', {
      headers: { 'api-key': stack.alice.key, 'content-type': 'application/x-www-form-urlencoded' },
      raw: 'amount=10',
    });
    expectErrorEnvelope(
      reply,
      415,
      'The body was not read: send it as JSON, with the header Content-Type: application/json',
    );
  });
});

describe('the sandbox checkout page', () => {
  it('shows the amount and the merchant, with Pay and Decline forms and strict headers', async () => {
    const { reference, path } = await aliceCheckout(2500.5);
    const res = await get(path);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toBe(
      "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    );
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-robots-tag')).toBe('noindex, nofollow, noarchive');
    const html = await res.text();
    expect(html).toContain('NGN 2500.50');
    expect(html).toContain('Test Merchant');
    expect(html).toContain(`action="/checkout/${reference}/pay"`);
    expect(html).toContain(`action="/checkout/${reference}/decline"`);
    expect(html).not.toContain('<script');
  });

  it('pays once: 303 to the page, which shows PAID; the wallet is credited exactly once', async () => {
    const before = await walletOf(stack.node.url, stack.alice.key);
    const { reference, path } = await aliceCheckout(1234.56);
    const paid = await postForm(stack.node.url, `${path}/pay`);
    expect(paid.status).toBe(303);
    expect(paid.headers.get('location')).toBe(path);
    expect(await pageText(path)).toContain('data-status="PAID"');
    const again = await postForm(stack.node.url, `${path}/pay`);
    expect(again.status).toBe(303);
    const declined = await postForm(stack.node.url, `${path}/decline`);
    expect(declined.status).toBe(303);
    expect(await pageText(path)).toContain('data-status="PAID"');

    const after = await eventually(async () => {
      const now = await walletOf(stack.node.url, stack.alice.key);
      expect(now.entries.length).toBe(before.entries.length + 1);
      return now;
    });
    expect(Number(after.balance) - Number(before.balance)).toBeCloseTo(1234.56, 2);
    expect(after.entries[0]).toMatchObject({
      type: 'CREDIT',
      amount: '1234.56',
      reference: `checkout:${reference}`,
    });
    // Several sweeps later, still one credit.
    await sleep(4 * EVENT_RETRY_MS);
    expect((await walletOf(stack.node.url, stack.alice.key)).entries.length).toBe(
      before.entries.length + 1,
    );
    const view = await call(stack.client, 'payment.checkout', { reference });
    expect(view).toMatchObject({ reference, status: 'PAID', amountKobo: 123456 });
  });

  it('declines: the page shows DECLINED, paying afterwards changes nothing, nothing is credited', async () => {
    const before = await walletOf(stack.node.url, stack.alice.key);
    const { reference, path } = await aliceCheckout(99);
    expect((await postForm(stack.node.url, `${path}/decline`)).status).toBe(303);
    expect((await postForm(stack.node.url, `${path}/pay`)).status).toBe(303);
    expect(await pageText(path)).toContain('data-status="DECLINED"');
    await eventually(() => expect(listener.log.of(reference).length).toBeGreaterThan(0));
    expect(listener.log.of(reference)[0]).toMatchObject({
      name: 'payment.failed',
      payload: { reference, reason: 'DECLINED', amountKobo: 9900, userId: stack.alice.userId },
    });
    expect(await walletOf(stack.node.url, stack.alice.key)).toEqual(before);
  });

  it('escapes the merchant’s name', async () => {
    const name = '<script>alert("x")</script> & <b>Co</b>';
    const created = await request(stack.node.url, 'POST', '/admin/users', {
      headers: adminHeaders,
      json: { name, email: `esc-${randomUUID()}@example.com`, phone: '+2348012345678' },
    });
    expect(created.status).toBe(201);
    const start = await call(stack.client, 'payment.startCheckout', {
      userId: created.body.data.id,
      amountKobo: 100,
      purpose: { kind: 'WALLET_FUNDING', id: created.body.data.id },
      email: 'esc@example.com',
      merchantName: name,
      idempotencyKey: randomUUID(),
    });
    const html = await pageText(pagePath(start.data.authorization_url));
    expect(html).not.toContain('<script>');
    expect(html).not.toContain('<b>Co');
    expect(html).toContain(
      '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;b&gt;Co&lt;/b&gt;',
    );
    // A link tapped in an app carries parameters of its own: the page opens all the same.
    // A provider's redirect back adds `reference=`, the path's own name: the path's stands.
    const tapped = await pageText(
      `${pagePath(start.data.authorization_url)}?fbclid=IwAR0x&reference=ck-${'0'.repeat(40)}`,
    );
    expect(tapped).toContain('&lt;b&gt;Co&lt;/b&gt;');
  });

  it.each([
    ['an unknown reference', `/checkout/ck-${'0'.repeat(40)}`],
    ['a malformed one', '/checkout/%3Cscript%3E'],
    ['one far too long', `/checkout/ck-${'3'.repeat(400)}`],
    ['a post for an unknown one', `/checkout/ck-${'1'.repeat(40)}/pay`],
  ])('answers %s with a 404 page', async (_what, path) => {
    const res = path.endsWith('/pay')
      ? await postForm(stack.node.url, path)
      : await get(path).then(async (r) => ({
          status: r.status,
          headers: r.headers,
          text: await r.text(),
        }));
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.text).toContain('No such checkout');
    expect(res.text).not.toContain('<script>');
  });

  it('answers a wrong method with 405 and Allow', async () => {
    const res = await get(`/checkout/ck-${'2'.repeat(40)}/pay`);
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
  });
});

describe('payment outcomes', () => {
  it('sends payment.succeeded again until the consumer acknowledges it', async () => {
    const { deliveryId, reference, path } = await deliveryCheckout(150_000);
    expect((await postForm(stack.node.url, `${path}/pay`)).status).toBe(303);
    await eventually(() => expect(listener.log.of(reference).length).toBeGreaterThanOrEqual(3), {
      timeout: 20_000,
    });
    for (const copy of listener.log.of(reference)) {
      expect(copy).toEqual({
        name: 'payment.succeeded',
        payload: {
          reference,
          purpose: { kind: 'DELIVERY', id: deliveryId },
          userId: stack.bob.userId,
          amountKobo: 150_000,
          decidedAt: expect.any(String),
        },
      });
    }
    expect(await call(stack.client, 'payment.acknowledge', { reference })).toEqual({
      acknowledged: true,
    });
    const sent = listener.log.of(reference).length;
    await sleep(5 * EVENT_RETRY_MS);
    // A sweep that read the outbox before the acknowledgement may still send one copy.
    expect(listener.log.of(reference).length).toBeLessThanOrEqual(sent + 1);
    const settled = listener.log.of(reference).length;
    await sleep(3 * EVENT_RETRY_MS);
    expect(listener.log.of(reference).length).toBe(settled);
    expect(await call(stack.client, 'payment.acknowledge', { reference })).toEqual({
      acknowledged: false,
    });
  });

  it('decides concurrent pays and declines exactly once', async () => {
    const { reference, path } = await deliveryCheckout(5_000);
    const posts = Array.from({ length: 20 }, (_, i) =>
      postForm(stack.node.url, `${path}/${i % 2 === 0 ? 'pay' : 'decline'}`),
    );
    const answers = await Promise.all(posts);
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(303));
    const view = await call(stack.client, 'payment.checkout', { reference });
    expect(['PAID', 'DECLINED']).toContain(view?.status);
    await eventually(() => expect(listener.log.of(reference).length).toBeGreaterThan(0));
    const expected = view?.status === 'PAID' ? 'payment.succeeded' : 'payment.failed';
    expect(new Set(listener.log.of(reference).map((e) => e.name))).toEqual(new Set([expected]));
    expect(await pageText(path)).toContain(`data-status="${view?.status}"`);
    await call(stack.client, 'payment.acknowledge', { reference });
  });

  it('answers null for a checkout it does not know', async () => {
    expect(await call(stack.client, 'payment.checkout', { reference: 'ck-none' })).toBeNull();
  });
});

describe('the sandbox page in headless Chromium', () => {
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  /** The page as the payer opens it: the authorization_url, on the test's gateway. */
  const open = async (url: string) => {
    const page = await browser.context.newPage();
    const target = new URL(new URL(url).pathname, stack.node.url).toString();
    const res = await page.goto(target);
    expect(res?.status()).toBe(200);
    return page;
  };

  it('shows the amount and the merchant, and Pay leads to the paid page', async () => {
    const before = await walletOf(stack.node.url, stack.alice.key);
    const { url, reference } = await aliceCheckout(750.25);
    const page = await open(url);
    const text = await page.locator('body').innerText();
    expect(text).toContain('NGN 750.25');
    expect(text).toContain('Test Merchant');
    await Promise.all([
      page.waitForURL(/\/checkout\/ck-[0-9a-f]+$/),
      page.click('button[name=pay]'),
    ]);
    expect(await page.locator('.status').innerText()).toContain('Payment received');
    expect(await page.locator('[data-status]').getAttribute('data-status')).toBe('PAID');
    await eventually(async () =>
      expect((await walletOf(stack.node.url, stack.alice.key)).entries.length).toBe(
        before.entries.length + 1,
      ),
    );
    expect((await walletOf(stack.node.url, stack.alice.key)).entries[0]).toMatchObject({
      reference: `checkout:${reference}`,
      amount: '750.25',
    });
    await page.close();
  });

  it('Decline leads to the declined page', async () => {
    const { url } = await aliceCheckout(10);
    const page = await open(url);
    await Promise.all([
      page.waitForURL(/\/checkout\/ck-[0-9a-f]+$/),
      page.click('button[name=decline]'),
    ]);
    expect(await page.locator('[data-status]').getAttribute('data-status')).toBe('DECLINED');
    expect(await page.locator('button').count()).toBe(0);
    await page.close();
  });
});
