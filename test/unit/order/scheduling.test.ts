import fc from 'fast-check';
import {
  SEARCH_BUCKET_MS,
  bucketName,
  bucketsBetween,
  dueBucket,
  searchStartsAt,
  searchNotAfter,
} from '../../../services/order/scheduling';

describe('when the search for a courier starts', () => {
  const lead = 45 * 60_000;

  it('is at once for a delivery without a slot, or a simulation', () => {
    expect(searchStartsAt({ slotStartsAt: null, etaSeconds: 1800, simulation: null }, lead)).toBe(
      null,
    );
    expect(searchStartsAt({ etaSeconds: 1800 }, lead)).toBe(null);
    const slotStartsAt = new Date('2026-12-24T08:00:00Z');
    expect(searchStartsAt({ slotStartsAt, etaSeconds: 1800, simulation: 'delivered' }, lead)).toBe(
      null,
    );
  });

  it('is the lead before the delivery must leave to reach its slot', () => {
    const slotStartsAt = new Date('2026-12-24T08:00:00Z');
    expect(searchStartsAt({ slotStartsAt, etaSeconds: 1800, simulation: null }, lead)).toEqual(
      new Date('2026-12-24T06:45:00Z'),
    );
    expect(searchStartsAt({ slotStartsAt, etaSeconds: 0, simulation: null }, 0)).toEqual(
      slotStartsAt,
    );
  });
});

describe('the instant after which no courier is sought', () => {
  const slotEndsAt = new Date('2026-12-24T11:00:00Z');

  it('is the last a courier could leave and still reach the drop-off before the slot closes', () => {
    expect(searchNotAfter({ slotEndsAt, etaSeconds: 0, simulation: null })).toEqual(slotEndsAt);
    expect(searchNotAfter({ slotEndsAt, etaSeconds: 6 * 3600, simulation: null })).toEqual(
      new Date('2026-12-24T05:00:00Z'),
    );
  });

  it('is none without a slot, on a record older than its close, or for a simulation', () => {
    expect(searchNotAfter({ slotEndsAt: null, etaSeconds: 600, simulation: null })).toBeNull();
    expect(searchNotAfter({ etaSeconds: 600 })).toBeNull();
    expect(searchNotAfter({ slotEndsAt, etaSeconds: 600, simulation: 'delivered' })).toBeNull();
  });

  it('never falls before the search starts (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 72 * 3600 }),
        fc.integer({ min: 1, max: 24 * 60 }),
        fc.integer({ min: 0, max: 6 * 3600_000 }),
        (etaSeconds, slotMinutes, leadMs) => {
          const slotStartsAt = new Date('2026-12-24T08:00:00Z');
          const slotEnds = new Date(slotStartsAt.getTime() + slotMinutes * 60_000);
          const delivery = { slotStartsAt, slotEndsAt: slotEnds, etaSeconds, simulation: null };
          const starts = searchStartsAt(delivery, leadMs) as Date;
          expect((searchNotAfter(delivery) as Date).getTime()).toBeGreaterThan(starts.getTime());
        },
      ),
    );
  });
});

describe('the bucket a scheduled search is listed in', () => {
  const dates = fc.date({
    noInvalidDate: true,
    min: new Date('2000-01-01T00:00:00Z'),
    max: new Date('2100-01-01T00:00:00Z'),
  });

  it('holds its date, starts on a multiple of its span, and is named by its start', () => {
    fc.assert(
      fc.property(dates, (date) => {
        const start = dueBucket(date);
        expect(start).toBeLessThanOrEqual(date.getTime());
        expect(date.getTime()).toBeLessThan(start + SEARCH_BUCKET_MS);
        expect(start % SEARCH_BUCKET_MS).toBe(0);
        expect(dueBucket(start)).toBe(start);
        expect(dueBucket(date.getTime())).toBe(start);
        expect(new Date(bucketName(start)).getTime()).toBe(start);
      }),
    );
    expect(bucketName(dueBucket(new Date('2026-12-24T06:47:59.999Z')))).toBe(
      '2026-12-24T06:45:00.000Z',
    );
  });

  it('never moves back as time goes on', () => {
    fc.assert(
      fc.property(dates, dates, (a, b) => {
        const [early, late] = a <= b ? [a, b] : [b, a];
        expect(dueBucket(early)).toBeLessThanOrEqual(dueBucket(late));
      }),
    );
  });

  it('is read in turn from the first date’s to the second’s, at most as many as asked', () => {
    const day = 86_400_000;
    fc.assert(
      fc.property(
        dates,
        fc.integer({ min: -day, max: 2 * day }),
        fc.integer({ min: 1, max: 400 }),
        (from, span, max) => {
          const to = from.getTime() + span;
          const starts = bucketsBetween(from.getTime(), to, max);
          const all = Math.max(0, (dueBucket(to) - dueBucket(from)) / SEARCH_BUCKET_MS + 1);
          expect(starts).toHaveLength(Math.min(all, max));
          starts.forEach((start, i) => {
            expect(start).toBe(dueBucket(from) + i * SEARCH_BUCKET_MS);
            expect(start).toBeLessThanOrEqual(to);
          });
        },
      ),
    );
  });
});
