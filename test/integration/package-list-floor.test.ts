import { randomUUID } from 'node:crypto';
import { LIFT_AFTER_CLOSED, OwnerList, PENDING_ITEM_MS } from '../../libs/owner-list';
import { PackageStore, definePackageModels } from '../../services/package/store';
import { STORED_PACKAGE, useStoreDatabase } from '../support/store-database';

/**
 * `GET /api/packages` reads a user's list of packages down to its floor (libs/owner-list): on
 * the real server, what a list reads stops growing with the packages the user deleted or gave
 * to deliveries, and no open package is ever lost below the floor — returned by a delivery,
 * stored by an insert still running, or by one retried long after.
 */
const db = useStoreDatabase('package', definePackageModels);
const store = new PackageStore(() => db.models);
const list = new OwnerList(() => ({
  Entry: db.models.UserPackageEntry,
  Head: db.models.UserPackageHead,
  Claim: db.models.UserPackageClaim,
}));
const PACKAGE = STORED_PACKAGE;
const save = async (userId: string) => (await store.insert({ userId, ...PACKAGE }))._id;

/** The user's open package ids and how many packages the list read (a find each). */
async function listed(userId: string) {
  const { result, finds } = await db.countFinds('packages', () => store.listOpen(userId));
  return { ids: result.map((p) => p._id), reads: finds };
}

it('reads the open packages and a bounded few closed ones, not the history', async () => {
  const userId = randomUUID();
  const saveAndDelete = async (count: number) => {
    for (let i = 0; i < count; i++) await store.markDeleted(await save(userId));
  };
  await saveAndDelete(29);
  const kept = await save(userId);

  // The first read walks the whole history once and raises the floor past what it found closed.
  expect(await listed(userId)).toEqual({ ids: [kept], reads: 30 });
  expect(await listed(userId)).toEqual({ ids: [kept], reads: 1 });

  // Closed ones saved after an open one stay above the floor, up to a bound…
  await saveAndDelete(LIFT_AFTER_CLOSED - 1);
  expect(await listed(userId)).toEqual({ ids: [kept], reads: LIFT_AFTER_CLOSED });
  expect(await listed(userId)).toEqual({ ids: [kept], reads: LIFT_AFTER_CLOSED });
  // …past which the read adds the open one again at the top, and the floor passes them all.
  await saveAndDelete(1);
  expect(await listed(userId)).toEqual({ ids: [kept], reads: LIFT_AFTER_CLOSED + 1 });
  expect(await listed(userId)).toEqual({ ids: [kept], reads: 1 });

  await store.markDeleted(kept);
  expect(await listed(userId)).toEqual({ ids: [], reads: 1 });
  expect(await listed(userId)).toEqual({ ids: [], reads: 0 });
  // A package saved after the floor passed everything is listed.
  const fresh = await save(userId);
  expect(await listed(userId)).toEqual({ ids: [fresh], reads: 1 });
});

/** A delivery takes the packages as `package.assign` does. */
async function take(userId: string, packageIds: string[], deliveryId: string) {
  expect(await store.recordSelection(deliveryId, packageIds)).toBe('recorded');
  for (const id of packageIds) expect(await store.claim(id, userId, deliveryId)).toBe('taken');
  await store.markTaken(packageIds, deliveryId);
}

/** The delivery gives back what it holds as `package.release` does. */
async function giveBack(deliveryId: string) {
  const held = await store.claimedBy(deliveryId);
  await store.markReturned(held, deliveryId);
  await store.dropClaims(
    held.map((h) => h.packageId),
    deliveryId,
  );
}

it('lists packages given back by a delivery after the floor passed them, each once', async () => {
  const userId = randomUUID();
  const [a, b, c] = [await save(userId), await save(userId), await save(userId)];
  const deliveryId = randomUUID();
  await take(userId, [a, b], deliveryId);
  expect((await listed(userId)).ids).toEqual([c]);
  expect((await listed(userId)).reads).toBe(1);

  await giveBack(deliveryId);
  // A retry of the release adds nothing.
  await giveBack(deliveryId);
  expect((await listed(userId)).ids).toEqual([c, b, a]);
  expect(await store.savedCount(userId)).toBe(5);
  expect(await store.countOpen(userId)).toBe(3);
});

