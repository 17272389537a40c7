import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * `Waybill-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + raw body)>`, one
 * `v1` per secret that signs (two while a rotation lasts), so that a receiver holding either
 * secret accepts the request. The timestamp is signed too: a captured request replayed later
 * than the tolerance is refused. The HMAC key is the whole secret string, `whsec_` included,
 * as UTF-8: what integrators copy is what they use.
 */
export const SIGNATURE_HEADER = 'Waybill-Signature';
export const SECRET_PREFIX = 'whsec_';
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** `whsec_` and 32 random bytes in base64url (43 characters). */
const SECRET_PATTERN = /^whsec_[A-Za-z0-9_-]{43}$/;
const HEX_SHA256 = /^[0-9a-f]{64}$/;

export const newWebhookSecret = () => `${SECRET_PREFIX}${randomBytes(32).toString('base64url')}`;

export const isWebhookSecret = (secret: string) => SECRET_PATTERN.test(secret);

function digest(secret: string, t: number, body: string | Buffer): Buffer {
  return createHmac('sha256', secret).update(`${t}.`).update(body).digest();
}

/** The header's value for `body` sent at `t` (unix seconds), signed by each of `secrets`. */
export function signatureHeader(secrets: string[], body: string | Buffer, t: number): string {
  if (secrets.length === 0) throw new Error('a webhook is signed by at least one secret');
  if (!Number.isSafeInteger(t) || t < 0) throw new Error(`t must be unix seconds, got ${t}`);
  const v1 = secrets.map((secret) => `v1=${digest(secret, t, body).toString('hex')}`);
  return [`t=${t}`, ...v1].join(',');
}

export type Verification = { ok: true } | { ok: false; reason: string };

export interface VerifyOptions {
  /** Unix seconds. */
  now: number;
  toleranceSeconds?: number;
}

const refuse = (reason: string): Verification => ({ ok: false, reason });

/**
 * Whether `header` signs `body` (the raw bytes received) with `secret`, at a time within the
 * tolerance of `now` either way (a receiver's clock may be ahead). Schemes other than `t` and
 * `v1` are ignored, so that a later scheme can be sent alongside.
 */
export function verifySignature(
  header: string,
  secret: string,
  body: string | Buffer,
  { now, toleranceSeconds = DEFAULT_TOLERANCE_SECONDS }: VerifyOptions,
): Verification {
  if (!isWebhookSecret(secret)) {
    return refuse(
      'the secret is not a webhook secret: use the whsec_... value shown when the endpoint was created or its secret rotated',
    );
  }
  const times: string[] = [];
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const at = part.indexOf('=');
    if (at < 0) continue;
    const scheme = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (scheme === 't') times.push(value);
    if (scheme === 'v1') signatures.push(value);
  }
  if (times.length !== 1 || !/^\d{1,15}$/.test(times[0])) {
    return refuse(
      'the header has no timestamp: expected t=<unix seconds>,v1=<signature>; pass the whole Waybill-Signature value',
    );
  }
  if (signatures.length === 0) {
    return refuse('the header has no v1 signature; pass the whole Waybill-Signature value');
  }
  const t = Number(times[0]);
  const age = now - t;
  if (Math.abs(age) > toleranceSeconds) {
    return refuse(
      `the timestamp is ${Math.abs(age)} s ${age > 0 ? 'old' : 'in the future'}, beyond the ${toleranceSeconds} s tolerance: refuse it as a replay, or check this machine's clock`,
    );
  }
  const expected = digest(secret, t, body);
  // Every candidate is compared, so that the time taken does not say which one came close.
  let matched = false;
  for (const signature of signatures) {
    if (!HEX_SHA256.test(signature)) continue;
    if (timingSafeEqual(Buffer.from(signature, 'hex'), expected)) matched = true;
  }
  return matched
    ? { ok: true }
    : refuse(
        'no v1 signature matches: check the secret (after a rotation, either secret works for 24 h) and that the body is the raw request body, byte for byte, before any parsing',
      );
}
