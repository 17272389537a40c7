import type { Model } from 'mongoose';
import { insertOnce } from '../mongo';
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

/** A service's two collections of an outbox: its messages, and one document per attempt claimed. */
export interface OutboxModels {
  // Each service's model types its own documents; only the fields above are read or written.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  messages: Model<any>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  attempts: Model<any>;
}

/**
 * The reads and writes of an outbox that every service keeping one makes alike, so the claims
 * and the record of an attempt mean the same in each (`R` is the service's own record). FerretDB
 * answers `due` by a scan (it pushes down only `_id`): an outbox is small, its sent messages
 * rare or few.
 */
export class OutboxRecords<R extends StoredOutboxFields> {
  constructor(private readonly models: () => OutboxModels) {}

  /** Messages not sent yet whose next attempt is due, oldest first. */
  async due(now: Date, limit: number): Promise<R[]> {
    return (await this.models()
      .messages.find({
        status: 'PENDING',
        // Queued before retries existed: no `nextAttemptAt`, due at once.
        $or: [{ nextAttemptAt: { $lte: now } }, { nextAttemptAt: { $exists: false } }],
      })
      .sort({ createdAt: 1, _id: 1 })
      .limit(limit)
      .lean()) as unknown as R[];
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
  }

  /**
   * Records a failed attempt: the message waits until `retryAt`, or is FAILED when null. Only
   * a message still PENDING (FerretDB does not make this atomic: the claims are the guard).
   */
  async markAttemptFailed(
    id: string,
    attempt: number,
    error: string,
    retryAt: Date | null,
    dropText: boolean,
  ): Promise<void> {
    await this.models().messages.updateOne(
      { _id: id, status: 'PENDING' },
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
