import fc from 'fast-check';
import { haversineKm, onAreaGrid, pointBetween, type GeoPoint } from '../../../libs/geodesy';

const point: fc.Arbitrary<GeoPoint> = fc.record({
  lat: fc.double({ min: -90, max: 90, noNaN: true }),
  lon: fc.double({ min: -180, max: 180, noNaN: true }),
});

describe('onAreaGrid', () => {
  it('tells a point by the middle of its 0.01° cell, as two decimals', () => {
    expect(onAreaGrid({ lat: 6.4474, lon: 3.4723 })).toEqual({ lat: 6.45, lon: 3.47 });
    expect(onAreaGrid({ lat: -0.004, lon: 179.996 })).toEqual({ lat: -0, lon: 180 });
  });

  it('moves no point by more than half a cell, and lands on a number of two decimals', () => {
    fc.assert(
      fc.property(point, (p) => {
        const snapped = onAreaGrid(p);
        for (const axis of ['lat', 'lon'] as const) {
          expect(Math.abs(snapped[axis] - p[axis])).toBeLessThanOrEqual(0.005 + 1e-9);
          expect(String(snapped[axis])).toMatch(/^-?\d+(\.\d{1,2})?$/);
        }
      }),
    );
  });

  it('gives every point of a cell the same answer: two doors in it read alike', () => {
    fc.assert(
      fc.property(point, fc.double({ min: -0.0049, max: 0.0049, noNaN: true }), (p, shift) => {
        const centre = onAreaGrid(p);
        const inside = { lat: centre.lat + shift, lon: centre.lon - shift };
        fc.pre(Math.abs(inside.lat) <= 90 && Math.abs(inside.lon) <= 180);
        const again = onAreaGrid(inside);
        // `===`: a cell's middle at 0 may come back as -0, the same number.
        expect(again.lat === centre.lat && again.lon === centre.lon).toBe(true);
      }),
    );
  });
});

describe('pointBetween', () => {
  it('goes the short way round, across the antimeridian rather than through lon 0', () => {
    const east = { lat: 0, lon: 179.9 };
    const west = { lat: 0.2, lon: -179.9 };
    expect(pointBetween(east, west, 0.5).lon).toBeCloseTo(180, 9);
    expect(pointBetween(east, west, 0.5).lat).toBeCloseTo(0.1, 9);
    expect(pointBetween(east, west, 1).lon).toBeCloseTo(-179.9, 9);
    expect(pointBetween(west, east, 0.25).lon).toBeCloseTo(-179.95, 9);
    expect(pointBetween({ lat: 6.6, lon: 3.35 }, { lat: 6.4, lon: 3.47 }, 0.5)).toEqual({
      lat: 6.5,
      lon: 3.41,
    });
  });

  it('stays on the Earth, starts at a, ends where b is and is never farther from either than they are apart', () => {
    fc.assert(
      fc.property(point, point, fc.double({ min: 0, max: 1, noNaN: true }), (a, b, f) => {
        const between = pointBetween(a, b, f);
        expect(Math.abs(between.lon)).toBeLessThanOrEqual(180);
        expect(Math.abs(between.lat)).toBeLessThanOrEqual(90);
        expect(haversineKm(pointBetween(a, b, 0), a)).toBeLessThan(1e-6);
        expect(haversineKm(pointBetween(a, b, 1), b)).toBeLessThan(1e-6);
        // The short way: a leg's points are never as far as the long way round would take them.
        const span = Math.abs(between.lon - a.lon);
        expect(Math.min(span, 360 - span)).toBeLessThanOrEqual(180 * f + 1e-9);
      }),
    );
  });
});
