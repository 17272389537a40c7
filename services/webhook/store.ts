import { Schema, type Connection } from 'mongoose';
import type { WebhookEventType } from '../../libs/contracts/webhook';
import {
  attemptId,
  OutboxRecords,
  type StoredOutboxFields,
  outboxPlaceSchema,
} from '../../libs/messaging/outbox-records';
import { nameBasedId } from '../../libs/ids';
import {
  deleteManyById,
  insertAll,
  insertOnce,
  isDuplicateKey,
  raiseById,
  setManyById,
} from '../../libs/mongo';
import { markedRecorded, unrecordedSince, type BackfillPass } from '../../libs/backfills';
import {
  OwnerList,
  defineNamedOwnerListModels,
  listedAs,
  type OwnerListEntry,
} from '../../libs/owner-list';
import { definePlaceModel, StoredPlaces } from '../../libs/places';
import { defineWriterLockModels, WriterLocks } from '../../libs/writer-locks';

/**
 * The webhook service's records. Whatever must happen once is claimed by inserting a document
 * whose `_id` names it (FerretDB's conditional updates are not atomic): a secret version, an
 * event, an endpoint's message of it, and each attempt to send one. The queue holds only the
 * messages still to send, so the dispatcher's scan of it stays small; the messages and their
 * attempts are the history. The notices to endpoint owners (an endpoint disabled) are an outbox
 * of their own, sent by e-mail as libs/messaging sends every message to people.
 */

const plain = { versionKey: false, minimize: false, strict: false } as const;

const endpointSchema = new Schema({ _id: String, userId: String, createdAt: Date }, plain);
endpointSchema.index({ userId: 1, environment: 1, createdAt: -1 });
/** `_id` = `<webhookId>:<n>`: the n-th signing secret, sealed. */
const secretSchema = new Schema({ _id: String, webhookId: String }, plain);
const eventSchema = new Schema({ _id: String, deliveryId: String }, plain);
const messageSchema = new Schema({ _id: String, webhookId: String, createdAt: Date }, plain);
messageSchema.index({ webhookId: 1, createdAt: -1 });
const queueSchema = new Schema(
  {
    _id: String,
    webhookId: String,
    eventId: String,
    lane: String,
    sequence: Number,
    attempts: Number,
    firstAttemptAt: Date,
    nextAttemptAt: Date,
    ephemeral: Boolean,
    replay: Boolean,
    replayedAfter: Number,
  },
  plain,
);
/**
 * `_id` = a lane (`<webhookId>:<deliveryId>`): the highest sequence of a change attempted in
 * it. A courier's position below it is stale and not sent (decision 77).
 */
const laneSchema = new Schema({ _id: String, sequence: Number }, plain);
/** `_id` = `<messageId>:<n>`: whoever inserts it makes the n-th attempt. */
const attemptSchema = new Schema({ _id: String, messageId: String }, plain);
/**
 * A notice to an endpoint's owner, `_id` naming what it tells once. Read by a scan: there is
 * one per disable, and sent ones stay as the record of what the owner was told.
 */
const noticeSchema = new Schema({ _id: String, webhookId: String, status: String }, plain);
/** `_id` = `<noticeId>:<n>`: whoever inserts it makes the n-th attempt to send the notice. */
const noticeAttemptSchema = new Schema({ _id: String, at: Date }, plain);
/**
 * `_id` = a deleted endpoint's id, inserted before the endpoint is marked deleted. FerretDB
 * writes a document whole from the copy an update read (decision 16), so another write of the
 * endpoint racing its deletion (a dispatcher's failing streak, a disable, an enable) could
 * write it back live: each looks here after it (decision 99).
 */
const endpointDeletionSchema = new Schema({ _id: String, at: Date }, plain);

/**
 * `_id` = `<webhookId>:<n>`: a retention sweep deletes the messages of the endpoint's list from
 * its entry n on (services/webhook/retention.ts); replicas pass over a batch another holds.
 */
const retentionClaimSchema = new Schema({ _id: String, at: Date }, plain);

