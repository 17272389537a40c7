import { setTimeout as sleep } from 'node:timers/promises';
import mongoose, { type ConnectOptions, type Connection } from 'mongoose';
import type { CommandStartedEvent, MongoClient } from 'mongodb';
import type { Logger, ServiceBroker, ServiceSchema } from 'moleculer';
import { backoffMs, type Backoff } from './backoff';
import { turnName } from './ids';
import type { Config } from './config';
import { metricTableOf, type MetricTable } from './metric-table';
import { serviceBusy, serviceUnavailable } from './errors';
import { registerHealthCheck, unregisterHealthCheck } from './health';
import { Periodic } from './periodic';

const DUPLICATE_KEY = 11000;

/** A unique index refused the write: the caller lost a race or repeated itself. */
export const isDuplicateKey = (err: unknown): boolean =>
  (err as { code?: unknown } | null)?.code === DUPLICATE_KEY;

/**
 * An insert whose `_id` may be taken: true when this call wrote it, false when another did
 * (the way to do a thing once on a database without atomic conditional updates, decision 16).
 */
export async function insertOnce(write: () => Promise<unknown>): Promise<boolean> {
  try {
    await write();
    return true;
  } catch (err) {
    if (isDuplicateKey(err)) return false;
    throw err;
  }
}

/**
 * Inserts `record` unless a document already has its `_id` (decision 16: the insert decides):
 * the document that stands, and whether it is this one.
 */
export async function claimById<T extends { _id: string }>(
  model: {
    create(doc: NoInfer<T>): Promise<unknown>;
    findById(id: string): { lean<R>(): PromiseLike<R | null> };
  },
  record: T,
  what: string,
): Promise<{ standing: T; won: boolean }> {
  if (await insertOnce(() => model.create(record))) return { standing: record, won: true };
  const earlier = await model.findById(record._id).lean<T>();
  if (!earlier) throw new Error(`${what} ${record._id} is claimed but cannot be read`);
  return { standing: earlier, won: false };
}

/** A model holding lease claims (`claimLease`). */
interface LeaseModel {
  create(doc: { _id: string; startedAt: Date }): Promise<unknown>;
  findById(id: string): { lean<R>(): PromiseLike<R | null> };
  deleteOne(filter: { _id: string }): PromiseLike<unknown>;
}

/** A lease this caller holds: its claim, until `leaseMs` past `startedAt`. */
export interface Lease {
  name: string;
  startedAt: Date;
  leaseMs: number;
}

/** Whether a lease still holds: past its time, another caller may have taken the work over. */
export const holds = (lease: Lease, now = Date.now()) =>
  now - lease.startedAt.getTime() < lease.leaseMs;

/**
 * Claims work named `name` for one holder across replicas, by inserting `{_id: name,
 * startedAt}`: the lease when this call holds it, null while another does. A claim older than
 * `leaseMs` was left by a holder that stopped: the next turn, `<name>~<n>`, is claimed (by an
 * insert too, so two callers finding it so take over once). A claim deleted between this
 * call's insert and its read is claimed again. The holder gives the work back with
 * `releaseLease`.
 */
export async function claimLease(
  model: LeaseModel,
  name: string,
  leaseMs: number,
  now = new Date(),
): Promise<Lease | null> {
  if (leaseMs <= RELEASE_MARGIN_MS) {
    // Never given back (`releaseLease`): every failure would leave a turn behind.
    throw new RangeError(`A lease must outlast ${RELEASE_MARGIN_MS} ms, not ${leaseMs}`);
  }
  const inLease = (started: number) => now.getTime() - started < leaseMs;
  for (let turn = 0; ;) {
    const _id = turnName(name, turn);
    if (await insertOnce(() => model.create({ _id, startedAt: now }))) {
      if (await anotherTurnHolds(model, name, turn, inLease)) {
        await model.deleteOne({ _id });
        return null;
      }
      return { name: _id, startedAt: now, leaseMs };
    }
    const started = await turnStarted(model, name, turn);
    // Released since the insert: this turn is free again.
    if (started === null) continue;
    if (inLease(started)) return null;
    turn += 1;
  }
}

/** When turn `turn` of `name` was claimed (epoch ms), or null when it is not. */
async function turnStarted(model: LeaseModel, name: string, turn: number): Promise<number | null> {
  const standing = await model.findById(turnName(name, turn)).lean<{ startedAt: Date }>();
  return standing ? new Date(standing.startedAt).getTime() : null;
}

