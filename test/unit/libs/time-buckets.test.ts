import fc from 'fast-check';
import {
  bucketName,
  bucketStart,
  bucketsBetween,
  passableTo,
  type Bucket,
} from '../../../libs/time-buckets';

const dates = fc.date({
  noInvalidDate: true,
  min: new Date('2000-01-01T00:00:00Z'),
  max: new Date('2100-01-01T00:00:00Z'),
});
const MINUTE = 60_000;
const spans = fc.constantFrom(MINUTE, 5 * MINUTE, 60 * MINUTE, 7_000);

describe('the bucket that holds a time', () => {
  it('holds it, starts on a multiple of its span, and is named by its start', () => {
    fc.assert(
      fc.property(dates, spans, (date, span) => {
        const start = bucketStart(date, span);
        expect(start).toBeLessThanOrEqual(date.getTime());
        expect(date.getTime()).toBeLessThan(start + span);
        expect(start % span).toBe(0);
        expect(bucketStart(start, span)).toBe(start);
        expect(bucketStart(date.getTime(), span)).toBe(start);
        expect(new Date(bucketName(start)).getTime()).toBe(start);
      }),
    );
    expect(bucketName(bucketStart(new Date('2026-12-24T06:47:59.999Z'), 5 * MINUTE))).toBe(
      '2026-12-24T06:45:00.000Z',
    );
  });

  it('holds times before the epoch too', () => {
    expect(bucketStart(-1, 5 * MINUTE)).toBe(-5 * MINUTE);
    expect(bucketStart(-5 * MINUTE, 5 * MINUTE)).toBe(-5 * MINUTE);
  });

  it('never moves back as time goes on', () => {
    fc.assert(
      fc.property(dates, dates, spans, (a, b, span) => {
        const [early, late] = a <= b ? [a, b] : [b, a];
        expect(bucketStart(early, span)).toBeLessThanOrEqual(bucketStart(late, span));
      }),
    );
  });

  it('is read in turn from the first time’s to the second’s, at most as many as asked', () => {
    const day = 86_400_000;
    fc.assert(
      fc.property(
        dates,
        fc.integer({ min: -day, max: 2 * day }),
        fc.integer({ min: 1, max: 400 }),
        spans,
        (from, length, max, span) => {
          const to = from.getTime() + length;
          const starts = bucketsBetween(from.getTime(), to, max, span);
          const first = bucketStart(from, span);
          const all = Math.max(0, (bucketStart(to, span) - first) / span + 1);
          expect(starts).toHaveLength(Math.min(all, max));
          starts.forEach((start, i) => {
            expect(start).toBe(first + i * span);
            expect(start).toBeLessThanOrEqual(to);
          });
        },
      ),
    );
  });
});

describe('where the cursor may go after a sweep', () => {
  const span = 5 * MINUTE;
  const grace = 10 * MINUTE;
  const now = Date.UTC(2026, 11, 8, 12, 0);
  const bucket = (minutesAgo: number, items: string[]): Bucket<string> => ({
    start: bucketStart(now - minutesAgo * MINUTE, span),
    items,
  });
  const done = new Set(['done']);
  const isDone = (item: string) => done.has(item);

  it('passes the leading buckets that ended long enough ago and whose items all left', () => {
    const buckets = [bucket(60, []), bucket(55, ['done']), bucket(50, [])];
    expect(passableTo(buckets, isDone, now, span, grace)).toBe(buckets[2].start + span);
  });

  it('stops before the first bucket still holding an item, whatever follows', () => {
    const buckets = [bucket(60, ['done']), bucket(55, ['done', 'waiting']), bucket(50, [])];
    expect(passableTo(buckets, isDone, now, span, grace)).toBe(buckets[1].start);
    expect(passableTo(buckets.slice(1), isDone, now, span, grace)).toBeUndefined();
  });

  it('stops before a bucket that ended less than the grace ago, empty or not', () => {
    const buckets = [bucket(20, []), bucket(15, []), bucket(10, []), bucket(5, []), bucket(0, [])];
    // The bucket of 15 minutes ago ended 10 minutes ago: the last the cursor passes.
    expect(passableTo(buckets, isDone, now, span, grace)).toBe(
      bucketStart(now - 10 * MINUTE, span),
    );
    expect(passableTo([bucket(0, [])], isDone, now, span, grace)).toBeUndefined();
  });

  it('stays where it is when nothing was read', () => {
    expect(passableTo([], isDone, now, span, grace)).toBeUndefined();
  });
});
