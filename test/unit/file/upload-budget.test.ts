import fc from 'fast-check';
import { readableBytes } from '../../../services/file/sizes';
import { budgetDay, budgetSpent, secondsToNextDay } from '../../../services/file/upload-budget';

describe('a day of uploads', () => {
  it('is the UTC day, and ends at the next UTC midnight', () => {
    const late = new Date('2030-03-04T23:59:59.200Z');
    expect(budgetDay(late)).toBe('2030-03-04');
    expect(secondsToNextDay(late)).toBe(1);
    expect(budgetDay(new Date('2030-03-05T00:00:00.000Z'))).toBe('2030-03-05');
    expect(secondsToNextDay(new Date('2030-03-05T00:00:00.000Z'))).toBe(86_400);
    // Across a month's and a year's end.
    expect(secondsToNextDay(new Date('2030-12-31T23:00:00Z'))).toBe(3600);
  });

  it('waits at least a second and at most a day, landing on the next day (property)', () => {
    fc.assert(
      fc.property(
        fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }),
        (now) => {
          const wait = secondsToNextDay(now);
          expect(wait).toBeGreaterThanOrEqual(1);
          expect(wait).toBeLessThanOrEqual(86_400);
          expect(budgetDay(new Date(now.getTime() + wait * 1000))).not.toBe(budgetDay(now));
        },
      ),
    );
  });

  it('says whose share was spent, and when uploads open again', () => {
    const at = new Date('2030-03-04T18:00:00Z');
    const spent = budgetSpent(1024 ** 3, at, { userId: 'u', publishable: false });
    expect(spent).toMatchObject({
      code: 429,
      message:
        'This account stored its 1 GB of uploads for today (FILE_MAX_UPLOAD_BYTES_PER_USER_PER_DAY); uploads open again at 00:00 UTC (see `Retry-After`)',
      data: { retryAfter: 6 * 3600 },
    });
    expect(budgetSpent(1024 ** 3, at, { userId: 'u', publishable: true })).toMatchObject({
      code: 429,
      message:
        "This account's publishable keys stored their 1 GB of uploads for today (FILE_MAX_UPLOAD_BYTES_PER_USER_PER_DAY); uploads open again at 00:00 UTC (see `Retry-After`)",
      data: { retryAfter: 6 * 3600 },
    });
  });
});

describe('readableBytes', () => {
  it('names a size in the largest unit dividing it, else in bytes', () => {
    expect(readableBytes(1024 ** 3)).toBe('1 GB');
    expect(readableBytes(20 * 1024 ** 2)).toBe('20 MB');
    expect(readableBytes(512 * 1024)).toBe('512 KB');
    expect(readableBytes(10_000)).toBe('10000 bytes');
    expect(readableBytes(1536 * 1024 ** 2)).toBe('1536 MB');
    expect(readableBytes(0)).toBe('0 bytes');
  });
});
