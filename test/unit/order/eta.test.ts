import fc from 'fast-check';
import { etaWindow, remainingKm, type EtaInput } from '../../../services/order/eta';
import { DEFAULT_CIRCUITY, haversineKm } from '../../../libs/geodesy';

const IKEJA = { lat: 6.6018, lon: 3.3515 };
const LEKKI = { lat: 6.4474, lon: 3.4723 };
const YABA = { lat: 6.5095, lon: 3.3711 };

const base: EtaInput = {
  status: 'COURIER_ASSIGNED',
  courier: YABA,
  pickup: IKEJA,
  dropoff: LEKKI,
  tripKm: 25,
  speedKmh: 30,
};

describe('remainingKm', () => {
  it('is the way to the pickup and the priced trip before collection', () => {
    expect(remainingKm(base)).toBeCloseTo(haversineKm(YABA, IKEJA) * DEFAULT_CIRCUITY + 25, 9);
  });

  it('is the way to the drop-off once collected', () => {
    expect(remainingKm({ ...base, status: 'IN_TRANSIT' })).toBeCloseTo(
      haversineKm(YABA, LEKKI) * DEFAULT_CIRCUITY,
      9,
    );
  });

  it('is null when the delivery is not under way', () => {
    for (const status of ['REQUEST_CREATED', 'DELIVERED', 'CANCELLED', 'RETURNING'] as const) {
      expect(remainingKm({ ...base, status })).toBeNull();
    }
  });
});

describe('etaWindow', () => {
  const now = new Date('2026-11-24T10:00:00Z');

  it('brackets the arithmetic: from before it, to after it', () => {
    const window = etaWindow(
      { ...base, status: 'IN_TRANSIT', courier: IKEJA, dropoff: IKEJA },
      now,
    );
    expect(window).toEqual({ from: now.toISOString(), to: now.toISOString() });
    const moving = etaWindow(base, now) as { from: string; to: string };
    const seconds = ((remainingKm(base) as number) / 30) * 3600;
    expect(Date.parse(moving.from)).toBeLessThanOrEqual(now.getTime() + seconds * 1000);
    expect(Date.parse(moving.to)).toBeGreaterThanOrEqual(now.getTime() + seconds * 1000);
  });

  it('is later the farther the courier is, never earlier than now (property)', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 6.4, max: 6.7, noNaN: true }),
        fc.double({ min: 3.1, max: 3.6, noNaN: true }),
        fc.double({ min: 1, max: 120, noNaN: true }),
        (lat, lon, speedKmh) => {
          const window = etaWindow({ ...base, courier: { lat, lon }, speedKmh }, now);
          if (!window) throw new Error('a courier on the way has an eta');
          expect(Date.parse(window.from)).toBeGreaterThanOrEqual(now.getTime());
          expect(Date.parse(window.to)).toBeGreaterThanOrEqual(Date.parse(window.from));
          const farther = etaWindow({ ...base, courier: { lat, lon }, tripKm: 50, speedKmh }, now);
          expect(Date.parse(farther?.to ?? '')).toBeGreaterThanOrEqual(Date.parse(window.to));
        },
      ),
    );
  });
});
