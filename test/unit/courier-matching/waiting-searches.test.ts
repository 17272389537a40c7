import fc from 'fast-check';
import { haversineKm, type GeoPoint } from '../../../libs/geodesy';
import {
  WaitingSearches,
  bucketOf,
  bucketsWithin,
  idleDelayMs,
  type WaitingSearch,
} from '../../../services/courier-matching/waiting-searches';

const LAGOS = { lat: 6.5244, lon: 3.3792 };
const SETTINGS = { firstMs: 1_000, maxMs: 8_000 };

const search = (id: string, pickup: GeoPoint, radiusKm = 3): WaitingSearch => ({
  id,
  pickup,
  radiusKmAt: () => radiusKm,
});

describe('idleDelayMs', () => {
  it('doubles from the first wait up to the ceiling', () => {
    expect([0, 1, 2, 3, 4, 5, 60].map((k) => idleDelayMs(k, 1_000, 8_000))).toEqual([
      0, 1_000, 2_000, 4_000, 8_000, 8_000, 8_000,
    ]);
  });

  it('never shrinks with more steps and stays within its bounds (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2_000 }),
        fc.integer({ min: 100, max: 600_000 }),
        fc.integer({ min: 1, max: 10_000 }),
        (k, firstMs, maxMs) => {
          const delay = idleDelayMs(k, firstMs, maxMs);
          expect(delay).toBeGreaterThanOrEqual(firstMs);
          expect(delay).toBeLessThanOrEqual(Math.max(firstMs, maxMs));
          expect(idleDelayMs(k + 1, firstMs, maxMs)).toBeGreaterThanOrEqual(delay);
        },
      ),
    );
  });
});

describe('bucketsWithin', () => {
  it('holds the bucket of every point within the distance (property)', () => {
    fc.assert(
      fc.property(
        fc.double({ min: -89, max: 89, noNaN: true }),
        fc.double({ min: -180, max: 180, noNaN: true }),
        fc.double({ min: -1, max: 1, noNaN: true }),
        fc.double({ min: -3, max: 3, noNaN: true }),
        fc.double({ min: 0.1, max: 40, noNaN: true }),
        (lat, lon, dLat, dLon, km) => {
          const point = { lat, lon };
          const otherLon = ((lon + dLon + 540) % 360) - 180;
          const other = { lat: Math.max(-90, Math.min(90, lat + dLat)), lon: otherLon };
          if (haversineKm(point, other) > km) return;
          expect(bucketsWithin(point, km)).toContain(bucketOf(other));
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('reads some 25 buckets for 15 km near the equator, and stays bounded near a pole', () => {
    expect(bucketsWithin(LAGOS, 15)).toHaveLength(25);
    expect(new Set(bucketsWithin({ lat: 89.9, lon: 10 }, 15)).size).toBe(
      bucketsWithin({ lat: 89.9, lon: 10 }, 15).length,
    );
  });
});

describe('WaitingSearches', () => {
  it('steps a search that found nobody after a wait that doubles up to the ceiling', () => {
    const waiting = new WaitingSearches(SETTINGS);
    const s = search('a', LAGOS);
    expect(waiting.isDue('a', 0)).toBe(true);
    let now = 0;
    const waits: number[] = [];
    for (let k = 0; k < 5; k++) {
      waiting.foundNobody(s, now);
      let due = now;
      while (!waiting.isDue('a', due)) due += 100;
      waits.push(due - now);
      now = due;
    }
    expect(waits).toEqual([1_000, 2_000, 4_000, 8_000, 8_000]);
  });

  it('steps it no later than when its answer may change', () => {
    const waiting = new WaitingSearches(SETTINGS);
    waiting.foundNobody(search('a', LAGOS), 0);
    waiting.foundNobody(search('a', LAGOS), 1_000, 1_500);
    expect(waiting.isDue('a', 1_499)).toBe(false);
    expect(waiting.isDue('a', 1_500)).toBe(true);
    // A moment already past: due at once.
    waiting.foundNobody(search('a', LAGOS), 2_000, 1_000);
    expect(waiting.isDue('a', 2_000)).toBe(true);
  });

  it('wakes the searches a reported courier is within reach of, and keeps their count', () => {
    const waiting = new WaitingSearches(SETTINGS);
    const near = { lat: LAGOS.lat + 0.01, lon: LAGOS.lon }; // 1.1 km north
    waiting.foundNobody(search('near', LAGOS, 3), 0);
    waiting.foundNobody(search('wide', { lat: LAGOS.lat + 0.1, lon: LAGOS.lon }, 15), 0);
    waiting.foundNobody(search('far', { lat: LAGOS.lat + 0.1, lon: LAGOS.lon }, 3), 0);
    expect(waiting.wakeNear(near, 10, 15)).toBe(2);
    expect(['near', 'wide', 'far'].map((id) => waiting.isDue(id, 10))).toEqual([true, true, false]);
    // Woken, it found nobody it could take: its next wait goes on from its count.
    waiting.foundNobody(search('near', LAGOS, 3), 10);
    expect(waiting.isDue('near', 10 + 1_999)).toBe(false);
    expect(waiting.isDue('near', 10 + 2_000)).toBe(true);
  });

  it('wakes exactly the searches whose radius holds the courier (property)', () => {
    const offset = fc.double({ min: -0.3, max: 0.3, noNaN: true });
    fc.assert(
      fc.property(
        fc.array(fc.record({ dLat: offset, dLon: offset, km: fc.integer({ min: 1, max: 15 }) }), {
          maxLength: 30,
        }),
        offset,
        offset,
        (pickups, dLat, dLon) => {
          const waiting = new WaitingSearches(SETTINGS);
          const searches = pickups.map((p, i) =>
            search(String(i), { lat: LAGOS.lat + p.dLat, lon: LAGOS.lon + p.dLon }, p.km),
          );
          for (const s of searches) waiting.foundNobody(s, 0);
          const courier = { lat: LAGOS.lat + dLat, lon: LAGOS.lon + dLon };
          const expected = searches.filter(
            (s) => haversineKm(s.pickup, courier) <= s.radiusKmAt(1),
          );
          expect(waiting.wakeNear(courier, 1, 15)).toBe(expected.length);
          for (const s of searches) {
            expect(waiting.isDue(s.id, 1)).toBe(expected.includes(s));
          }
        },
      ),
    );
  });

  it('forgets what it is told to, and what is no longer running', () => {
    const waiting = new WaitingSearches(SETTINGS);
    for (const id of ['a', 'b', 'c']) waiting.foundNobody(search(id, LAGOS), 0);
    waiting.forget('a');
    waiting.retain(['b', 'x']);
    expect(waiting.size).toBe(1);
    expect(waiting.isDue('a', 0)).toBe(true);
    expect(waiting.isDue('b', 0)).toBe(false);
    expect(waiting.wakeNear(LAGOS, 0, 15)).toBe(1);
  });
});
