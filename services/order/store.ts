import { Schema, type Connection } from 'mongoose';
import { OutboxRecords, outboxPlaceSchema } from '../../libs/messaging/outbox-records';
import { BoundedMap } from '../../libs/lookup-cache';
import {
  claimById,
  findByIdWhere,
  insertAll,
  insertOnce,
  setByIdUncast,
  updateByIdWhere,
} from '../../libs/mongo';
import {
  markedRecorded,
  storedSince,
  unrecordedSince,
  type BackfillPass,
} from '../../libs/backfills';
import { MARK_GRACE_MS, WorkMarks } from '../../libs/work-marks';
import { TimeBuckets, defineSweepCursorModel, type Bucket } from '../../libs/time-buckets';
import {
  OwnerList,
  type OwnerListEntry,
  defineNamedOwnerListModels,
  listedAs,
  ownedItems,
} from '../../libs/owner-list';
import type { DeliveryRecord, StoredAddress } from './delivery-record';
import type { DeliveryStatus, Effect, Lifecycle, LifecycleEvent } from './lifecycle';
import { roleOf, type DeliveryRole } from './parties';
import type { NotificationRecord } from './notifications';
import { SEARCH_BUCKET_MS, dueBucket } from './scheduling';

const { Mixed } = Schema.Types;
const plain = { versionKey: false, minimize: false, strict: false } as const;

const deliverySchema = new Schema(
  {
    _id: String,
    userId: { type: String, required: true },
    trackingId: { type: String, required: true },
    lifecycle: { type: Mixed, required: true },
    createdAt: { type: Date, required: true },
  },
  plain,
);
// Uniqueness only: a delivery is found by `_id`, a user's by their list (`user_deliveries`).
deliverySchema.index({ trackingId: 1 }, { unique: true });

const addressSchema = new Schema(
  { _id: String, userId: { type: String, required: true }, fields: Mixed },
  plain,
);

/** One transition of a delivery: `<deliveryId>:<n>`; inserting the next `n` is the lock. */
const transitionSchema = new Schema(
  {
    _id: String,
    deliveryId: { type: String, required: true },
    version: { type: Number, required: true },
    event: Mixed,
    lifecycle: Mixed,
    step: Mixed,
    effects: Mixed,
    /** Set while the effects (refunds, release) are not all done: the sweep finishes them. */
    unsettled: Boolean,
    /** Set while its webhook events are not handed over: the sweep publishes them. */
    unannounced: Boolean,
    at: Date,
  },
  plain,
);

/**
 * A transition that may still have work, effects to settle or events to hand over, `_id` = the
 * transition's, `at` = when it was made: what the sweep reads, as few as the work under way,
 * where asking the transitions themselves scans every transition ever made (decision 70).
 */
// `markedAt`: its first write (libs/work-marks), from which an unclaimed one waits.
const transitionWorkSchema = new Schema({ _id: String, at: Date, markedAt: Date }, plain);
transitionWorkSchema.index({ at: 1, _id: 1 });

/** A request under way (its saga); deleted once it is created or refused and undone. */
const pendingSchema = new Schema(
  { _id: String, userId: String, stage: String, createdAt: Date, updatedAt: Date },
  plain,
);
pendingSchema.index({ updatedAt: 1 });

/** How a request ended, by delivery id: the claim that decides between finishing and undoing. */
const outcomeSchema = new Schema(
  { _id: String, outcome: { type: String, required: true }, error: Mixed, at: Date },
  plain,
);

const notificationSchema = new Schema(
  { _id: String, deliveryId: String, status: String, createdAt: Date },
  plain,
);
notificationSchema.index({ deliveryId: 1 });
notificationSchema.index({ status: 1, nextAttemptAt: 1 });

/** An attempt to send a message, `<notificationId>:<n>`: inserting it is the right to make it. */
const notificationAttemptSchema = new Schema({ _id: String, at: Date }, plain);

/**
 * A proof's code after the one the delivery record holds (issued again by the merchant, or a
 * return proof's first): `<proofId>:<generation>`. `seed`: what the code is made from again
 * (`seededProofCode`), for a return proof's first code, which the sweep may send again.
 */
const proofCodeSchema = new Schema(
  { _id: String, codeHash: String, seed: String, at: Date },
  plain,
);

/** A wrong code given for a proof: `<proofId>:<generation>:<n>`; the fifth locks it. */
const proofAttemptSchema = new Schema({ _id: String, at: Date }, plain);

/** A sandbox delivery its virtual courier still drives, `_id` = delivery id (kept small). */
const simulationSchema = new Schema({ _id: String, since: Date }, plain);
simulationSchema.index({ since: 1, _id: 1 });

