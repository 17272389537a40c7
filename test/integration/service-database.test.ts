import mongoose from 'mongoose';
import type { ServiceBroker } from 'moleculer';
import { brokerWithOps, count, samples } from '../support/metrics';
import { eventually } from '../support/eventually';
import { isolation, type Isolation } from '../support/stack';
import { ServiceDatabase } from '../../libs/mongo';

/** A database of one `Thing` model for `service`, its server probed every 100 ms when lost. */
function thingsDatabase(iso: Isolation, service: string, dbCommandMetrics = false) {
  return new ServiceDatabase(
    {
      mongoUrl: process.env.MONGO_URL as string,
      mongoDbPrefix: iso.dbPrefix,
      mongoTimeoutMs: 1_000,
      dbCommandMetrics,
    },
    service,
    (connection) => ({ Thing: connection.model('Thing', new mongoose.Schema({ n: Number })) }),
    { probeEveryMs: 100 },
  );
}

/** A service's database connection against the real server. */
describe('ServiceDatabase', () => {
  const iso = isolation();
  const warnings: unknown[][] = [];
  const db = thingsDatabase(iso, 'probe');

  afterAll(async () => {
    await db.dropDatabase();
    await db.close();
  });

  it('reopens a connection that stays down while the server answers', async () => {
    const { Thing } = await db.connect({ warn: (...args: unknown[]) => warnings.push(args) });
    await Thing.create({ n: 1 });
    // What the driver's lost server looks like from here (libs/mongo, tryServer): the
    // connection says it is down, and nothing it hears from the server will change that.
    // mongoose sets readyState itself; its type says read-only for that reason.
    const connection = (db as unknown as { connection: { readyState: number } }).connection;
    connection.readyState = mongoose.ConnectionStates.disconnected;
    expect(db.connected).toBe(false);

    await eventually(() => expect(db.connected).toBe(true), { timeout: 10_000, interval: 50 });
    expect(await Thing.countDocuments()).toBe(1);
    expect(warnings).toEqual([[expect.stringMatching(/answers but its connection stays down/)]]);
  });
});

/** DB_COMMAND_METRICS: every command a service's database sends, counted on `/metrics`. */
describe('ServiceDatabase command counts', () => {
  const iso = isolation();
  const databases = ['counted', 'tallied'].map((service) => thingsDatabase(iso, service, true));
  let broker: ServiceBroker;
  let opsUrl: string;

  beforeAll(async () => {
    ({ broker, opsUrl } = await brokerWithOps(iso.namespace));
    // Two services of one broker share the metric, each database its own series.
    for (const [i, db] of databases.entries()) {
      broker.createService({ name: `db-probe-${i}`, mixins: [db.mixin()] });
    }
    await broker.start();
  });

  afterAll(async () => {
    for (const db of databases) await db.dropDatabase();
    await broker.stop();
  });

  const counted = async (database: string, command: string) =>
    count(await samples(opsUrl, 'waybill_db_commands_total'), {
      database,
      collection: 'things',
      command,
    });

  it('counts each command by database, collection and command, a cursor page included', async () => {
    const [first, second] = databases;
    const { Thing } = first.models;
    await Thing.insertMany([1, 2, 3, 4, 5].map((n) => ({ n })));
    await Thing.create({ n: 6 });
    const all = await Thing.find().batchSize(2).lean();
    expect(all).toHaveLength(6);
    await second.models.Thing.findOne({ n: 1 }).lean();

    expect(await counted(first.name, 'insert')).toBe(2);
    expect(await counted(first.name, 'find')).toBe(1);
    // FerretDB pages once more than MongoDB, which knows a cursor is spent with its last page.
    expect(await counted(first.name, 'getMore')).toBeGreaterThanOrEqual(2);
    expect(await counted(second.name, 'find')).toBe(1);
    expect(await counted(second.name, 'insert')).toBe(0);
  });

  it('counts once after the connection is reopened', async () => {
    const [db] = databases;
    const before = await counted(db.name, 'insert');
    const connection = (db as unknown as { connection: { readyState: number } }).connection;
    connection.readyState = mongoose.ConnectionStates.disconnected;
    await eventually(() => expect(db.connected).toBe(true), { timeout: 10_000, interval: 50 });
    await db.models.Thing.create({ n: 7 });
    expect(await counted(db.name, 'insert')).toBe(before + 1);
  });
});

it('counts nothing without DB_COMMAND_METRICS', async () => {
  const iso = isolation();
  const { broker, opsUrl } = await brokerWithOps(iso.namespace);
  const db = thingsDatabase(iso, 'uncounted');
  broker.createService({ name: 'db-probe', mixins: [db.mixin()] });
  await broker.start();
  try {
    await db.models.Thing.create({ n: 1 });
    expect(await samples(opsUrl, 'waybill_db_commands_total')).toEqual([]);
  } finally {
    await db.dropDatabase();
    await broker.stop();
  }
});
