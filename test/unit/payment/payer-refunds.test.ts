import fc from 'fast-check';
import { nextPayerRefundWaitMs } from '../../../services/payment/payer-refunds';

describe('nextPayerRefundWaitMs', () => {
  it('waits the sweep’s interval after the first try, then twice as long each time', () => {
    expect([1, 2, 3, 4].map((tries) => nextPayerRefundWaitMs(tries, 10_000))).toEqual([
      10_000, 20_000, 40_000, 80_000,
    ]);
  });

  it('never waits less than the interval, nor more than an hour (or the interval, if longer)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000 }),
        fc.integer({ min: 100, max: 3_600_000 }),
        (tries, intervalMs) => {
          const waitMs = nextPayerRefundWaitMs(tries, intervalMs);
          expect(Number.isFinite(waitMs)).toBe(true);
          expect(waitMs).toBeGreaterThanOrEqual(Math.min(intervalMs, 3_600_000));
          expect(waitMs).toBeLessThanOrEqual(3_600_000);
          expect(nextPayerRefundWaitMs(tries + 1, intervalMs)).toBeGreaterThanOrEqual(waitMs);
        },
      ),
    );
  });
});