/**
 * A paid SCHEDULED delivery whose search for a courier waits for its date, `_id` = the
 * delivery's id: inserting it is the once-only claim, and while it exists the delivery is live
 * in the bucket it is listed in (`scheduled_search_buckets`), which is how the sweep finds it.
 * `listedIn`: the bucket it was moved to after failing long (absent: its `dueAt`'s).
 */
const scheduledSearchSchema = new Schema({ _id: String, dueAt: Date, listedIn: Number }, plain);
// For MongoDB's tools; the sweep never queries by it (FerretDB would decode every booking).
scheduledSearchSchema.index({ dueAt: 1 });

/**
 * The public tracking page's lookup, `_id` = tracking id → the delivery's id: FerretDB finds
 * a delivery by `trackingId` only by a scan, and the page is open to anyone.
 */
const trackingRefSchema = new Schema({ _id: String, deliveryId: String }, plain);

export function defineOrderModels(connection: Connection) {
  return {
    Delivery: connection.model('Delivery', deliverySchema, 'deliveries'),
    Address: connection.model('Address', addressSchema, 'addresses'),
    Transition: connection.model('Transition', transitionSchema, 'delivery_transitions'),
    TransitionWork: connection.model('TransitionWork', transitionWorkSchema, 'transition_work'),
    Pending: connection.model('PendingRequest', pendingSchema, 'pending_requests'),
    Outcome: connection.model('RequestOutcome', outcomeSchema, 'request_outcomes'),
    Notification: connection.model('Notification', notificationSchema, 'notifications'),
    NotificationPlace: connection.model(
      'NotificationPlace',
      outboxPlaceSchema(),
      'notification_places',
    ),
    NotificationAttempt: connection.model(
      'NotificationAttempt',
      notificationAttemptSchema,
      'notification_attempts',
    ),
    ProofCode: connection.model('ProofCode', proofCodeSchema, 'proof_codes'),
    ProofAttempt: connection.model('ProofAttempt', proofAttemptSchema, 'proof_attempts'),
    Simulation: connection.model('Simulation', simulationSchema, 'simulations'),
    ScheduledSearch: connection.model(
      'ScheduledSearch',
      scheduledSearchSchema,
      'scheduled_searches',
    ),
    TrackingRef: connection.model('TrackingRef', trackingRefSchema, 'tracking_refs'),
    SweepCursor: defineSweepCursorModel(connection),
    // Each user's deliveries in the order they were stored, read by `_id` (libs/owner-list).
    ...defineNamedOwnerListModels(connection, 'user_deliveries', 'UserDelivery'),
    // Each user's deliveries linked to them as their recipient, in the order they were stored.
    ...defineNamedOwnerListModels(connection, 'recipient_deliveries', 'RecipientDelivery'),
    // Each user's deliveries in one status, `<userId>:<status>`, in the order they entered it;
    // those linked to them as their recipient under `recipient:<userId>:<status>`.
    ...defineNamedOwnerListModels(connection, 'user_deliveries_by_status', 'StatusDelivery'),
    // Each delivery's messages to people, read by `_id`: the staging simulator and support ask.
    ...defineNamedOwnerListModels(connection, 'delivery_notifications', 'DeliveryNotification'),
    // The scheduled searches due in each 5-minute bucket, owner = the bucket's start (ISO), so
    // that the sweep reads the buckets up to now by `_id`, never the bookings made further ahead.
    ...defineNamedOwnerListModels(connection, 'scheduled_search_buckets', 'SearchBucket'),
  };
}

export type OrderModels = ReturnType<typeof defineOrderModels>;

export interface TransitionRecord {
  _id: string;
  deliveryId: string;
  version: number;
  event: LifecycleEvent;
  lifecycle: Lifecycle;
  step: DeliveryRecord['steps'][number] | null;
  effects: Effect[];
  unsettled?: boolean;
  /** Its webhook events are not yet handed to the webhook service. */
  unannounced?: boolean;
  at: Date;
}

/**
 * READY: everything but the delivery record is done (paid, or its checkouts opened). BUILT
 * (built, not yet debited) is no longer written; a document an older version left so is undone
 * as STARTED is.
 */
export type RequestStage = 'STARTED' | 'BUILT' | 'READY';

/** What a request under way has saved, so that the sweep can finish or undo it. */
export interface PendingRequest {
  _id: string;
  userId: string;
  stage: RequestStage;
  /** Whether the creator's share is taken from the wallet (a debit to give back on undo). */
  walletDebit: boolean;
  /**
   * The tracking id drawn for the delivery, claimed (`claimTrackingId`) before anything is
   * taken. Absent on a request of the version before, whose delivery claims it when stored.
   */
  trackingId?: string;
  built?: { delivery: DeliveryRecord; addresses: StoredAddress[] };
  notifications?: NotificationRecord[];
  createdAt: Date;
  updatedAt: Date;
}

