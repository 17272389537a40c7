import mongoose from 'mongoose';
import { eventually } from '../support/eventually';
import { isolation } from '../support/stack';
import { ServiceDatabase } from '../../libs/mongo';

/** A service's database connection against the real server. */
describe('ServiceDatabase', () => {
  const iso = isolation();
  const warnings: unknown[][] = [];
  const db = new ServiceDatabase(
    {
      mongoUrl: process.env.MONGO_URL as string,
      mongoDbPrefix: iso.dbPrefix,
      mongoTimeoutMs: 1_000,
    },
    'probe',
    (connection) => ({ Thing: connection.model('Thing', new mongoose.Schema({ n: Number })) }),
    100,
  );

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