export function defineWebhookModels(connection: Connection) {
  return {
    Endpoint: connection.model('WebhookEndpoint', endpointSchema, 'webhook_endpoints'),
    // A write of an endpoint under way, `_id` the endpoint (libs/writer-locks).
    ...defineWriterLockModels(connection, 'webhook_endpoint_edit', 'EndpointEdit'),
    EndpointDeletion: connection.model(
      'WebhookEndpointDeletion',
      endpointDeletionSchema,
      'webhook_endpoint_deletions',
    ),
    /** `_id` = `<owner>:<k>`: the endpoint that holds its owner's k-th place (libs/places). */
    Place: definePlaceModel(connection, 'WebhookEndpointPlace', 'webhook_endpoint_places'),
    Secret: connection.model('WebhookSecret', secretSchema, 'webhook_secrets'),
    Event: connection.model('WebhookEvent', eventSchema, 'webhook_events'),
    Message: connection.model('WebhookMessage', messageSchema, 'webhook_messages'),
    Queue: connection.model('WebhookQueued', queueSchema, 'webhook_queue'),
    Lane: connection.model('WebhookLane', laneSchema, 'webhook_lanes'),
    Attempt: connection.model('WebhookAttempt', attemptSchema, 'webhook_attempts'),
    Notice: connection.model('WebhookNotice', noticeSchema, 'webhook_notices'),
    NoticePlace: connection.model(
      'WebhookNoticePlace',
      outboxPlaceSchema(),
      'webhook_notice_places',
    ),
    NoticeAttempt: connection.model(
      'WebhookNoticeAttempt',
      noticeAttemptSchema,
      'webhook_notice_attempts',
    ),
    // Read by `_id` (libs/owner-list): each endpoint's messages, and each owner's endpoints.
    RetentionClaim: connection.model(
      'WebhookRetentionClaim',
      retentionClaimSchema,
      'webhook_retention_claims',
    ),
    ...defineNamedOwnerListModels(connection, 'webhook_endpoint_messages', 'EndpointMessage'),
    ...defineNamedOwnerListModels(connection, 'webhook_owner_endpoints', 'OwnerEndpoint'),
  };
}

type WebhookModels = ReturnType<typeof defineWebhookModels>;

export const ENDPOINT_STATUSES = ['ACTIVE', 'DISABLED'] as const;
export type EndpointStatus = (typeof ENDPOINT_STATUSES)[number];

export interface EndpointRecord {
  _id: string;
  userId: string;
  environment: string;
  url: string;
  /** Null: every event. */
  events: WebhookEventType[] | null;
  description: string | null;
  /** The latest secret version known when last written (a hint: the versions are the truth). */
  secretVersion: number;
  status: EndpointStatus;
  /** The first failure since the last success, or null. */
  failingSince: Date | null;
  /** The streak's latest failure, as last written (`failureToRecord`); absent before it was kept. */
  lastFailedAt?: Date | null;
  /** How long its failures had kept coming by `lastFailedAt`, quiets left out (`failingForMs`). */
  failingForMs?: number | null;
  disabledAt: Date | null;
  disabledReason: string | null;
  deleted: boolean;
  createdAt: Date;
  /** Which of its owner's places it holds (libs/places); none if registered before places. */
  place?: number;
}

export interface SecretRecord {
  _id: string;
  webhookId: string;
  n: number;
  sealed: string;
  createdAt: Date;
}

export interface EventRecord {
  _id: string;
  type: WebhookEventType;
  userId: string;
  recipientUserId?: string;
  deliveryId: string;
  sequence: number;
  createdAt: Date;
  data: Record<string, unknown>;
}

/** `SKIPPED`: a courier's position not sent, stale by a later event of its delivery. */
export const MESSAGE_STATUSES = ['PENDING', 'DELIVERED', 'FAILED', 'SKIPPED'] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];

export interface MessageRecord {
  _id: string;
  webhookId: string;
  eventId: string;
  type: WebhookEventType;
  deliveryId: string;
  sequence: number;
  status: MessageStatus;
  attempts: number;
  lastAttemptAt: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
  deliveredAt: Date | null;
  createdAt: Date;
  /**
   * Past its retention and about to be deleted (services/webhook/retention.ts): its event is
   * kept for none but the messages not so marked.
   */
  retiring?: boolean;
}