/**
 * Whether the turn just won is not the work's to hold, a delete having landed late (its
 * holder's, sent within its lease, waited on the database past it):
 * - a later turn still holds it: the freed turn was below the one that took the work over.
 *   Read one by one until two in a row are missing (one freed so between them is passed over):
 *   a takeover's chain is a turn or two;
 * - an earlier turn is not the stale claim this one took over from: missing (freed, and perhaps
 *   claimed again by a caller that read this turn missing before it was inserted) or in its
 *   lease. Of two callers winning turns on either side of a freed one, each sees the other:
 *   both give theirs back, and the next caller takes the work.
 */
async function anotherTurnHolds(
  model: LeaseModel,
  name: string,
  turn: number,
  inLease: (started: number) => boolean,
): Promise<boolean> {
  for (let later = turn + 1, missing = 0; missing < 2; later++) {
    const started = await turnStarted(model, name, later);
    if (started === null) {
      missing += 1;
      continue;
    }
    missing = 0;
    if (inLease(started)) return true;
  }
  for (let earlier = 0; earlier < turn; earlier++) {
    const started = await turnStarted(model, name, earlier);
    if (started === null || inLease(started)) return true;
  }
  return false;
}

/**
 * How long before a lease runs out its holder still gives it back: longer than the delete may
 * wait for the database (`MONGO_TIMEOUT_MS`, 10 s by default), so that it never lands after.
 */
export const RELEASE_MARGIN_MS = 15_000;

/**
 * Gives a lease's work back for the next caller to claim. Not once the lease has run out, nor
 * so near its end that the delete could land after it: the work may have been taken over by
 * then (`<name>~<n>`), and deleting the claim would let a third caller claim `name` beside
 * that one; the stale claim is passed over instead.
 */
export async function releaseLease(
  model: LeaseModel,
  lease: Lease,
  now = Date.now(),
): Promise<void> {
  if (holds(lease, now + RELEASE_MARGIN_MS)) await model.deleteOne({ _id: lease.name });
}

/**
 * How long a call that claimed a claim's end keeps every other caller from it (`claimEnd`): far
 * longer than the insert of the claim and the one delete it covers, so that only a caller
 * stopped before its delete is taken over. FerretDB holds each write up to its `busy_timeout`
 * for SQLite's write lock (60 s as `scripts/infra` runs it) and then applies it, and `at` is
 * read before the insert is sent: two such waits, with room to spare (decision 182).
 */
export const CLAIM_END_LEASE_MS = 150_000;

/** One claim of a claim's end (`claimEnd`): `<instance>:<attempt>`, and when it was claimed. */
// Not indexed by `at`: pruning keeps the collections small, and a build at the start of the
// version that begins pruning would hold the service unready while it indexed years of ends.
const claimEndSchema = new mongoose.Schema({ _id: String, at: Date }, { versionKey: false });

/** Every model `defineClaimEndModel` made: what `ServiceDatabase` prunes. */
// The models differ in their names only; `any` is mongoose's own for a model of any document.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const claimEndModels = new WeakSet<mongoose.Model<any>>();

/** The records of `claimEnd` for one kind of claim, in `collection` (pruned, decision 133). */
export function defineClaimEndModel(connection: Connection, name: string, collection: string) {
  const model = connection.model(name, claimEndSchema, collection);
  claimEndModels.add(model);
  return model;
}

export type ClaimEndModel = ReturnType<typeof defineClaimEndModel>;

/**
 * Whether this caller, and no other, is to delete one instance of a claim (`instance` names
 * it: an `_id` claimed again is another instance). FerretDB deletes `{ _id, holder }` by
 * reading it, then deleting by `_id` (decision 16): two callers ending one instance could
 * both read it, and the second delete the next instance, claimed in between (decision 128).
 * The caller answered true deletes; since nothing but it ends this instance, the `_id` is still
 * this instance when it does. A caller stopped before its delete is taken over once its claim
 * is `CLAIM_END_LEASE_MS` old: `ends` holds `<instance>:<attempt>` with the time it was claimed, read from
 * `clock` as it is inserted (a caller whose reads before it were slow starts a full lease).
 */
// The ends' models differ in their document types; only create and findById are used.
export async function claimEnd(
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  ends: mongoose.Model<any>,
  instance: string,
  clock: () => Date = () => new Date(),
): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    const _id = `${instance}:${attempt}`;
    if (await insertOnce(() => ends.create({ _id, at: clock() }))) return true;
    const claimed = await ends.findById(_id).lean<{ at: Date }>();
    if (claimed && clock().getTime() - claimed.at.getTime() < CLAIM_END_LEASE_MS) return false;
  }
}

/**
 * How old the last claim of a claim's end is when the claims of its instance are deleted. An
 * end past its lease keeps no caller out (the next takes the next attempt), so deleting it
 * changes nothing `claimEnd` answers, unless a later attempt of its instance is still in its
 * lease: a caller would then win the first attempt again beside it. An instance goes whole,
 * once its last attempt is this old. Ten leases: a takeover racing the deletes is one of an
 * instance that waited for its end this long, between the look for a later attempt and the
 * delete (a few round trips), or one whose pruning replica's clock runs minutes ahead.
 */
