import fc from 'fast-check';
import {
  PLACE_PENDING_MS,
  placeId,
  placeLeftBehind,
  placesOf,
  takePlace,
  type EndpointPlace,
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
  readonly endpoints = new Map<string, { deleted: boolean }>();

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
    expect(placeLeftBehind({ at: before(1) }, { deleted: true }, NOW)).toBe(true);
    expect(placeLeftBehind({ at: before(PLACE_PENDING_MS * 10) }, { deleted: false }, NOW)).toBe(
      false,
    );
  });

  it('waits PLACE_PENDING_MS for an endpoint not stored yet', () => {
    expect(placeLeftBehind({ at: before(PLACE_PENDING_MS - 1) }, null, NOW)).toBe(false);
    expect(placeLeftBehind({ at: before(PLACE_PENDING_MS) }, null, NOW)).toBe(true);
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
      store.endpoints.set(`w${i}`, { deleted: false });
      expect(await takePlace(store, 'o', free(3), `w${i}`, NOW)).toBe(i);
    }
    expect(await takePlace(store, 'o', free(3), 'late', NOW)).toBeUndefined();

    await store.releasePlace(placeId('o', 1), 'w1');
    expect(await takePlace(store, 'o', free(3), 'w3', NOW)).toBe(1);

    store.endpoints.set('w2', { deleted: true }); // its delete stopped before giving the place back
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