export interface QueuedRecord {
  _id: string;
  webhookId: string;
  /** The endpoint's owner: their endpoints share one part of a dispatcher's room (absent on older entries). */
  userId?: string;
  eventId: string;
  lane: string;
  sequence: number;
  /** Attempts made so far (all failed). */
  attempts: number;
  firstAttemptAt: Date | null;
  nextAttemptAt: Date;
  /**
   * A courier's position: tried once, and not at all once a later event of its delivery went or
   * waits in its lane (it is stale by then).
   */
  ephemeral: boolean;
  /** Queued again by its owner (`/replay`): its attempts say so. */
  replay?: boolean;
  /** A replay's: the attempts made before it, from which its waits after a failure count. */
  replayedAfter?: number;
}

export interface AttemptRecord {
  _id: string;
  messageId: string;
  webhookId: string;
  n: number;
  startedAt: Date;
  finishedAt: Date | null;
  statusCode: number | null;
  error: string | null;
  durationMs: number | null;
  responseExcerpt: string | null;
  /** Made by a replay the owner asked for. */
  replay: boolean;
  /** Claimed for a stale courier position and not made (decision 77). */
  skipped?: boolean;
  /** Claimed given up: its endpoint stayed disabled past the retention (decision 151). */
  givenUp?: boolean;
}

/** An e-mail to an endpoint's owner; only one kind so far: the endpoint was disabled. */
export interface NoticeRecord extends StoredOutboxFields {
  /** `endpoint-disabled:<webhookId>:<failingSince ms>`: one per disable (docs/webhooks.md). */
  _id: string;
  webhookId: string;
  userId: string;
  /**
   * The address the notice went to, recorded with its send; null before (the owner's address
   * is asked of the account service at each attempt).
   */
  recipient: string | null;
  subject: string;
  /** When the endpoint was disabled, as the first dispatcher to record it saw it. */
  disabledAt: Date;
}

/** Attempts of a message the delivery log shows: the latest. */
export const ATTEMPTS_SHOWN = 10;

export const secretId = (webhookId: string, n: number) => `${webhookId}:${n}`;

/** Names an endpoint's message of an event: the same pair is one message, however often published. */
export const messageIdOf = (webhookId: string, eventId: string) =>
  nameBasedId('webhook-message', webhookId, eventId);

/** Whose list of endpoints an endpoint is on: its user's in its environment. */
export const endpointOwner = (userId: string, environment: string) => `${userId}:${environment}`;

const newestCreatedFirst = (a: EndpointRecord, b: EndpointRecord) =>
  b.createdAt.getTime() - a.createdAt.getTime() || (a._id < b._id ? 1 : -1);

/** The order an endpoint's messages are listed in (read back newest first, the reverse). */
const olderFirst = (a: MessageRecord, b: MessageRecord) =>
  a.createdAt.getTime() - b.createdAt.getTime() || (a._id < b._id ? -1 : 1);

export class WebhookStore {
  /** Each owner's endpoint places (libs/places): WEBHOOK_MAX_ENDPOINTS held exactly. */
  readonly places: StoredPlaces;
  /** The notices to endpoint owners, read and written as every outbox is (libs/messaging). */
  readonly notices: OutboxRecords<NoticeRecord>;
  /**
   * Each endpoint's messages in the order they were stored, the messages of one publication
   * by `_id`: newest first, that is the order `createdAt` then `_id` descending gave.
   */
  private readonly messagesByEndpoint: OwnerList;
  /**
   * Each owner's endpoints (`<userId>:<environment>`), every one ever created: a delete only
   * marks the endpoint, so a read passes over the deleted ones, and the list's floor
   * (`readLiveItems`) keeps it from reading those below the oldest live endpoint again. At most
   * `WEBHOOK_MAX_ENDPOINTS` are live; deleted ones above a live one pile up with an owner's
   * turnover (one entry per endpoint created) until 50 of them lift the live ones above.
   */
  private readonly endpointsByOwner: OwnerList;

  /** Writers of an endpoint, one at a time (`writeEndpoint`, decision 132). */
  private readonly edits: WriterLocks;

