import fc from 'fast-check';
import {
  PLACE_PENDING_MS,
  placeId,
  placeLeftBehind,
  placesOf,
  capRefusals,
  createInPlace,
  givePlaceBack,
  releaseId,
  releasePlace,
  takePlace,
  type Place,
  type PlaceHolder,
  type PlaceStore,
} from '../../../libs/places';

/**
 * The rules of an owner's numbered places (libs/places). The store here keeps documents in a map whose
 * insert fails on a taken `_id`, as the database's unique `_id` does;
 * test/integration/places.test.ts runs the same on the real server, and the tests of each
 * capped creation (webhooks, API keys, courier tokens, a merchant's couriers) create at once
 * through the gateway.
 */
class MapPlaces implements PlaceStore {
  readonly places = new Map<string, Place>();
  readonly holders = new Map<string, PlaceHolder>();

  async claimPlace(place: Place) {
    await Promise.resolve(); // an insert is a round trip: others run in between
    if (this.places.has(place._id)) return false;
    this.places.set(place._id, place);
    return true;
  }

  async place(id: string) {
    return this.places.get(id) ?? null;
  }

  async deletePlace(id: string, holder: string) {
    if (this.places.get(id)?.holder === holder) this.places.delete(id);
  }

  async holder(id: string) {
    return this.holders.get(id) ?? null;
  }

  /** Who holds each of `owner`'s places (the claims of releases left out). */
  heldBy(owner: string) {
    return [...this.places.values()]
      .filter((place) => place._id.startsWith(`${owner}:`))
      .map((place) => place.holder);
  }
}

/**
 * Deletes as FerretDB applies a conditional delete (decision 16): the filter read, then, a
 * round trip later, the document deleted by `_id` whatever it is by then.
 */
class SplitDeletePlaces extends MapPlaces {
  override async deletePlace(id: string, holder: string) {
    const read = this.places.get(id);
    await new Promise((resolve) => setImmediate(resolve));
    if (read?.holder === holder) this.places.delete(id);
  }
}

const NOW = new Date('2026-11-29T06:00:00Z');
/** `count` places, none held by a live record the caller listed. */
const free = (count: number) => ({ count, held: new Set<number>() });
const before = (ms: number) => new Date(NOW.getTime() - ms);

describe('placeLeftBehind', () => {
  it('frees the place of a removed record, never that of a live one', () => {
    expect(placeLeftBehind(2, { at: before(1) }, { gone: true, place: 2 }, NOW)).toBe(true);
    const old = { at: before(PLACE_PENDING_MS * 10) };
    expect(placeLeftBehind(2, old, { gone: false, place: 2 }, NOW)).toBe(false);
  });

  it('frees a place whose live record holds another (an insert reported lost but written)', () => {
    expect(placeLeftBehind(2, { at: before(1) }, { gone: false, place: 3 }, NOW)).toBe(true);
  });

  it('waits PLACE_PENDING_MS for a record not stored yet', () => {
    expect(placeLeftBehind(0, { at: before(PLACE_PENDING_MS - 1) }, null, NOW)).toBe(false);
    expect(placeLeftBehind(0, { at: before(PLACE_PENDING_MS) }, null, NOW)).toBe(true);
  });
});

describe('placesOf', () => {
  it('leaves out of the cap the records created before places, which hold none', () => {
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

  it('never lets listed records and as many new ones as places pass the cap, and gives the most it can', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 12 }),
        fc.uniqueArray(fc.integer({ min: 0, max: 15 }), { maxLength: 12 }),
        fc.integer({ min: 0, max: 4 }),
        (cap, placed, unplaced) => {
          const records = [...placed.map((place) => ({ place })), ...Array(unplaced).fill({})];
          const { count, held } = placesOf(cap, records);
          const free = (n: number) => [...Array(n).keys()].filter((k) => !held.has(k)).length;
          // Every place below `count` that no listed record holds is taken at once.
          expect(records.length + free(count)).toBeLessThanOrEqual(Math.max(cap, records.length));
          if (records.length <= cap && count < cap - unplaced) {
            // One place more would let them pass the cap.
            expect(records.length + free(count + 1)).toBeGreaterThan(cap);
          }
        },
      ),
    );
  });
});

