import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { IssuedTokens, noteTokenUse } from '../../../libs/issued-tokens';

describe('IssuedTokens', () => {
  const tokens = new IssuedTokens('wbx_');

  it('issues the prefix and 43 base64url characters, random, found by their SHA-256', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 50; i++) {
      const { token, hash } = tokens.issue();
      expect(token).toMatch(/^wbx_[A-Za-z0-9_-]{43}$/);
      expect(hash).toBe(createHash('sha256').update(token).digest('hex'));
      expect(tokens.parse(` ${token} `)).toBe(hash);
      seen.add(token);
    }
    expect(seen.size).toBe(50);
  });

  it('parses nothing that is not shaped like one of its tokens (property)', () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        fc.pre(!/^\s*wbx_[A-Za-z0-9_-]{43}\s*$/.test(text));
        expect(tokens.parse(text)).toBeNull();
      }),
    );
    expect(tokens.parse(`wbc_${'A'.repeat(43)}`)).toBeNull();
  });
});

describe('noteTokenUse', () => {
  const at = new Date('2030-01-01T12:00:00Z');
  const minutesBefore = (m: number) => new Date(at.getTime() - m * 60_000);

  it('notes a use never noted, or noted 10 minutes ago or more, and no other', async () => {
    for (const [last, due] of [
      [null, true],
      [minutesBefore(10), true],
      [minutesBefore(9.99), false],
      [at, false],
    ] as const) {
      const touch = jest.fn(async () => undefined);
      await noteTokenUse(last, at, touch, jest.fn());
      expect(touch).toHaveBeenCalledTimes(due ? 1 : 0);
    }
  });

  it('warns of a note the database refused, and does not fail', async () => {
    const warn = jest.fn();
    await expect(
      noteTokenUse(null, at, () => Promise.reject(new Error('busy')), warn),
    ).resolves.toBeUndefined();
    expect(warn).toHaveBeenCalledWith('could not note when a token was last used', {
      err: 'busy',
    });
  });
});