export const CLAIM_END_KEPT_MS = 10 * CLAIM_END_LEASE_MS;

/** Claims of ends read at once to prune; a run reads at most ten such batches. */
const PRUNED_AT_ONCE = 500;

/**
 * Deletes one batch of the claims of ends in `ends` that `claimEnd` no longer reads (decision
 * 133), answering how many. Without it every claim ended stayed for good, some five a
 * delivery. FerretDB 1.24 reads the whole collection for the old ones; pruned, it stays small.
 */
export async function pruneClaimEnds(
  // The models differ in their names only.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  ends: mongoose.Model<any>,
  now = new Date(),
): Promise<{ read: number; deleted: number }> {
  const old = await ends
    .find({ at: { $lt: new Date(now.getTime() - CLAIM_END_KEPT_MS) } }, { _id: 1 })
    .limit(PRUNED_AT_ONCE)
    .lean<{ _id: string }[]>();
  const lastAttempt = new Map<string, number>();
  for (const { _id } of old) {
    const cut = _id.lastIndexOf(':');
    const instance = _id.slice(0, cut);
    lastAttempt.set(instance, Math.max(lastAttempt.get(instance) ?? 0, Number(_id.slice(cut + 1))));
  }
  const instances = [...lastAttempt];
  let deleted = 0;
  // A few instances at a time, each deleted right after its look: the look stands only until
  // a later attempt is taken, which an end waiting this long for its caller rarely is.
  for (let i = 0; i < instances.length; i += BULK_STATEMENTS) {
    const pruned: string[] = [];
    await Promise.all(
      instances.slice(i, i + BULK_STATEMENTS).map(async ([instance, last]) => {
        // A later attempt, not yet old: it needs those below it.
        if (await ends.exists({ _id: `${instance}:${last + 1}` })) return;
        for (let attempt = 1; attempt <= last; attempt++) pruned.push(`${instance}:${attempt}`);
      }),
    );
    deleted += await deleteManyById(ends, pruned);
  }
  return { read: old.length, deleted };
}

/**
 * A bulk write refused only by unique indexes (each a race lost or a repeat). Not one the
 * driver failed as a whole (a connection reset, a primary stepping down): it wraps that in the
 * same error with no write errors listed, and none of the documents may have been written.
 */
export const onlyDuplicateKeys = (err: unknown): boolean => {
  const { writeErrors, writeConcernError, result, mongoose } = err as {
    writeErrors?: unknown[];
    writeConcernError?: unknown;
    // The driver keeps a write concern's error on the result when documents were refused too.
    result?: { getWriteConcernError?: () => unknown };
    // Mongoose's documents its schema refused, with `rawResult` (`insertAll`).
    mongoose?: { validationErrors?: unknown[] };
  };
  return (
    Array.isArray(writeErrors) &&
    writeErrors.length > 0 &&
    writeErrors.every(isDuplicateKey) &&
    !writeConcernError &&
    !result?.getWriteConcernError?.() &&
    (mongoose?.validationErrors?.length ?? 0) === 0
  );
};

/**
 * Inserts documents in one round trip, leaving any already there (a repeat) as they are: true
 * when every one was new.
 */
// The models differ in their document types; only insertMany is used.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function insertAll(model: mongoose.Model<any>, documents: object[]): Promise<boolean> {
  if (documents.length === 0) return true;
  try {
    // Mongoose would otherwise leave out, unsaid, a document its schema refuses: it throws
    // when the others were written, and names them on the driver's error (`rawResult`) when
    // some were refused as duplicates.
    await model.insertMany(documents, {
      ordered: false,
      throwOnValidationError: true,
      rawResult: true,
    });
    return true;
  } catch (err) {
    // The schema's refusal, rather than the duplicates' error it came with.
    const invalid = (err as { mongoose?: { validationErrors?: unknown[] } }).mongoose
      ?.validationErrors?.[0];
    if (invalid) throw invalid;
    if (!onlyDuplicateKeys(err)) throw err;
    return false;
  }
}

/**
 * Raises fields of the document `_id` to at least `to`, creating it (with `setOnInsert`) when
 * missing. Two first writers race to create it: the loser's upsert fails on the key and it
 * updates the document the other made. FerretDB applies `$max` as a read and a write, so two at
 * once may keep the lower value: for bounds that a stale copy only understates.
 */
export async function raiseById(
  // The models differ in their document types; only updateOne by `_id` is used.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  model: mongoose.Model<any>,
  id: string,
  to: Record<string, number | Date>,
  { setOnInsert, timestamps }: { setOnInsert?: Record<string, unknown>; timestamps?: boolean } = {},
): Promise<void> {
  const update = setOnInsert ? { $max: to, $setOnInsert: setOnInsert } : { $max: to };
  await upsertById(model, id, update, { timestamps });
}

