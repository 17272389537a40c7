import { Schema, type Connection, type Model } from 'mongoose';
import { forEachAtOnce } from './at-once';
import { raiseById } from './mongo';
import type { OwnerList } from './owner-list';

/**
 * Work due at a time, found by a periodic sweep through buckets of a fixed span read by `_id`
 * alone: each bucket is an owner list (libs/owner-list) named by its start, and a cursor
 * records the first bucket that may still hold something. A tick reads from the cursor to the
 * bucket of now, whatever the number of items due further ahead; FerretDB 1.24 would read a
 * whole collection for a filter by date (docs/performance.md "Cost as data grows").
 *
 * An item's record says which bucket it is listed in (its due time's, or a later one it was
 * moved to); an entry of another bucket is closed. A move adds the new entry before the record
 * points there, so an item is always listed where its record says. Writers list only in
 * buckets that have not ended by their clock, and the cursor passes a bucket only
 * `graceMs` after it ended, so an entry is never added behind it but by a writer paused that
 * long or whose clock is that far behind; a look behind the cursor now and then finds those.
 */

/** The start of the bucket of span `spanMs` that holds `at`: a multiple of the span since the epoch. */
export function bucketStart(at: Date | number, spanMs: number): number {
  const ms = typeof at === 'number' ? at : at.getTime();
  return ms - (((ms % spanMs) + spanMs) % spanMs);
}

/** The name of the bucket starting at `start`, its list's owner id: readable in the database. */
export const bucketName = (start: number) => new Date(start).toISOString();

/** The starts of the buckets from `from`'s to `to`'s, both included, at most `max` of them. */
export function bucketsBetween(from: number, to: number, max: number, spanMs: number): number[] {
  const starts: number[] = [];
  for (let b = bucketStart(from, spanMs); b <= to && starts.length < max; b += spanMs) {
    starts.push(b);
  }
  return starts;
}

/** One bucket as a sweep reads it: its start and the items listed in it, due or not yet. */
export interface Bucket<T> {
  start: number;
  items: T[];
}

/**
 * Where the cursor may go after a tick: past the leading buckets that ended `graceMs` before
 * `now` and whose every item is `done` (left the bucket); undefined when it stays. A bucket
 * still holding an item stops it there, however many later buckets were read.
 */
export function passableTo<T>(
  buckets: readonly Bucket<T>[],
  done: (item: T) => boolean,
  now: number,
  spanMs: number,
  graceMs: number,
): number | undefined {
  let passed: number | undefined;
  for (const bucket of buckets) {
    const over = bucket.start + spanMs <= now - graceMs;
    if (!over || !bucket.items.every(done)) break;
    passed = bucket.start + spanMs;
  }
  return passed;
}

/**
 * How far a sweep has read a time-ordered list (`_id` = the list): every bucket before `bucket`
 * (ms since the epoch) held nothing live when a sweep last read it. Only raised (`raiseById`).
 */
const sweepCursorSchema = new Schema({ _id: String, bucket: Number }, { versionKey: false });

export type SweepCursorModel = Model<{ _id: string; bucket: number }>;

/** The sweep cursors of a service's bucketed lists, in collection `sweep_cursors`. */
export const defineSweepCursorModel = (connection: Connection): SweepCursorModel =>
  connection.model('SweepCursor', sweepCursorSchema, 'sweep_cursors') as SweepCursorModel;

/** Buckets read at once by a sweep: a backlog of empty ones goes quickly. */
const BUCKET_READS_AT_ONCE = 10;

/**
 * How long after a bucket ends the cursor may pass it. Writers list in buckets that have not
 * ended, so only one paused this long between its reading of the time and its add (or whose
 * clock is that far behind) could list an item in a bucket passed already.
 */
export const BUCKET_GRACE_MS = 10 * 60_000;

/** How far behind the cursor a look behind reads, and how often (`TimeBuckets.readBehind`). */
export const LOOK_BEHIND_MS = 60 * 60_000;
export const LOOK_BEHIND_EVERY_MS = 10 * 60_000;