it('lists a package given back before any list once, though it has two entries', async () => {
  const userId = randomUUID();
  const [a, b, c] = [await save(userId), await save(userId), await save(userId)];
  const deliveryId = randomUUID();
  await take(userId, [a, b], deliveryId);
  await giveBack(deliveryId);
  expect(await store.savedCount(userId)).toBe(5);
  expect((await listed(userId)).ids).toEqual([c, b, a]);
  expect(await store.countOpen(userId)).toBe(3);
});

it('lists a package each time the same delivery gives it back', async () => {
  const userId = randomUUID();
  const a = await save(userId);
  const deliveryId = randomUUID();
  for (let round = 0; round < 3; round++) {
    await take(userId, [a], deliveryId);
    expect((await listed(userId)).ids).toEqual([]);
    await giveBack(deliveryId);
    expect((await listed(userId)).ids).toEqual([a]);
  }
});

it('loses no package given back while lists run at the same time', async () => {
  const userId = randomUUID();
  const saved: string[] = [];
  for (let i = 0; i < 20; i++) saved.push(await save(userId));
  const deliveries = saved.map(() => randomUUID());
  await Promise.all(saved.map((id, i) => take(userId, [id], deliveries[i])));
  expect((await listed(userId)).ids).toEqual([]);

  // Every list here may raise the floor past packages that are being given back.
  await Promise.all([
    ...deliveries.map((deliveryId) => giveBack(deliveryId)),
    ...saved.map(() => store.listOpen(userId)),
  ]);
  const after = (await listed(userId)).ids;
  expect(after).toHaveLength(20);
  expect(new Set(after)).toEqual(new Set(saved));
  expect(await store.savedCount(userId)).toBe(40);
});

it('keeps what an insert still running will store, and lists what one retried late stores', async () => {
  const userId = randomUUID();
  // An insert that has written its entry and not yet its package.
  const running = randomUUID();
  await list.add(userId, running, new Date());
  // One that died long ago after writing its entry, and will be retried.
  const retried = randomUUID();
  await list.add(userId, retried, new Date(Date.now() - PENDING_ITEM_MS - 1000));
  await store.markDeleted(await save(userId));

  expect((await listed(userId)).ids).toEqual([]);
  await db.models.Package.create({ _id: running, userId, ...PACKAGE });
  expect((await listed(userId)).ids).toEqual([running]);

  await store.insert({ _id: retried, userId, ...PACKAGE });
  expect((await listed(userId)).ids).toEqual([retried, running]);
  expect((await listed(userId)).ids).toEqual([retried, running]);
});

it('lists what a store tried a third time stores, after a read let both entries of its tries go', async () => {
  const userId = randomUUID();
  const thrice = randomUUID();
  // Two tries that died after writing their entries, long ago: the first's, and the late one's.
  const long = new Date(Date.now() - PENDING_ITEM_MS - 1000);
  await list.add(userId, thrice, long);
  await list.add(userId, thrice, long, 'stored-late');
  await store.markDeleted(await save(userId));
  // A whole read finds nothing live and raises the floor past all three.
  expect((await listed(userId)).ids).toEqual([]);
  expect((await listed(userId)).reads).toBe(0);

  await store.insert({ _id: thrice, userId, ...PACKAGE });
  expect((await listed(userId)).ids).toEqual([thrice]);
});

it('after a rollout, offers the lists only the packages an older version saved', async () => {
  await store.listStoredPackages('start');
  const userId = randomUUID();
  const ours = await save(userId);
  // A replica of a version before the lists saves a package without its entry.
  const theirs = randomUUID();
  await db.models.Package.collection.insertOne({
    ...PACKAGE,
    _id: theirs as never,
    userId,
    p2pDeliveryId: null,
    deletedAt: null,
    createdAt: new Date(),
    updatedAt: new Date(),
  });
  // A pass claims each package it offers the list, listed already or not.
  const offered = await db.idsInserted('user_packages_claims', () =>
    store.listStoredPackages('after-rollout'),
  );
  expect(offered).toContain(`${userId}:${theirs}`);
  expect(offered.filter((claim) => claim.includes(ours))).toEqual([]);
  expect((await listed(userId)).ids.sort()).toEqual([ours, theirs].sort());
});
