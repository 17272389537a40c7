import {
  paystackProvider,
  PROVIDER_MAX_ANSWER_BYTES,
} from '../../../services/payment/checkout-providers';
import {
  declaredTooLarge,
  ENDLESS_BYTES,
  redirectTo,
  startFakeServer,
  streamedTooLarge,
  type FakeServer,
} from '../../support/fake-server';

/** The Paystack client against a provider that misbehaves: each failure its status, never a 500. */
let provider: FakeServer;
/** Where the provider's redirects point: nothing may reach it. */
let elsewhere: FakeServer;

beforeAll(async () => {
  provider = await startFakeServer();
  elsewhere = await startFakeServer();
});
afterAll(async () => {
  await provider.close();
  await elsewhere.close();
});
beforeEach(() => {
  provider.paths.length = 0;
});

const paystack = () =>
  paystackProvider({ baseUrl: provider.url, secretKey: 'sk_test', timeoutMs: 5000 });

const request = {
  reference: 'ck-1',
  providerReference: 'ck-1-1',
  amountKobo: 50_000,
  currency: 'NGN',
  email: 'ada@example.com',
  purpose: { kind: 'WALLET_FUNDING' as const, id: 'u-1' },
};

const initialized = JSON.stringify({
  status: true,
  message: 'Authorization URL created',
  data: { authorization_url: 'https://pay.example/abc', access_code: 'abc', reference: 'ck-1-1' },
});

describe('paystackProvider answers', () => {
  it('reads a normal answer', async () => {
    provider.handle((_req, res) => res.end(initialized));
    await expect(paystack().initialize(request)).resolves.toEqual({
      authorizationUrl: 'https://pay.example/abc',
      accessCode: 'abc',
    });
  });

  it('reads an answer of exactly the limit', async () => {
    const padded = initialized.replace(/}$/, '') + ',"pad":""}';
    const pad = PROVIDER_MAX_ANSWER_BYTES - Buffer.byteLength(padded);
    provider.handle((_req, res) =>
      res.end(padded.replace('"pad":""', `"pad":"${'x'.repeat(pad)}"`)),
    );
    await expect(paystack().initialize(request)).resolves.toMatchObject({ accessCode: 'abc' });
  });

  it('refuses an answer declaring a length over the limit with a 502, without reading it', async () => {
    provider.handle(declaredTooLarge);
    await expect(paystack().verify('ck-1-1')).rejects.toMatchObject({
      code: 502,
      type: 'UPSTREAM_FAILED',
      message: `The payment provider answered HTTP 200: answer over the ${PROVIDER_MAX_ANSWER_BYTES}-byte limit (Content-Length ${ENDLESS_BYTES}); retry later, and tell us if it lasts`,
    });
  });

  it('stops reading an answer without a length once it passes the limit, with a 502', async () => {
    const { handler, result } = streamedTooLarge();
    provider.handle(handler);
    await expect(paystack().initialize(request)).rejects.toMatchObject({
      code: 502,
      message: `The payment provider answered HTTP 200: answer over the ${PROVIDER_MAX_ANSWER_BYTES}-byte limit; retry later, and tell us if it lasts`,
    });
    const { sent, finished } = await result;
    expect(finished).toBe(false);
    expect(sent).toBeLessThan(ENDLESS_BYTES);
  });

  it.each([301, 302, 303, 307, 308])(
    'does not follow a %p to another server: a 502 naming where it pointed',
    async (status) => {
      elsewhere.paths.length = 0;
      provider.handle(redirectTo(status, elsewhere.url));
      await expect(paystack().initialize(request)).rejects.toMatchObject({
        code: 502,
        message: `The payment provider answered HTTP ${status}: redirect not followed (to ${elsewhere.url}/transaction/initialize); retry later, and tell us if it lasts`,
      });
      expect(provider.paths).toEqual(['/transaction/initialize']);
      expect(elsewhere.paths).toEqual([]);
    },
  );
});
