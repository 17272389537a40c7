import fc from 'fast-check';
import { searchStartsAt, searchNotAfter } from '../../../services/order/scheduling';

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