/**
 * Updates the document `_id`, creating it when missing. Two first writers race to create it:
 * the loser's upsert fails on the key and it updates the document the other made.
 */
export async function upsertById(
  // The models differ in their document types; only updateOne by `_id` is used.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  model: mongoose.Model<any>,
  id: string,
  update: mongoose.UpdateQuery<unknown>,
  { timestamps }: { timestamps?: boolean } = {},
): Promise<void> {
  const write = () => model.updateOne({ _id: id }, update, { upsert: true, timestamps });
  try {
    await write();
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    await write();
  }
}

/**
 * Sets `fields` on each document by `_id` unless it holds a later `at` already, creating the
 * missing ones: a writer that took its copy before another's later one (two replicas flushing
 * side by side, one stalled) does not write an older state over a newer. Each is inserted
 * first; one there already (or created meanwhile by another writer) is updated only while it is
 * older. Not an upsert: FerretDB's upsert of a document another writer just created overwrites
 * it (measured: the older of two first writes stood). FerretDB applies the update's filter as a
 * read and a write, so two updates at the same moment may still keep the older one.
 */
export async function setNewerById(
  // The models differ in their document types; only bulkWrite by `_id` is used.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  model: mongoose.Model<any>,
  updates: readonly { id: string; at: Date; fields: Record<string, unknown> }[],
): Promise<void> {
  for (let i = 0; i < updates.length; i += BULK_STATEMENTS) {
    const chunk = updates.slice(i, i + BULK_STATEMENTS);
    let there: typeof chunk;
    try {
      await model.bulkWrite(
        chunk.map(({ id, fields }) => ({ insertOne: { document: { ...fields, _id: id } } })),
        { ordered: false },
      );
      continue;
    } catch (err) {
      if (!onlyDuplicateKeys(err)) throw err;
      there = (err as { writeErrors: { index: number }[] }).writeErrors.map(
        ({ index }) => chunk[index],
      );
    }
    // Each read by `_id` and compared here, then written by `_id`: `{_id, at < x}` reads the
    // whole collection on FerretDB (decision 73), for each document of each flush. As the
    // conditional update was not atomic there either (decision 16), nothing is lost.
    const stored = await Promise.all(
      there.map(({ id }) => model.findById(id, { at: 1 }).lean<{ at?: unknown }>()),
    );
    const newer = there.filter(({ at }, i) => {
      const storedAt = stored[i]?.at;
      return !(storedAt instanceof Date) || storedAt < at;
    });
    if (newer.length === 0) continue;
    await model.bulkWrite(
      newer.map(({ id, fields }) => ({
        updateOne: { filter: { _id: id }, update: { $set: fields } },
      })),
      { ordered: false },
    );
  }
}

/**
 * Statements one bulk write of ours sends at most. FerretDB 1.24 never answers an `update`
 * command of 100 statements (50 take 41 ms here), and the database it was sent to answers
 * nothing more until FerretDB restarts; `delete` took 100 in 110 ms (decision 126). Kept
 * well below both.
 */
export const BULK_STATEMENTS = 25;

/**
 * `bulkWrite` of these operations, `BULK_STATEMENTS` at a time, one after another, answering
 * how many documents they deleted.
 */
async function bulkWriteInChunks(
  // The models differ in their document types; only bulkWrite by `_id` is used.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  model: mongoose.Model<any>,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the model's own operations
  operations: any[],
): Promise<number> {
  let deleted = 0;
  for (let i = 0; i < operations.length; i += BULK_STATEMENTS) {
    const chunk = operations.slice(i, i + BULK_STATEMENTS);
    const result = await model.bulkWrite(chunk, { ordered: false });
    deleted += result.deletedCount;
  }
  return deleted;
}

/**
 * Deletes the documents with these `_id`s, answering how many there were: one `deleteOne`
 * by `_id` each, a few dozen to a command. FerretDB 1.24 pushes down no `$in`, even on `_id`:
 * `deleteMany({ _id: { $in } })` scans the collection (2.6 s at 20,000 documents, against
 * 0.5 ms an id; decision 126).
 */
export function deleteManyById(
  // The models differ in their document types; only bulkWrite by `_id` is used.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  model: mongoose.Model<any>,
  ids: readonly string[],
): Promise<number> {
  return bulkWriteInChunks(
    model,
    ids.map((id) => ({ deleteOne: { filter: { _id: id } } })),
  );
}

