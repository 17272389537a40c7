import mongoose from 'mongoose';
import type { ServiceBroker } from 'moleculer';
import { eventually } from '../support/eventually';
import { brokerWithOps, count, samples } from '../support/metrics';
import { isolation } from '../support/stack';
import {
  CLAIM_END_KEPT_MS,
  CLAIM_END_LEASE_MS,
  ServiceDatabase,
  claimEnd,
  defineClaimEndModel,
  pruneClaimEnds,
} from '../../libs/mongo';

/**
 * Claims of ends (`claimEnd`) are deleted once `claimEnd` no longer reads them (decision 133),
 * on the real server: an instance goes whole once its last attempt is old, never beside a later
 * attempt still in its lease, and a running service prunes its own.
 */
const iso = isolation();
const define = (connection: mongoose.Connection) => ({
  Ends: defineClaimEndModel(connection, 'TestEnd', 'test_ends'),
  Thing: connection.model('Thing', new mongoose.Schema({ _id: String, at: Date })),
});
const database = (service: string) =>
  new ServiceDatabase(
    {
      mongoUrl: process.env.MONGO_URL as string,
      mongoDbPrefix: iso.dbPrefix,
      mongoTimeoutMs: 2_000,
    },
    service,
    define,
    { pruneEveryMs: 100 },
  );
/** Pruned by nothing but the test. */
const db = database('ends');
/** A running service's, pruned every 100 ms. */
const served = database('pruning');
let broker: ServiceBroker;
let opsUrl: string;

beforeAll(async () => {
  await db.connect();
  ({ broker, opsUrl } = await brokerWithOps(iso.namespace));
  broker.createService({ name: 'pruning', mixins: [served.mixin()] });
  await broker.start();
});
afterAll(async () => {
  await Promise.all([db.dropDatabase(), served.dropDatabase()]);
  await Promise.all([db.close(), broker.stop()]);
});

const now = new Date();
const ago = (ms: number) => new Date(now.getTime() - ms);
const old = ago(CLAIM_END_KEPT_MS + 1_000);
const idsOf = async (Ends: typeof db.models.Ends, prefix = '') =>
  (await Ends.find({ _id: new RegExp(`^${prefix}`) }, { _id: 1 }).lean())
    .map(({ _id }) => String(_id))
    .sort();

it('deletes the claims of an instance once its last is old, and none below an attempt still in its lease', async () => {
  const { Ends } = db.models;
  await Ends.insertMany([
    { _id: 'once:a:1', at: old },
    // Taken over twice, both long ago.
    { _id: 'twice:b:1', at: ago(CLAIM_END_KEPT_MS + 90_000) },
    { _id: 'twice:b:2', at: old },
    // Taken over just now, by a caller that waited long for its end.
    { _id: 'late:c:1', at: old },
    { _id: 'late:c:2', at: ago(1_000) },
    // Past its lease, not yet old.
    { _id: 'recent:d:1', at: ago(CLAIM_END_LEASE_MS + 1_000) },
  ]);
  expect(await pruneClaimEnds(Ends, now)).toEqual({ read: 4, deleted: 3 });
  expect(await idsOf(Ends)).toEqual(['late:c:1', 'late:c:2', 'recent:d:1']);
  // `claimEnd` answers as it would have: the later attempt still keeps every other caller out.
  expect(await claimEnd(Ends, 'late:c', () => now)).toBe(false);
  expect(await claimEnd(Ends, 'once:a', () => now)).toBe(true);
  expect(await claimEnd(Ends, 'recent:d', () => now)).toBe(true);
  expect(await idsOf(Ends, 'recent:d')).toEqual(['recent:d:1', 'recent:d:2']);
});

it('prunes the claims of ends of a running service, and nothing of its other models', async () => {
  const { Ends, Thing } = served.models;
  await Ends.insertMany([
    { _id: 'service:e:1', at: old },
    { _id: 'service:f:1', at: ago(1_000) },
  ]);
  await Thing.create({ _id: 'service:g:1', at: old });
  await eventually(async () => expect(await idsOf(Ends)).toEqual(['service:f:1']));
  expect(await Thing.countDocuments({ _id: 'service:g:1' })).toBe(1);
  const pruned = await samples(opsUrl, 'waybill_db_claim_ends_pruned_total');
  expect(count(pruned, { database: served.name, collection: 'test_ends' })).toBe(1);
});
