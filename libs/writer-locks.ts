import { randomUUID } from 'node:crypto';
import type { Logger } from 'moleculer';
import { setTimeout as sleep } from 'node:timers/promises';
import { Schema, type Connection, type Model } from 'mongoose';
import { conflict } from './errors';
import {
  claimEnd,
  defineClaimEndModel,
  insertOnce,
  writeMayHaveLanded,
  type ClaimEndModel,
} from './mongo';

/**
 * One writer at a time for documents that several requests change (decision 132). FerretDB
 * writes an update as the whole document it read, so two writers of different fields at once
 * undo each other: two `$set`s of one document lost one in 196 rounds of 200. A writer inserts
 * a lock whose `_id` is the document's id and deletes it once done; another waits for it, a
 * while, then is refused. A lock whose writer stopped is taken over once `leaseMs` old, ended
 * by the one call that claims its end (`claimEnd`), so that two takers cannot both delete (a
 * let-go that stopped after claiming that end holds the lock for `CLAIM_END_LEASE_MS` more).
 */

/**
 * A held lock: when it was taken (its lease runs from then), and the token that names this
 * taking of it, which its end is keyed by (two takings can fall in one millisecond).
 */
interface LockRecord {
  _id: string;
  at: Date;
  token: string;
}

const lockSchema = new Schema<LockRecord>(
  { _id: String, at: Date, token: String },
  { versionKey: false },
);

/**
 * How soon a writer waiting for a lock looks again, doubling (with jitter) up to
 * `LOCK_POLL_MAX_MS`: a change takes tens of milliseconds, and each look is a read.
 */
const LOCK_POLL_MS = 25;
const LOCK_POLL_MAX_MS = 100;

/**
 * How long a writer waits for another's change to end before it is refused: far longer than a
 * change takes, far shorter than a client's patience.
 */
export const WRITER_WAIT_MS = 5_000;

/**
 * How long a lock holds before another writer may take it over: longer than the slowest change
 * still running (a courier's retirement makes some fifteen database calls of up to
 * `MONGO_TIMEOUT_MS` each, and a call to another service of up to `REQUEST_TIMEOUT_MS`: 165 s
 * at their defaults), since a holder overtaken while it still writes would write back what it
 * read over the next writer's change. A writer that stopped holds its document this long.
 */
export const WRITER_LEASE_MS = 180_000;

export type WriterLockModels<P extends string> = { [K in `${P}Lock`]: Model<LockRecord> } & {
  [K in `${P}LockEnd`]: ClaimEndModel;
};

/**
 * The models of one kind of lock: `<name>_locks` and `<name>_lock_ends`, as `<prefix>Lock` and
 * `<prefix>LockEnd` (spread into a service's models).
 */
export function defineWriterLockModels<P extends string>(
  connection: Connection,
  name: string,
  prefix: P,
): WriterLockModels<P> {
  return {
    [`${prefix}Lock`]: connection.model(`${prefix}Lock`, lockSchema, `${name}_locks`),
    [`${prefix}LockEnd`]: defineClaimEndModel(connection, `${prefix}LockEnd`, `${name}_lock_ends`),
  } as WriterLockModels<P>;
}

/** The refusal of a writer that waited `WRITER_WAIT_MS` for `what` (its noun and id). */
export const changeUnderWay = (what: string) =>
  conflict(`${what} is being changed by another request; send this change again in a few seconds`);

export interface WriterLockOptions {
  /** How long a writer waits for the lock before it is refused (`WRITER_WAIT_MS`). */
  waitMs?: number;
  leaseMs?: number;
}

export class WriterLocks {
  private readonly waitMs: number;
  private readonly leaseMs: number;

  constructor(
    private readonly models: () => { Lock: Model<LockRecord>; End: ClaimEndModel },
    private readonly noun: string,
    { waitMs = WRITER_WAIT_MS, leaseMs = WRITER_LEASE_MS }: WriterLockOptions = {},
  ) {
    this.waitMs = waitMs;
    this.leaseMs = leaseMs;
  }

  /**
   * The locks of `defineWriterLockModels(…, prefix)`; `noun` names what they guard in refusals
   * and logs ("Package", "Fleet type").
   */
  static named<P extends string>(
    models: () => WriterLockModels<P>,
    prefix: P,
    noun: string,
    options?: WriterLockOptions,
  ): WriterLocks {
    return new WriterLocks(
      () => {
        // TypeScript does not narrow an index by a generic template key: the type says it is there.
        const m = models() as unknown as Record<string, unknown>;
        return {
          Lock: m[`${prefix}Lock`] as Model<LockRecord>,
          End: m[`${prefix}LockEnd`] as ClaimEndModel,
        };
      },
      noun,
      options,
    );
  }