export interface TimeBucketsOptions {
  /** The buckets' lists, one owner per bucket (`bucketName`). */
  list: OwnerList;
  cursors: () => SweepCursorModel;
  /** This list's cursor among the service's. */
  cursorId: string;
  spanMs: number;
  /**
   * Where the first sweep starts, this long before its now: nothing was listed before the
   * list existed, and this covers anything listed since.
   */
  firstLookBackMs: number;
}

export class TimeBuckets {
  constructor(private readonly o: TimeBucketsOptions) {}

  get spanMs(): number {
    return this.o.spanMs;
  }

  /** The start of the bucket that holds `at`. */
  bucketOf(at: Date | number): number {
    return bucketStart(at, this.o.spanMs);
  }

  /** Lists the item in the bucket starting at `start`, once however often it is called. */
  async add(start: number, itemId: string, at = new Date()): Promise<void> {
    await this.o.list.add(bucketName(start), itemId, at);
  }

  /** The first bucket a sweep reads. */
  async cursor(now: Date): Promise<number> {
    const cursor = await this.o.cursors().findById(this.o.cursorId).lean();
    return cursor?.bucket ?? this.bucketOf(now.getTime() - this.o.firstLookBackMs);
  }

  /**
   * After a sweep read `buckets` (in order from the cursor) at `now`: moves the cursor past the
   * leading ones whose items are all `done` once they ended `BUCKET_GRACE_MS` ago (`passableTo`).
   */
  async passDone<T>(
    buckets: readonly Bucket<T>[],
    done: (item: T) => boolean,
    now: Date,
  ): Promise<void> {
    const passed = passableTo(buckets, done, now.getTime(), this.o.spanMs, BUCKET_GRACE_MS);
    if (passed !== undefined) await this.pass(passed);
  }

  /** Every bucket before `bucket` holds nothing live: sweeps read from there on. */
  async pass(bucket: number): Promise<void> {
    await raiseById(this.o.cursors(), this.o.cursorId, { bucket });
  }

  /**
   * The buckets from `from`'s to `to`'s, at most `maxBuckets`, each with the items its record
   * (`read`) still lists there (`listedIn`): a few lookups by `_id` a bucket, read 10 at once.
   * An item whose record names an earlier bucket may be on its way here (a move adds first):
   * its entry waits for it a while (libs/owner-list `PENDING_ITEM_MS`).
   */
  async read<T>(
    from: number,
    to: number,
    maxBuckets: number,
    read: (itemId: string) => Promise<T | null>,
    listedIn: (item: T) => number,
  ): Promise<Bucket<T>[]> {
    const buckets: Bucket<T>[] = bucketsBetween(from, to, maxBuckets, this.o.spanMs).map(
      (start) => ({ start, items: [] }),
    );
    await forEachAtOnce(buckets, BUCKET_READS_AT_ONCE, async (bucket) => {
      bucket.items = await this.o.list.readLiveItems(
        bucketName(bucket.start),
        read,
        (item) => listedIn(item) === bucket.start,
        { waiting: (item) => item !== null && listedIn(item) < bucket.start },
      );
    });
    return buckets;
  }

  /** The buckets from the cursor to the one of `now`, at most `maxBuckets` (`read`). */
  async readDue<T>(
    now: Date,
    maxBuckets: number,
    read: (itemId: string) => Promise<T | null>,
    listedIn: (item: T) => number,
  ): Promise<Bucket<T>[]> {
    const cursor = await this.cursor(now);
    return this.read(cursor, now.getTime(), maxBuckets, read, listedIn);
  }

  /**
   * The buckets of the hour behind the cursor (`LOOK_BEHIND_MS`), for a sweep to read every
   * `LOOK_BEHIND_EVERY_MS`: an item listed there after the cursor passed it would otherwise
   * wait forever. A handful of reads by `_id`.
   */
  async readBehind<T>(
    now: Date,
    read: (itemId: string) => Promise<T | null>,
    listedIn: (item: T) => number,
  ): Promise<Bucket<T>[]> {
    const cursor = await this.cursor(now);
    const { spanMs } = this.o;
    const count = Math.ceil(LOOK_BEHIND_MS / spanMs);
    return this.read(cursor - LOOK_BEHIND_MS, cursor - spanMs, count, read, listedIn);
  }
}
