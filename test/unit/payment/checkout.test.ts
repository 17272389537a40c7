import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { ledgerReference } from '../../../libs/contracts/payment';
import { PAGE_HEADERS, errorPage, escapeHtml } from '../../../libs/html';
import {
  ATTEMPT_GRACE_MS,
  OPEN_ATTEMPTS,
  attemptReference,
  checkoutOfAttempt,
  claimFor,
  expiresAt,
  fundingCreditReference,
  newCheckoutReference,
  nextAttemptWait,
  outcomeEvent,
  sendClaimState,
  sendName,
  statusOf,
  validSignature,
  verificationMismatch,
  expiryVerdict,
  STILL_PAYING_GRACE_MS,
  type SessionFacts,
} from '../../../services/payment/checkout';
import { checkoutPage } from '../../../services/payment/checkout-pages';

const created = new Date('2026-01-01T10:00:00Z');
const session: SessionFacts = {
  reference: 'ck-1',
  userId: '6f1d7c2a-8b3e-4f5a-9c0d-1e2f3a4b5c6d',
  amountKobo: 250_050,
  currency: 'NGN',
  purpose: { kind: 'DELIVERY', id: '7f1d7c2a-8b3e-4f5a-9c0d-1e2f3a4b5c6d' },
  expiresAt: expiresAt(created, 30 * 60_000),
};
const at = (minutes: number) => new Date(created.getTime() + minutes * 60_000);

describe('checkout references', () => {
  it('are 160 random bits in hex, distinct, valid ledger references even as credit references', () => {
    const refs = Array.from({ length: 1000 }, newCheckoutReference);
    expect(new Set(refs).size).toBe(1000);
    for (const ref of refs.slice(0, 20)) {
      expect(ref).toMatch(/^ck-[0-9a-f]{40}$/);
      expect(ledgerReference().validate(ref).error).toBeUndefined();
      expect(ledgerReference().validate(fundingCreditReference(ref)).error).toBeUndefined();
    }
  });
});

describe('attempts to open a checkout', () => {
  const reference = newCheckoutReference();

  it('use the checkout’s own reference first, then one per attempt that leads back to it', () => {
    expect(attemptReference(reference, 0)).toBe(reference);
    expect(attemptReference(reference, 1)).toBe(`${reference}.1`);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: OPEN_ATTEMPTS - 1 }), (attempt) => {
        const providerReference = attemptReference(reference, attempt);
        expect(checkoutOfAttempt(providerReference)).toBe(reference);
        // Paystack's characters, and a valid ledger reference once credited.
        expect(providerReference).toMatch(/^[A-Za-z0-9.=-]+$/);
      }),
    );
    const all = Array.from({ length: OPEN_ATTEMPTS }, (_, n) => attemptReference(reference, n));
    expect(new Set(all).size).toBe(OPEN_ATTEMPTS);
  });

  it('lead nowhere else from a reference that is no attempt of ours', () => {
    for (const other of ['T123.abc', `${reference}.0`, `${reference}.01`, `${reference}.`]) {
      expect(checkoutOfAttempt(other)).toBe(other);
    }
    expect(checkoutOfAttempt(`${reference}.${OPEN_ATTEMPTS}`)).toBe(
      `${reference}.${OPEN_ATTEMPTS}`,
    );
  });

  it('let the next start at once after a failure, else once the call must be over', () => {
    const startedAt = new Date('2026-01-01T10:00:00Z');
    const after = (ms: number) => new Date(startedAt.getTime() + ms);
    expect(nextAttemptWait({ startedAt, failedAt: after(10) }, 15_000, after(20))).toBe(0);
    expect(nextAttemptWait({ startedAt }, 15_000, after(1_000))).toBe(14_000 + ATTEMPT_GRACE_MS);
    expect(nextAttemptWait({ startedAt, failedAt: null }, 15_000, after(15_000))).toBe(
      ATTEMPT_GRACE_MS,
    );
    expect(nextAttemptWait({ startedAt }, 15_000, after(15_000 + ATTEMPT_GRACE_MS))).toBe(0);
    expect(nextAttemptWait({ startedAt }, 15_000, after(60_000))).toBe(0);
  });
});