/** Where a simulation stands in the simulator's order. */
export interface SimulationMark {
  deliveryId: string;
  since: Date;
}

export type RequestOutcome =
  | { _id: string; outcome: 'CREATED'; at: Date }
  | {
      _id: string;
      outcome: 'REFUSED';
      error: { type: string; message: string; data?: unknown };
      at: Date;
    };

export const transitionId = (deliveryId: string, version: number) => `${deliveryId}:${version}`;

/** The mark of a transition that may have work left (`transition_work`). */
export interface WorkMark {
  _id: string;
  at: Date;
  /** Its first write (libs/work-marks); none on a mark written before marks carried it. */
  markedAt?: Date;
}

export interface MarkedWork {
  mark: WorkMark;
  transition: TransitionRecord | null;
}

/** What a transition may have left to do: effects to settle, events to hand over. */
const WORK_FLAGS = ['unsettled', 'unannounced'] as const;
export type WorkFlag = (typeof WORK_FLAGS)[number];
type WorkLeft = Pick<TransitionRecord, WorkFlag>;

/** Effects to settle or events to hand over. */
export const hasWork = (t: WorkLeft) => WORK_FLAGS.some((flag) => t[flag]);

/** A SCHEDULED delivery's search waiting for its date (`scheduled_searches`). */
export interface ScheduledSearchRecord {
  _id: string;
  dueAt: Date;
  /** The bucket it was moved to after failing for long (`relistSearch`). */
  listedIn?: number;
}

/** The start of the bucket a scheduled search is listed in. */
export const listedBucket = (search: ScheduledSearchRecord) =>
  search.listedIn ?? dueBucket(search.dueAt);

/** One bucket of scheduled searches as the sweep reads it: those not dropped, due or not yet. */
export type SearchBucket = Bucket<ScheduledSearchRecord>;

/** The sweep cursor's `_id` for the scheduled searches' buckets. */
const SEARCH_CURSOR = 'scheduled_searches';

/**
 * Where the sweep starts before any sweep raised its cursor: no search was scheduled before
 * this version, and a day covers any booking made since, whatever its date.
 */
const FIRST_SEARCH_LOOK_BACK_MS = 86_400_000;

/** Addresses kept in memory by `OrderStore` (those of about a thousand deliveries). */
const ADDRESSES_KEPT = 2_000;

/** The owner of a user's list of deliveries in one status, as their creator or recipient. */
const inStatus = (userId: string, status: DeliveryStatus, role: DeliveryRole = 'CREATOR') =>
  role === 'CREATOR' ? `${userId}:${status}` : `recipient:${userId}:${status}`;

/** The lists a delivery is on in a status: its creator's, and its linked recipient's. */
const statusListsOf = (
  delivery: Pick<DeliveryRecord, 'userId' | 'recipientUserId'>,
  status: DeliveryStatus,
) => [
  inStatus(delivery.userId, status),
  ...(delivery.recipientUserId ? [inStatus(delivery.recipientUserId, status, 'RECIPIENT')] : []),
];

/**
 * Whether the delivery has reached the version its status entry was written for (the entry's
 * tag, `enteringStatus`): an entry is written before its transition is claimed, and until the
 * delivery reaches that version (or the writer is surely gone) it may still enter the status.
 * A lifted entry keeps its tag; one without (backfilled) was in the status when written.
 */
function reached(entry: OwnerListEntry, delivery: DeliveryRecord | null): boolean {
  const version = Number.parseInt(entry.tag ?? '', 10);
  if (!delivery) return false;
  return Number.isNaN(version) || delivery.version >= version;
}

/**
 * The status a delivery's writer listed it under before entering it (`enteringStatus`), on the
 * lists of its creator (`listedStatus`) and of its linked recipient too (`listedWithRecipient`):
 * the status lists' backfill passes by what they say (`listStoredStatuses`).
 */
interface ListedMarks {
  listedStatus?: DeliveryStatus;
  listedWithRecipient?: DeliveryStatus;
}

const listedFor = (status: DeliveryStatus): Required<ListedMarks> => ({
  listedStatus: status,
  listedWithRecipient: status,
});

