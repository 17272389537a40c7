import { clearOfDayEnd } from '../../support/day-edge';

describe('clearOfDayEnd', () => {
  afterEach(() => jest.useRealTimers());

  /** Whether the wait from `at` is over after `ms` of the clock. */
  async function overAfter(at: string, marginMs: number, timeZone: string, ms: number) {
    jest.useFakeTimers({ now: new Date(at) });
    let over = false;
    void clearOfDayEnd(marginMs, timeZone).then(() => (over = true));
    await jest.advanceTimersByTimeAsync(ms);
    return over;
  }

  it('waits until the day has ended when it ends within the margin, just past it', async () => {
    // 10 s before midnight UTC: over 100 ms after it, not before.
    expect(await overAfter('2026-12-07T23:59:50.000Z', 30_000, 'UTC', 10_050)).toBe(false);
    expect(await overAfter('2026-12-07T23:59:50.000Z', 30_000, 'UTC', 10_100)).toBe(true);
    // Midnight in Lagos is 23:00 UTC.
    expect(await overAfter('2026-12-07T22:59:55.000Z', 10_000, 'Africa/Lagos', 5_050)).toBe(false);
    expect(await overAfter('2026-12-07T22:59:55.000Z', 10_000, 'Africa/Lagos', 5_100)).toBe(true);
  });

  it('does not wait when the day ends later than the margin', async () => {
    expect(await overAfter('2026-12-07T23:59:20.000Z', 30_000, 'UTC', 0)).toBe(true);
    // 23:59:50 UTC is 00:59:50 in Lagos: its day ends in 23 hours.
    expect(await overAfter('2026-12-07T23:59:50.000Z', 30_000, 'Africa/Lagos', 0)).toBe(true);
  });
});