describe('sends of an outcome event', () => {
  it('names the first send by the reference, each taking over and each resend apart', () => {
    expect(sendName('ck-1', 0)).toBe('ck-1');
    expect(sendName('ck-1', 2)).toBe('ck-1~2');
    expect(sendName('ck-1', new Date('2026-01-01T10:00:00Z'))).toBe(
      'ck-1@2026-01-01T10:00:00.000Z',
    );
  });

  it('leaves a claim to its claimant until its lease is over, for good once it is marked sent', () => {
    const claimedAt = at(0);
    const later = (ms: number) => new Date(claimedAt.getTime() + ms);
    expect(sendClaimState({ claimedAt }, 30_000, later(29_999))).toBe('busy');
    expect(sendClaimState({ claimedAt, sentAt: null }, 30_000, later(30_000))).toBe('stale');
    expect(sendClaimState({ claimedAt, sentAt: later(5) }, 30_000, later(60_000))).toBe('sent');
  });
});

describe('checkout state', () => {
  it('is PENDING until its time, then EXPIRED, unless an outcome was decided', () => {
    expect(session.expiresAt).toEqual(at(30));
    expect(statusOf(session, null, at(29))).toBe('PENDING');
    expect(statusOf(session, null, at(30))).toBe('EXPIRED');
    expect(statusOf(session, { status: 'PAID' }, at(31))).toBe('PAID');
    expect(statusOf(session, { status: 'DECLINED' }, at(1))).toBe('DECLINED');
  });

  it('turns a late pay or decline on the sandbox page into an expiry claim', () => {
    expect(claimFor('PAID', 'sandbox', session, at(29))).toBe('PAID');
    expect(claimFor('DECLINED', 'sandbox', session, at(29))).toBe('DECLINED');
    expect(claimFor('PAID', 'sandbox', session, at(30))).toBe('EXPIRED');
    expect(claimFor('DECLINED', 'sandbox', session, at(45))).toBe('EXPIRED');
    expect(claimFor('EXPIRED', 'sweep', session, at(1))).toBe('EXPIRED');
  });

  it('claims a payment the provider verified as paid, whatever the time: the money was taken', () => {
    expect(claimFor('PAID', 'paystack', session, at(29))).toBe('PAID');
    expect(claimFor('PAID', 'paystack', session, at(31))).toBe('PAID');
    expect(claimFor('PAID', 'sweep', session, at(45))).toBe('PAID');
  });

  it('makes payment.succeeded of a payment and payment.failed with the reason otherwise', () => {
    const decidedAt = at(5);
    expect(outcomeEvent(session, { status: 'PAID', decidedAt })).toEqual({
      name: 'payment.succeeded',
      payload: {
        reference: 'ck-1',
        purpose: session.purpose,
        userId: session.userId,
        amountKobo: 250_050,
        decidedAt: decidedAt.toISOString(),
      },
    });
    expect(outcomeEvent(session, { status: 'EXPIRED', decidedAt })).toMatchObject({
      name: 'payment.failed',
      payload: { reason: 'EXPIRED', reference: 'ck-1' },
    });
  });

  it('accepts only a verified success of the exact amount and currency', () => {
    const ok = { status: 'success', amountKobo: 250_050, currency: 'NGN' };
    expect(verificationMismatch(session, ok)).toBeNull();
    expect(verificationMismatch(session, { ...ok, amountKobo: 250_049 })).toMatch(/250049 kobo/);
    expect(verificationMismatch(session, { ...ok, currency: 'GHS' })).toMatch(/GHS/);
    expect(verificationMismatch(session, { ...ok, status: 'abandoned' })).toMatch(/abandoned/);
  });
});

