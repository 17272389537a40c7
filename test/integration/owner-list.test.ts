import { randomUUID } from 'node:crypto';
import type mongoose from 'mongoose';
import { OwnerList, defineOwnerListModels } from '../../libs/owner-list';
import { isolation, openServiceDatabase } from '../support/stack';

/**
 * A user's list read by `_id` (libs/owner-list) on the real server: every item once, in the
 * order added, whatever the races and retries; pages newest first; the documents stored
 * before the list existed added once.
 */
const iso = isolation();
let conn: mongoose.Connection;
let list: OwnerList;

beforeAll(async () => {
  conn = await openServiceDatabase(iso, 'owner_list');
  const models = defineOwnerListModels(conn, 'things');
  await Promise.all(Object.values(models).map((m) => m.createIndexes()));
  list = new OwnerList(() => models);
});

afterAll(async () => {
  await conn?.dropDatabase();
  await conn?.close();
});

/** Every item of the owner's list, newest first. */
async function all(ownerId: string): Promise<string[]> {
  const items: string[] = [];
  for await (const batch of list.newestFirst(ownerId)) items.push(...batch);
  return items;
}

it('keeps every item once when items are added at once, and the same item again', async () => {
  const owner = randomUUID();
  const items = Array.from({ length: 12 }, () => randomUUID());
  // Each item added three times at once: a retry racing its first attempt.
  await Promise.all(
    items.flatMap((item) => [1, 2, 3].map(() => list.add(owner, item, new Date()))),
  );
  const listed = await all(owner);
  expect(listed).toHaveLength(items.length);
  expect(new Set(listed)).toEqual(new Set(items));
  expect(await list.length(owner)).toBe(items.length);
});

it('pages newest first by offset and limit, and keeps owners apart', async () => {
  const owner = randomUUID();
  const other = randomUUID();
  const items = Array.from({ length: 7 }, (_, i) => `item-${i}`);
  for (const item of items) {
    await list.add(owner, item, new Date());
    await list.add(other, `${item}-other`, new Date());
  }
  expect(await list.page(owner, { offset: 0, limit: 3 })).toEqual(['item-6', 'item-5', 'item-4']);
  expect(await list.page(owner, { offset: 5, limit: 3 })).toEqual(['item-1', 'item-0']);
  expect(await list.page(owner, { offset: 7, limit: 3 })).toEqual([]);
  expect(await all(randomUUID())).toEqual([]);
});

it('adds what was stored before it once, oldest first, and only on its first run', async () => {
  const owner = randomUUID();
  await list.add(owner, 'new', new Date());
  const stored = (names: string[]) =>
    (async function* () {
      for (const itemId of names) yield { ownerId: owner, itemId, at: new Date() };
    })();
  await list.backfill(stored(['old-1', 'old-2', 'new']));
  await list.backfill(stored(['never']));
  expect(await all(owner)).toEqual(['old-2', 'old-1', 'new']);
});