  /**
   * Runs `work` as the one writer of `id`; refused (409, `changeUnderWay`) when another writer
   * held it all the wait. A lock not let go (the database away a moment) is logged, and taken
   * over once its lease is over: a change meanwhile waits, then is refused.
   */
  async holding<T>(id: string, work: () => Promise<T>, logger?: Pick<Logger, 'warn'>): Promise<T> {
    const token = await this.acquire(id);
    if (!token) throw changeUnderWay(`${this.noun} ${id}`);
    try {
      return await work();
    } finally {
      await this.release(id, token).catch((err: unknown) =>
        logger?.warn(`${this.noun} ${id}: change not let go`, { err: (err as Error).message }),
      );
    }
  }

  /**
   * Waits until no writer holds `id` (a lock past its lease is a stopped writer's, and holds
   * nothing): for a reader that must not read the document in the middle of a change, such as
   * a change it is about to undo. False when one held it all the wait (`waitMs`).
   */
  awaitFree(id: string): Promise<boolean> {
    return this.freeBefore(id, Date.now() + this.waitMs);
  }

  /**
   * Whether `id` is free (or its lock past its lease) by `until`, looked at by reads alone, ever
   * less often: on FerretDB an insert refused as a duplicate takes the database's one write lock
   * as any write does, so waiters trying the insert every few milliseconds slowed the very
   * change they waited for.
   */
  private async freeBefore(
    id: string,
    until: number,
    clock: () => Date = () => new Date(),
  ): Promise<boolean> {
    const { Lock } = this.models();
    for (let pause = LOCK_POLL_MS; ; pause = Math.min(2 * pause, LOCK_POLL_MAX_MS)) {
      const held = await Lock.findById(id).lean<LockRecord>();
      if (!held || clock().getTime() - held.at.getTime() >= this.leaseMs) return true;
      if (Date.now() >= until) return false;
      await sleep(Math.min(pause * (0.5 + Math.random() / 2), Math.max(0, until - Date.now())));
    }
  }

  /** The token of this call's taking of the lock; null when another held it all the wait. */
  async acquire(id: string, clock: () => Date = () => new Date()): Promise<string | null> {
    const until = Date.now() + this.waitMs;
    for (;;) {
      const token = await this.tryAcquire(id, clock);
      if (token || Date.now() >= until) return token;
      if (!(await this.freeBefore(id, until, clock))) return null;
    }
  }

  /**
   * Lets go of the lock `acquire` answered `token` for, unless it is another's now (taken over
   * once its lease was over): read, then deleted by the one call that claims its end.
   */
  async release(id: string, token: string, clock?: () => Date): Promise<void> {
    const { Lock, End } = this.models();
    const held = await Lock.findById(id).lean<LockRecord>();
    if (held?.token !== token) return;
    if (await claimEnd(End, `${id}:${token}`, clock)) await Lock.deleteOne({ _id: id });
  }

  /**
   * Whether this call's insert of the lock took it. An insert whose answer was lost (the
   * connection cut) may have landed: the lock is read, and held when it bears this call's
   * token, rather than left to hold the document for its lease with nobody to let it go;
   * when it does not, the insert did not land, and the lock is waited for as any.
   */
  private async inserted(id: string, token: string, clock: () => Date): Promise<boolean> {
    const { Lock } = this.models();
    try {
      return await insertOnce(() => Lock.create({ _id: id, at: clock(), token }));
    } catch (err) {
      if (!writeMayHaveLanded(err)) throw err;
      const held = await Lock.findById(id)
        .lean<LockRecord>()
        .catch(() => undefined);
      // Unreadable too: not known whether this call holds it.
      if (held === undefined) throw err;
      // Not this call's (the insert did not land): free, or another's to wait for, as any.
      return held?.token === token;
    }
  }

  private async tryAcquire(id: string, clock: () => Date): Promise<string | null> {
    const { Lock } = this.models();
    for (let round = 0; round < 3; round++) {
      const token = randomUUID();
      if (await this.inserted(id, token, clock)) return token;
      const held = await Lock.findById(id).lean<LockRecord>();
      if (!held) continue;
      if (clock().getTime() - held.at.getTime() < this.leaseMs) return null;
      await this.release(id, held.token, clock);
    }
    return null;
  }
}
