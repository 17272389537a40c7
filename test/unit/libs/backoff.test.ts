import fc from 'fast-check';
import { backoffMs } from '../../../libs/backoff';

const backoff = { baseMs: 10_000, maxMs: 600_000 };

describe('backoffMs', () => {
  it('doubles from the base after each failed attempt, up to the cap', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((n) => backoffMs(n, backoff))).toEqual([
      10_000, 20_000, 40_000, 80_000, 160_000, 320_000, 600_000, 600_000,
    ]);
  });

  it('never waits less than the base nor more than the cap, and never less than before', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 1, max: 1000 }),
        fc.integer({ min: 0, max: 1_000_000 }),
        (attempt, baseMs, extra) => {
          const given = { baseMs, maxMs: baseMs + extra };
          const wait = backoffMs(attempt, given);
          expect(wait).toBeGreaterThanOrEqual(baseMs);
          expect(wait).toBeLessThanOrEqual(given.maxMs);
          expect(backoffMs(attempt + 1, given)).toBeGreaterThanOrEqual(wait);
        },
      ),
    );
  });

  it('spreads each wait by at most 20 % either way', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100 }),
        fc.double({ min: 0, max: 0.999999, noNaN: true }),
        (n, random) => {
          const plain = Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.min(n - 1, 40));
          const wait = backoffMs(n, backoff, random);
          expect(wait).toBeGreaterThanOrEqual(Math.floor(plain * 0.8));
          expect(wait).toBeLessThanOrEqual(Math.ceil(plain * 1.2));
          // The cap holds whatever the spread.
          expect(wait).toBeLessThanOrEqual(backoff.maxMs);
        },
      ),
    );
  });
});
