import mongoose from 'mongoose';
import { toHttpError } from '../../../libs/errors';
import {
  ServiceDatabase,
  isDatabaseUnavailable,
  mongoHosts,
  onlyDuplicateKeys,
  writeMayHaveLanded,
} from '../../../libs/mongo';

/**
 * What `ServiceDatabase`'s error hook makes of the database's errors, as the gateway then
 * answers them. The busy error is the one FerretDB sent during `npm run bench:request`: its
 * message word for word (a 500 then).
 */
const db = new ServiceDatabase(
  { mongoUrl: 'mongodb://127.0.0.1:1', mongoDbPrefix: 't_', mongoTimeoutMs: 1_000 },
  'probe',
  () => ({}),
);
const hook = (db.mixin().hooks?.error as Record<string, (ctx: unknown, err: unknown) => never>)[
  '*'
];

/** The HTTP answer of an error once the hook has seen it. */
function answerTo(err: unknown) {
  try {
    hook({}, err);
  } catch (thrown) {
    return toHttpError(thrown);
  }
  throw new Error('the hook must rethrow');
}

const serverError = (code: number, errmsg: string) =>
  new mongoose.mongo.MongoServerError({ ok: 0, code, errmsg });

describe("a service database's errors, as answered", () => {
  it("answers FerretDB's SQLITE_BUSY 503 with Retry-After, as load", () => {
    const busy = serverError(
      1,
      '[msg_update.go:133 handler.(*Handler).updateDocument] [update.go:114 common.UpdateDocument] [collection.go:191 sqlite.(*collection).UpdateAll] [db.go:134 fsql.(*DB).InTransaction] database is locked (5) (SQLITE_BUSY)',
    );
    expect(answerTo(busy)).toEqual({
      status: 503,
      message: 'The database is busy with other writes; retry in a few seconds',
      errors: undefined,
      retryAfter: 5,
      internal: false,
    });
  });

  it("answers MongoDB's LockTimeout the same", () => {
    expect(answerTo(serverError(24, 'Unable to acquire lock'))).toMatchObject({
      status: 503,
      retryAfter: 5,
    });
  });

  it('leaves a server that cannot be reached a 503 without Retry-After', () => {
    const gone = new mongoose.mongo.MongoNetworkError('connection closed');
    expect(answerTo(gone)).toMatchObject({
      status: 503,
      message: 'The database is unavailable; retry in a few seconds',
      internal: true,
    });
    expect(answerTo(gone).retryAfter).toBeUndefined();
  });

  it('leaves any other server error as it is: a fault, 500', () => {
    expect(answerTo(serverError(1, 'something else broke'))).toMatchObject({
      status: 500,
      internal: true,
    });
  });
});

describe('a write that failed', () => {
  it('may have landed unless the server refused it', () => {
    const { mongo } = mongoose;
    expect(writeMayHaveLanded(new mongo.MongoNetworkTimeoutError('timed out'))).toBe(true);
    expect(writeMayHaveLanded(new mongo.MongoNetworkError('connection closed'))).toBe(true);
    // A retryable write's retry found no server: its first try may have landed.
    const unselected = new mongo.MongoServerSelectionError('no server', {} as never);
    expect(writeMayHaveLanded(unselected)).toBe(true);
    // Applied on the primary, its write concern not met.
    const concern = new mongo.MongoWriteConcernError({
      ok: 1,
      writeConcernError: { code: 64, errmsg: 'waiting for replication timed out' },
    });
    expect(writeMayHaveLanded(concern)).toBe(true);
    expect(writeMayHaveLanded(serverError(1, 'database is locked (SQLITE_BUSY)'))).toBe(false);
    expect(writeMayHaveLanded(serverError(11000, 'E11000 duplicate key'))).toBe(false);
  });
});

describe('a database that cannot be reached as a service starts', () => {
  it("counts mongoose's own server-selection error as unreachable", () => {
    // What the first connection's asPromise() rejects with, the server's port closed.
    const first = new mongoose.Error.MongooseServerSelectionError(
      'connect ECONNREFUSED 127.0.0.1:1',
    );
    expect(isDatabaseUnavailable(first)).toBe(true);
  });

  it('is named by its hosts, without credentials, database or options', () => {
    expect(mongoHosts('mongodb://waybill:s3cret@db-0.db:27017,db-1.db:27017/app?tls=true')).toBe(
      'db-0.db:27017,db-1.db:27017',
    );
    expect(mongoHosts('mongodb+srv://user:p%40ss@cluster.example.net/')).toBe(
      'cluster.example.net',
    );
    expect(mongoHosts('mongodb://127.0.0.1:27017')).toBe('127.0.0.1:27017');
  });
});

describe('a bulk insert refused in part', () => {
  // The driver's error takes its code from the first write error only: a duplicate first hid
  // any other refusal behind it (the webhook audit found events and queue entries lost so).
  const bulkError = (...codes: number[]) =>
    Object.assign(new Error('bulk write failed'), {
      code: codes[0],
      writeErrors: codes.map((code) => ({ code, errmsg: `code ${code}` })),
    });

  it('is only a repeat when every document refused was a duplicate key', () => {
    expect(onlyDuplicateKeys(bulkError(11000, 11000))).toBe(true);
    expect(onlyDuplicateKeys(bulkError(11000, 121))).toBe(false);
    expect(onlyDuplicateKeys(serverError(11000, 'E11000 duplicate key'))).toBe(false);
    // Failed as a whole (the connection reset): nothing listed, maybe nothing written.
    expect(onlyDuplicateKeys(bulkError())).toBe(false);
    expect(
      onlyDuplicateKeys(Object.assign(bulkError(11000), { writeConcernError: { code: 64 } })),
    ).toBe(false);
    // Where the driver keeps a write concern's error when documents were refused too.
    const withConcern = Object.assign(bulkError(11000), {
      result: { getWriteConcernError: () => ({ code: 64 }) },
    });
    expect(onlyDuplicateKeys(withConcern)).toBe(false);
    // Mongoose's own refusals of documents, named on the driver's error (`rawResult`).
    const withInvalid = Object.assign(bulkError(11000), {
      mongoose: { validationErrors: [new Error('name: required')] },
    });
    expect(onlyDuplicateKeys(withInvalid)).toBe(false);
  });
});