/** Sets these fields on the documents with these `_id`s (those missing are left missing). */
export async function setManyById(
  // The models differ in their document types; only bulkWrite by `_id` is used.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  model: mongoose.Model<any>,
  ids: readonly string[],
  fields: Record<string, unknown>,
): Promise<void> {
  await bulkWriteInChunks(
    model,
    ids.map((id) => ({ updateOne: { filter: { _id: id }, update: { $set: fields } } })),
  );
}

/**
 * A filter's fields other than `_id`, tested in this process. FerretDB 1.24 pushes a filter
 * down to SQLite only when it is a lone `_id` equality; with any other field beside it, it
 * decodes every document of the collection (measured: 60 ms at 20,000 documents against 0.6
 * for the lone `_id`). Each field is equal to its value, absent or null for `null`, or below
 * `{ $lt: n }`.
 */
export type Where = Record<string, string | number | boolean | null | { $lt: number }>;

export function matchesWhere(doc: Record<string, unknown>, where: Where): boolean {
  return Object.entries(where).every(([field, wanted]) => {
    const value = doc[field];
    if (wanted === null) return value == null;
    if (typeof wanted === 'object') return typeof value === 'number' && value < wanted.$lt;
    return value === wanted;
  });
}

/** The document with this `_id` when it matches `where`, else null: read by `_id` alone. */
export async function findByIdWhere<T>(
  // The models differ in their document types; only findById is used.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  model: mongoose.Model<any>,
  id: string,
  where: Where,
): Promise<T | null> {
  const doc = (await model.findById(id).lean()) as Record<string, unknown> | null;
  return doc && matchesWhere(doc, where) ? (doc as T) : null;
}

/**
 * Applies `update` by `_id` when the document matches `where` as read just before; whether it
 * did. As on FerretDB before (its conditional updates are not atomic, decision 16), a write
 * between the read and the update is not seen: callers keep their guarantees by claims.
 */
export async function updateByIdWhere(
  // The models differ in their document types; only findById and updateOne are used.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  model: mongoose.Model<any>,
  id: string,
  where: Where,
  update: mongoose.UpdateQuery<unknown>,
): Promise<boolean> {
  if (!(await findByIdWhere(model, id, where))) return false;
  await model.updateOne({ _id: id }, update);
  return true;
}

/**
 * `$set`s fields of the document `_id` through the driver, without mongoose's cast of the
 * update, which walks every key of a large nested value (a whole delivery: 15 % of the order
 * process's CPU under bench:request, docs/performance.md). For fields stored as given and read
 * back lean; undefined ones are left out, in arrays too (where mongoose wrote null).
 */
export async function setByIdUncast(
  // The models differ in their document types; only their collection is used.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  model: mongoose.Model<any>,
  id: string,
  fields: Record<string, unknown>,
): Promise<void> {
  const collection = model.collection as unknown as mongoose.mongo.Collection<{ _id: string }>;
  await collection.updateOne({ _id: id }, { $set: fields }, { ignoreUndefined: true });
}

/** Errors of a socket whose other end went away. */
const SOCKET_GONE = new Set(['EPIPE', 'ECONNRESET', 'ECONNREFUSED', 'ECONNABORTED', 'ETIMEDOUT']);

/** The server cannot be reached (down, restarting, cut off), as opposed to refusing the work. */
export function isDatabaseUnavailable(err: unknown): boolean {
  const { mongo } = mongoose;
  return (
    err instanceof mongo.MongoServerSelectionError ||
    // mongoose's own, which the first opening of a connection rejects with.
    err instanceof mongoose.Error.MongooseServerSelectionError ||
    err instanceof mongo.MongoNetworkError ||
    err instanceof mongo.MongoNotConnectedError ||
    err instanceof mongo.MongoTopologyClosedError ||
    // The driver lets a write to a connection the server just closed fail with Node's own
    // error (EPIPE, seen while FerretDB restarted), not a MongoNetworkError.
    SOCKET_GONE.has(String((err as NodeJS.ErrnoException | null)?.code))
  );
}

/**
 * Whether a write that failed with `err` may have been made all the same: anything but the
 * server refusing it. A connection lost or timed out once it was sent leaves it to the server;
 * a retryable write's retry that found no server says nothing of its first try; a write
 * concern not met was applied on the primary.
 */
export function writeMayHaveLanded(err: unknown): boolean {
  const { mongo } = mongoose;
  return err instanceof mongo.MongoWriteConcernError || !(err instanceof mongo.MongoServerError);
}

/** MongoDB's LockTimeout: a lock not taken in time. */
const LOCK_TIMEOUT = 24;
/** What a client is told to wait when the database is too busy to take a write. */
const DATABASE_BUSY_RETRY_AFTER_S = 5;

/**
 * The server is up but too busy to take the work: FerretDB (SQLite) waits 10 s for the write
 * lock, then fails with an internal error (code 1) naming SQLITE_BUSY; MongoDB's counterpart
 * is LockTimeout. Load, not a fault: the client retries later.
 */
