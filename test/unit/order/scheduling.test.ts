import { searchStartsAt } from '../../../services/order/scheduling';

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
