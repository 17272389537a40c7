import { Schema, type Connection } from 'mongoose';
import { setByIdUncast } from '../../libs/mongo';
import { useStoreDatabase } from '../support/store-database';

/** `setByIdUncast` (libs/mongo): a `$set` by `_id` that mongoose does not cast, on the real server. */
const define = (connection: Connection) => ({
  Doc: connection.model(
    'Doc',
    new Schema(
      { _id: String, stage: String, at: Date, keep: Number },
      { versionKey: false, strict: false },
    ),
    'docs',
  ),
});
const db = useStoreDatabase('set-uncast', define);

it('sets the fields as given, nested values and dates included, and leaves the rest', async () => {
  await db.models.Doc.create({ _id: 'a', stage: 'STARTED', at: new Date(0), keep: 1 });
  const at = new Date('2026-11-29T12:00:00Z');
  await setByIdUncast(db.models.Doc, 'a', {
    stage: 'READY',
    at,
    built: { delivery: { id: 'd', fee: { kobo: 150_000 }, steps: [{ at }] }, note: undefined },
  });
  expect(await db.models.Doc.findById('a').lean()).toEqual({
    _id: 'a',
    stage: 'READY',
    at,
    keep: 1,
    // An undefined field is left out.
    built: { delivery: { id: 'd', fee: { kobo: 150_000 }, steps: [{ at }] } },
  });
});

it('creates nothing for an `_id` not stored', async () => {
  await setByIdUncast(db.models.Doc, 'missing', { stage: 'READY' });
  expect(await db.models.Doc.findById('missing').lean()).toBeNull();
});
