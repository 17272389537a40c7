import type { LookupAddress } from 'node:dns';
import { OwnerLookups } from '../../../libs/owner-lookups';

/** A resolver whose lookups end when the test says: `answer(name)` or never. */
function heldResolver() {
  const started: string[] = [];
  const pending = new Map<string, () => void>();
  const resolver = (hostname: string) =>
    new Promise<LookupAddress[]>((resolve) => {
      started.push(hostname);
      pending.set(hostname, () => resolve([{ address: '203.0.113.7', family: 4 }]));
    });
  const answer = (hostname: string) => pending.get(hostname)?.();
  return { resolver, started, answer };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('OwnerLookups', () => {
  it('runs two lookups of an owner at a time, the others in order, and each owner’s apart', async () => {
    const { resolver, started, answer } = heldResolver();
    const lookups = new OwnerLookups(60_000, resolver);
    const first = lookups.of('a')('one.example', 0);
    lookups.of('a')('two.example', 0);
    const third = lookups.of('a')('three.example', 0);
    const other = lookups.of('b')('four.example', 0);
    await tick();
    // The third waits while two hang; another owner's goes at once.
    expect(started).toEqual(['one.example', 'two.example', 'four.example']);
    expect(lookups.inLine('a')).toBe(3);
    answer('four.example');
    await expect(other).resolves.toHaveLength(1);
    expect(lookups.inLine('b')).toBe(0);

    answer('one.example');
    await first;
    expect(started).toEqual(['one.example', 'two.example', 'four.example', 'three.example']);
    answer('three.example');
    await expect(third).resolves.toEqual([{ address: '203.0.113.7', family: 4 }]);
    answer('two.example');
    await tick();
    expect(lookups.inLine('a')).toBe(0);
  });

  it('gives up a turn not begun in time, and the line goes on without it', async () => {
    jest.useFakeTimers();
    try {
      const { resolver, started, answer } = heldResolver();
      const lookups = new OwnerLookups(5_000, resolver, 1);
      const hanging = lookups.of('a')('hangs.example', 0);
      const late = lookups.of('a')('late.example', 0);
      const settled = late.catch((err: NodeJS.ErrnoException) => err);
      jest.advanceTimersByTime(5_000);
      const err = (await settled) as NodeJS.ErrnoException;
      expect(err.code).toBe('ETIMEOUT');
      expect(err.message).toMatch(/^lookup of late.example not begun within 5000 ms: other host/);
      expect(lookups.inLine('a')).toBe(1);

      // The one that hung ends at last: the owner's next lookup runs at once.
      answer('hangs.example');
      await hanging;
      const next = lookups.of('a')('next.example', 0);
      answer('next.example');
      await expect(next).resolves.toHaveLength(1);
      expect(started).toEqual(['hangs.example', 'next.example']);
    } finally {
      jest.useRealTimers();
    }
  });

  it('frees the owner’s turn when a lookup fails', async () => {
    const failing = jest
      .fn()
      .mockRejectedValueOnce(Object.assign(new Error('nope'), { code: 'ENOTFOUND' }))
      .mockResolvedValueOnce([{ address: '203.0.113.8', family: 4 }]);
    const lookups = new OwnerLookups(60_000, failing);
    await expect(lookups.of('a')('gone.example', 0)).rejects.toThrow('nope');
    await expect(lookups.of('a')('there.example', 0)).resolves.toHaveLength(1);
    expect(lookups.inLine('a')).toBe(0);
  });
});