export function isDatabaseBusy(err: unknown): boolean {
  if (!(err instanceof mongoose.mongo.MongoServerError)) return false;
  return err.code === LOCK_TIMEOUT || /\bSQLITE_BUSY\b/.test(err.message);
}

/** The collection a command works on: named by the command, or in `collection` (a getMore). */
export function commandCollection(event: Pick<CommandStartedEvent, 'commandName' | 'command'>) {
  const named = event.command[event.commandName];
  if (typeof named === 'string') return named;
  return typeof event.command.collection === 'string' ? event.command.collection : '';
}

/** A counter of the broker's metric table. */
type Counter = ReturnType<MetricTable['counter']>;

/** `waybill_db_commands_total` of the broker, shared by the databases of its services. */
const commandCounterOf = (broker: ServiceBroker): Counter =>
  metricTableOf(broker).sharedCounter(
    'waybill_db_commands_total',
    'Database commands sent, by database, collection and command (DB_COMMAND_METRICS)',
    ['database', 'collection', 'command'],
  );

/** `waybill_db_claim_ends_pruned_total` of the broker, shared by its services' databases. */
const prunedCounterOf = (broker: ServiceBroker): Counter =>
  metricTableOf(broker).sharedCounter(
    'waybill_db_claim_ends_pruned_total',
    'Claims of ends deleted once no caller reads them, by database and collection',
    ['database', 'collection'],
  );

/**
 * Where a MongoDB URL points, for messages and logs: its hosts, without the credentials, the
 * database or the options.
 */