  constructor(
    private readonly models: () => WebhookModels,
    /** Where a lock not let go is told (it is taken over after its lease). */
    private readonly warn: (message: string, meta: object) => void = () => undefined,
  ) {
    this.edits = WriterLocks.named(models, 'EndpointEdit', 'Webhook');
    this.messagesByEndpoint = OwnerList.named(models, 'EndpointMessage');
    this.endpointsByOwner = OwnerList.named(models, 'OwnerEndpoint');
    this.places = new StoredPlaces(
      () => this.m.Place,
      async (webhookId) => {
        const endpoint = await this.endpoint(webhookId);
        return endpoint && { gone: endpoint.deleted, place: endpoint.place };
      },
    );
    this.notices = new OutboxRecords(() => ({
      messages: this.m.Notice,
      places: this.m.NoticePlace,
      attempts: this.m.NoticeAttempt,
    }));
  }

  private get m(): WebhookModels {
    return this.models();
  }

  // --- endpoints

  async insertEndpoint(endpoint: EndpointRecord): Promise<void> {
    const owner = endpointOwner(endpoint.userId, endpoint.environment);
    // Before the endpoint: a stored endpoint is always on its owner's list.
    await this.endpointsByOwner.addBeforeStoring(owner, endpoint._id);
    await this.m.Endpoint.create(markedRecorded(endpoint));
  }

  async endpoint(webhookId: string): Promise<EndpointRecord | null> {
    return (await this.m.Endpoint.findById(webhookId).lean()) as EndpointRecord | null;
  }

  /**
   * The owner's endpoints not deleted, newest created first: the owner's list read down to its
   * floor, each endpoint by `_id`. Its cost grows with the owner's live endpoints and the
   * deleted ones above them, never with anyone else's.
   */
  async endpointsOf(userId: string, environment: string): Promise<EndpointRecord[]> {
    const owner = endpointOwner(userId, environment);
    const live = await this.endpointsByOwner.readLiveItems(
      owner,
      (id) => this.endpoint(id),
      (endpoint) => !endpoint.deleted,
    );
    return live
      .filter((e) => e.userId === userId && e.environment === environment)
      .sort(newestCreatedFirst);
  }

  /**
   * `endpointsOf` in one environment, each owner read once however often asked: for work that
   * asks of many events at one time (a publication, a sweep's batch).
   */
  endpointsReadOnce(environment: string): (userId: string) => Promise<EndpointRecord[]> {
    const read = new Map<string, Promise<EndpointRecord[]>>();
    return (userId) => {
      let endpoints = read.get(userId);
      if (!endpoints) {
        endpoints = this.endpointsOf(userId, environment);
        read.set(userId, endpoints);
      }
      return endpoints;
    };
  }

  /** Puts the endpoints stored before `webhook_owner_endpoints` existed on their owners' lists. */
  async listStoredEndpoints(pass: BackfillPass): Promise<void> {
    await this.endpointsByOwner.backfill(pass, (since) =>
      listedAs(
        this.m.Endpoint.find(
          { deleted: false, ...unrecordedSince('createdAt', since) },
          { userId: 1, environment: 1, createdAt: 1 },
        )
          .sort({ createdAt: 1 })
          .lean<Pick<EndpointRecord, '_id' | 'userId' | 'environment' | 'createdAt'>[]>()
          .cursor(),
        (e) => ({
          ownerId: endpointOwner(e.userId, e.environment),
          itemId: e._id,
          at: e.createdAt,
        }),
      ),
    );
  }

  /**
   * Changes an endpoint; false when it was deleted. A deletion recorded by the time the change
   * is written may have been undone by it: the endpoint is marked deleted again.
   */
  async updateEndpoint(
    webhookId: string,
    changes: Partial<Omit<EndpointRecord, 'deleted'>>,
  ): Promise<boolean> {
    await this.writeEndpoint(webhookId, changes);
    return !(await this.deletionRecorded(webhookId));
  }