/** The order service's persistence: every query its actions make. */
export class OrderStore {
  /** The notification outbox, read and written as every outbox is (libs/messaging). */
  readonly notifications: OutboxRecords<NotificationRecord>;
  /** Each user's deliveries, newest last. */
  readonly byUser: OwnerList;
  /** Each user's deliveries linked to them as their recipient, newest last. */
  private readonly byRecipient: OwnerList;
  /** Each user's deliveries in each status, the latest to enter it last. */
  private readonly byStatus: OwnerList;
  /** Each delivery's notifications, in the order queued. */
  private readonly notificationsByDelivery: OwnerList;
  /** The scheduled searches of each 5-minute bucket of their dates. */
  readonly searchBuckets: TimeBuckets;
  /** The transitions that may still have work (libs/work-marks). */
  private readonly work: WorkMarks<TransitionRecord, WorkMark>;
  /**
   * Addresses stored or read lately. An address is never changed once stored, so a copy is
   * never stale on any replica; a new delivery's are read by its answer, its events and its
   * matching within moments of being stored (six reads a request before).
   */
  private readonly recentAddresses = new BoundedMap<StoredAddress>(ADDRESSES_KEPT);

  constructor(private readonly models: () => OrderModels) {
    this.byUser = OwnerList.named(models, 'UserDelivery');
    this.byRecipient = OwnerList.named(models, 'RecipientDelivery');
    this.byStatus = OwnerList.named(models, 'StatusDelivery');
    this.notificationsByDelivery = OwnerList.named(models, 'DeliveryNotification');
    this.searchBuckets = new TimeBuckets({
      list: OwnerList.named(models, 'SearchBucket'),
      cursors: () => this.m.SweepCursor,
      cursorId: SEARCH_CURSOR,
      spanMs: SEARCH_BUCKET_MS,
      firstLookBackMs: FIRST_SEARCH_LOOK_BACK_MS,
    });
    this.work = new WorkMarks<TransitionRecord, WorkMark>({
      marks: () => this.m.TransitionWork,
      markOf: (t) => ({ _id: t._id, at: t.at }),
      read: (id) => this.transitionById(id),
      hasWork,
      markedAt: (mark) => new Date(mark.at),
      graceMs: MARK_GRACE_MS,
      backfilled: '$marked',
    });
    this.notifications = new OutboxRecords(() => ({
      messages: this.m.Notification,
      places: this.m.NotificationPlace,
      attempts: this.m.NotificationAttempt,
    }));
  }

  private get m() {
    return this.models();
  }

  async delivery(deliveryId: string): Promise<DeliveryRecord | null> {
    return (await this.m.Delivery.findById(deliveryId).lean()) as DeliveryRecord | null;
  }

  /**
   * Inserts a delivery and its addresses; each a no-op when already there (a finished retry).
   * False when the delivery's own insert met a document: the caller checks which.
   */
  async insertDelivery(delivery: DeliveryRecord, addresses: StoredAddress[]): Promise<boolean> {
    await insertAll(this.m.Address, addresses);
    for (const address of addresses) this.recentAddresses.set(address._id, address);
    // Before the delivery: a stored delivery is always on its user's lists.
    await this.byUser.add(delivery.userId, delivery._id, delivery.createdAt);
    if (delivery.recipientUserId) {
      await this.byRecipient.add(delivery.recipientUserId, delivery._id, delivery.createdAt);
    }
    await this.enteringStatus(delivery, delivery.lifecycle.status, delivery.version);
    const stored = {
      ...markedRecorded(delivery),
      ...listedFor(delivery.lifecycle.status),
      // Listed for its recipient first: the backfill below passes it by.
      ...(delivery.recipientUserId ? { recipientListed: true } : {}),
    };
    return insertOnce(() => this.m.Delivery.create(stored));
  }

  /**
   * Lists the delivery under the status it is about to enter at `version`, before it does (a
   * delivery in a status is always on that status's list); once per version, however often.
   */
  async enteringStatus(
    delivery: Pick<DeliveryRecord, '_id' | 'userId' | 'recipientUserId'>,
    status: DeliveryStatus,
    version: number,
  ): Promise<void> {
    await Promise.all(
      statusListsOf(delivery, status).map((owner) =>
        this.byStatus.addBeforeStoring(owner, delivery._id, String(version)),
      ),
    );
  }

  /**
   * Claims a tracking id for a delivery, naming it for the public page: false when another
   * delivery holds it (drawn twice), true when this one does (now, or by a retry).
   */
  async claimTrackingId(trackingId: string, deliveryId: string): Promise<boolean> {
    const ref = { _id: trackingId, deliveryId };
    return (
      (await claimById(this.m.TrackingRef, ref, 'tracking id')).standing.deliveryId === deliveryId
    );
  }

  /** Gives back the tracking id of a request that did not become a delivery. */
  async dropTrackingRef(trackingId: string, deliveryId: string): Promise<void> {
    // Read by `_id`, then deleted by it: `{_id, deliveryId}` reads every tracking id ever
    // drawn on FerretDB (decision 73), and every refused request gives its id back. Nothing
    // else writes this `_id` while it exists: another delivery drawing it is refused.
    if (await findByIdWhere(this.m.TrackingRef, trackingId, { deliveryId })) {
      await this.m.TrackingRef.deleteOne({ _id: trackingId });
    }
  }

