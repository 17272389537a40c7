import fc from 'fast-check';
import {
  PLACE_PENDING_MS,
  placeId,
  placeLeftBehind,
  placesOf,
  takePlace,
  type EndpointPlace,
  type PlaceHolder,
  type PlaceStore,
} from '../../../services/webhook/endpoint-places';

/**
 * The rules of an owner's endpoint places. The store here keeps documents in a map whose
 * insert fails on a taken `_id`, as the database's unique `_id` does;
 * test/integration/webhook-lists.test.ts runs the same on the real server, and
 * test/integration/webhooks.test.ts registers at once through the gateway.
 */
class MapPlaces implements PlaceStore {
  readonly places = new Map<string, EndpointPlace>();
  readonly endpoints = new Map<string, PlaceHolder>();

  async claimPlace(place: EndpointPlace) {
    await Promise.resolve(); // an insert is a round trip: others run in between
    if (this.places.has(place._id)) return false;
    this.places.set(place._id, place);
    return true;
  }

  async place(id: string) {
    return this.places.get(id) ?? null;
  }

  async releasePlace(id: string, webhookId: string) {
    if (this.places.get(id)?.webhookId === webhookId) this.places.delete(id);
  }

  async endpoint(webhookId: string) {
    return this.endpoints.get(webhookId) ?? null;
  }
}

const NOW = new Date('2026-11-29T06:00:00Z');
/** `count` places, none held by a live endpoint the caller listed. */
const free = (count: number) => ({ count, held: new Set<number>() });
const before = (ms: number) => new Date(NOW.getTime() - ms);

describe('placeLeftBehind', () => {
  it('frees the place of a deleted endpoint, never that of a live one', () => {
    expect(placeLeftBehind(2, { at: before(1) }, { deleted: true, place: 2 }, NOW)).toBe(true);
    const old = { at: before(PLACE_PENDING_MS * 10) };
    expect(placeLeftBehind(2, old, { deleted: false, place: 2 }, NOW)).toBe(false);
  });

  it('frees a place whose live endpoint holds another (an insert reported lost but written)', () => {
    expect(placeLeftBehind(2, { at: before(1) }, { deleted: false, place: 3 }, NOW)).toBe(true);
  });

  it('waits PLACE_PENDING_MS for an endpoint not stored yet', () => {
    expect(placeLeftBehind(0, { at: before(PLACE_PENDING_MS - 1) }, null, NOW)).toBe(false);
    expect(placeLeftBehind(0, { at: before(PLACE_PENDING_MS) }, null, NOW)).toBe(true);
  });
});

describe('placesOf', () => {
  it('leaves out of the cap the endpoints registered before places, which hold none', () => {
    expect(placesOf(10, [])).toEqual({ count: 10, held: new Set() });
    expect(placesOf(10, [{ place: 0 }, {}, { place: 3 }, {}])).toEqual({
      count: 8,
      held: new Set([0, 3]),
    });
  });

  it('after the cap was lowered, counts the places held above it against the cap', () => {
    // Places 5, 6, 7 and 0 held under a cap of 10, now 5: two more would make 6.
    expect(placesOf(5, [{ place: 5 }, { place: 6 }, { place: 7 }, { place: 0 }]).count).toBe(2);
    expect(placesOf(5, [{ place: 5 }, { place: 6 }, { place: 7 }, { place: 8 }, {}]).count).toBe(0);
  });

  it('never lets listed endpoints and as many new ones as places pass the cap, and gives the most it can', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 12 }),
        fc.uniqueArray(fc.integer({ min: 0, max: 15 }), { maxLength: 12 }),
        fc.integer({ min: 0, max: 4 }),
        (cap, placed, unplaced) => {
          const endpoints = [...placed.map((place) => ({ place })), ...Array(unplaced).fill({})];
          const { count, held } = placesOf(cap, endpoints);
          const free = (n: number) => [...Array(n).keys()].filter((k) => !held.has(k)).length;
          // Every place below `count` that no listed endpoint holds is taken at once.
          expect(endpoints.length + free(count)).toBeLessThanOrEqual(
            Math.max(cap, endpoints.length),
          );
          if (endpoints.length <= cap && count < cap - unplaced) {
            // One place more would let them pass the cap.
            expect(endpoints.length + free(count + 1)).toBeGreaterThan(cap);
          }
        },
      ),
    );
  });
});

describe('takePlace', () => {
  it('gives registrations at once each a place of their own, never more than there are', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 12 }),
        fc.integer({ min: 1, max: 30 }),
        async (places, callers) => {
          const store = new MapPlaces();
          const taken = await Promise.all(
            Array.from({ length: callers }, (_, i) =>
              takePlace(store, 'u:staging', free(places), `w${i}`, NOW),
            ),
          );
          const held = taken.filter((k) => k !== undefined);
          expect(held).toHaveLength(Math.min(places, callers));
          expect(new Set(held).size).toBe(held.length);
          expect(held.every((k) => k >= 0 && k < places)).toBe(true);
        },
      ),
    );
  });

  it('takes a freed place again, and one left behind by a delete or a registration long gone', async () => {
    const store = new MapPlaces();
    for (let i = 0; i < 3; i++) {
      store.endpoints.set(`w${i}`, { deleted: false, place: i });
      expect(await takePlace(store, 'o', free(3), `w${i}`, NOW)).toBe(i);
    }
    expect(await takePlace(store, 'o', free(3), 'late', NOW)).toBeUndefined();

    await store.releasePlace(placeId('o', 1), 'w1');
    expect(await takePlace(store, 'o', free(3), 'w3', NOW)).toBe(1);

    store.endpoints.set('w2', { deleted: true, place: 2 }); // its delete stopped before giving the place back
    expect(await takePlace(store, 'o', free(3), 'w4', NOW)).toBe(2);
    expect(store.places.get(placeId('o', 2))?.webhookId).toBe('w4');

    // A registration that took place 0 and died before storing its endpoint.
    store.endpoints.delete('w0');
    expect(await takePlace(store, 'o', free(3), 'w5', NOW)).toBeUndefined();
    const later = new Date(NOW.getTime() + PLACE_PENDING_MS);
    expect(await takePlace(store, 'o', free(3), 'w5', later)).toBe(0);
  });

  it('tries no insert at a place a listed live endpoint holds', async () => {
    const store = new MapPlaces();
    const claimed: string[] = [];
    const claimPlace = store.claimPlace.bind(store);
    store.claimPlace = (place) => {
      claimed.push(place._id);
      return claimPlace(place);
    };
    await store.claimPlace({ _id: placeId('o', 2), webhookId: 'pending', at: NOW });
    claimed.length = 0;
    const places = { count: 4, held: new Set([0, 1]) };
    expect(await takePlace(store, 'o', places, 'new', NOW)).toBe(3);
    expect(claimed).toEqual([placeId('o', 2), placeId('o', 3)]);
  });

  it('gives a place left behind to one of the registrations that find it so', async () => {
    const store = new MapPlaces();
    await store.claimPlace({ _id: placeId('o', 0), webhookId: 'gone', at: NOW });
    store.endpoints.set('gone', { deleted: true });
    const taken = await Promise.all(
      ['a', 'b', 'c'].map((webhookId) => takePlace(store, 'o', free(1), webhookId, NOW)),
    );
    expect(taken.filter((k) => k === 0)).toHaveLength(1);
  });
});
