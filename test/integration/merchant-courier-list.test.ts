import { randomUUID } from 'node:crypto';
import * as mongo from '../../libs/mongo';
import { PENDING_ITEM_MS } from '../../libs/owner-list';
import { CourierStore, defineMatchingModels } from '../../services/courier-matching/store';
import { useStoreDatabase } from '../support/store-database';

/**
 * A merchant's couriers are read through its list of additions (libs/owner-list), each link
 * and courier by `_id` (decision 72), on the real server: links stored before the list existed
 * are added once at start, removed ones are passed over and then left below the floor, and the
 * answer stays oldest addition first.
 */
const db = useStoreDatabase('matching', defineMatchingModels);
const store = new CourierStore(() => db.models);

const newCourier = async () =>
  (
    await store.create({
      _id: randomUUID(),
      name: 'Ada',
      phone: '+2348012345678',
      profilePhoto: null,
      fleet: {
        typeId: randomUUID(),
        regNo: randomUUID(),
        make: 'Honda',
        model: 'Ace',
        colour: 'Red',
      },
      active: true,
    })
  )._id;

/** The merchant's courier ids and how many links the read judged (a find each). */
async function listed(userId: string) {
  const read = () => store.merchantCouriers(userId);
  const { result, finds } = await db.countFinds('merchant_couriers', read);
  return { ids: result.map((c) => c._id), reads: finds };
}

it('adds the links stored before the list existed, once, oldest first', async () => {
  const userId = randomUUID();
  const [a, b, c] = [await newCourier(), await newCourier(), await newCourier()];
  const at = Date.now() - 60_000;
  await db.models.MerchantCourier.collection.insertMany(
    [b, a, c].map((courierId, i) => ({
      _id: `${userId}:${courierId}` as never,
      userId,
      courierId,
      createdAt: new Date(at + i),
    })),
  );
  expect((await listed(userId)).ids).toEqual([]);
  await store.listStoredLinks('start');
  await store.listStoredLinks('start');
  expect((await listed(userId)).ids).toEqual([b, a, c]);
  expect(await store.placesOnList(userId)).toHaveLength(3);
  const d = await newCourier();
  expect(await store.addToList(userId, d, 0)).toBe(true);
  expect(await store.addToList(userId, d, 0)).toBe(false);
  expect((await listed(userId)).ids).toEqual([b, a, c, d]);
});

it('reads the live links and a bounded few removed ones, not the history', async () => {
  const userId = randomUUID();
  const removed = await Promise.all(Array.from({ length: 20 }, () => newCourier()));
  for (const id of removed) await store.addToList(userId, id, 0);
  const kept = await newCourier();
  await store.addToList(userId, kept, 0);
  for (const id of removed) await store.removeFromList(userId, id);
  // Removed moments ago, their additions may still be waiting for links: each is read.
  expect(await listed(userId)).toEqual({ ids: [kept], reads: 21 });
  // Past the wait they are closed, and the floor rises past them to the live one (closed
  // additions above live ones are passed over up to a bound, then the live ones lifted).
  const later = Date.now() + PENDING_ITEM_MS;
  const clock = jest.spyOn(Date, 'now').mockReturnValue(later);
  try {
    expect(await listed(userId)).toEqual({ ids: [kept], reads: 21 });
    expect(await listed(userId)).toEqual({ ids: [kept], reads: 1 });
  } finally {
    clock.mockRestore();
  }
  // A removed courier added again is listed above the floor, after the older one.
  await store.addToList(userId, removed[3], 0);
  expect((await listed(userId)).ids).toEqual([kept, removed[3]]);
});

it('after a rollout, offers its list only the links an older version stored', async () => {
  await store.listStoredLinks('start');
  const userId = randomUUID();
  const [ours, theirs] = [await newCourier(), await newCourier()];
  expect(await store.addToList(userId, ours, 0)).toBe(true);
  // A replica of a version before the list stores a link without its addition, after ours:
  // a millisecond on at least, or the two would be ordered by their random ids.
  await db.models.MerchantCourier.collection.insertOne({
    _id: `${userId}:${theirs}` as never,
    userId,
    courierId: theirs,
    createdAt: new Date(Date.now() + 1),
  });
  // A pass claims each link it offers the list, listed already or not.
  const offered = await db.idsInserted('merchant_courier_list_claims', () =>
    store.listStoredLinks('after-rollout'),
  );
  expect(offered).toContain(`${userId}:${theirs}`);
  expect(offered.filter((claim) => claim.includes(ours))).toEqual([]);
  expect((await listed(userId)).ids).toEqual([ours, theirs]);
});

it('never removes a link added again while a removal of the one before waited past its lease', async () => {
  const userId = randomUUID();
  const courierId = await newCourier();
  expect(await store.addToList(userId, courierId, 0, `${userId}:${courierId}:first`)).toBe(true);
  // The slow removal read the first addition's link and claimed its end, then waited (a
  // busy database) past its claim's lease...
  const readFirst = await store.linkOf(userId, courierId);
  // ...meanwhile another removal took over and removed it, and the courier was added again.
  expect(await store.removeFromList(userId, courierId)).not.toBeNull();
  expect(await store.addToList(userId, courierId, 0, `${userId}:${courierId}:second`)).toBe(true);

  const read = jest.spyOn(store, 'linkOf').mockResolvedValueOnce(readFirst);
  const claimed = jest.spyOn(mongo, 'claimEnd').mockResolvedValueOnce(true);
  try {
    expect(await store.removeFromList(userId, courierId)).toBeNull();
  } finally {
    read.mockRestore();
    claimed.mockRestore();
  }
  expect(await store.isOnList(userId, courierId)).toBe(true);
  expect((await store.linkOf(userId, courierId))?.holder).toBe(`${userId}:${courierId}:second`);
});