  /** The delivery a tracking id names, by `_id`; null for an unknown one. */
  async deliveryIdByTracking(trackingId: string): Promise<string | null> {
    const ref = (await this.m.TrackingRef.findById(trackingId).lean()) as {
      deliveryId: string;
    } | null;
    return ref?.deliveryId ?? null;
  }

  async address(addressId: string): Promise<StoredAddress | null> {
    const known = this.recentAddresses.get(addressId);
    if (known) return known;
    const found = (await this.m.Address.findById(addressId).lean()) as StoredAddress | null;
    if (found) this.recentAddresses.set(addressId, found);
    return found;
  }

  async addresses(ids: string[]): Promise<Map<string, StoredAddress>> {
    // One lookup by `_id` each: FerretDB pushes down nothing else (an `$in` scans).
    const found = await Promise.all(ids.map((id) => this.address(id)));
    return new Map(found.filter((a) => a !== null).map((a) => [a._id, a]));
  }

  /** The ids of a user's deliveries as `role`, newest first (in the order they were stored). */
  list(
    userId: string,
    page: { limit: number; offset: number },
    role: DeliveryRole = 'CREATOR',
  ): Promise<string[]> {
    return (role === 'CREATOR' ? this.byUser : this.byRecipient).page(userId, page);
  }

  /**
   * A page of the user's deliveries in `status` as `current` reads them, the latest to enter
   * it first: what that costs grows with the page, its offset and the deliveries that have left
   * the status lately (libs/owner-list `readLiveItems`), not with the user's history; only the
   * page is held.
   */
  async listInStatus(
    userId: string,
    status: DeliveryStatus,
    { limit, offset }: { limit: number; offset: number },
    current: (deliveryId: string) => Promise<DeliveryRecord | null>,
    role: DeliveryRole = 'CREATOR',
  ): Promise<DeliveryRecord[]> {
    const found = await this.byStatus.readLiveItems(
      inStatus(userId, status, role),
      current,
      (delivery) => roleOf(delivery, userId) === role && delivery.lifecycle.status === status,
      {
        wanted: limit,
        skip: offset,
        waiting: (delivery, entry) => !reached(entry, delivery),
      },
    );
    return found;
  }

  /** Puts the deliveries stored before `user_deliveries` existed on their users' lists. */
  async listStoredDeliveries(pass: BackfillPass): Promise<void> {
    await this.byUser.backfill(pass, (since) =>
      ownedItems(
        this.m.Delivery.find(unrecordedSince('createdAt', since), { userId: 1, createdAt: 1 })
          .sort({ createdAt: 1 })
          .lean()
          .cursor(),
      ),
    );
  }

  /**
   * Puts linked deliveries on their recipients' lists when a writer of the version before
   * links stored them (it finished a request a writer of this version began, during a
   * rolling update).
   */
  async listLinkedDeliveries(pass: BackfillPass): Promise<void> {
    await this.byRecipient.backfill(pass, (since) =>
      listedAs(
        this.m.Delivery.find(
          {
            ...storedSince('createdAt', since),
            recipientUserId: { $type: 'string' },
            recipientListed: { $exists: false },
          },
          { recipientUserId: 1, createdAt: 1 },
        )
          .sort({ createdAt: 1 })
          .lean()
          .cursor(),
        (d) => {
          const { _id, recipientUserId, createdAt } = d as unknown as DeliveryRecord;
          return { ownerId: recipientUserId as string, itemId: _id, at: createdAt };
        },
      ),
    );
  }

  /** Puts the deliveries stored before `user_deliveries_by_status` existed on their status's list. */
  async listStoredStatuses(pass: BackfillPass): Promise<void> {
    await this.byStatus.backfill(pass, (since) =>
      listedAs(
        this.m.Delivery.find(storedSince('updatedAt', since), {
          userId: 1,
          recipientUserId: 1,
          'lifecycle.status': 1,
          version: 1,
          updatedAt: 1,
          listedStatus: 1,
          listedWithRecipient: 1,
        })
          .sort({ updatedAt: 1 })
          .lean()
          .cursor(),
        (d) => {
          const delivery = d as unknown as DeliveryRecord & ListedMarks;
          const { _id, lifecycle, version, updatedAt, listedStatus } = delivery;
          // Listed by the writer that moved it into its status (`project`): nothing to add. A
          // status is never entered twice, so its name alone says which entries it wrote.
          // `listedStatus` alone: a writer from before `listedWithRecipient`, which may be one
          // from before recipients' lists (461d081) that listed its creator alone, so its
          // recipient's entry is offered (again, for most).
          const owners = statusListsOf(delivery, lifecycle.status);
          const missing =
            delivery.listedWithRecipient === lifecycle.status
              ? []
              : listedStatus === lifecycle.status
                ? owners.slice(1)
                : owners;
          // Tagged as `enteringStatus` tags: a delivery listed by it at this version is not
          // listed twice.
          return missing.map((ownerId) => ({
            ownerId,
            itemId: _id,
            at: updatedAt,
            tag: String(version),
          }));
        },
      ),
    );
  }

