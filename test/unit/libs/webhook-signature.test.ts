import fc from 'fast-check';
import { createHmac } from 'node:crypto';
import {
  isWebhookSecret,
  newWebhookSecret,
  signatureHeader,
  verifySignature,
} from '../../../libs/webhook-signature';

const NOW = 1_760_000_000;
const SECRET = 'whsec_' + 'A'.repeat(43);
const OTHER = 'whsec_' + 'B'.repeat(43);

const secretArb = fc
  .uint8Array({ minLength: 32, maxLength: 32 })
  .map((bytes) => `whsec_${Buffer.from(bytes).toString('base64url')}`);
const bodyArb = fc.oneof(
  fc.string(),
  fc.uint8Array({ maxLength: 512 }).map((bytes) => Buffer.from(bytes)),
);
const skewArb = fc.integer({ min: -300, max: 300 });

const verify = (header: string, secret: string, body: string | Buffer, now = NOW) =>
  verifySignature(header, secret, body, { now });

describe('newWebhookSecret', () => {
  it('is whsec_ and 32 random bytes in base64url', () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(secret.slice(6), 'base64url')).toHaveLength(32);
    expect(isWebhookSecret(secret)).toBe(true);
    expect(newWebhookSecret()).not.toBe(secret);
  });
});

describe('signatureHeader', () => {
  it('is t, then the hex HMAC-SHA256 of t.body by each secret', () => {
    const body = '{"id":"evt_1"}';
    const hmac = (secret: string) =>
      createHmac('sha256', secret).update(`${NOW}.${body}`).digest('hex');
    expect(signatureHeader([SECRET], body, NOW)).toBe(`t=${NOW},v1=${hmac(SECRET)}`);
    expect(signatureHeader([SECRET, OTHER], Buffer.from(body), NOW)).toBe(
      `t=${NOW},v1=${hmac(SECRET)},v1=${hmac(OTHER)}`,
    );
  });

  it('needs a secret and a time in unix seconds', () => {
    expect(() => signatureHeader([], 'x', NOW)).toThrow(/at least one secret/);
    expect(() => signatureHeader([SECRET], 'x', Date.now() / 1000)).toThrow(/unix seconds/);
  });
});

describe('verifySignature', () => {
  it('accepts what was signed, within the tolerance either way', () => {
    fc.assert(
      fc.property(secretArb, bodyArb, skewArb, (secret, body, skew) => {
        const header = signatureHeader([secret], body, NOW);
        expect(verify(header, secret, body, NOW + skew)).toEqual({ ok: true });
      }),
    );
  });

  it('accepts either secret while a rotation signs with both', () => {
    fc.assert(
      fc.property(secretArb, secretArb, bodyArb, (older, newer, body) => {
        const header = signatureHeader([older, newer], body, NOW);
        expect(verify(header, older, body)).toEqual({ ok: true });
        expect(verify(header, newer, body)).toEqual({ ok: true });
      }),
    );
  });

  it('refuses a body with any byte changed, added or removed', () => {
    fc.assert(
      fc.property(
        secretArb,
        fc.uint8Array({ minLength: 1, maxLength: 256 }),
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        (secret, bytes, at, delta) => {
          const body = Buffer.from(bytes);
          const header = signatureHeader([secret], body, NOW);
          const changed = Buffer.from(body);
          changed[at % body.length] = (changed[at % body.length] + delta) % 256;
          expect(verify(header, secret, changed).ok).toBe(false);
          expect(verify(header, secret, Buffer.concat([body, Buffer.from([0])])).ok).toBe(false);
          expect(verify(header, secret, body.subarray(1)).ok).toBe(false);
        },
      ),
    );
  });

  it('refuses a header with any character changed', () => {
    fc.assert(
      fc.property(
        secretArb,
        bodyArb,
        fc.nat(),
        fc.string({ minLength: 1, maxLength: 1 }),
        (secret, body, at, char) => {
          const header = signatureHeader([secret], body, NOW);
          const i = at % header.length;
          fc.pre(header[i] !== char);
          const changed = header.slice(0, i) + char + header.slice(i + 1);
          expect(verify(changed, secret, body).ok).toBe(false);
        },
      ),
    );
  });

  it('refuses a signature made with another secret', () => {
    fc.assert(
      fc.property(secretArb, secretArb, bodyArb, (signer, other, body) => {
        fc.pre(signer !== other);
        expect(verify(signatureHeader([signer], body, NOW), other, body)).toEqual({
          ok: false,
          reason:
            'no v1 signature matches: check the secret (after a rotation, either secret works for 24 h) and that the body is the raw request body, byte for byte, before any parsing',
        });
      }),
    );
  });

  it('refuses a timestamp beyond the tolerance, old or ahead', () => {
    const header = signatureHeader([SECRET], 'x', NOW);
    expect(verify(header, SECRET, 'x', NOW + 301)).toEqual({
      ok: false,
      reason:
        "the timestamp is 301 s old, beyond the 300 s tolerance: refuse it as a replay, or check this machine's clock",
    });
    expect(verify(header, SECRET, 'x', NOW - 301)).toEqual({
      ok: false,
      reason:
        "the timestamp is 301 s in the future, beyond the 300 s tolerance: refuse it as a replay, or check this machine's clock",
    });
    const loose = { now: NOW + 3600, toleranceSeconds: 3600 };
    expect(verifySignature(header, SECRET, 'x', loose)).toEqual({ ok: true });
  });

  it('tolerates whitespace and schemes it does not know', () => {
    const [t, v1] = signatureHeader([SECRET], 'x', NOW).split(',');
    expect(verify(` ${t} , v0=abc,${v1.replace('=', ' = ')} , v2=future`, SECRET, 'x')).toEqual({
      ok: true,
    });
    expect(verify(`v1=${'0'.repeat(64)},${v1},${t}`, SECRET, 'x')).toEqual({ ok: true });
  });

  it.each([
    ['', 'the header has no timestamp'],
    ['v1=abc', 'the header has no timestamp'],
    [`t=${NOW},t=${NOW},v1=abc`, 'the header has no timestamp'],
    [`t=-${NOW},v1=abc`, 'the header has no timestamp'],
    [`t=${NOW}`, 'the header has no v1 signature'],
    [`t=${NOW},v1=`, 'no v1 signature matches'],
  ])('refuses the header %j, saying what is wrong', (header, reason) => {
    const verdict = verify(header, SECRET, 'x');
    expect(verdict.ok).toBe(false);
    expect(!verdict.ok && verdict.reason).toMatch(new RegExp(`^${reason}`));
  });

  it('refuses a secret that is not one of ours before comparing anything', () => {
    const header = signatureHeader(['not-a-secret'], 'x', NOW);
    expect(verify(header, 'not-a-secret', 'x')).toEqual({
      ok: false,
      reason:
        'the secret is not a webhook secret: use the whsec_... value shown when the endpoint was created or its secret rotated',
    });
  });
});
