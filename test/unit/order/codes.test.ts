import fc from 'fast-check';
import {
  hashProofCode,
  newCodeSeed,
  PROOF_CODE_DIGITS,
  proofCodeMatches,
  seededProofCode,
} from '../../../services/order/codes';

const SECRET = 'proof-secret-for-the-unit-test';

describe('seededProofCode', () => {
  it('makes six digits, the same again from the same seed, secret and proof', () => {
    fc.assert(
      fc.property(fc.uuid(), fc.string({ minLength: 1, maxLength: 64 }), (proofId, seed) => {
        const code = seededProofCode(SECRET, proofId, seed);
        expect(code).toMatch(new RegExp(`^\\d{${PROOF_CODE_DIGITS}}$`));
        expect(seededProofCode(SECRET, proofId, seed)).toBe(code);
        // Checked as any code is, against its HMAC.
        expect(proofCodeMatches(SECRET, proofId, code, hashProofCode(SECRET, proofId, code))).toBe(
          true,
        );
      }),
    );
  });

  it('depends on the secret, the proof and the seed', () => {
    // Six digits collide one time in a million: across 200 draws each, nearly all differ.
    const codes = (make: (i: number) => string) =>
      new Set(Array.from({ length: 200 }, (_, i) => make(i)));
    const proofId = '5d0c1b2a-3e4f-4a5b-8c6d-7e8f9a0b1c2d';
    const seed = newCodeSeed();
    expect(codes(() => seededProofCode(SECRET, proofId, newCodeSeed())).size).toBeGreaterThan(195);
    expect(codes((i) => seededProofCode(`${SECRET}${i}`, proofId, seed)).size).toBeGreaterThan(195);
    expect(codes((i) => seededProofCode(SECRET, `${proofId}${i}`, seed)).size).toBeGreaterThan(195);
    expect(newCodeSeed()).toMatch(/^[0-9a-f]{32}$/);
  });
});
