import fc from 'fast-check';
import {
  DEFAULT_CIRCUITY,
  EARTH_MEAN_RADIUS_KM,
  etaSeconds,
  haversineKm,
  isGeoPoint,
  roadDistanceKm,
  roundDistanceKm,
  routeDistance,
  type GeoPoint,
} from '../../../services/geo/distance';

const lagos: GeoPoint = { lat: 6.5244, lon: 3.3792 };
const abuja: GeoPoint = { lat: 9.0765, lon: 7.3986 };
const london: GeoPoint = { lat: 51.5074, lon: -0.1278 };
const paris: GeoPoint = { lat: 48.8566, lon: 2.3522 };

/** Half the circumference of the mean-radius sphere. */
const HALF_CIRCUMFERENCE_KM = Math.PI * EARTH_MEAN_RADIUS_KM;

const point: fc.Arbitrary<GeoPoint> = fc.record({
  lat: fc.double({ min: -90, max: 90, noNaN: true }),
  lon: fc.double({ min: -180, max: 180, noNaN: true }),
});

describe('haversineKm', () => {
  it('measures Lagos - Abuja at about 525 km', () => {
    const km = haversineKm(lagos, abuja);
    expect(km).toBeGreaterThanOrEqual(515);
    expect(km).toBeLessThanOrEqual(535);
  });

  it('measures London - Paris at about 344 km', () => {
    expect(Math.abs(haversineKm(london, paris) - 344)).toBeLessThan(2);
  });

  it('measures one degree of latitude at about 111.2 km', () => {
    expect(haversineKm({ lat: 0, lon: 0 }, { lat: 1, lon: 0 })).toBeCloseTo(111.195, 2);
  });

  it('is zero from a point to itself', () => {
    expect(haversineKm(lagos, lagos)).toBe(0);
    expect(haversineKm({ lat: 90, lon: 0 }, { lat: 90, lon: 120 })).toBeCloseTo(0, 9);
  });

  it.each<[string, GeoPoint, GeoPoint]>([
    ['on the equator', { lat: 0, lon: 0 }, { lat: 0, lon: 180 }],
    ['pole to pole', { lat: 90, lon: 0 }, { lat: -90, lon: 0 }],
    ['Lagos to its antipode', lagos, { lat: -lagos.lat, lon: lagos.lon - 180 }],
  ])('measures antipodes %s at about 20015 km, never NaN', (_name, a, b) => {
    const km = haversineKm(a, b);
    expect(km).toBeCloseTo(HALF_CIRCUMFERENCE_KM, 6);
    expect(Math.round(km)).toBe(20015);
  });

  it('crosses the antimeridian the short way', () => {
    expect(haversineKm({ lat: 0, lon: 179.5 }, { lat: 0, lon: -179.5 })).toBeCloseTo(111.195, 2);
  });

  it.each<[string, GeoPoint]>([
    ['lat above 90', { lat: 90.1, lon: 0 }],
    ['lat below -90', { lat: -91, lon: 0 }],
    ['lon above 180', { lat: 0, lon: 181 }],
    ['NaN lat', { lat: NaN, lon: 0 }],
    ['infinite lon', { lat: 0, lon: Infinity }],
  ])('rejects %s with a RangeError', (_name, bad) => {
    expect(isGeoPoint(bad)).toBe(false);
    expect(() => haversineKm(bad, lagos)).toThrow(RangeError);
    expect(() => haversineKm(lagos, bad)).toThrow(RangeError);
  });

  it('is symmetric (property)', () => {
    fc.assert(
      fc.property(point, point, (a, b) => {
        expect(Math.abs(haversineKm(a, b) - haversineKm(b, a))).toBeLessThanOrEqual(1e-9);
      }),
    );
  });

  it('obeys the triangle inequality (property)', () => {
    // Near antipodes asin(√h) loses precision (~0.1 m), so allow a metre.
    fc.assert(
      fc.property(point, point, point, (a, b, c) => {
        expect(haversineKm(a, c)).toBeLessThanOrEqual(haversineKm(a, b) + haversineKm(b, c) + 1e-3);
      }),
    );
  });

  it('stays between zero and half the circumference (property)', () => {
    fc.assert(
      fc.property(point, point, (a, b) => {
        const km = haversineKm(a, b);
        expect(km).toBeGreaterThanOrEqual(0);
        expect(km).toBeLessThanOrEqual(HALF_CIRCUMFERENCE_KM + 1e-9);
      }),
    );
  });
});

