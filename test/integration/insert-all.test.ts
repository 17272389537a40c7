import { Schema } from 'mongoose';
import type mongoose from 'mongoose';
import { insertAll } from '../../libs/mongo';
import { isolation, openServiceDatabase } from '../support/stack';

/**
 * `insertAll` writes documents in one round trip, leaving those already there (a repeat) as
 * they are, on the real server; anything else it meets is thrown, never left unsaid.
 */
const iso = isolation();
let conn: mongoose.Connection;
const thingSchema = new Schema(
  { _id: String, name: { type: String, required: true } },
  { versionKey: false },
);
const thingModel = (connection: mongoose.Connection) => connection.model('Thing', thingSchema);
let Thing: ReturnType<typeof thingModel>;

beforeAll(async () => {
  conn = await openServiceDatabase(iso, 'insert_all');
  Thing = thingModel(conn);
});
afterAll(async () => {
  await conn?.dropDatabase();
  await conn?.close();
});

it('leaves the documents there already as they are, and writes the others', async () => {
  expect(await insertAll(Thing, [{ _id: 'a', name: 'first' }])).toBe(true);
  expect(
    await insertAll(Thing, [
      { _id: 'a', name: 'again' },
      { _id: 'b', name: 'second' },
    ]),
  ).toBe(false);
  const stored = await Thing.find().sort({ _id: 1 }).lean();
  expect(stored.map((t) => [t._id, t.name])).toEqual([
    ['a', 'first'],
    ['b', 'second'],
  ]);
});

it('throws for a document its schema refuses rather than leave it out unsaid', async () => {
  await expect(insertAll(Thing, [{ _id: 'c', name: 'third' }, { _id: 'd' }])).rejects.toThrow(
    /name/,
  );
});

it('throws for a refused document beside a duplicate (a retry of the batch)', async () => {
  await insertAll(Thing, [{ _id: 'e', name: 'fifth' }]);
  // The schema's refusal, not the duplicate's error it came with.
  await expect(insertAll(Thing, [{ _id: 'e', name: 'fifth' }, { _id: 'f' }])).rejects.toThrow(
    /name/,
  );
  expect(await Thing.exists({ _id: 'f' })).toBeNull();
});
