import { Schema, type Model } from 'mongoose';
import { insertAll, insertOnce, updateByIdWhere } from '../mongo';
import { MARK_GRACE_MS, WorkMarks } from '../work-marks';
import type { OutboxMessage, OutboxStatus, OutboxStore, QueuePlace } from './outbox-sender';

/** The claim of a message's attempt `n`: whoever inserts it makes that attempt. */
export const attemptId = (messageId: string, attempt: number) => `${messageId}:${attempt}`;

/** Beside the attempts' claims: the message was withdrawn, and no later attempt is made. */
const withdrawalId = (messageId: string) => `${messageId}:withdrawn`;

/** What every stored message to people has, whatever else its service keeps on it. */
export interface StoredOutboxFields {
  _id: string;
  status: OutboxStatus;
  /** Null once sent in live, or once FAILED or SUPERSEDED there. */
  text: string | null;
  createdAt: Date;
  sentAt: Date | null;
  /** Attempts made so far; each was claimed as `<_id>:<n>` before it was made. */
  attempts?: number;
  /** When the next attempt is due (absent on messages queued before retries: due at once). */
  nextAttemptAt?: Date;
  /** Why the last attempt failed. */
  lastError?: string | null;
}

/**
 * A message's place in its outbox's queue, `_id` = the message's, kept while it is PENDING:
 * when its next attempt is due, and when the message was made (the queue's order).
 */
export const outboxPlaceSchema = () => {
  const schema = new Schema(
    // `markedAt`: its first write (libs/work-marks), from which one without its message waits.
    { _id: String, dueAt: Date, createdAt: Date, markedAt: Date },
    { versionKey: false, minimize: false },
  );
  schema.index({ dueAt: 1 });
  // The queue's order (decision 176), read from a place on: walked in it on MongoDB.
  schema.index({ createdAt: 1, _id: 1 });
  return schema;
};

interface OutboxPlace {
  _id: string;
  dueAt: Date;
  createdAt: Date;
  /** Its first write (libs/work-marks); none on a place written before places carried it. */
  markedAt?: Date;
}

/**
 * A service's three collections of an outbox: its messages (every one ever queued, kept as
 * the record of what was sent), one place per message still to send, and one document per
 * attempt claimed.
 */
export interface OutboxModels {
  // Each service's model types its own documents; only the fields above are read or written.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  messages: Model<any>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  places: Model<any>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  attempts: Model<any>;
}

const placeOf = (message: StoredOutboxFields): OutboxPlace => ({
  _id: message._id,
  dueAt: message.nextAttemptAt ?? message.createdAt,
  createdAt: message.createdAt,
});

/**
 * The reads and writes of an outbox that every service keeping one makes alike, so the claims
 * and the record of an attempt mean the same in each (`R` is the service's own record).
 *
 * The messages stay as the record of what was sent, so their collection grows with the
 * platform; FerretDB answers any query but by `_id` with a scan (decision 16), and the senders
 * ask what is due every few seconds. So `due` reads the places instead: one per message still
 * PENDING, deleted when it is sent or fails for good, a collection as small as the queue.
 */
export class OutboxRecords<R extends StoredOutboxFields> {
  /** One per message still PENDING, written around its message (libs/work-marks). */
  private readonly places: WorkMarks<R, OutboxPlace>;

  constructor(private readonly models: () => OutboxModels) {
    this.places = new WorkMarks<R, OutboxPlace>({
      marks: () => this.models().places,
      markOf: placeOf,
      read: (id) => this.get(id),
      hasWork: (message) => message.status === 'PENDING',
      markedAt: (place) => place.createdAt,
      graceMs: MARK_GRACE_MS,
      backfilled: '$placed',
    });
  }

  /** Queues messages, leaving any already queued as they are. */
  async enqueue(messages: R[]): Promise<void> {
    await this.places.storing(messages, () => insertAll(this.models().messages, messages));
  }

  /** Queues one message; false when it was there already (read it for what it says). */
  enqueueOnce(message: R): Promise<boolean> {
    return this.places.storing([message], () =>
      insertOnce(() => this.models().messages.create(message)),
    );
  }

  /**
   * Messages not sent yet whose next attempt is due, oldest first, from after `after`; with
   * where the next read starts, null once the queue's end was read.
   */
  async due(
    now: Date,
    limit: number,
    after?: QueuePlace,
  ): Promise<{ records: R[]; next: QueuePlace | null }> {
    const { places, messages } = this.models();
    const queued = (await places
      .find({
        dueAt: { $lte: now },
        ...(after && {
          $or: [
            { createdAt: { $gt: after.createdAt } },
            { createdAt: after.createdAt, _id: { $gt: after._id } },
          ],
        }),
      })
      .sort({ createdAt: 1, _id: 1 })
      .limit(limit)
      .lean()) as unknown as OutboxPlace[];
    const last = queued.at(-1);
    const next =
      last && queued.length === limit ? { createdAt: last.createdAt, _id: last._id } : null;
    const found = (await Promise.all(
      queued.map((place) => messages.findById(place._id).lean()),
    )) as (R | null)[];
    const ready: R[] = [];
    for (const [i, message] of found.entries()) {
      const place = queued[i];
      if (message?.status !== 'PENDING') await this.places.release(place, message, now);
      else if (message.nextAttemptAt && message.nextAttemptAt > now) {
        // Its failed attempt was recorded and its place not moved: moved now.
        await places.updateOne({ _id: place._id }, { $set: { dueAt: message.nextAttemptAt } });
      } else ready.push(message);
    }
    return { records: ready, next };
  }