export function mongoHosts(url: string): string {
  const [, hosts = ''] = /^[a-z][a-z0-9+.-]*:\/\/(?:[^@/?#]*@)?([^/?#]*)/i.exec(url) ?? [];
  return hosts || 'an unreadable MONGO_URL';
}

/** `text` with the password of `url`, should it appear, masked: for what is logged. */
function withoutPassword(text: string, url: string): string {
  let password = '';
  try {
    password = decodeURIComponent(new URL(url).password);
  } catch {
    // Not a URL the WHATWG parser reads (several hosts): nothing of it is masked.
  }
  return password ? text.split(password).join('***') : text;
}

/** The database was closed (the service stops) before it could be reached. */
export class DatabaseClosedError extends Error {
  constructor(database: string) {
    super(`database ${database} closed before it could be reached`);
    this.name = 'DatabaseClosedError';
  }
}

/**
 * The wait between tries to reach a server that was not there when the service started, each
 * try itself waiting up to MONGO_TIMEOUT_MS for it.
 */
const FIRST_CONNECT_BACKOFF: Backoff = { baseMs: 500, maxMs: 5_000 };

/** How often a service prunes its claims of ends (`pruneClaimEnds`). */
const CLAIM_END_PRUNE_EVERY_MS = 60_000;

/** Batches of claims of ends one run of pruning reads at most for a model. */
const PRUNE_BATCHES_A_RUN = 10;

export interface ServiceDatabaseOptions {
  /** How often a connection that lost its server tries the server with a new one. */
  probeEveryMs?: number;
  /** How often the service prunes its claims of ends (`pruneClaimEnds`). */
  pruneEveryMs?: number;
}

type DatabaseLogger = Pick<Logger, 'warn'> & Partial<Pick<Logger, 'info'>>;

/**
 * One service's own database: its own mongoose connection (never the global one), opened
 * when the service starts and closed when it stops. A server that cannot be reached as the
 * service starts is tried again until it can: the service waits, not ready, rather than
 * exiting (and being restarted with a growing back-off).
 */
export class ServiceDatabase<Models> {
  private connection: Connection | undefined;
  private built: Models | undefined;
  /** The first connection, while it is being opened (tried again until the server answers). */
  private connecting: Promise<Models> | undefined;
  private opening: Connection | undefined;
  private closed = false;
  /** Ends the wait before the next try at once (the database is closed). */
  private readonly closing = new AbortController();
  private watchdog: NodeJS.Timeout | undefined;
  private probing = false;
  /** Tries in a row in which the server answered a new connection while this one was down. */
  private answeredTries = 0;
  private logger: DatabaseLogger | undefined;
  /** Counts each command sent, when DB_COMMAND_METRICS asks for it. */
  private commandCounter: Counter | undefined;
  private readonly watchedClients = new WeakSet<MongoClient>();
  /** The pruning of claims of ends, while the service runs (`mixin`). */
  private pruning: Periodic | undefined;
  private readonly probeEveryMs: number;
  private readonly pruneEveryMs: number;
  readonly name: string;

  constructor(
    private readonly config: Pick<Config, 'mongoUrl' | 'mongoDbPrefix' | 'mongoTimeoutMs'> &
      Partial<Pick<Config, 'dbCommandMetrics' | 'background'>>,
    service: string,
    private readonly defineModels: (connection: Connection) => Models,
    { probeEveryMs = 5_000, pruneEveryMs = CLAIM_END_PRUNE_EVERY_MS }: ServiceDatabaseOptions = {},
  ) {
    this.name = `${config.mongoDbPrefix}${service}`;
    this.probeEveryMs = probeEveryMs;
    this.pruneEveryMs = pruneEveryMs;
  }

  /**
   * One run of pruning the claims of ends of each model `defineClaimEndModel` made here
   * (decision 133), counted in `counter`: batches until one reads less than a full batch or
   * deletes nothing, at most `PRUNE_BATCHES_A_RUN` a model.
   */
  private async pruneRun(counter: Counter, stopping: () => boolean): Promise<void> {
    for (const model of this.claimEndModels) {
      const pruned = counter.of(this.name, model.collection.collectionName);
      for (let batch = 0; batch < PRUNE_BATCHES_A_RUN && !stopping(); batch++) {
        const round = await pruneClaimEnds(model);
        pruned.value += round.deleted;
        if (round.read < PRUNED_AT_ONCE || round.deleted === 0) break;
      }
    }
  }

  /** The models of this database that `defineClaimEndModel` made. */
  private get claimEndModels() {
    return Object.values(this.connection?.models ?? {}).filter((m) => claimEndModels.has(m));
  }

  private get options(): ConnectOptions {
    return {
      dbName: this.name,
      // While the server is away, each operation waits this long for it, then fails (503).
      serverSelectionTimeoutMS: this.config.mongoTimeoutMs,
      // Also the bound of each check of the server's health: with the driver's 30 s a check
      // stuck on a connection the server had closed kept a restarted server "down" that long.
      connectTimeoutMS: this.config.mongoTimeoutMs,
      // Operations go to the driver, which knows when the server is back, instead of waiting
      // in mongoose's queue until mongoose sees a heartbeat (and failing there as a 500).
      bufferCommands: false,
      autoIndex: false,
      // The driver then decodes each reply again for its event: only when measuring.
      monitorCommands: this.config.dbCommandMetrics === true,
    };
  }

  get models(): Models {
    if (!this.built) throw new Error(`database ${this.name} is not connected`);
    return this.built;
  }

  get connected(): boolean {
    return this.connection?.readyState === mongoose.ConnectionStates.connected;
  }

  /**
   * The models, once the server has been reached and the indexes built: tried again for as
   * long as the server cannot be reached (each try waiting up to MONGO_TIMEOUT_MS), until it
   * can or the database is closed (`DatabaseClosedError`). Any other failure (refused
   * credentials, a conflicting index) is thrown at once, naming MongoDB and its hosts.
   */
  async connect(logger?: DatabaseLogger): Promise<Models> {
    if (this.built) return this.built;
    this.logger = logger ?? this.logger;
    this.closed = false;
    this.connecting ??= this.connectOnceReached().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async connectOnceReached(): Promise<Models> {
    const where = `MongoDB at ${mongoHosts(this.config.mongoUrl)} (database ${this.name})`;
    for (let failed = 0; ;) {
      if (this.closed) throw new DatabaseClosedError(this.name);
      let connection: Connection | undefined;
      try {
        connection = mongoose.createConnection(this.config.mongoUrl, this.options);
        this.opening = connection;
        await connection.asPromise();
        this.countCommandsOf(connection);
        const models = this.defineModels(connection);
        // Indexes are part of correctness here (unique keys back idempotency), so build them
        // now: before the service reports started.
        await Promise.all(Object.values(connection.models).map((m) => m.createIndexes()));
        if (this.closed) throw new DatabaseClosedError(this.name);
        this.opening = undefined;
        this.connection = connection;
        this.built = models;
        const opened = connection;
        this.watchdog = setInterval(() => void this.tryServer(opened), this.probeEveryMs);
        this.watchdog.unref();
        if (failed > 0) this.logger?.info?.(`${where} reached`);
        return models;
      } catch (err) {
        this.opening = undefined;
        await connection?.close().catch(() => undefined);
        if (this.closed || err instanceof DatabaseClosedError) {
          throw new DatabaseClosedError(this.name);
        }
        const message = withoutPassword(
          err instanceof Error ? err.message : String(err),
          this.config.mongoUrl,
        );
        // The driver's own message names neither the server nor what it is.
        if (!isDatabaseUnavailable(err)) throw new Error(`${where}: ${message}`, { cause: err });
        failed++;
        if (failed === 1) {
          this.logger?.warn(`${where} cannot be reached; not ready, trying again until it can`, {
            error: message,
          });
        }
        // Cut short by close(); the loop's next turn then ends.
        await sleep(backoffMs(failed, FIRST_CONNECT_BACKOFF, Math.random()), undefined, {
          signal: this.closing.signal,
        }).catch(() => undefined);
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.closing.abort();
    clearInterval(this.watchdog);
    const connection = this.connection;
    this.connection = undefined;
    this.built = undefined;
    // A first connection still trying: it fails at once, and is not tried again.
    await this.opening?.close().catch(() => undefined);
    await connection?.close();
  }

  /**
   * The driver (mongodb 7.8) can lose a server that went away and came back for good: a
   * check of the server's health begun on a connection the server had just closed waits
   * forever for its socket to drain, the server stays "unknown", and every operation fails
   * until the process restarts (about one database restart in ten under load). So while this
   * connection is down, a new one tries the server; once the server has answered two tries
   * in a row and this connection still has not noticed, it is reopened (models stay bound).
   */
  private async tryServer(connection: Connection): Promise<void> {
    if (this.probing || this.connection !== connection) return;
    if (this.connected) {
      this.answeredTries = 0;
      return;
    }
    this.probing = true;
    const probe = new mongoose.mongo.MongoClient(this.config.mongoUrl, {
      serverSelectionTimeoutMS: this.config.mongoTimeoutMs,
      connectTimeoutMS: this.config.mongoTimeoutMs,
    });
    try {
      await probe.db('admin').command({ ping: 1 });
      this.answeredTries++;
    } catch {
      this.answeredTries = 0;
    } finally {
      await probe.close().catch(() => undefined);
    }
    try {
      if (this.answeredTries >= 2 && !this.connected && this.connection === connection) {
        this.answeredTries = 0;
        this.logger?.warn(
          `database ${this.name} answers but its connection stays down; reopening it`,
        );
        await connection.close();
        await connection.openUri(this.config.mongoUrl, this.options);
        this.countCommandsOf(connection);
      }
    } catch {
      // Still unreachable: the next try starts over.
    } finally {
      this.probing = false;
    }
  }

  private countCommandsOf(connection: Connection): void {
    const counter = this.commandCounter;
    const client = connection.getClient();
    if (!counter || this.watchedClients.has(client)) return;
    this.watchedClients.add(client);
    client.on('commandStarted', (event) => {
      counter.of(event.databaseName, commandCollection(event), event.commandName).value++;
    });
  }

  /** Drops the whole database; for tests only. */
  async dropDatabase(): Promise<void> {
    await this.connection?.dropDatabase();
  }

  /**
   * Mixin that ties the connection to the service lifecycle and to readiness, and answers
   * 503 for any action that fails because the server cannot be reached or is too busy.
   */
  mixin(): Partial<ServiceSchema> {
    const db = this as ServiceDatabase<unknown>;
    const checkName = `mongo:${db.name}`;
    return {
      hooks: {
        error: {
          '*'(_ctx: unknown, err: unknown) {
            if (isDatabaseBusy(err)) {
              throw serviceBusy(
                'The database is busy with other writes; retry in a few seconds',
                DATABASE_BUSY_RETRY_AFTER_S,
              );
            }
            if (!isDatabaseUnavailable(err)) throw err;
            throw serviceUnavailable('The database is unavailable; retry in a few seconds');
          },
        },
      },
      async started() {
        if (db.config.dbCommandMetrics) db.commandCounter = commandCounterOf(this.broker);
        // Before the server is reached: until it is, the process says so, not ready.
        registerHealthCheck(this.broker, checkName, () => db.connected);
        try {
          // Until it resolves, the service's own `started` (backfills, seeds, sweeps) waits and
          // the service is not registered: its callers' brokers refuse calls to it (503)
          // rather than send them to a node that would hold them.
          await db.connect(this.logger);
        } catch (err) {
          if (!(err instanceof DatabaseClosedError)) throw err;
          // Stopped before the database was reached: the service never starts. Settling would
          // let moleculer go on starting a broker that is stopping (announced, marked started),
          // and failing would end the process with 1 while its stop goes on.
          await new Promise<never>(() => undefined);
        }
        // Background work: not in the operator CLI's broker (`config.background`).
        if (db.claimEndModels.length > 0 && db.config.background !== false) {
          const counter = prunedCounterOf(this.broker);
          const pruning: Periodic = new Periodic(
            db.pruneEveryMs,
            () => db.pruneRun(counter, () => pruning.stopping),
            (err) =>
              this.logger.warn('pruning the claims of ends failed; the next run tries again', {
                error: err instanceof Error ? err.message : String(err),
              }),
          );
          db.pruning = pruning;
          pruning.start();
        }
      },
      async stopped() {
        unregisterHealthCheck(this.broker, checkName);
        await db.pruning?.stop();
        db.pruning = undefined;
        await db.close();
      },
    };
  }
}
