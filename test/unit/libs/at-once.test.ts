import fc from 'fast-check';
import { forEachAtOnce } from '../../../libs/at-once';

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('forEachAtOnce', () => {
  it('runs every item once, never more than the limit at a time', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.nat(3), { maxLength: 40 }),
        fc.integer({ min: 1, max: 8 }),
        async (waits, limit) => {
          let running = 0;
          let most = 0;
          const seen: number[] = [];
          await forEachAtOnce(
            waits.map((w, i) => ({ w, i })),
            limit,
            async ({ w, i }) => {
              running += 1;
              most = Math.max(most, running);
              for (let t = 0; t < w; t++) await tick();
              seen.push(i);
              running -= 1;
            },
          );
          expect(seen.sort((a, b) => a - b)).toEqual(waits.map((_, i) => i));
          expect(most).toBeLessThanOrEqual(limit);
          if (waits.length >= limit && waits.every((w) => w > 0)) expect(most).toBe(limit);
        },
      ),
    );
  });

  it('goes on past a failure and rethrows the first one at the end', async () => {
    const done: number[] = [];
    await expect(
      forEachAtOnce([1, 2, 3, 4], 2, async (n) => {
        if (n % 2 === 0) throw new Error(`failed ${n}`);
        done.push(n);
      }),
    ).rejects.toThrow('failed 2');
    expect(done).toEqual([1, 3]);
  });
});
