import { randomUUID } from 'node:crypto';
import type mongoose from 'mongoose';
import {
  createInPlace,
  definePlaceModel,
  givePlaceBack,
  PLACE_PENDING_MS,
  placeId,
  releaseId,
  releasePlace,
  StoredPlaces,
  takePlace,
  type PlaceHolder,
  type PlaceModel,
} from '../../libs/places';
import { isolation, openServiceDatabase } from '../support/stack';

/**
 * libs/places on the real server: a place's insert is the lock, so creations at once take
 * each place once and never more places than the cap (test/unit/libs/places.test.ts holds the
 * rules by property on a map).
 */
const iso = isolation();
let conn: mongoose.Connection;
let store: StoredPlaces;
let model: PlaceModel;
/** The records that hold places, as the service's own collection would tell them. */
const holders = new Map<string, PlaceHolder>();

beforeAll(async () => {
  conn = await openServiceDatabase(iso, 'places');
  model = definePlaceModel(conn, 'TestPlace', 'test_places');
  store = new StoredPlaces(
    () => model,
    async (id) => holders.get(id) ?? null,
  );
});

afterAll(async () => {
  await conn?.dropDatabase();
  await conn?.close();
});

describe('places on the real server', () => {
  it('go one to each of creations at once, never more than there are', async () => {
    const owner = randomUUID();
    const taken = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        takePlace(store, owner, { count: 10, held: new Set() }, `h${i}`, new Date()),
      ),
    );
    const held = taken.filter((k): k is number => k !== undefined).sort((a, b) => a - b);
    expect(held).toEqual([...Array(10).keys()]);
    const stored = await Promise.all(held.map((k) => store.place(placeId(owner, k))));
    expect(new Set(stored.map((p) => p?.holder)).size).toBe(10);
  });

  it('are given back only by the record that holds them', async () => {
    const owner = randomUUID();
    expect(await takePlace(store, owner, { count: 1, held: new Set() }, 'holder', new Date())).toBe(
      0,
    );
    await releasePlace(store, placeId(owner, 0), 'someone-else', new Date());
    expect((await store.place(placeId(owner, 0)))?.holder).toBe('holder');
    await givePlaceBack(store, owner, { id: 'holder', place: 0 });
    expect(await store.place(placeId(owner, 0))).toBeNull();
  });

  it('are given back once while creations take them for left behind, the release’s claim kept', async () => {
    const owner = randomUUID();
    const place = placeId(owner, 0);
    const one = () => ({ count: 1, held: new Set<number>() });
    expect(await takePlace(store, owner, one(), 'removed', new Date())).toBe(0);
    holders.set('removed', { gone: true, place: 0 });
    const taken = await Promise.all([
      ...Array.from({ length: 8 }, (_, i) => takePlace(store, owner, one(), `c${i}`, new Date())),
      givePlaceBack(store, owner, { id: 'removed', place: 0 }),
    ]);
    const winners = taken.flatMap((k, i) => (k === 0 ? [`c${i}`] : []));
    expect(winners.length).toBeLessThanOrEqual(1);
    expect((await store.place(place))?.holder).toBe(winners[0]);
    expect(await model.countDocuments({ _id: releaseId(place, 'removed', 0) })).toBe(1);
    expect(await model.countDocuments({ _id: releaseId(place, 'removed', 1) })).toBe(0);
  });

  it('held by a release that claimed and stopped are freed PLACE_PENDING_MS later', async () => {
    const owner = randomUUID();
    const place = placeId(owner, 0);
    const taken = new Date(Date.now() - PLACE_PENDING_MS);
    await store.claimPlace({ _id: place, holder: 'removed', at: taken });
    await store.claimPlace({ _id: releaseId(place, 'removed', 0), holder: 'removed', at: taken });
    await givePlaceBack(store, owner, { id: 'removed', place: 0 });
    expect(await store.place(place)).toBeNull();
    expect(await model.countDocuments({ _id: releaseId(place, 'removed', 1) })).toBe(1);
  });

  it('hold a cap exactly for creations at once, and take a removed record’s place again', async () => {
    const owner = randomUUID();
    const cap = 5;
    const stored = new Set<string>();
    const create = (holder: string) =>
      createInPlace({
        store,
        owner,
        cap,
        live: [],
        holder,
        now: new Date(),
        refused: (why: 'full' | 'busy') => new Error(why),
        insert: async (place) => {
          holders.set(holder, { gone: false, place });
          stored.add(holder);
          return place;
        },
        stored: async () => stored.has(holder),
      });
    const results = await Promise.allSettled(Array.from({ length: 16 }, (_, i) => create(`c${i}`)));
    const created = results.filter((r) => r.status === 'fulfilled');
    expect(created).toHaveLength(cap);
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(16 - cap);

    // One removed without giving its place back (stopped half-way): its place is taken again.
    const [removed] = [...stored];
    holders.set(removed, { gone: true, place: holders.get(removed)?.place });
    await expect(create('after')).resolves.toBe(holders.get(removed)?.place);
    await expect(create('one-more')).rejects.toThrow('busy');
  });

  it('give a place back when the record’s insert fails, but not when its write landed', async () => {
    const owner = randomUUID();
    const failing = (holder: string, landed: boolean) =>
      createInPlace({
        store,
        owner,
        cap: 1,
        live: [],
        holder,
        now: new Date(),
        refused: (why: 'full' | 'busy') => new Error(why),
        insert: async () => {
          throw new Error('lost');
        },
        stored: async () => landed,
      });
    await expect(failing('not-written', false)).rejects.toThrow('lost');
    expect(await store.place(placeId(owner, 0))).toBeNull();
    await expect(failing('written', true)).rejects.toThrow('lost');
    expect((await store.place(placeId(owner, 0)))?.holder).toBe('written');
  });
});