describe('roadDistanceKm', () => {
  it('multiplies the straight line by the circuity, 1.3 by default', () => {
    expect(DEFAULT_CIRCUITY).toBe(1.3);
    expect(roadDistanceKm(100)).toBeCloseTo(130, 9);
    expect(roadDistanceKm(100, 1.5)).toBeCloseTo(150, 9);
    expect(roadDistanceKm(100, 1)).toBe(100);
    expect(roadDistanceKm(0)).toBe(0);
  });

  it.each([0.9, 0, -1, NaN, Infinity])('rejects circuity %p', (circuity) => {
    expect(() => roadDistanceKm(10, circuity)).toThrow(RangeError);
  });

  it.each([-1, NaN, Infinity])('rejects straight distance %p', (km) => {
    expect(() => roadDistanceKm(km)).toThrow(RangeError);
  });
});

describe('routeDistance', () => {
  it('takes the larger of straight line and road', () => {
    expect(routeDistance({ straightKm: 10, roadKm: 13 })).toBe(13);
    expect(routeDistance({ straightKm: 10, roadKm: 9.5 })).toBe(10);
    expect(routeDistance({ straightKm: 0, roadKm: 0 })).toBe(0);
  });

  it.each([
    { straightKm: -1, roadKm: 1 },
    { straightKm: 1, roadKm: -1 },
    { straightKm: NaN, roadKm: 1 },
    { straightKm: 1, roadKm: Infinity },
  ])('rejects %p', (distances) => {
    expect(() => routeDistance(distances)).toThrow(RangeError);
  });

  it('is never below either input (property)', () => {
    const km = fc.double({ min: 0, max: 40_000, noNaN: true });
    fc.assert(
      fc.property(km, km, (straightKm, roadKm) => {
        const d = routeDistance({ straightKm, roadKm });
        expect(d).toBeGreaterThanOrEqual(straightKm);
        expect(d).toBeGreaterThanOrEqual(roadKm);
        expect([straightKm, roadKm]).toContain(d);
      }),
    );
  });
});

describe('etaSeconds', () => {
  it.each<[number, number, number]>([
    [10, 30, 1200],
    [10, 40, 900],
    [0, 30, 0],
    [0.001, 30, 1], // 0.12 s rounds up to a whole second
    [1, 7, 515], // 514.2857... s
    [525.123, 40, 47262], // 47261.07 s
    [1.1, 30, 132], // 132.00000000000003 in plain float arithmetic
    [2.2, 40, 198], // 198.00000000000003 likewise
    [0.1, 36, 10],
  ])('takes %p km at %p km/h as %p s', (km, speed, expected) => {
    expect(etaSeconds(km, speed)).toBe(expected);
  });

  it.each([0, -30, NaN, Infinity])('rejects speed %p', (speed) => {
    expect(() => etaSeconds(10, speed)).toThrow(RangeError);
    expect(() => etaSeconds(10, speed)).toThrow(/speedKmh/);
  });

  it.each([-1, NaN, Infinity])('rejects distance %p', (km) => {
    expect(() => etaSeconds(km, 30)).toThrow(RangeError);
  });

  it('is the whole number of seconds just at or above the exact time (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 50_000_000 }), // metres
        fc.integer({ min: 1, max: 200 }), // km/h
        (metres, speed) => {
          const eta = etaSeconds(metres / 1000, speed);
          expect(Number.isInteger(eta)).toBe(true);
          // Exact in integers: eta >= metres * 3.6 / speed > eta - 1.
          expect(eta * speed * 1000).toBeGreaterThanOrEqual(metres * 3600);
          expect((eta - 1) * speed * 1000).toBeLessThan(metres * 3600);
        },
      ),
    );
  });
});

describe('roundDistanceKm', () => {
  it.each<[number, number]>([
    [525.12345, 525.123],
    [525.1235, 525.124],
    [1.0005, 1.001], // the double is 1.000499999..., the written form rounds up
    [0.0004, 0],
    [0, 0],
    [20015.0868, 20015.087],
    [12, 12],
  ])('rounds %p to %p', (km, expected) => {
    expect(roundDistanceKm(km)).toBe(expected);
  });

  it.each([-0.5, NaN, Infinity])('rejects %p', (km) => {
    expect(() => roundDistanceKm(km)).toThrow(RangeError);
  });

  it('keeps at most three decimals and moves by at most half a metre (property)', () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 40_000, noNaN: true }), (km) => {
        const rounded = roundDistanceKm(km);
        expect(Math.abs(rounded - km)).toBeLessThanOrEqual(0.0005 + 1e-9);
        expect(String(rounded)).toMatch(/^\d+(\.\d{1,3})?$/);
      }),
    );
  });
});