  /**
   * Disables the endpoint for the failing streak that began at `streak`, if it still stands:
   * ACTIVE, not deleted, failing since then. Read and written as the endpoint's one writer
   * (`edits`): a disable decided from an earlier read would otherwise undo an enable, or a
   * success that ended the streak, written since (the lock orders writes, it does not check
   * them). `disabling` makes the changes (it records the notice first) from the endpoint as
   * read. Answers the changes written, or null when the streak no longer stands.
   */
  async disableEndpoint(
    webhookId: string,
    streak: Date,
    disabling: (current: EndpointRecord) => Promise<Partial<EndpointRecord>>,
  ): Promise<Partial<EndpointRecord> | null> {
    const changes = await this.edits.holding(
      webhookId,
      async () => {
        const current = (await this.m.Endpoint.findById(webhookId).lean()) as EndpointRecord | null;
        const stands =
          current !== null &&
          !current.deleted &&
          current.status === 'ACTIVE' &&
          current.failingSince?.getTime() === streak.getTime();
        if (!stands) return null;
        const made = await disabling(current);
        await this.m.Endpoint.updateOne({ _id: webhookId }, { $set: made });
        return made;
      },
      { warn: this.warn },
    );
    return changes && !(await this.deletionRecorded(webhookId)) ? changes : null;
  }

  /**
   * Writes a failing streak's progress only while the streak it was counted for stands
   * (failing since `streak`), as the endpoint's one writer: a dispatcher's copy of the endpoint,
   * a second old, may count a streak a success has ended since, and its length written on the
   * streak begun after would disable that one early. False when the streak no longer stands,
   * or the endpoint was deleted: a deletion this write may have undone is marked again, as
   * every other write of an endpoint does (`updateEndpoint`).
   */
  async recordStreakProgress(
    webhookId: string,
    streak: Date,
    progress: Pick<EndpointRecord, 'lastFailedAt' | 'failingForMs'>,
  ): Promise<boolean> {
    const written = await this.edits.holding(
      webhookId,
      async () => {
        const current = await this.m.Endpoint.findById(webhookId).lean<EndpointRecord>();
        if (current?.failingSince?.getTime() !== streak.getTime()) return false;
        await this.m.Endpoint.updateOne({ _id: webhookId }, { $set: progress });
        return true;
      },
      { warn: this.warn },
    );
    return written && !(await this.deletionRecorded(webhookId));
  }

  /**
   * One write of an endpoint at a time (`edits`): FerretDB writes a change as the whole
   * endpoint it read, and its writers are many (the owner's enable and rotation, dispatchers'
   * failures, successes and disable), so two at once undid each other: an enable sent with a
   * rotation left the endpoint DISABLED, every later event never queued for it.
   */
  private writeEndpoint(webhookId: string, changes: Partial<EndpointRecord>): Promise<void> {
    return this.edits.holding(
      webhookId,
      async () => {
        await this.m.Endpoint.updateOne({ _id: webhookId }, { $set: changes });
      },
      { warn: this.warn },
    );
  }

  /**
   * Whether the endpoint's deletion is recorded, marking it deleted again if so. Its readers
   * that act on it (the dispatcher, its owner's calls) ask too: a change that stopped between
   * its write and its look leaves the mark undone.
   */
  async deletionRecorded(webhookId: string): Promise<boolean> {
    if (!(await this.m.EndpointDeletion.exists({ _id: webhookId }))) return false;
    await this.markDeleted(webhookId);
    return true;
  }

  /**
   * Deletes an endpoint: its deletion recorded, then the endpoint marked. A change whose write
   * undoes the mark finds the record after it (`updateEndpoint`), and one that found none
   * wrote before the mark read the endpoint.
   */
  async deleteEndpoint(webhookId: string, at = new Date()): Promise<void> {
    await insertOnce(() => this.m.EndpointDeletion.create({ _id: webhookId, at }));
    await this.markDeleted(webhookId);
  }

  /**
   * Not held as other writes are (`writeEndpoint`): the lists and the fan-out read the mark
   * alone, so it must not wait behind a write, and what it may undo of one racing it is of
   * an endpoint deleted; the racing write looks for the deletion after it and marks it again.
   */
  private async markDeleted(webhookId: string): Promise<void> {
    await this.m.Endpoint.updateOne({ _id: webhookId }, { $set: { deleted: true } });
  }

  // --- notices to owners

  /** Inserts a notice once; false when it was there already (read it for what it says). */
  insertNotice(notice: NoticeRecord): Promise<boolean> {
    return this.notices.enqueueOnce(notice);
  }

  // --- secrets

  claimSecret(secret: SecretRecord): Promise<boolean> {
    return insertOnce(() => this.m.Secret.create(secret));
  }

