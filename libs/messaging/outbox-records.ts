import { Schema, type Model } from 'mongoose';
import { insertAll, insertOnce, updateByIdWhere } from '../mongo';
import type { OutboxMessage, OutboxStatus, OutboxStore } from './outbox-sender';

/** The claim of a message's attempt `n`: whoever inserts it makes that attempt. */
export const attemptId = (messageId: string, attempt: number) => `${messageId}:${attempt}`;

/** What every stored message to people has, whatever else its service keeps on it. */
export interface StoredOutboxFields {
  _id: string;
  status: OutboxStatus;
  /** Null once sent in live, or once FAILED there. */
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
    { _id: String, dueAt: Date, createdAt: Date },
    { versionKey: false, minimize: false },
  );
  schema.index({ dueAt: 1 });
  return schema;
};

interface OutboxPlace {
  _id: string;
  dueAt: Date;
  createdAt: Date;
}

/** The place that marks an outbox's queue filled from the messages stored before it existed. */
const PLACED = '$placed';

/**
 * How long a place may wait for its message to be stored (the place is written first) before
 * the queue lets it go; longer than any pause between two writes of one enqueue.
 */
export const UNSTORED_PLACE_MS = 60_000;

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
  constructor(private readonly models: () => OutboxModels) {}

  /**
   * Queues messages, leaving any already queued as they are. Each place is written before its
   * message, so that a stored message always has one, and again after it: a sender that let
   * the place go while the message was not stored yet (`due`) cannot have left it without.
   */
  async enqueue(messages: R[]): Promise<void> {
    const places = messages.map(placeOf);
    await insertAll(this.models().places, places);
    await insertAll(this.models().messages, messages);
    await insertAll(this.models().places, places);
  }

  /** Queues one message; false when it was there already (read it for what it says). */
  async enqueueOnce(message: R): Promise<boolean> {
    const place = placeOf(message);
    await insertAll(this.models().places, [place]);
    const stored = await insertOnce(() => this.models().messages.create(message));
    await insertAll(this.models().places, [place]);
    return stored;
  }

  /** Messages not sent yet whose next attempt is due, oldest first. */
  async due(now: Date, limit: number): Promise<R[]> {
    const { places, messages } = this.models();
    const queued = (await places
      .find({ dueAt: { $lte: now } })
      .sort({ createdAt: 1, _id: 1 })
      .limit(limit)
      .lean()) as unknown as OutboxPlace[];
    const found = (await Promise.all(
      queued.map((place) => messages.findById(place._id).lean()),
    )) as (R | null)[];
    const ready: R[] = [];
    for (const [i, message] of found.entries()) {
      const place = queued[i];
      if (message?.status !== 'PENDING') await this.letGo(place, message, now);
      else if (message.nextAttemptAt && message.nextAttemptAt > now) {
        // Its failed attempt was recorded and its place not moved: moved now.
        await places.updateOne({ _id: place._id }, { $set: { dueAt: message.nextAttemptAt } });
      } else ready.push(message);
    }
    return ready;
  }

  /** A place whose message is sent, FAILED or, after a while, never stored. */
  private async letGo(place: OutboxPlace, message: R | null, now: Date): Promise<void> {
    if (message === null && now.getTime() - place.createdAt.getTime() < UNSTORED_PLACE_MS) return;
    await this.models().places.deleteOne({ _id: place._id });
    if (message !== null) return;
    // Stored after all, between the read and the delete: it keeps its place.
    const late = (await this.models().messages.findById(place._id).lean()) as R | null;
    if (late?.status === 'PENDING') await insertAll(this.models().places, [placeOf(late)]);
  }

  /**
   * Gives a place to every PENDING message stored before places existed: a scan, once per
   * deployment, safe on two replicas at once.
   */
  async placeStoredMessages(): Promise<void> {
    const { places, messages } = this.models();
    if (await places.exists({ _id: PLACED })) return;
    const stored = messages.find({ status: 'PENDING' }).lean().cursor();
    for await (const message of stored) await insertAll(places, [placeOf(message as R)]);
    await insertOnce(() => places.create({ _id: PLACED }));
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

  /** Records the attempt that sent the message; its place in the queue goes. */
  async markSent(id: string, attempt: number, dropText: boolean): Promise<void> {
    await this.models().messages.updateOne(
      { _id: id },
      {
        $set: {
          status: 'SENT',
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
    due: async (now, limit) => (await records.due(now, limit)).map(toMessage),
    get: async (id) => {
      const record = await records.get(id);
      return record && toMessage(record);
    },
    claimAttempt: (id, attempt, at) => records.claimAttempt(id, attempt, at),
    attemptClaimedAt: (id, attempt) => records.attemptClaimedAt(id, attempt),
    markSent: (id, attempt, dropText) => records.markSent(id, attempt, dropText),
    markAttemptFailed: (id, attempt, error, retryAt, dropText) =>
      records.markAttemptFailed(id, attempt, error, retryAt, dropText),
  };
}
