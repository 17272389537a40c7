import { randomUUID } from 'node:crypto';
import { Schema, type Connection } from 'mongoose';
import { MARK_GRACE_MS, WorkMarks } from '../../libs/work-marks';
import { useStoreDatabase } from '../support/store-database';

/**
 * The marks of the items with work left (libs/work-marks), on the real server: a stored item
 * with work always keeps a mark, whatever a reader does between the writes, and a mark whose
 * item never came is let go after its grace.
 */
interface Item {
  _id: string;
  work: boolean;
  at: Date;
}
interface ItemMark {
  _id: string;
  at: Date;
}

const plain = { versionKey: false } as const;
const define = (connection: Connection) => ({
  Item: connection.model(
    'Item',
    new Schema({ _id: String, work: Boolean, at: Date }, plain),
    'items',
  ),
  Mark: connection.model('Mark', new Schema({ _id: String, at: Date }, plain), 'item_marks'),
});
const db = useStoreDatabase('work-marks', define);

const GRACE_MS = 60_000;
let marks: WorkMarks<Item, ItemMark>;
const read = async (id: string) => (await db.models.Item.findById(id).lean()) as Item | null;

const marksOf = {
  marks: () => db.models.Mark,
  markOf: (item: Item) => ({ _id: item._id, at: item.at }),
  read,
  hasWork: (item: Item) => item.work,
  markedAt: (mark: ItemMark) => mark.at,
  graceMs: GRACE_MS,
  backfilled: '$marked',
};

beforeAll(() => {
  marks = new WorkMarks<Item, ItemMark>(marksOf);
});

const item = (work = true, at = new Date()): Item => ({ _id: randomUUID(), work, at });
const isMarked = async (id: string) => (await db.models.Mark.exists({ _id: id })) !== null;
const store = (i: Item) => db.models.Item.create(i).then(() => true);

it('marks an item with work around its store, and none without', async () => {
  const [busy, idle] = [item(), item(false)];
  expect(await marks.storing([busy, idle], async () => (await store(busy)) && store(idle))).toBe(
    true,
  );
  expect(await isMarked(busy._id)).toBe(true);
  expect(await isMarked(idle._id)).toBe(false);
});

it('answers what was stored when only the mark after the store fails, within half the grace; past it, the failure', async () => {
  const busy = (error: string) => () => Promise.reject(new Error(error));
  // The first write goes through; the second, after the store, meets a busy database.
  const failSecond = () => {
    const model = db.models.Mark;
    const insertMany = model.insertMany.bind(model) as (docs: unknown) => never;
    jest
      .spyOn(model, 'insertMany')
      .mockImplementationOnce(insertMany)
      .mockImplementationOnce(busy('the database is busy'));
  };
  const fresh = item();
  failSecond();
  try {
    expect(await marks.storing([fresh], () => store(fresh))).toBe(true);
  } finally {
    jest.restoreAllMocks();
  }
  expect(await read(fresh._id)).not.toBeNull();
  expect(await isMarked(fresh._id)).toBe(true);
  // A mark an earlier try left, as old as that try, which a reader may have ended meanwhile:
  // this try's item is fresh, but the mark is not its own.
  const retried = item();
  await db.models.Mark.create({ _id: retried._id, at: new Date(Date.now() - GRACE_MS - 1000) });
  failSecond();
  try {
    await expect(marks.storing([retried], () => store(retried))).rejects.toThrow(
      'the database is busy',
    );
  } finally {
    jest.restoreAllMocks();
  }
  // A mark a reader may have ended: the write after the store is what keeps the item marked.
  const old = item(true, new Date(Date.now() - GRACE_MS / 2 - 1000));
  failSecond();
  try {
    await expect(marks.storing([old], () => store(old))).rejects.toThrow('the database is busy');
  } finally {
    jest.restoreAllMocks();
  }
  // With the longer grace counted from `markedAt`: a replica of the version before lets a mark
  // go 60 s after its item's time, so an item older than half that is not answered as marked.
  const longer = new WorkMarks<Item, ItemMark>({ ...marksOf, graceMs: MARK_GRACE_MS });
  const older = item(true, new Date(Date.now() - 40_000));
  failSecond();
  try {
    await expect(longer.storing([older], () => store(older))).rejects.toThrow(
      'the database is busy',
    );
  } finally {
    jest.restoreAllMocks();
  }
});

it('keeps the mark of an item not stored yet through its grace, and restores one let go before the store', async () => {
  const waiting = item();
  await marks.storing([waiting], async () => {
    // A reader between the two writes: within the grace, the mark stays.
    await marks.release({ _id: waiting._id, at: waiting.at }, null, new Date());
    expect(await isMarked(waiting._id)).toBe(true);
    // After it (a writer that paused that long), it goes…
    const late = new Date(Date.now() + GRACE_MS + 1);
    await marks.release({ _id: waiting._id, at: waiting.at }, null, late);
    expect(await isMarked(waiting._id)).toBe(false);
    return store(waiting);
  });
  // …and the write after the store puts it back.
  expect(await isMarked(waiting._id)).toBe(true);
});

it('keeps the mark of an item stored while sweeps end a stopped writer’s mark of the same id', async () => {
  // A writer that stopped after its mark, long ago; this one stores the same item now.
  const stopped = item(true, new Date(Date.now() - GRACE_MS - 1000));
  await marks.mark([stopped]);
  const now = { ...stopped, at: new Date() };
  // One sweep ends the old mark before this writer's first write…
  await marks.release(stopped, null, new Date());
  await marks.storing([now], async () => {
    // …another, which judged the same old mark, deletes by `_id` this writer's new one.
    await marks.release(stopped, null, new Date());
    expect(await isMarked(now._id)).toBe(false);
    return store(now);
  });
  expect(await isMarked(now._id)).toBe(true);
});

it('ends the mark of an item whose work is done, and keeps one whose work came back before the delete', async () => {
  const done = item();
  await marks.storing([done], () => store(done));
  await db.models.Item.updateOne({ _id: done._id }, { $set: { work: false } });
  await marks.release(done, await read(done._id), new Date());
  expect(await isMarked(done._id)).toBe(false);

  // Read as done, then a write begun earlier lands with its work: read again, it is marked.
  const back = item();
  await marks.storing([back], () => store(back));
  const seenDone = { ...back, work: false };
  await marks.release(seenDone, seenDone, new Date());
  expect(await isMarked(back._id)).toBe(true);
});

it('lets go of a mark whose item was never stored, after the grace only', async () => {
  const never = item(true, new Date(Date.now() - GRACE_MS - 1000));
  await marks.mark([never]);
  await marks.release(never, null, new Date());
  expect(await isMarked(never._id)).toBe(false);
});

it('marks the items with work stored before the marks existed, once', async () => {
  await db.models.Mark.deleteMany({});
  const before = [item(), item(false), item()];
  await db.models.Item.insertMany(before);
  const stored = () => db.models.Item.find({ _id: { $in: before.map((b) => b._id) } }).lean();
  const scan = async function* () {
    for (const i of await stored()) yield i as Item;
  };
  await Promise.all([marks.markStored(scan()), marks.markStored(scan())]);
  const marked = (await db.models.Mark.find({ _id: { $ne: '$marked' } }).lean()).map((m) => m._id);
  expect(marked.sort()).toEqual([before[0]._id, before[2]._id].sort());
  const after = item();
  await db.models.Item.create(after);
  await marks.markStored(scan());
  expect(await isMarked(after._id)).toBe(false);
});