  /** Deletes a signing secret's version, once no read can reach it (`MOST_SIGNING_SECRETS`). */
  async dropSecret(webhookId: string, n: number): Promise<void> {
    await this.m.Secret.deleteOne({ _id: secretId(webhookId, n) });
  }

  async secret(webhookId: string, n: number): Promise<SecretRecord | null> {
    return (await this.m.Secret.findById(secretId(webhookId, n)).lean()) as SecretRecord | null;
  }

  /**
   * The latest version, found from the endpoint's hint by `_id` lookups, then up to
   * `older.most` before it, newest first, each read while `older.while` holds for the one after.
   */
  async latestSecrets(
    endpoint: EndpointRecord,
    older: { most: number; while: (successor: SecretRecord) => boolean } = {
      most: 0,
      while: () => false,
    },
  ): Promise<SecretRecord[]> {
    let n = Math.max(endpoint.secretVersion, 1);
    let latest = await this.secret(endpoint._id, n);
    for (;;) {
      const next = await this.secret(endpoint._id, n + 1);
      if (!next) break;
      latest = next;
      n += 1;
    }
    if (!latest) return [];
    const found = [latest];
    for (let k = n - 1; k >= 1 && found.length <= older.most; k--) {
      if (!older.while(found[found.length - 1])) break;
      const version = await this.secret(endpoint._id, k);
      if (!version) break;
      found.push(version);
    }
    return found;
  }

  // --- events and messages

  /** Each event once: one write for all, those recorded before left as they are. */
  async recordEvents(events: EventRecord[]): Promise<void> {
    await insertAll(this.m.Event, events);
  }

  async event(eventId: string): Promise<EventRecord | null> {
    return (await this.m.Event.findById(eventId).lean()) as EventRecord | null;
  }

  /**
   * The message and its queue entry, once each: a repeated publication adds nothing. A message
   * still pending is queued again (its publisher may have stopped between the two inserts); the
   * attempt chain makes that harmless, since attempt n is made once whoever queued it. The
   * message must be on its endpoint's list already (`enqueueAll` puts it there).
   */
  private async enqueue(message: MessageRecord, queued: QueuedRecord): Promise<boolean> {
    if (await insertOnce(() => this.m.Message.create(markedRecorded(message)))) {
      await insertOnce(() => this.m.Queue.create(queued));
      return true;
    }
    const earlier = await this.message(message._id);
    if (earlier?.status !== 'PENDING') return false;
    if (await insertOnce(() => this.m.Queue.create({ ...queued, attempts: earlier.attempts }))) {
      // A dispatcher that ended the message since the read (given up, delivered) wrote that
      // before it took its entry off: read again, an entry queued after the end must go, or the
      // message would be sent again while it reads FAILED (found by the webhook audit).
      if ((await this.message(message._id))?.status !== 'PENDING') await this.dequeue(message._id);
    }
    return false;
  }

  /**
   * Messages and their queue entries in two writes when none existed (the usual case); a
   * publication repeated in part goes one by one (`enqueue`). How many messages are new.
   */
  async enqueueAll(items: { message: MessageRecord; queued: QueuedRecord }[]): Promise<number> {
    if (items.length === 0) return 0;
    await this.listMessages(items.map((i) => i.message));
    try {
      await this.m.Message.insertMany(
        items.map((i) => markedRecorded(i.message)),
        { ordered: true },
      );
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      let created = 0;
      for (const { message, queued } of items) {
        if (await this.enqueue(message, queued)) created += 1;
      }
      return created;
    }
    await insertAll(
      this.m.Queue,
      items.map((i) => i.queued),
    );
    return items.length;
  }

  async message(messageId: string): Promise<MessageRecord | null> {
    return (await this.m.Message.findById(messageId).lean()) as MessageRecord | null;
  }

  /**
   * Puts messages on their endpoints' lists before they are stored, so that a stored message
   * is always listed; each once, however often published. A publication's messages of one
   * endpoint share a `createdAt` and go on in `_id` order, so the page reads them as the
   * former sort by `createdAt` and `_id` did.
   */
  private async listMessages(messages: MessageRecord[]): Promise<void> {
    await this.messagesByEndpoint.addByOwner(
      [...messages]
        .sort(olderFirst)
        .map((m) => ({ ownerId: m.webhookId, itemId: m._id, at: m.createdAt })),
    );
  }

