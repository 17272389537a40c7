import mongoose from 'mongoose';

/**
 * Every hot path of ours is a lookup by `_id` (decision 16, docs/payments.md), which is only
 * cheap if the server answers it from the `_id` index. FerretDB 1.24 wrote its lookup in
 * another form than its index and scanned every document, on SQLite and on PostgreSQL alike;
 * scripts/infra builds it with the fix (tools/ferretdb/id-index-fix.sh). This checks the plan
 * the server reports: SQLite's `EXPLAIN QUERY PLAN` lines, PostgreSQL's JSON plan, or
 * MongoDB's winning plan.
 */
describe('a lookup by _id on the local MongoDB-compatible server', () => {
  let conn: mongoose.Connection;
  const dbName = `t_id_index_${process.pid}`;

  beforeAll(async () => {
    conn = await mongoose.createConnection(process.env.MONGO_URL as string, { dbName }).asPromise();
    const docs = Array.from({ length: 200 }, (_, i) => ({ _id: `wallet:${i}`, sequence: i }));
    await conn.collection('entries').insertMany(docs as unknown as mongoose.mongo.Document[]);
  });

  afterAll(async () => {
    await conn.dropDatabase();
    await conn.close();
  });

  it('uses the _id index rather than scanning the collection', async () => {
    const explained = await conn.db!.command({
      explain: { find: 'entries', filter: { _id: 'wallet:150' } },
    });
    const plan = JSON.stringify(explained.queryPlanner);
    if (plan.includes('"Node Type"')) {
      // FerretDB on PostgreSQL: an index scan whose condition is the `_id` equality.
      expect(plan).toMatch(/"Node Type":"Index Scan"/);
      expect(plan).toMatch(/"Index Cond":"\(\(\S+ -> '_id'::text\) = /);
      expect(plan).not.toMatch(/Seq Scan/);
    } else if (explained.ferretdbVersion !== undefined || /SCAN|SEARCH/.test(plan)) {
      expect(plan).toMatch(/SEARCH \S+ USING INDEX \S+__id_/);
      expect(plan).not.toMatch(/\bSCAN\b/);
    } else {
      // MongoDB: an `_id` equality is answered from the `_id` index.
      expect(plan).toMatch(/IDHACK|EXPRESS_IXSCAN|IXSCAN/);
    }
    expect(await conn.collection('entries').findOne({ _id: 'wallet:150' as never })).toMatchObject({
      sequence: 150,
    });
  });
});