  // --- transitions

  async transition(deliveryId: string, version: number): Promise<TransitionRecord | null> {
    return (await this.m.Transition.findById(
      transitionId(deliveryId, version),
    ).lean()) as TransitionRecord | null;
  }

  /**
   * Claims the delivery's next transition, marked if it has work (`transition_work`); false when
   * another writer took that number.
   */
  claimTransition(record: TransitionRecord): Promise<boolean> {
    return this.work.storing([record], () => insertOnce(() => this.m.Transition.create(record)));
  }

  /** Records work of a transition done (effects settled, events handed over), in one write. */
  async workDone(transition: Pick<TransitionRecord, '_id'>, done: readonly WorkFlag[]) {
    if (done.length === 0) return;
    const unset = Object.fromEntries(done.map((flag) => [flag, 1]));
    await this.m.Transition.updateOne({ _id: transition._id }, { $unset: unset });
  }

  /** Transitions marked before `olderThan`, oldest first, each with its record (null if none). */
  async markedWork(olderThan: Date, limit: number): Promise<MarkedWork[]> {
    const marks = (await this.m.TransitionWork.find({ at: { $lt: olderThan } })
      .sort({ at: 1, _id: 1 })
      .limit(limit)
      .lean()) as unknown as WorkMark[];
    return Promise.all(
      marks.map(async (mark) => ({ mark, transition: await this.transitionById(mark._id) })),
    );
  }

  /**
   * Ends the mark of a transition whose work is done, or that was never stored (after
   * `MARK_GRACE_MS` from its first write: a writer marks before it claims). `known`: the transition as its
   * writer just left it, not read again (the release reads it once more after the delete).
   */
  async finishWork(mark: WorkMark, now: Date, known?: TransitionRecord): Promise<void> {
    const transition = known ?? (await this.transitionById(mark._id));
    await this.work.release(mark, transition, now);
    // Work left after the sweep tried it (an effect failing for now), or a transition still
    // awaited: the mark goes behind the others, so that a batch's worth failing, or of writers
    // stopped before their claims, holds back no later transition for long (the sweep reads
    // the oldest marks first). Its writer's own mark is new already. One awaited waits from its
    // `markedAt`, which this leaves; one without waits from `at`, which is left as it is.
    const awaited = !transition && mark.markedAt !== undefined;
    if (!known && ((transition && hasWork(transition)) || awaited)) {
      await this.m.TransitionWork.updateOne({ _id: mark._id }, { $set: { at: now } });
    }
  }

  /** Marks every transition with work stored before the marks existed (at each start, libs/backfills). */
  async markStoredWork(): Promise<void> {
    const stored = this.m.Transition.find(
      { $or: [{ unsettled: true }, { unannounced: true }] },
      { _id: 1, at: 1, unsettled: 1, unannounced: 1 },
    )
      .lean()
      .cursor();
    await this.work.markStored(stored as AsyncIterable<TransitionRecord>);
  }

  private async transitionById(id: string): Promise<TransitionRecord | null> {
    return (await this.m.Transition.findById(id).lean()) as TransitionRecord | null;
  }

  /**
   * Writes what the transitions up to `version` made of the delivery. Only moves forward;
   * a writer that loses a race leaves it behind, and the next read repairs it. `listedStatus`
   * is the status this writer listed the delivery under before entering it (`enteringStatus`):
   * the backfill's passes skip a delivery still in it (libs/backfills).
   */
  async project(
    deliveryId: string,
    version: number,
    changes: Pick<DeliveryRecord, 'lifecycle' | 'steps' | 'updatedAt'> & Partial<DeliveryRecord>,
    listedStatus?: DeliveryStatus,
  ): Promise<void> {
    await updateByIdWhere(
      this.m.Delivery,
      deliveryId,
      { version: { $lt: version } },
      { $set: { ...changes, version, ...(listedStatus ? listedFor(listedStatus) : {}) } },
    );
  }

  // --- requests under way

  claimPending(pending: PendingRequest): Promise<boolean> {
    return insertOnce(() => this.m.Pending.create(pending));
  }

  async savePending(
    deliveryId: string,
    changes: Partial<Omit<PendingRequest, '_id'>>,
  ): Promise<void> {
    // It carries a whole delivery: no cast (the document is read back lean, as written).
    await setByIdUncast(this.m.Pending, deliveryId, { ...changes, updatedAt: new Date() });
  }

