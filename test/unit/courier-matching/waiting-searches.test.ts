import fc from 'fast-check';
import { EARTH_MEAN_RADIUS_KM, haversineKm, type GeoPoint } from '../../../libs/geodesy';
import {
  WaitingSearches,
  bucketOf,
  bucketsWithin,
  sweepTurn,
  type WaitingSearch,
} from '../../../services/courier-matching/waiting-searches';

const LAGOS = { lat: 6.5244, lon: 3.3792 };
const SETTINGS = { baseMs: 1_000, maxMs: 8_000 };
/** A wait counts as over half a sweep early. */
const SLACK = SETTINGS.baseMs / 2;

const search = (id: string, pickup: GeoPoint, radiusKm = 3): WaitingSearch => ({
  id,
  pickup,
  radiusKmAt: () => radiusKm,
});

/** Where `km` along `bearing` (degrees from north) from `from` leads, on the mean sphere. */
function travel(from: GeoPoint, bearing: number, km: number): GeoPoint {
  const rad = Math.PI / 180;
  const angle = km / EARTH_MEAN_RADIUS_KM;
  const phi = from.lat * rad;
  const theta = bearing * rad;
  const lat = Math.asin(
    Math.sin(phi) * Math.cos(angle) + Math.cos(phi) * Math.sin(angle) * Math.cos(theta),
  );
  const lon =
    from.lon * rad +
    Math.atan2(
      Math.sin(theta) * Math.sin(angle) * Math.cos(phi),
      Math.cos(angle) - Math.sin(phi) * Math.sin(lat),
    );
  return { lat: lat / rad, lon: ((((lon / rad + 180) % 360) + 360) % 360) - 180 };
}