describe('the expiry sweep’s verdict on a checkout past its time', () => {
  const ok = { status: 'success', amountKobo: 250_050, currency: 'NGN' };
  const minute = 60_000;

  it('pays it on a verified charge of the exact amount, however late', () => {
    expect(expiryVerdict(session, ok, at(31), minute)).toEqual({ pay: true });
    expect(expiryVerdict(session, ok, at(30 + 48 * 60), minute)).toEqual({ pay: true });
  });

  it.each(['ongoing', 'pending', 'processing', 'queued'])(
    'looks again later while the charge is %s, up to a day past its time, then expires it',
    (status) => {
      const verified = { ...ok, status };
      expect(expiryVerdict(session, verified, at(31), minute)).toEqual({ recheckAt: at(32) });
      const lastLook = new Date(session.expiresAt.getTime() + STILL_PAYING_GRACE_MS - 1);
      expect(expiryVerdict(session, verified, lastLook, minute)).toMatchObject({
        recheckAt: expect.any(Date),
      });
      const dayAfter = new Date(session.expiresAt.getTime() + STILL_PAYING_GRACE_MS);
      expect(expiryVerdict(session, verified, dayAfter, minute)).toEqual({ expire: true });
    },
  );

  it.each([
    ['no such transaction', null],
    ['abandoned', { ...ok, status: 'abandoned' }],
    ['failed', { ...ok, status: 'failed' }],
    ['reversed', { ...ok, status: 'reversed' }],
  ])('expires it on %s', (_, verified) => {
    expect(expiryVerdict(session, verified, at(31), minute)).toEqual({ expire: true });
  });

  it('expires it on a success for another amount or currency, saying why nobody is credited', () => {
    expect(expiryVerdict(session, { ...ok, amountKobo: 1 }, at(31), minute)).toEqual({
      expire: true,
      uncredited: 'the provider reports 1 kobo, the checkout is for 250050',
    });
    expect(expiryVerdict(session, { ...ok, currency: 'GHS' }, at(31), minute)).toMatchObject({
      uncredited: expect.stringMatching(/GHS/),
    });
  });
});

describe('validSignature', () => {
  const secret = 'sk_test_secret';
  const body = Buffer.from('{"event":"charge.success","data":{"reference":"ck-1"}}');
  const sign = (bytes: Buffer, key = secret) =>
    createHmac('sha512', key).update(bytes).digest('hex');

  it('accepts the hex HMAC-SHA512 of the exact bytes, in either case', () => {
    expect(validSignature(body, sign(body), secret)).toBe(true);
    expect(validSignature(body, sign(body).toUpperCase(), secret)).toBe(true);
  });

  it.each([
    ['unsigned', undefined],
    ['empty', ''],
    ['signed with another key', sign(body, 'sk_other')],
    ['of another body', sign(Buffer.from(`${body.toString()} `))],
    ['too short', sign(body).slice(0, 64)],
    ['too long', `${sign(body)}00`],
    ['of an odd length', sign(body).slice(1)],
    ['with a hex digit more', `${sign(body)}0`],
    ['not hex', 'g'.repeat(128)],
  ])('refuses a signature %s', (_what, signature) => {
    expect(validSignature(body, signature, secret)).toBe(false);
  });
});

describe('checkout pages', () => {
  it('escapes every character that could open markup or leave an attribute', () => {
    expect(escapeHtml(`<a href="x" onclick='y'>&</a>`)).toBe(
      '&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;',
    );
  });

  it('shows the amount with two decimals and the escaped merchant name, and forms while open', () => {
    const html = checkoutPage({
      reference: 'ck-1',
      merchantName: '<img src=x onerror=alert(1)> "Ade" & Sons',
      amountKobo: 250_050,
      currency: 'NGN',
      status: 'PENDING',
      expiresAt: at(30),
    });
    expect(html).toContain('NGN 2500.50');
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt; &quot;Ade&quot; &amp; Sons');
    expect(html).not.toContain('<img');
    expect(html).toContain('<form method="post" action="/checkout/ck-1/pay">');
    expect(html).toContain('<form method="post" action="/checkout/ck-1/decline">');
    expect(html).not.toMatch(/<script/i);
  });

  it.each(['PAID', 'DECLINED', 'EXPIRED'] as const)(
    'shows a %s checkout without forms',
    (status) => {
      const html = checkoutPage({
        reference: 'ck-1',
        merchantName: 'Shop',
        amountKobo: 100,
        currency: 'NGN',
        status,
        expiresAt: at(30),
      });
      expect(html).toContain(`data-status="${status}"`);
      expect(html).not.toContain('<form');
    },
  );

  it('escapes the message of an error page, and pages forbid scripts, framing and caching', () => {
    expect(errorPage(404, '<b>gone</b>')).toContain('&lt;b&gt;gone&lt;/b&gt;');
    expect(PAGE_HEADERS).toMatchObject({
      'Content-Security-Policy':
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
      'X-Frame-Options': 'DENY',
      'Referrer-Policy': 'no-referrer',
      'Cache-Control': 'no-store',
    });
  });
});
