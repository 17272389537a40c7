import {
  paystackProvider,
  PROVIDER_MAX_ANSWER_BYTES,
} from '../../../services/payment/checkout-providers';
import {
  declaredTooLarge,
  ENDLESS_BYTES,
  redirectTo,
  streamedTooLarge,
  useFakeServers,
} from '../../support/fake-server';

/** The Paystack client against a provider that misbehaves: each failure its status, never a 500. */
const servers = useFakeServers();
const paystack = () =>
  paystackProvider({ baseUrl: servers.server.url, secretKey: 'sk_test', timeoutMs: 5000 });

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
  it('refuses a verification answered about another transaction, whatever it says of it', async () => {
    const verified = (reference: string) =>
      JSON.stringify({
        status: true,
        message: 'Verification successful',
        data: { reference, status: 'success', amount: 50_000, currency: 'NGN' },
      });
    servers.server.handle((_req, res) => res.end(verified('ck-1-1')));
    await expect(paystack().verify('ck-1-1')).resolves.toEqual({
      status: 'success',
      amountKobo: 50_000,
      currency: 'NGN',
    });
    servers.server.handle((_req, res) => res.end(verified('ck-2-1')));
    await expect(paystack().verify('ck-1-1')).rejects.toMatchObject({
      code: 502,
      message: 'The payment provider answered the verification of ck-1-1 about another transaction',
    });
  });

  it('reads a verified amount Paystack writes as a string, and refuses one that is no whole number', async () => {
    const verified = (amount: unknown) =>
      JSON.stringify({
        status: true,
        data: { reference: 'ck-1-1', status: 'success', amount, currency: 'NGN' },
      });
    servers.server.handle((_req, res) => res.end(verified('50000')));
    await expect(paystack().verify('ck-1-1')).resolves.toEqual({
      status: 'success',
      amountKobo: 50_000,
      currency: 'NGN',
    });
    for (const amount of ['500.5', 'fifty', null]) {
      servers.server.handle((_req, res) => res.end(verified(amount)));
      await expect(paystack().verify('ck-1-1')).rejects.toMatchObject({ code: 502 });
    }
  });

  it('reads a refund queued, refused for a reason of the refund, and throws for anything else', async () => {
    const refund = {
      providerReference: 'ck-1-1',
      amountKobo: 50_000,
      currency: 'NGN',
      note: 'Refund of a payment for delivery d-1',
    };
    const answer = (status: number, body: unknown) =>
      servers.server.handle((_req, res) => {
        res.statusCode = status;
        res.end(JSON.stringify(body));
      });
    const queued = (data: unknown) => ({
      status: true,
      message: 'Refund has been queued for processing',
      data,
    });
    answer(200, queued({ id: 3_344_556, status: 'pending' }));
    await expect(paystack().refund(refund)).resolves.toEqual({ queued: true, id: '3344556' });
    answer(200, queued({}));
    await expect(paystack().refund(refund)).resolves.toEqual({ queued: true, id: null });
    answer(400, { status: false, message: 'Transaction has been fully reversed' });
    await expect(paystack().refund(refund)).resolves.toEqual({
      refused: 'Transaction has been fully reversed',
    });
    // Our key refused says nothing of the refund: asked again later, never listed refused.
    for (const status of [401, 403, 408, 409, 429]) {
      answer(status, { status: false, message: 'Invalid key, or too many requests' });
      await expect(paystack().refund(refund)).rejects.toMatchObject({ code: 502 });
    }
    answer(200, { status: false, message: 'odd' });
    await expect(paystack().refund(refund)).rejects.toMatchObject({ code: 502 });
    answer(503, { status: false, message: 'down' });
    await expect(paystack().refund(refund)).rejects.toMatchObject({ code: 503 });
  });

  it('finds the refund of a whole transaction that stands, passing over the others', async () => {
    const answers: Record<string, unknown> = {
      '/transaction/verify/ck-1-1': {
        status: true,
        data: { id: 77, reference: 'ck-1-1', status: 'success', amount: 50_000 },
      },
      '/refund?transaction=77&perPage=100': {
        status: true,
        data: [
          // A list that ignored the filter, a refund of part of it, one failed: none is it.
          { id: 4, status: 'pending', transaction: 78, amount: 50_000 },
          { id: 3, status: 'processed', transaction: 77, amount: 20_000 },
          { id: 5, status: 'failed', transaction: 77, amount: 50_000 },
          { id: 6, status: 'pending', transaction: { id: 77 }, amount: 50_000 },
        ],
      },
    };
    servers.server.handle((req, res) => {
      const body = answers[req.url ?? ''];
      res.statusCode = body ? 200 : 400;
      res.end(
        JSON.stringify(body ?? { status: false, message: 'Transaction reference not found' }),
      );
    });
    await expect(paystack().refundOf('ck-1-1', 50_000)).resolves.toEqual({
      id: '6',
      status: 'pending',
    });
    answers['/refund?transaction=77&perPage=100'] = {
      status: true,
      data: [{ id: 5, status: 'failed', transaction: 77, amount: 50_000 }],
    };
    await expect(paystack().refundOf('ck-1-1', 50_000)).resolves.toBeNull();
    await expect(paystack().refundOf('ck-9-9', 50_000)).resolves.toBeNull();
    // Its amount written as a string, as some of Paystack's answers write amounts: it still is.
    answers['/refund?transaction=77&perPage=100'] = {
      status: true,
      data: [{ id: 8, status: 'pending', transaction: 77, amount: '50000' }],
    };
    await expect(paystack().refundOf('ck-1-1', 50_000)).resolves.toEqual({
      id: '8',
      status: 'pending',
    });
    // A whole page of other transactions' refunds (the filter not applied): cannot tell.
    answers['/refund?transaction=77&perPage=100'] = {
      status: true,
      data: Array.from({ length: 100 }, (_, i) => ({
        id: 100 + i,
        status: 'processed',
        transaction: 1_000 + i,
        amount: 50_000,
      })),
    };
    await expect(paystack().refundOf('ck-1-1', 50_000)).rejects.toMatchObject({ code: 502 });
    answers['/refund?transaction=77&perPage=100'] = { status: true, data: 'nonsense' };
    await expect(paystack().refundOf('ck-1-1', 50_000)).rejects.toMatchObject({ code: 502 });
  });

  it('reads a normal answer', async () => {
    servers.server.handle((_req, res) => res.end(initialized));
    await expect(paystack().initialize(request)).resolves.toEqual({
      authorizationUrl: 'https://pay.example/abc',
      accessCode: 'abc',
    });
  });

  it('reads an answer of exactly the limit', async () => {
    const padded = initialized.replace(/}$/, '') + ',"pad":""}';
    const pad = PROVIDER_MAX_ANSWER_BYTES - Buffer.byteLength(padded);
    servers.server.handle((_req, res) =>
      res.end(padded.replace('"pad":""', `"pad":"${'x'.repeat(pad)}"`)),
    );
    await expect(paystack().initialize(request)).resolves.toMatchObject({ accessCode: 'abc' });
  });

  it('refuses an answer declaring a length over the limit with a 502, without reading it', async () => {
    servers.server.handle(declaredTooLarge);
    await expect(paystack().verify('ck-1-1')).rejects.toMatchObject({
      code: 502,
      type: 'UPSTREAM_FAILED',
      message: `The payment provider answered HTTP 200: answer over the ${PROVIDER_MAX_ANSWER_BYTES}-byte limit (Content-Length ${ENDLESS_BYTES}); retry later, and tell us if it lasts`,
    });
  });

  it('stops reading an answer without a length once it passes the limit, with a 502', async () => {
    const { handler, result } = streamedTooLarge();
    servers.server.handle(handler);
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
      servers.server.handle(redirectTo(status, servers.elsewhere.url));
      await expect(paystack().initialize(request)).rejects.toMatchObject({
        code: 502,
        message: `The payment provider answered HTTP ${status}: redirect not followed (to ${servers.elsewhere.url}); retry later, and tell us if it lasts`,
      });
      expect(servers.server.paths).toEqual(['/transaction/initialize']);
      expect(servers.elsewhere.paths).toEqual([]);
    },
  );
});