  async pending(deliveryId: string): Promise<PendingRequest | null> {
    return (await this.m.Pending.findById(deliveryId).lean()) as PendingRequest | null;
  }

  /** Requests untouched since `olderThan`, by id, from past `after` (a sweep's cursor). */
  async stalePending(olderThan: Date, limit: number, after = ''): Promise<PendingRequest[]> {
    const filter = { updatedAt: { $lt: olderThan }, ...(after ? { _id: { $gt: after } } : {}) };
    return (await this.m.Pending.find(filter)
      .sort({ _id: 1 })
      .limit(limit)
      .lean()) as unknown as PendingRequest[];
  }

  async dropPending(deliveryId: string): Promise<void> {
    await this.m.Pending.deleteOne({ _id: deliveryId });
  }

  async outcome(deliveryId: string): Promise<RequestOutcome | null> {
    return (await this.m.Outcome.findById(deliveryId).lean()) as RequestOutcome | null;
  }

  /** Decides how a request ends; false when it was already decided (read which way). */
  claimOutcome(outcome: RequestOutcome): Promise<boolean> {
    return insertOnce(() => this.m.Outcome.create(outcome));
  }

  // --- notifications

  /** Queues messages, each listed under its delivery first (a stored one is always listed). */
  async enqueue(messages: NotificationRecord[]): Promise<void> {
    await this.notificationsByDelivery.addByOwner(
      messages.map((m) => ({ ownerId: m.deliveryId, itemId: m._id, at: m.createdAt })),
    );
    await this.notifications.enqueue(messages.map(markedRecorded));
  }

  /** Withdraws messages not sent yet that a newer one made pointless (libs/messaging). */
  async supersedeMessages(ids: readonly string[], at: Date, dropText: boolean): Promise<void> {
    await this.notifications.supersede(ids, at, dropText);
  }

  /** Whether any of these messages was queued (each looked up by `_id`). */
  async anyNotificationStored(ids: readonly string[]): Promise<boolean> {
    const found = await Promise.all(ids.map((id) => this.m.Notification.exists({ _id: id })));
    return found.some((f) => f !== null);
  }

