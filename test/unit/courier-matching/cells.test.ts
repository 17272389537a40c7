import fc from 'fast-check';
import { gridDistance, latLngToCell } from 'h3-js';
import { haversineKm, type GeoPoint } from '../../../libs/geodesy';
import {
  COARSE_RES,
  FINE_RES,
  FINE_RINGS,
  cellLowerBoundKm,
  cellsOf,
  ringSteps,
  stepsWithin,
  type RingStep,
} from '../../../services/courier-matching/cells';

/** Points of the bench's Lagos, and anywhere else (cells differ in size and shape by place). */
const lagos: fc.Arbitrary<GeoPoint> = fc.record({
  lat: fc.double({ min: 6.4, max: 6.7, noNaN: true }),
  lon: fc.double({ min: 3.1, max: 3.6, noNaN: true }),
});
const anywhere: fc.Arbitrary<GeoPoint> = fc.record({
  lat: fc.double({ min: -80, max: 80, noNaN: true }),
  lon: fc.double({ min: -179, max: 179, noNaN: true }),
});
const point = fc.oneof(lagos, anywhere);

/** A point `km` away at most, in a random direction (small distances: flat-earth offsets). */
const near = (from: GeoPoint, maxKm: number): fc.Arbitrary<GeoPoint> =>
  fc
    .record({
      d: fc.double({ min: 0, max: maxKm, noNaN: true }),
      bearing: fc.double({ min: 0, max: 2 * Math.PI, noNaN: true }),
    })
    .map(({ d, bearing }) => ({
      lat: from.lat + (d / 111.2) * Math.cos(bearing),
      lon: from.lon + (d / (111.2 * Math.cos((from.lat * Math.PI) / 180))) * Math.sin(bearing),
    }));

const pointAndNear = (maxKm: number) => point.chain((p) => near(p, maxKm).map((q) => ({ p, q })));

/** The steps of a search until it has read beyond `km`. */
const stepsBeyond = (p: GeoPoint, km: number, known?: number[]): RingStep[] =>
  stepsWithin(ringSteps(p, FINE_RINGS, known), km);

describe('cellsOf', () => {
  it('is the res-7 and res-9 cell the point falls in', () => {
    fc.assert(
      fc.property(point, (p) => {
        const { c7, c9 } = cellsOf(p);
        expect(c7).toBe(latLngToCell(p.lat, p.lon, COARSE_RES));
        expect(c9).toBe(latLngToCell(p.lat, p.lon, FINE_RES));
      }),
    );
  });
});

describe('cellLowerBoundKm', () => {
  it('is never more than the distance to a point of the cell', () => {
    fc.assert(
      fc.property(pointAndNear(30), fc.constantFrom(FINE_RES, COARSE_RES), ({ p, q }, res) => {
        const cell = latLngToCell(q.lat, q.lon, res);
        expect(cellLowerBoundKm(p, cell)).toBeLessThanOrEqual(haversineKm(p, q));
      }),
      { numRuns: 500 },
    );
  });

  it('is 0 for the cell the point is in', () => {
    fc.assert(
      fc.property(point, (p) => {
        expect(cellLowerBoundKm(p, cellsOf(p).c9)).toBe(0);
      }),
    );
  });
});

describe('ringSteps', () => {
  it('reads res 9 rings 0..FINE_RINGS, then res 7 rings from 0, each ring its grid distance away', () => {
    fc.assert(
      fc.property(point, (p) => {
        const steps = stepsBeyond(p, 5);
        const origin = (res: number) => latLngToCell(p.lat, p.lon, res);
        steps.forEach((step, i) => {
          const expected =
            i <= FINE_RINGS ? { res: FINE_RES, k: i } : { res: COARSE_RES, k: i - FINE_RINGS - 1 };
          expect({ res: step.res, k: step.k }).toEqual(expected);
          for (const cell of step.cells) {
            expect(gridDistance(origin(step.res), cell)).toBe(step.k);
          }
        });
      }),
      { numRuns: 50 },
    );
  });

  it('never claims a point unread is nearer than it is: its bound holds for every point not read', () => {
    fc.assert(
      fc.property(pointAndNear(12), ({ p, q }) => {
        const d = haversineKm(p, q);
        const q9 = latLngToCell(q.lat, q.lon, FINE_RES);
        const q7 = latLngToCell(q.lat, q.lon, COARSE_RES);
        let read = false;
        for (const step of stepsBeyond(p, d)) {
          read ||= step.cells.includes(step.res === FINE_RES ? q9 : q7);
          if (!read) expect(step.unreadBeyondKm).toBeLessThanOrEqual(d);
        }
        // The search goes on until its bound passes d, so by then q has been read.
        expect(read).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('keeps each step’s bound in `known`, and takes it from there for the same point', () => {
    fc.assert(
      fc.property(point, (p) => {
        const first = stepsBeyond(p, 10);
        const known: number[] = [];
        const kept = stepsBeyond(p, 10, known);
        expect(kept).toEqual(first);
        expect(known).toEqual(first.map((step) => step.unreadBeyondKm));
        // Taken, not made again: a bound put there is the one given.
        const made = [...known];
        known[2] = -1;
        const again = stepsBeyond(p, 10, known);
        expect(again.map((step) => step.unreadBeyondKm)).toEqual(made.with(2, -1));
        expect(again.map((step) => step.cells)).toEqual(first.map((step) => step.cells));
      }),
      { numRuns: 20 },
    );
  });

  it('stepsWithin: every step to the first beyond which nothing unread is within the distance', () => {
    fc.assert(
      fc.property(point, fc.double({ min: 0.01, max: 25, noNaN: true }), (p, km) => {
        const steps = stepsWithin(ringSteps(p), km);
        expect(steps.at(-1)?.unreadBeyondKm).toBeGreaterThan(km);
        for (const step of steps.slice(0, -1)) expect(step.unreadBeyondKm).toBeLessThanOrEqual(km);
      }),
      { numRuns: 30 },
    );
  });

  it('reaches 20 km in a few dozen rings, not hundreds', () => {
    fc.assert(
      fc.property(point, (p) => {
        expect(stepsBeyond(p, 20).length).toBeLessThan(30);
      }),
      { numRuns: 30 },
    );
  });
});
