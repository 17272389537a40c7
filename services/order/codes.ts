import { createHmac, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';

/** Crockford's base 32: no I, L, O or U, so a code read aloud or typed is not misread. */
const TRACKING_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const TRACKING_LENGTH = 12;

/** `P2P-` and 60 random bits: unguessable, so a tracking id can be shared as a capability. */
export function newTrackingId(): string {
  const bytes = randomBytes(TRACKING_LENGTH);
  let code = '';
  for (const byte of bytes) code += TRACKING_ALPHABET[byte % TRACKING_ALPHABET.length];
  return `P2P-${code}`;
}

export const PROOF_CODE_DIGITS = 6;

/** A proof code: six digits, each from the system's CSPRNG. */
export function newProofCode(): string {
  return String(randomInt(0, 10 ** PROOF_CODE_DIGITS)).padStart(PROOF_CODE_DIGITS, '0');
}

/** A seed of a proof code made again where needed (`seededProofCode`): 128 random bits. */
export const newCodeSeed = (): string => randomBytes(16).toString('hex');

/**
 * The proof code a seed makes under the server secret, bound to its proof: six digits of
 * HMAC-SHA256 (the bias of reducing 32 bits modulo a million is under one in four thousand).
 */
export function seededProofCode(secret: string, proofId: string, seed: string): string {
  const digest = createHmac('sha256', secret).update(`seeded:${proofId}:${seed}`).digest();
  const n = digest.readUInt32BE(0) % 10 ** PROOF_CODE_DIGITS;
  return String(n).padStart(PROOF_CODE_DIGITS, '0');
}

/**
 * A proof code at rest: HMAC-SHA256 under a server secret, bound to its proof. Six digits
 * are too few for a plain hash (a stolen database would give them all up in a second); the
 * key is not in the database.
 */
export function hashProofCode(secret: string, proofId: string, code: string): string {
  return createHmac('sha256', secret).update(`${proofId}:${code}`).digest('hex');
}

/** Whether `code` is the proof's, compared in constant time. */
export function proofCodeMatches(
  secret: string,
  proofId: string,
  code: string,
  codeHash: string,
): boolean {
  const given = Buffer.from(hashProofCode(secret, proofId, code), 'hex');
  const stored = Buffer.from(codeHash, 'hex');
  return given.length === stored.length && timingSafeEqual(given, stored);
}