  /**
   * An endpoint's messages, newest first: a page of its list, each message by `_id`. One
   * listed but never stored (its publication stopped between the two) is skipped.
   */
  async messagesOf(webhookId: string, limit: number, offset: number): Promise<MessageRecord[]> {
    const ids = await this.messagesByEndpoint.page(webhookId, { offset, limit });
    const found = await Promise.all(ids.map((id) => this.message(id)));
    return found.filter((m): m is MessageRecord => m !== null);
  }

  /** Puts the messages stored before `webhook_endpoint_messages` existed on their endpoints' lists. */
  async listStoredMessages(pass: BackfillPass): Promise<void> {
    await this.messagesByEndpoint.backfill(pass, (since) =>
      listedAs(
        this.m.Message.find(unrecordedSince('createdAt', since), { webhookId: 1, createdAt: 1 })
          .sort({ createdAt: 1, _id: 1 })
          .lean<Pick<MessageRecord, '_id' | 'webhookId' | 'createdAt'>[]>()
          .cursor(),
        (m) => ({ ownerId: m.webhookId, itemId: m._id, at: m.createdAt }),
      ),
    );
  }

  async updateMessage(messageId: string, changes: Partial<MessageRecord>): Promise<void> {
    await this.m.Message.updateOne({ _id: messageId }, { $set: changes });
  }

  // --- the queue

  /** At most `limit` entries in storage order, none of the endpoints `excluding`. */
  async queue(limit: number, excluding: readonly string[] = []): Promise<QueuedRecord[]> {
    const filter = excluding.length > 0 ? { webhookId: { $nin: [...excluding] } } : {};
    return (await this.m.Queue.find(filter).limit(limit).lean()) as unknown as QueuedRecord[];
  }

  async queued(messageId: string): Promise<QueuedRecord | null> {
    return (await this.m.Queue.findById(messageId).lean()) as QueuedRecord | null;
  }

  requeue(queued: QueuedRecord): Promise<boolean> {
    return insertOnce(() => this.m.Queue.create(queued));
  }

  async reschedule(messageId: string, changes: Partial<QueuedRecord>): Promise<void> {
    await this.m.Queue.updateOne({ _id: messageId }, { $set: changes });
  }

  async dequeue(messageId: string): Promise<void> {
    await this.m.Queue.deleteOne({ _id: messageId });
  }

  /**
   * A change of the lane is being sent: positions below it are stale from now on. One
   * dispatcher sends a lane's messages one at a time, so its marks of a lane are not written
   * at once; `$max` keeps a replayed older change from lowering the mark (FerretDB applies it
   * as a read and a write, so two replicas' marks at once may keep the lower).
   */
  async markLane(lane: string, sequence: number): Promise<void> {
    await raiseById(this.m.Lane, lane, { sequence });
  }

  /** The highest sequence of a change attempted in the lane, if any was. */
  async laneMark(lane: string): Promise<number | null> {
    const found = (await this.m.Lane.findById(lane).lean()) as { sequence: number } | null;
    return found?.sequence ?? null;
  }

  // --- attempts

  claimAttempt(attempt: AttemptRecord): Promise<boolean> {
    return insertOnce(() => this.m.Attempt.create(attempt));
  }

  async attempt(messageId: string, n: number): Promise<AttemptRecord | null> {
    return (await this.m.Attempt.findById(attemptId(messageId, n)).lean()) as AttemptRecord | null;
  }

  /**
   * A message's latest `most` attempts, oldest first, each found by its `_id` (a filter on
   * another field is a scan): a message retried for a day has some thirty, and a page of the
   * log a hundred messages.
   */
  async attemptsOf(
    message: Pick<MessageRecord, '_id' | 'attempts'>,
    most = ATTEMPTS_SHOWN,
  ): Promise<AttemptRecord[]> {
    const first = Math.max(1, message.attempts - most + 1);
    const numbers = Array.from({ length: message.attempts - first + 1 }, (_, i) => first + i);
    const found = await Promise.all(numbers.map((n) => this.attempt(message._id, n)));
    return found.filter((a): a is AttemptRecord => a !== null);
  }

