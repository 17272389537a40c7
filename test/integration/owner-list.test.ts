import { randomUUID } from 'node:crypto';
import type mongoose from 'mongoose';
import { CLOCK_SKEW_MS } from '../../libs/backfills';
import { OwnerList, defineOwnerListModels } from '../../libs/owner-list';
import { Turns } from '../../libs/turns';
import { isolation, openServiceDatabase } from '../support/stack';

/**
 * A user's list read by `_id` (libs/owner-list) on the real server: every item once, in the
 * order added, whatever the races and retries; pages newest first; the documents stored
 * before the list existed added once.
 */
const iso = isolation();
let conn: mongoose.Connection;
let list: OwnerList;
let models: ReturnType<typeof defineOwnerListModels>;

beforeAll(async () => {
  conn = await openServiceDatabase(iso, 'owner_list');
  models = defineOwnerListModels(conn, 'things');
  await Promise.all(Object.values(models).map((m) => m.createIndexes()));
  list = new OwnerList(() => models);
});

afterAll(async () => {
  await conn?.dropDatabase();
  await conn?.close();
});

/** Every item of the owner's list, newest first. */
async function all(ownerId: string, of: OwnerList = list): Promise<string[]> {
  const items: string[] = [];
  for await (const batch of of.newestFirst(ownerId)) items.push(...batch);
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

it('keeps every item once when two replicas add at once, each taking turns only with its own', async () => {
  const owner = randomUUID();
  const models = defineOwnerListModels(conn, 'things');
  const replicas = [
    new OwnerList(() => models, new Turns()),
    new OwnerList(() => models, new Turns()),
  ];
  const items = Array.from({ length: 12 }, () => randomUUID());
  await Promise.all(
    items.flatMap((item, i) =>
      [0, 1, 2].map((k) => replicas[(i + k) % 2].add(owner, item, new Date())),
    ),
  );
  const listed = await all(owner);
  expect(listed).toHaveLength(items.length);
  expect(new Set(listed)).toEqual(new Set(items));
});

it('inserts each entry at its first try when one process adds at once (appends take turns)', async () => {
  const owner = randomUUID();
  const models = defineOwnerListModels(conn, 'things');
  const inserts = jest.spyOn(models.Entry, 'create');
  const reads = jest.spyOn(models.Entry, 'findById');
  try {
    const one = new OwnerList(() => models);
    const items = Array.from({ length: 20 }, () => randomUUID());
    await Promise.all(items.map((item) => one.add(owner, item, new Date())));
    expect(inserts).toHaveBeenCalledTimes(items.length);
    // A first add claims its item just now: no entry of its own to look for.
    expect(reads).not.toHaveBeenCalled();
    expect(await all(owner, one)).toEqual([...items].reverse());
  } finally {
    jest.restoreAllMocks();
  }
});

it('adds an item once when a twin that found its claim adds it first', async () => {
  const owner = randomUUID();
  const models = defineOwnerListModels(conn, 'things');
  const create = models.Claim.create.bind(models.Claim);
  // This writer's claim is made; before its entry, a twin on another replica finds the claim
  // and adds the item's entry at the claim's number.
  jest.spyOn(models.Claim, 'create').mockImplementationOnce((async (doc: object) => {
    const made = await create(doc);
    await new OwnerList(() => models, new Turns()).add(owner, 'twin', new Date());
    return made;
  }) as never);
  try {
    const entry = await new OwnerList(() => models, new Turns()).add(owner, 'twin', new Date());
    expect(entry.n).toBe(1);
  } finally {
    jest.restoreAllMocks();
  }
  expect(await all(owner)).toEqual(['twin']);
});

it('passes the numbers other items took beyond a head that lags', async () => {
  const owner = randomUUID();
  const models = defineOwnerListModels(conn, 'things');
  // Entries whose head was never raised (their writer's last write lost).
  await models.Entry.insertMany(
    [1, 2, 3].map((n) => ({
      _id: `${owner}:${n}`,
      ownerId: owner,
      n,
      itemId: `old-${n}`,
      at: new Date(),
    })),
  );
  const entry = await new OwnerList(() => models).add(owner, 'new', new Date());
  expect(entry.n).toBe(4);
  expect(await all(owner)).toEqual(['new', 'old-3', 'old-2', 'old-1']);
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
  await list.backfill('start', () => stored(['old-1', 'old-2', 'new']));
  await list.backfill('start', () => stored(['never']));
  expect(await all(owner)).toEqual(['old-2', 'old-1', 'new']);
});

it('adds after a rolling update what was stored since the latest pass began, once each', async () => {
  const models = defineOwnerListModels(conn, 'rollout');
  await Promise.all(Object.values(models).map((m) => m.createIndexes()));
  const rolled = new OwnerList(() => models);
  const owner = randomUUID();
  const at = new Date();
  const stored = (names: string[]) =>
    (async function* () {
      for (const itemId of names) yield { ownerId: owner, itemId, at };
    })();
  const asked: (Date | null)[] = [];
  const reading = (names: string[]) => (since: Date | null) => (asked.push(since), stored(names));
  const began = Date.now();
  await rolled.backfill('start', reading(['old']));
  await rolled.backfill('start', reading(['never']));
  // A replica of the version before stores one without listing it; new code lists one.
  await rolled.add(owner, 'new', at);
  const second = reading(['old', 'unlisted', 'new']);
  await Promise.all([
    rolled.backfill('after-rollout', second),
    rolled.backfill('after-rollout', second),
  ]);
  const third = Date.now();
  await rolled.backfill('after-rollout', reading(['unlisted', 'later']));
  expect(await all(owner, rolled)).toEqual(['later', 'unlisted', 'new', 'old']);
  // The first pass read everything; the others from the latest pass's start, less the skew.
  expect(asked[0]).toBeNull();
  const since = asked.slice(1).map((d) => (d as Date).getTime());
  expect(since).toHaveLength(3);
  for (const s of since.slice(0, 2)) {
    expect(s).toBeGreaterThanOrEqual(began - CLOCK_SKEW_MS);
    expect(s).toBeLessThan(third - CLOCK_SKEW_MS);
  }
  expect(since[2]).toBeGreaterThan(since[0]);
  expect(since[2]).toBeLessThanOrEqual(third - CLOCK_SKEW_MS);
});

it('adds a batch in its order, each item once, whatever adds race it or retry it', async () => {
  const owner = randomUUID();
  const at = new Date();
  const batch = (names: string[]) => names.map((itemId) => ({ itemId, at }));
  await list.addAll(owner, batch(['a', 'b', 'c']));
  expect(await all(owner)).toEqual(['c', 'b', 'a']);
  // Two batches and single adds at once, some items in several of them, one batch retried.
  await Promise.all([
    list.addAll(owner, batch(['d', 'e', 'f'])),
    list.addAll(owner, batch(['g', 'h'])),
    list.add(owner, 'e', at),
    list.add(owner, 'i', at),
    list.addAll(owner, batch(['b', 'j'])),
  ]);
  await list.addAll(owner, batch(['d', 'e', 'f']));
  const listed = await all(owner);
  expect([...listed].sort()).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j']);
  const after = (x: string, y: string) => listed.indexOf(x) < listed.indexOf(y);
  expect(after('f', 'd') && after('h', 'g') && after('j', 'c')).toBe(true);
  expect(await list.length(owner)).toBe(10);
});

it('adds what was stored before it by batches, each owner in the order stored', async () => {
  const models = defineOwnerListModels(conn, 'batched');
  await Promise.all(Object.values(models).map((m) => m.createIndexes()));
  const batched = new OwnerList(() => models);
  const owners = [randomUUID(), randomUUID(), randomUUID()];
  // More than one batch of 500, the owners' items interleaved.
  const stored = Array.from({ length: 1_100 }, (_, i) => ({
    ownerId: owners[i % 3 === 0 ? 0 : i % 2 ? 1 : 2],
    itemId: `item-${i}`,
    at: new Date(),
  }));
  await batched.add(owners[1], 'item-1', new Date());
  await batched.backfill('start', () =>
    (async function* () {
      yield* stored;
    })(),
  );
  for (const owner of owners) {
    const expected = stored.filter((s) => s.ownerId === owner).map((s) => s.itemId);
    const listed: string[] = [];
    for await (const page of batched.newestFirst(owner)) listed.push(...page);
    expect(listed).toEqual(expected.reverse());
  }
});

it('fails a batch whose claims the database refused for more than duplicates, whichever came first', async () => {
  const owner = randomUUID();
  const [a, b] = [randomUUID(), randomUUID()];
  await list.add(owner, a, new Date());
  // The driver's error bears the first refusal's code: a duplicate (a's claim) hid the other.
  const refused = Object.assign(new Error('bulk write failed'), {
    code: 11000,
    writeErrors: [{ code: 11000 }, { code: 121, errmsg: 'Document failed validation' }],
  });
  const claims = jest.spyOn(models.Claim, 'insertMany').mockRejectedValueOnce(refused);
  try {
    await expect(
      list.addAll(owner, [
        { itemId: a, at: new Date() },
        { itemId: b, at: new Date() },
      ]),
    ).rejects.toBe(refused);
  } finally {
    claims.mockRestore();
  }
  // Nothing listed without its claim: b is added once its claim is.
  expect(await all(owner)).toEqual([a]);
  await list.addAll(owner, [{ itemId: b, at: new Date() }]);
  expect(await all(owner)).toEqual([b, a]);
});