describe('takePlace', () => {
  it('gives creations at once each a place of their own, never more than there are', async () => {
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

  it('takes a freed place again, and one left behind by a removal or a creation long gone', async () => {
    const store = new MapPlaces();
    for (let i = 0; i < 3; i++) {
      store.holders.set(`w${i}`, { gone: false, place: i });
      expect(await takePlace(store, 'o', free(3), `w${i}`, NOW)).toBe(i);
    }
    expect(await takePlace(store, 'o', free(3), 'late', NOW)).toBeUndefined();

    await releasePlace(store, placeId('o', 1), 'w1', NOW);
    expect(await takePlace(store, 'o', free(3), 'w3', NOW)).toBe(1);

    store.holders.set('w2', { gone: true, place: 2 }); // its removal stopped before giving the place back
    expect(await takePlace(store, 'o', free(3), 'w4', NOW)).toBe(2);
    expect(store.places.get(placeId('o', 2))?.holder).toBe('w4');

    // A creation that took place 0 and died before storing its record.
    store.holders.delete('w0');
    expect(await takePlace(store, 'o', free(3), 'w5', NOW)).toBeUndefined();
    const later = new Date(NOW.getTime() + PLACE_PENDING_MS);
    expect(await takePlace(store, 'o', free(3), 'w5', later)).toBe(0);
  });

  it('gives a creation run again the place its earlier run took and never stored', async () => {
    const store = new MapPlaces();
    expect(await takePlace(store, 'o', free(2), 'other', NOW)).toBe(0);
    expect(await takePlace(store, 'o', free(2), 'keyed', NOW)).toBe(1);
    // The run stopped before storing its record; its retry, at once, finds every place held.
    expect(await takePlace(store, 'o', free(2), 'keyed', NOW)).toBe(1);
    expect(await takePlace(store, 'o', free(2), 'third', NOW)).toBeUndefined();
  });

  it('tries no insert at a place a listed live record holds', async () => {
    const store = new MapPlaces();
    const claimed: string[] = [];
    const claimPlace = store.claimPlace.bind(store);
    store.claimPlace = (place) => {
      claimed.push(place._id);
      return claimPlace(place);
    };
    await store.claimPlace({ _id: placeId('o', 2), holder: 'pending', at: NOW });
    claimed.length = 0;
    const places = { count: 4, held: new Set([0, 1]) };
    expect(await takePlace(store, 'o', places, 'new', NOW)).toBe(3);
    expect(claimed).toEqual([placeId('o', 2), placeId('o', 3)]);
  });

  it('gives a place left behind to one of the creations that find it so', async () => {
    const store = new MapPlaces();
    await store.claimPlace({ _id: placeId('o', 0), holder: 'gone', at: NOW });
    store.holders.set('gone', { gone: true });
    const taken = await Promise.all(
      ['a', 'b', 'c'].map((holder) => takePlace(store, 'o', free(1), holder, NOW)),
    );
    expect(taken.filter((k) => k === 0)).toHaveLength(1);
  });

  it('gives a place left behind to one creation even when deletes read their filter apart', async () => {
    // A removal giving its place back while creations find it left behind: each read the place
    // held by the removed record, and a delete not claimed first removed the place the first
    // creation had just taken again, so a second took it too.
    for (let creations = 4; creations >= 1; creations--) {
      const store = new SplitDeletePlaces();
      await store.claimPlace({ _id: placeId('o', 0), holder: 'gone', at: NOW });
      store.holders.set('gone', { gone: true, place: 0 });
      const taken = await Promise.all([
        ...Array.from({ length: creations }, (_, i) =>
          takePlace(store, 'o', free(1), `c${i}`, NOW),
        ),
        givePlaceBack(store, 'o', { id: 'gone', place: 0 }, NOW),
      ]);
      const winners = taken.filter((k) => k === 0);
      expect(winners.length).toBeLessThanOrEqual(1);
      expect(store.heldBy('o')).toHaveLength(winners.length);
      expect(store.places.has(releaseId(placeId('o', 0), 'gone', 0))).toBe(true);
      expect(store.places.has(releaseId(placeId('o', 0), 'gone', 1))).toBe(false);
    }
  });
});

describe('releasePlace', () => {
  it('deletes once however many release at once, and keeps the claim', async () => {
    const store = new SplitDeletePlaces();
    await store.claimPlace({ _id: placeId('o', 0), holder: 'h', at: NOW });
    const deletePlace = jest.spyOn(store, 'deletePlace');
    await Promise.all(
      Array.from({ length: 5 }, () => releasePlace(store, placeId('o', 0), 'h', NOW)),
    );
    expect(deletePlace).toHaveBeenCalledTimes(1);
    expect(store.heldBy('o')).toEqual([]);
    expect([...store.places.keys()]).toEqual([releaseId(placeId('o', 0), 'h', 0)]);
  });

  it('takes its claim back when the delete fails, so that a retry deletes', async () => {
    const store = new MapPlaces();
    await store.claimPlace({ _id: placeId('o', 0), holder: 'h', at: NOW });
    const deletePlace = store.deletePlace.bind(store);
    jest
      .spyOn(store, 'deletePlace')
      .mockImplementationOnce(() => Promise.reject(new Error('down')))
      .mockImplementation(deletePlace);
    await expect(releasePlace(store, placeId('o', 0), 'h', NOW)).rejects.toThrow('down');
    expect([...store.places.keys()]).toEqual([placeId('o', 0)]);
    await releasePlace(store, placeId('o', 0), 'h', NOW);
    expect([...store.places.keys()]).toEqual([releaseId(placeId('o', 0), 'h', 0)]);
  });

  it('tries the same claim again when a failed delete took it back, never the next', async () => {
    const store = new MapPlaces();
    await store.claimPlace({ _id: placeId('o', 0), holder: 'h', at: NOW });
    const tick = () => new Promise((resolve) => setImmediate(resolve));
    // The second release reads the claim it lost after the first's failed delete took it back.
    const place = store.place.bind(store);
    jest.spyOn(store, 'place').mockImplementation(async (id) => {
      await tick();
      await tick();
      return place(id);
    });
    const deletePlace = store.deletePlace.bind(store);
    const deleted: string[] = [];
    jest
      .spyOn(store, 'deletePlace')
      .mockImplementationOnce(async () => {
        await tick();
        throw new Error('down');
      })
      .mockImplementation(async (id, holder) => {
        deleted.push(id);
        return deletePlace(id, holder);
      });
    const [failed, second] = await Promise.allSettled([
      releasePlace(store, placeId('o', 0), 'h', NOW),
      releasePlace(store, placeId('o', 0), 'h', NOW),
    ]);
    expect(failed.status).toBe('rejected');
    expect(second.status).toBe('fulfilled');
    await releasePlace(store, placeId('o', 0), 'h', NOW); // the failed one's retry
    expect(store.heldBy('o')).toEqual([]);
    // The failed delete's claim taken back, the second's delete of the place its only one.
    expect(deleted).toEqual([releaseId(placeId('o', 0), 'h', 0), placeId('o', 0)]);
    expect(store.places.has(releaseId(placeId('o', 0), 'h', 1))).toBe(false);
  });

  it('leaves the place to a fresh claim’s winner, and takes the next claim once it is PLACE_PENDING_MS old', async () => {
    const store = new MapPlaces();
    await store.claimPlace({ _id: placeId('o', 0), holder: 'h', at: NOW });
    // A release that claimed and died before deleting.
    await store.claimPlace({ _id: releaseId(placeId('o', 0), 'h', 0), holder: 'h', at: NOW });
    await releasePlace(store, placeId('o', 0), 'h', before(-(PLACE_PENDING_MS - 1)));
    expect(store.heldBy('o')).toEqual(['h']);
    await releasePlace(store, placeId('o', 0), 'h', before(-PLACE_PENDING_MS));
    expect(store.heldBy('o')).toEqual([]);
    expect(store.places.has(releaseId(placeId('o', 0), 'h', 1))).toBe(true);
  });
});

describe('createInPlace', () => {
  /** A creation of `holder` in `store` under a cap of 2, its record kept in `stored`. */
  const creation = (store: MapPlaces, holder: string, live: { place?: number }[] = []) => ({
    store,
    owner: 'o',
    cap: 2,
    live,
    holder,
    now: NOW,
    refused: (why: 'full' | 'busy') => new Error(why),
    insert: async (place: number) => {
      store.holders.set(holder, { gone: false, place });
      return place;
    },
    stored: async () => store.holders.has(holder),
  });

  it('refuses at once, trying no place, when the live records fill the cap', async () => {
    const store = new MapPlaces();
    const claimPlace = jest.spyOn(store, 'claimPlace');
    await expect(createInPlace(creation(store, 'a', [{ place: 0 }, {}]))).rejects.toThrow('full');
    expect(claimPlace).not.toHaveBeenCalled();
  });

  it('creates in the first free place, and refuses once creations under way hold the rest', async () => {
    const store = new MapPlaces();
    const results = await Promise.allSettled(
      ['a', 'b', 'c', 'd'].map((holder) => createInPlace(creation(store, holder))),
    );
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : r.reason.message))).toEqual([
      0,
      1,
      'busy',
      'busy',
    ]);
  });

  it('gives the place back after a failed insert, unless the record was written or cannot be read', async () => {
    const store = new MapPlaces();
    const failing = (holder: string, stored: () => Promise<boolean>) =>
      createInPlace({
        ...creation(store, holder),
        insert: () => Promise.reject(new Error('lost')),
        stored,
      });
    await expect(failing('x', async () => false)).rejects.toThrow('lost');
    expect(store.heldBy('o')).toEqual([]);
    await expect(failing('y', async () => true)).rejects.toThrow('lost');
    await expect(failing('z', () => Promise.reject(new Error('down')))).rejects.toThrow('lost');
    expect(store.heldBy('o')).toEqual(['y', 'z']);
  });
});

describe('capRefusals', () => {
  it('says how many the owner has, the cap, and how to make room; busy also asks for a retry', () => {
    const refused = capRefusals({
      owner: 'You',
      things: 'webhook endpoints',
      underWay: 'registrations',
      advice: 'delete one',
      error: (message) => new RangeError(message),
    });
    expect(refused('full', 7, 10)).toEqual(
      new RangeError('You already have 7 webhook endpoints (at most 10); delete one'),
    );
    expect(refused('busy', 7, 10).message).toBe(
      'You have 7 webhook endpoints and registrations under way hold the other places (at most 10); retry in a few seconds, or delete one',
    );
  });
});
