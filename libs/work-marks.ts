import type { Model } from 'mongoose';
import { insertAll, insertOnce } from './mongo';

/**
 * How long a mark waits for its item from its first write before a reader lets it go. The
 * item's insert is sent once the mark is written, and FerretDB may hold it for SQLite's write
 * lock up to its `busy_timeout` (60 s as scripts/infra builds it, decision 182) and then apply
 * it: a grace shorter than that let a transition land unmarked, its refund never made.
 * `database-waits.test.ts` checks it against the busy timeout.
 */
export const MARK_GRACE_MS = 150_000;

/** What readers before `markedAt` waited, from the item's own time (decision 188). */
const ITEM_TIME_GRACE_MS = 60_000;

/** What a mark is: the `_id` of the item it names, and what its reader sorts or waits by. */
export interface Mark {
  _id: string;
}

export interface WorkMarksOf<Item, M extends Mark> {
  // Each store's model types its own documents; only marks as `markOf` makes them are written.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  marks: () => Model<any>;
  markOf: (item: Item) => M;
  /** The item a mark names, by `_id`; null when it is not stored (yet). */
  read: (id: string) => Promise<Item | null>;
  /** Whether the item still has work. */
  hasWork: (item: Item) => boolean;
  /**
   * When the mark's grace for an item not stored yet began, for a mark written before marks
   * carried `markedAt` (the time of their first write, which counts when present).
   */
  markedAt: (mark: M) => Date;
  /**
   * How long a mark may wait for its item from its first write: longer than any pause between
   * the two writes and the item's insert held by the database (`MARK_GRACE_MS`).
   */
  graceMs: number;
  /** The `_id` of the mark that says the items stored before marks existed were marked. */
  backfilled: string;
}

/**
 * A small collection that names the items of a large one that still have work (messages to
 * send, transitions to settle), one mark per item, `_id` = the item's, so that whoever does the
 * work reads the marks, as few as the work under way, and each item by `_id`: FerretDB answers
 * any other query of the large collection by reading all of it (decision 73).
 *
 * A mark is written before its item is stored, so a stored item with work always has one, and
 * again after: a reader that ended the mark in between, its item not stored yet, cannot have
 * left it without. A mark whose item has no work left ends, and one whose item is missing after
 * `graceMs`; the item is then read once more, since it may have been stored, or a write begun
 * before the delete may have landed after it (FerretDB rewrites a document whole, decision 16),
 * between the read and the delete (decisions 69 and 70).
 */
export class WorkMarks<Item, M extends Mark> {
  constructor(private readonly of: WorkMarksOf<Item, M>) {}

  /**
   * Marks the items with work; marking one again changes nothing (its `markedAt` stays the
   * first write's). True when every mark is this call's (none was there before).
   */
  async mark(items: Item[]): Promise<boolean> {
    const working = items.filter((item) => this.of.hasWork(item));
    const markedAt = new Date();
    return (
      working.length === 0 ||
      insertAll(
        this.of.marks(),
        working.map((item) => ({ ...this.of.markOf(item), markedAt })),
      )
    );
  }

  /** When the mark's grace began: its first write, or what its reader says for an older one. */
  private graceBegan(mark: M & { markedAt?: Date | null }): number {
    return new Date(mark.markedAt ?? this.of.markedAt(mark)).getTime();
  }

  /**
   * Stores items (`store`) between the two writes of their marks, and answers what it answered.
   * The second write matters only once a reader may have ended a first mark, its grace over: a
   * failure of it before then (half the grace, for replicas' clocks), the first marks this
   * call's own, is not the caller's, whose items are stored and marked, and answering it would
   * report as failed what was done.
   */
  async storing<T>(items: Item[], store: () => Promise<T>): Promise<T> {
    // A mark there before (an earlier try's) is as old as that try: its time is not ours.
    const markedAt = Date.now();
    const marksAreOurs = await this.mark(items);
    const stored = await store();
    try {
      await this.mark(items);
    } catch (err) {
      if (!marksAreOurs || !this.withinHalfGrace(items, markedAt)) throw err;
    }
    return stored;
  }

  /**
   * Whether no reader can have ended the items' marks, written at `markedAt`: younger than half
   * the grace (for replicas' clocks) by that time; and by the items' own, than half of what a
   * reader goes by that does not read `markedAt` (a schema without it, or a replica of the
   * version before, which let a mark go `ITEM_TIME_GRACE_MS` after its item's time).
   */
  private withinHalfGrace(items: Item[], markedAt: number, now = Date.now()): boolean {
    const itemGrace = Math.min(this.of.graceMs, ITEM_TIME_GRACE_MS);
    return (
      now - markedAt < this.of.graceMs / 2 &&
      items.every((item) => now - this.of.markedAt(this.of.markOf(item)).getTime() < itemGrace / 2)
    );
  }

  /**
   * Ends the mark if its item has no work left or, after the grace, is still not stored.
   * `item` is the item as the caller read it after the mark.
   */
  async release(mark: M, item: Item | null, now: Date): Promise<void> {
    if (item ? this.of.hasWork(item) : now.getTime() - this.graceBegan(mark) < this.of.graceMs) {
      return;
    }
    await this.of.marks().deleteOne({ _id: mark._id });
    const late = await this.of.read(mark._id);
    if (late) await this.mark([late]);
  }

  /**
   * Marks every item of `stored` with work (a scan of what was stored before the marks existed),
   * once: asked at each start and after a rollout (libs/backfills), it scans until a scan ends
   * and leaves its mark (`backfilled`); safe on two replicas at once.
   */
  async markStored(stored: AsyncIterable<Item>): Promise<void> {
    const marks = this.of.marks();
    if (await marks.exists({ _id: this.of.backfilled })) return;
    for await (const item of stored) await this.mark([item]);
    await insertOnce(() => marks.create({ _id: this.of.backfilled }));
  }
}
