import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { parseApiKey } from '../../../libs/contracts/account';
import { credentialHash } from '../../../libs/issued-tokens';
import { generateApiKey } from '../../../services/account/api-keys';

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
const HEX = 'a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90';

describe('credentialHash', () => {
  it('is the hex SHA-256 of the plaintext', () => {
    expect(credentialHash('wb_staging_abc')).toBe(sha256('wb_staging_abc'));
    expect(credentialHash('')).toBe(
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    );
  });
});

describe('generateApiKey', () => {
  it('formats keys as <prefix>_<environment>_<64 lower-case hex>', () => {
    expect(generateApiKey('wb', 'staging').plaintext).toMatch(/^wb_staging_[0-9a-f]{64}$/);
    expect(generateApiKey('wb', 'live').plaintext).toMatch(/^wb_live_[0-9a-f]{64}$/);
    expect(generateApiKey('acme', 'live').plaintext).toMatch(/^acme_live_[0-9a-f]{64}$/);
  });

  it('returns the SHA-256 of the plaintext as the hash', () => {
    const { plaintext, hash } = generateApiKey('wb', 'staging');
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(hash).toBe(sha256(plaintext));
  });

  it('makes a different key every time', () => {
    const keys = Array.from({ length: 50 }, () => generateApiKey('wb', 'staging'));
    expect(new Set(keys.map((k) => k.plaintext)).size).toBe(50);
    expect(new Set(keys.map((k) => k.hash)).size).toBe(50);
  });

  it('makes keys that parse back to their own hash and environment', () => {
    for (const environment of ['live', 'staging'] as const) {
      const { plaintext, hash } = generateApiKey('wb', environment);
      expect(parseApiKey(plaintext, 'wb')).toEqual({ valid: true, environment, hash });
    }
  });
});

describe('parseApiKey', () => {
  it.each(['live', 'staging'] as const)('accepts a well-formed %s key', (environment) => {
    const key = `wb_${environment}_${HEX}`;
    expect(parseApiKey(key, 'wb')).toEqual({ valid: true, environment, hash: sha256(key) });
  });

  it('accepts the largest prefix the config allows', () => {
    const prefix = 'a234567890123456';
    expect(parseApiKey(`${prefix}_live_${HEX}`, prefix)).toMatchObject({ valid: true });
  });

  it('hashes upper-case hex like lower-case hex', () => {
    const lower = parseApiKey(`wb_live_${HEX}`, 'wb');
    const upper = parseApiKey(`wb_live_${HEX.toUpperCase()}`, 'wb');
    const mixed = parseApiKey(`wb_live_${HEX.slice(0, 32).toUpperCase()}${HEX.slice(32)}`, 'wb');
    expect(upper).toEqual(lower);
    expect(mixed).toEqual(lower);
    expect(upper).toEqual({ valid: true, environment: 'live', hash: sha256(`wb_live_${HEX}`) });
  });

  it.each([' ', '\t', '\n', '  \r\n'])('tolerates surrounding whitespace %j', (ws) => {
    const key = `wb_staging_${HEX}`;
    expect(parseApiKey(`${ws}${key}${ws}`, 'wb')).toEqual({
      valid: true,
      environment: 'staging',
      hash: sha256(key),
    });
  });

  it.each([
    ['another prefix', `xx_live_${HEX}`],
    ['a longer prefix', `wbx_live_${HEX}`],
    ['an upper-case prefix', `WB_live_${HEX}`],
    ['no prefix', `live_${HEX}`],
    ['another environment word', `wb_production_${HEX}`],
    ['an upper-case environment', `wb_LIVE_${HEX}`],
    ['no environment', `wb_${HEX}`],
    ['63 hex digits', `wb_live_${HEX.slice(1)}`],
    ['65 hex digits', `wb_live_${HEX}0`],
    ['a non-hex digit', `wb_live_${HEX.slice(1)}g`],
    ['a dash instead of an underscore', `wb-live-${HEX}`],
    ['whitespace inside', `wb_live_ ${HEX}`],
    ['a trailing extra part', `wb_live_${HEX}_x`],
    ['the bare hex', HEX],
    ['the empty string', ''],
    ['only whitespace', '   '],
    ['a Bearer prefix', `Bearer wb_live_${HEX}`],
  ])('rejects a key with %s', (_what, key) => {
    expect(parseApiKey(key, 'wb')).toEqual({ valid: false });
  });

  it('rejects a key whose prefix differs from the configured one', () => {
    expect(parseApiKey(`wb_live_${HEX}`, 'acme')).toEqual({ valid: false });
  });

  it('accepts any 64-digit hex in any case and canonicalises it (property)', () => {
    const hex64 = fc.string({
      unit: fc.constantFrom(...'0123456789abcdefABCDEF'),
      minLength: 64,
      maxLength: 64,
    });
    fc.assert(
      fc.property(hex64, fc.constantFrom('live' as const, 'staging' as const), (hex, env) => {
        const parsed = parseApiKey(`wb_${env}_${hex}`, 'wb');
        expect(parsed).toEqual({
          valid: true,
          environment: env,
          hash: sha256(`wb_${env}_${hex.toLowerCase()}`),
        });
      }),
    );
  });

  it('never accepts arbitrary strings that are not of the key shape (property)', () => {
    fc.assert(
      fc.property(fc.string(), (raw) => {
        fc.pre(!/^\s*wb_(live|staging)_[0-9a-fA-F]{64}\s*$/.test(raw));
        expect(parseApiKey(raw, 'wb')).toEqual({ valid: false });
      }),
    );
  });
});