  /** A delivery's notifications, oldest first: its list, then each by `_id`. */
  async notificationsOf(deliveryId: string): Promise<NotificationRecord[]> {
    const ids: string[] = [];
    for await (const batch of this.notificationsByDelivery.newestFirst(deliveryId)) {
      ids.push(...batch);
    }
    const found = await Promise.all(ids.map((id) => this.m.Notification.findById(id).lean()));
    return (found.filter((n) => n !== null) as unknown as NotificationRecord[]).sort(
      (a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a._id.localeCompare(b._id),
    );
  }

  /** Puts the notifications queued before `delivery_notifications` existed on their lists. */
  async listStoredNotifications(pass: BackfillPass): Promise<void> {
    await this.notificationsByDelivery.backfill(pass, (since) =>
      listedAs(
        this.m.Notification.find(unrecordedSince('createdAt', since), {
          deliveryId: 1,
          createdAt: 1,
        })
          .sort({ createdAt: 1 })
          .lean()
          .cursor(),
        (n) => {
          const { _id, deliveryId, createdAt } = n as unknown as NotificationRecord;
          return { ownerId: deliveryId, itemId: _id, at: createdAt };
        },
      ),
    );
  }

  // --- proofs: every lookup by `_id`

  /** The claim of a proof's code of that number: its HMAC, and its seed when made from one. */
  private async proofCodeClaim(proofId: string, generation: number) {
    return (await this.m.ProofCode.findById(`${proofId}:${generation}`).lean()) as {
      codeHash: string;
      seed?: string;
    } | null;
  }

  async proofCode(proofId: string, generation: number): Promise<string | null> {
    return (await this.proofCodeClaim(proofId, generation))?.codeHash ?? null;
  }

  /** The seed a proof's code of that number was made from, when it was made so. */
  async proofCodeSeed(proofId: string, generation: number): Promise<string | null> {
    return (await this.proofCodeClaim(proofId, generation))?.seed ?? null;
  }

  claimProofCode(
    proofId: string,
    generation: number,
    codeHash: string,
    seed?: string,
  ): Promise<boolean> {
    const claim = { _id: `${proofId}:${generation}`, codeHash, at: new Date() };
    return insertOnce(() => this.m.ProofCode.create(seed ? { ...claim, seed } : claim));
  }

  claimProofAttempt(proofId: string, generation: number, n: number): Promise<boolean> {
    return insertOnce(() =>
      this.m.ProofAttempt.create({ _id: `${proofId}:${generation}:${n}`, at: new Date() }),
    );
  }

  /** How many of a generation's `max` tries are taken, each read by `_id`. */
  async proofAttemptsTaken(proofId: string, generation: number, max: number): Promise<number> {
    const found = await Promise.all(
      Array.from({ length: max }, (_, i) =>
        this.m.ProofAttempt.exists({ _id: `${proofId}:${generation}:${i + 1}` }),
      ),
    );
    return found.filter(Boolean).length;
  }

  /** Gives a try back (its code was right): only its claimer calls this, by `_id`. */
  async releaseProofAttempt(proofId: string, generation: number, n: number): Promise<void> {
    await this.m.ProofAttempt.deleteOne({ _id: `${proofId}:${generation}:${n}` });
  }

  // --- the sandbox's simulations

  async startSimulation(deliveryId: string, since: Date): Promise<void> {
    await insertOnce(() => this.m.Simulation.create({ _id: deliveryId, since }));
  }

  /**
   * The simulations under way, oldest first, from after `after` (a page's last): a small
   * collection, scanned by the simulator a page a tick.
   */
  async simulations(limit: number, after?: SimulationMark): Promise<SimulationMark[]> {
    const filter = after
      ? {
          $or: [
            { since: { $gt: after.since } },
            { since: after.since, _id: { $gt: after.deliveryId } },
          ],
        }
      : {};
    const found = (await this.m.Simulation.find(filter)
      .sort({ since: 1, _id: 1 })
      .limit(limit)
      .lean()) as unknown as { _id: string; since: Date }[];
    return found.map((s) => ({ deliveryId: String(s._id), since: s.since }));
  }

  async endSimulation(deliveryId: string): Promise<void> {
    await this.m.Simulation.deleteOne({ _id: deliveryId });
  }

  // --- scheduled searches

  /**
   * The delivery's search waits until `dueAt`, recorded once whoever records it, listed in its
   * bucket. False when the sweep may have read past that bucket already (a retry long after,
   * or clocks apart): the caller searches at once instead.
   */
  async scheduleSearch(deliveryId: string, dueAt: Date, now = new Date()): Promise<boolean> {
    const fresh: ScheduledSearchRecord = { _id: deliveryId, dueAt };
    const stored = (await insertOnce(() => this.m.ScheduledSearch.create(fresh)))
      ? fresh
      : await this.scheduledSearch(deliveryId);
    // Dropped since: started by a sweep, or the delivery ended. Nothing waits any more.
    if (!stored) return true;
    // Where the record says, not where `dueAt` says: a retry follows the first writer.
    const bucket = listedBucket(stored);
    await this.searchBuckets.add(bucket, deliveryId);
    // After the add: a sweep that raises the cursor past the bucket from now on has seen it.
    return bucket >= (await this.searchBuckets.cursor(now));
  }

  async scheduledSearch(deliveryId: string): Promise<ScheduledSearchRecord | null> {
    return (await this.m.ScheduledSearch.findById(
      deliveryId,
    ).lean()) as ScheduledSearchRecord | null;
  }

  /**
   * The buckets from the sweep's cursor to the one of `now`, at most `maxBuckets`, each with
   * the searches it holds (due or not yet): a few lookups by `_id` a bucket.
   */
  async waitingSearches(now: Date, maxBuckets: number): Promise<SearchBucket[]> {
    return this.searchBuckets.readDue(
      now,
      maxBuckets,
      (id) => this.scheduledSearch(id),
      listedBucket,
    );
  }

  /** The buckets of the hour behind the sweep's cursor, with their searches. */
  searchesBehind(now: Date): Promise<SearchBucket[]> {
    return this.searchBuckets.readBehind(now, (id) => this.scheduledSearch(id), listedBucket);
  }

  /**
   * Lists a search that keeps failing in the bucket of `now`, so that the cursor can pass its
   * old one. Added before the record points there: it is always listed where it says.
   */
  async relistSearch(deliveryId: string, now: Date): Promise<void> {
    const bucket = dueBucket(now);
    await this.searchBuckets.add(bucket, deliveryId, now);
    // `$max`: a replica moving it to an earlier bucket at the same time does not move it back;
    // FerretDB's `$max` reads, then writes, so two at once may keep the earlier one, which lists
    // it too (its entry was added first): the sweep reads one more bucket, nothing is lost.
    await this.m.ScheduledSearch.updateOne({ _id: deliveryId }, { $max: { listedIn: bucket } });
  }

  /** Idempotent, by `_id`: its entry in its bucket is closed from then on. */
  async dropScheduledSearch(deliveryId: string): Promise<void> {
    await this.m.ScheduledSearch.deleteOne({ _id: deliveryId });
  }
}