  async finishAttempt(id: string, result: Partial<AttemptRecord>): Promise<void> {
    await this.m.Attempt.updateOne({ _id: id }, { $set: result });
  }

  // --- retention (services/webhook/retention.ts)

  /**
   * Every endpoint's id, deleted ones too (their messages are kept as long): a scan, of a
   * collection that grows with endpoints, not with events.
   */
  async endpointIds(): Promise<string[]> {
    const found = await this.m.Endpoint.find({}, { _id: 1 }).lean<{ _id: string }[]>();
    return found.map((e) => e._id);
  }

  /**
   * Deletes the endpoint's document when its deletion was recorded at or before `before`:
   * called once its list of messages is empty, so nothing reads it any more but the sweep's
   * scan (`endpointIds`), which deleted endpoints would otherwise grow for good. Its deletion
   * record stays, read by `_id` alone: a late change still finds it. Its signing secrets go
   * with it. Answers how many of each this call deleted.
   */
  async forgetDeletedEndpoint(
    webhookId: string,
    before: Date,
  ): Promise<{ endpoints: number; secrets: number }> {
    const none = { endpoints: 0, secrets: 0 };
    const deletion = await this.m.EndpointDeletion.findById(webhookId).lean<{ at: Date }>();
    if (!deletion || new Date(deletion.at).getTime() > before.getTime()) return none;
    const endpoint = await this.endpoint(webhookId);
    if (!endpoint) return none;
    // Its secrets first, every version: a round stopped between the two finds the endpoint
    // again. A keyed registration of its id is refused by the deletion mark, which stays.
    const [latest] = await this.latestSecrets(endpoint);
    const top = Math.max(latest?.n ?? 0, endpoint.secretVersion);
    const versions = Array.from({ length: top }, (_, i) => secretId(webhookId, i + 1));
    const secrets = await deleteManyById(this.m.Secret, versions);
    const endpoints = (await this.m.Endpoint.deleteOne({ _id: webhookId })).deletedCount;
    return { endpoints, secrets };
  }

  /** The endpoint's oldest messages still listed: its list's entries from the floor up. */
  oldestMessages(webhookId: string, most: number): Promise<OwnerListEntry[]> {
    return this.messagesByEndpoint.oldestFirst(webhookId, most);
  }

  /** The endpoint's list is read from its entry `floor` up: those below are deleted. */
  passMessages(webhookId: string, floor: number): Promise<void> {
    return this.messagesByEndpoint.raiseFloor(webhookId, floor);
  }

  claimRetention(id: string, at: Date): Promise<boolean> {
    return insertOnce(() => this.m.RetentionClaim.create({ _id: id, at }));
  }

  async retentionClaim(id: string): Promise<{ at: Date } | null> {
    return this.m.RetentionClaim.findById(id).lean<{ at: Date }>();
  }

  async releaseRetention(id: string): Promise<void> {
    await this.m.RetentionClaim.deleteOne({ _id: id });
  }

  /** Marks messages about to be deleted. */
  markRetiring(messageIds: readonly string[]): Promise<void> {
    return setManyById(this.m.Message, messageIds, { retiring: true });
  }

  /** Deletes the event; 1 if it was there. */
  async deleteEvent(eventId: string): Promise<number> {
    return (await this.m.Event.deleteOne({ _id: eventId })).deletedCount;
  }

  /**
   * Deletes what an endpoint's retired messages leave, each kind in one round trip: their
   * attempts and lane marks, the messages, then their entries of the endpoint's list (last: a
   * sweep that stops before them finds the entries again, and the messages gone). How many
   * documents of each kind there were.
   */
  async retire(
    webhookId: string,
    retired: { attemptIds: string[]; laneIds: string[]; messageIds: string[] },
    entries: readonly OwnerListEntry[],
  ): Promise<{ attempt: number; lane: number; message: number; list: number }> {
    const [attempt, lane] = await Promise.all([
      deleteManyById(this.m.Attempt, retired.attemptIds),
      deleteManyById(this.m.Lane, retired.laneIds),
    ]);
    const message = await deleteManyById(this.m.Message, retired.messageIds);
    const list = await this.messagesByEndpoint.forget(webhookId, entries);
    return { attempt, lane, message, list };
  }
}