  /** Gives a place to every PENDING message stored before places existed (libs/backfills). */
  async placeStoredMessages(): Promise<void> {
    const stored = this.models().messages.find({ status: 'PENDING' }).lean().cursor();
    await this.places.markStored(stored as AsyncIterable<R>);
  }

  async get(id: string): Promise<R | null> {
    return (await this.models().messages.findById(id).lean()) as R | null;
  }

  /** Claims attempt `n` of a message; false when it was claimed already (by whom, see `at`). */
  claimAttempt(id: string, attempt: number, at: Date): Promise<boolean> {
    return insertOnce(() => this.models().attempts.create({ _id: attemptId(id, attempt), at }));
  }

  /** When attempt `n` of a message was claimed, or null when it never was. */
  async attemptClaimedAt(id: string, attempt: number): Promise<Date | null> {
    const found = (await this.models().attempts.findById(attemptId(id, attempt)).lean()) as {
      at: Date;
    } | null;
    return found ? new Date(found.at) : null;
  }

  /**
   * Withdraws messages no longer worth sending (a proof code replaced by a newer one). Each
   * still PENDING is marked withdrawn, then its next attempt is claimed, as a sender would:
   * claimed, it is left SUPERSEDED at once, its place gone. One a sender holds already goes out
   * if that attempt succeeds; should it fail, or its sender stop, the next attempt's sender
   * finds the mark and records it SUPERSEDED instead (`OutboxSender`). The ids left SUPERSEDED
   * now.
   */
  async supersede(ids: readonly string[], at: Date, dropText: boolean): Promise<string[]> {
    const withdrawn: string[] = [];
    for (const id of ids) {
      const message = await this.get(id);
      if (message?.status !== 'PENDING') continue;
      await insertOnce(() => this.models().attempts.create({ _id: withdrawalId(id), at }));
      if (!(await this.claimAttempt(id, (message.attempts ?? 0) + 1, at))) continue;
      await this.markWithdrawn(id, dropText);
      withdrawn.push(id);
    }
    return withdrawn;
  }

  /** Whether the message was withdrawn (`supersede`) while a sender held it. */
  async isWithdrawn(id: string): Promise<boolean> {
    return (await this.models().attempts.exists({ _id: withdrawalId(id) })) !== null;
  }

  /** Records the message SUPERSEDED, by the holder of its next attempt; its place goes. */
  async markWithdrawn(id: string, dropText: boolean): Promise<void> {
    await this.models().messages.updateOne(
      { _id: id },
      { $set: { status: 'SUPERSEDED', ...(dropText ? { text: null } : {}) } },
    );
    await this.models().places.deleteOne({ _id: id });
  }

  /**
   * Records the attempt that sent the message and the address it went to (a notice is
   * addressed when it is sent, not before: decision 97); its place in the queue goes.
   */
  async markSent(id: string, attempt: number, recipient: string, dropText: boolean): Promise<void> {
    await this.models().messages.updateOne(
      { _id: id },
      {
        $set: {
          status: 'SENT',
          recipient,
          sentAt: new Date(),
          attempts: attempt,
          lastError: null,
          ...(dropText ? { text: null } : {}),
        },
      },
    );
    await this.models().places.deleteOne({ _id: id });
  }

  /**
   * Records a failed attempt: the message waits until `retryAt` (its place moves there), or is
   * FAILED when null (its place goes). Only a message still PENDING (FerretDB does not make
   * this atomic: the claims are the guard).
   */
  async markAttemptFailed(
    id: string,
    attempt: number,
    error: string,
    retryAt: Date | null,
    dropText: boolean,
  ): Promise<void> {
    const { messages, places } = this.models();
    await updateByIdWhere(
      messages,
      id,
      { status: 'PENDING' },
      {
        $set: {
          attempts: attempt,
          lastError: error,
          ...(retryAt
            ? { nextAttemptAt: retryAt }
            : { status: 'FAILED', ...(dropText ? { text: null } : {}) }),
        },
      },
    );
    if (retryAt) {
      await places.updateOne(
        { _id: id },
        { $set: { dueAt: retryAt }, $setOnInsert: { createdAt: new Date() } },
        { upsert: true },
      );
    } else await places.deleteOne({ _id: id });
  }
}

/** An outbox's records as the sender reads them, each record mapped to the message it sends. */
export function outboxStoreOver<R extends StoredOutboxFields>(
  records: OutboxRecords<R>,
  toMessage: (record: R) => OutboxMessage,
): OutboxStore {
  return {
    due: async (now, limit, after) => {
      const { records: due, next } = await records.due(now, limit, after);
      return { messages: due.map(toMessage), next };
    },
    get: async (id) => {
      const record = await records.get(id);
      return record && toMessage(record);
    },
    claimAttempt: (id, attempt, at) => records.claimAttempt(id, attempt, at),
    attemptClaimedAt: (id, attempt) => records.attemptClaimedAt(id, attempt),
    markSent: (id, attempt, recipient, dropText) =>
      records.markSent(id, attempt, recipient, dropText),
    isWithdrawn: (id) => records.isWithdrawn(id),
    markWithdrawn: (id, dropText) => records.markWithdrawn(id, dropText),
    markAttemptFailed: (id, attempt, error, retryAt, dropText) =>
      records.markAttemptFailed(id, attempt, error, retryAt, dropText),
  };
}