describe('bucketsWithin', () => {
  it('holds the bucket of every point within the distance, poles and the antimeridian included (property)', () => {
    fc.assert(
      fc.property(
        fc.double({ min: -90, max: 90, noNaN: true }),
        fc.double({ min: -180, max: 180, noNaN: true }),
        fc.double({ min: 0, max: 360, noNaN: true }),
        fc.double({ min: 0.1, max: 40, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (lat, lon, bearing, km, share) => {
          const point = { lat, lon };
          const other = travel(point, bearing, km * share);
          expect(bucketsWithin(point, km)).toContain(bucketOf(other));
        },
      ),
      { numRuns: 5_000 },
    );
  });

  it('is a few buckets near the equator, and every bucket of the rows near a pole', () => {
    expect(bucketsWithin(LAGOS, 15)).toHaveLength(25);
    const polar = bucketsWithin({ lat: 89.9, lon: 10 }, 15);
    expect(new Set(polar).size).toBe(polar.length);
    expect(polar).toContain(bucketOf({ lat: 89.95, lon: -170 }));
  });
});

describe('sweepTurn', () => {
  it('steps every due search within ceil(due / limit) sweeps, in a surge too (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.boolean(), { minLength: 1, maxLength: 200 }),
        fc.integer({ min: 1, max: 40 }),
        fc.nat(1_000),
        (dueFlags, limit, firstCursor) => {
          const running = dueFlags.map((_, i) => `s${i}`);
          const due = new Set(running.filter((_, i) => dueFlags[i]));
          const stepped = new Set<string>();
          let cursor = firstCursor;
          for (let sweep = 0; sweep < Math.ceil(due.size / limit); sweep++) {
            const next = sweepTurn(running, (id) => due.has(id), cursor, limit);
            expect(next.turn.length).toBeLessThanOrEqual(limit);
            for (const id of next.turn) {
              expect(due.has(id)).toBe(true);
              stepped.add(id);
            }
            cursor = next.cursor;
          }
          expect(stepped).toEqual(due);
        },
      ),
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
      waits.push(due + SLACK - now);
      now = due + SLACK;
    }
    expect(waits).toEqual([1_000, 2_000, 4_000, 8_000, 8_000]);
  });

  it('steps it no later than when its answer may change', () => {
    const waiting = new WaitingSearches(SETTINGS);
    waiting.foundNobody(search('a', LAGOS), 0);
    waiting.foundNobody(search('a', LAGOS), 1_000, 1_800);
    // A moment fixed in time is kept as it is: a step before it would find nothing new.
    expect(waiting.isDue('a', 1_799)).toBe(false);
    expect(waiting.isDue('a', 1_800)).toBe(true);
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
    waiting.foundNobody(search('near', LAGOS, 3), 20);
    expect(waiting.isDue('near', 20 + 2_000 - SLACK - 1)).toBe(false);
    expect(waiting.isDue('near', 20 + 2_000 - SLACK)).toBe(true);
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
    expect(waiting.anyWaitingForCourier).toBe(true);
    expect(waiting.isDue('a', 0)).toBe(true);
    expect(waiting.isDue('b', 0)).toBe(false);
    expect(waiting.wakeNear(LAGOS, 0, 15)).toBe(1);
  });

  it('keeps a wait half a sweep short, so that a one-sweep wait is not two', () => {
    const waiting = new WaitingSearches(SETTINGS);
    waiting.foundNobody(search('a', LAGOS), 0);
    expect(waiting.isDue('a', 499)).toBe(false);
    expect(waiting.isDue('a', 500)).toBe(true);
  });

  it('keeps a search due when a courier came within reach while its step ran', () => {
    const waiting = new WaitingSearches(SETTINGS);
    waiting.foundNobody(search('a', LAGOS), 0);
    // Its next step begins at 1,000 and reads nobody; a courier is reported at 1,010…
    waiting.wakeNear(LAGOS, 1_010, 15);
    // …before the step's answer is noted: it stays due for the next sweep.
    waiting.foundNobody(search('a', LAGOS), 1_000);
    expect(waiting.isDue('a', 1_000)).toBe(true);
    // A step begun after the report waits as before.
    waiting.foundNobody(search('a', LAGOS), 1_100);
    expect(waiting.isDue('a', 1_100)).toBe(false);
  });

  it('sweeps a search whose offer is open at its expiry or the ceiling, and no courier wakes it', () => {
    const waiting = new WaitingSearches(SETTINGS);
    waiting.foundNobody(search('a', LAGOS), 0);
    waiting.awaitAnswer('a', 1_000, 4_000);
    expect(waiting.isDue('a', 3_999)).toBe(false);
    expect(waiting.isDue('a', 4_000)).toBe(true);
    expect(waiting.anyWaitingForCourier).toBe(false);
    expect(waiting.wakeNear(LAGOS, 1_100, 15)).toBe(0);
    // An offer open for longer than the ceiling: swept at the ceiling.
    waiting.awaitAnswer('a', 1_000, 60_000);
    expect(waiting.isDue('a', 1_000 + 8_000 - SLACK - 1)).toBe(false);
    expect(waiting.isDue('a', 1_000 + 8_000 - SLACK)).toBe(true);
  });

  it('counts the running searches by what they wait for', () => {
    const waiting = new WaitingSearches(SETTINGS);
    waiting.foundNobody(search('a', LAGOS), 0);
    waiting.foundNobody(search('b', LAGOS), 0);
    waiting.awaitAnswer('b', 0, 30_000);
    waiting.awaitAnswer('c', 0, 30_000);
    expect(waiting.counts(['a', 'b', 'c', 'd', 'e'])).toEqual({
      running: 5,
      waiting_for_courier: 1,
      awaiting_answer: 2,
    });
    // Only the running ones: one started during the sweep is counted at the next.
    expect(waiting.counts(['a', 'd'])).toEqual({
      running: 2,
      waiting_for_courier: 1,
      awaiting_answer: 0,
    });
  });

  it('keeps a search being stepped due, and its count of steps that found nobody', () => {
    const waiting = new WaitingSearches(SETTINGS);
    waiting.foundNobody(search('a', LAGOS), 0);
    waiting.foundNobody(search('a', LAGOS), 1_000);
    expect(waiting.isDue('a', 1_100)).toBe(false);
    // A step begins (a decline's, say) and fails: the next sweep repeats it.
    waiting.stepping('a', 1_100);
    expect(waiting.isDue('a', 1_100)).toBe(true);
    // The third step in a row that finds nobody waits 4 s.
    waiting.foundNobody(search('a', LAGOS), 1_200);
    expect(waiting.isDue('a', 1_200 + 4_000 - SLACK - 1)).toBe(false);
    expect(waiting.isDue('a', 1_200 + 4_000 - SLACK)).toBe(true);
  });
});
