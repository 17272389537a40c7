import { Schema, type Connection, type InferSchemaType, type Model } from 'mongoose';
import {
  CHECKOUT_PAYERS,
  type CheckoutPayer,
  type CheckoutPurpose,
} from '../../libs/contracts/payment';
import {
  CLOCK_SKEW_MS,
  passRecordsIn,
  runPass,
  unrecordedSince,
  type BackfillPass,
} from '../../libs/backfills';
import { conflict, notFound } from '../../libs/errors';
import {
  claimById,
  claimLease,
  insertOnce,
  releaseLease,
  updateByIdWhere,
  upsertById,
  type Lease,
} from '../../libs/mongo';
import { defineNamedOwnerListModels, OwnerList } from '../../libs/owner-list';
import {
  TimeBuckets,
  bucketStart,
  defineSweepCursorModel,
  type Bucket,
} from '../../libs/time-buckets';
import { lateCheckName, type DecidedStatus, type OutcomeEvent } from './checkout';

const PURPOSE_KINDS: CheckoutPurpose['kind'][] = ['DELIVERY', 'WALLET_FUNDING'];
export const PAYER_REFUND_STATES = ['OPEN', 'QUEUED', 'REFUSED', 'FAILED'] as const;
export type PayerRefundState = (typeof PAYER_REFUND_STATES)[number];
const DECIDED: DecidedStatus[] = ['PAID', 'DECLINED', 'EXPIRED'];

const purposeSchema = new Schema(
  {
    kind: { type: String, required: true, enum: PURPOSE_KINDS },
    id: { type: String, required: true },
  },
  { _id: false },
);

/**
 * A checkout session, by its reference. Written once (the provider's answer is added once
 * it is known); its state is not here but in its outcome, which is decided by an insert.
 */
const sessionSchema = new Schema(
  {
    _id: { type: String, required: true },
    userId: { type: String, required: true },
    amountKobo: { type: Number, required: true },
    currency: { type: String, required: true },
    purpose: { type: purposeSchema, required: true },
    email: { type: String, required: true },
    /** Unset on sessions opened before checkouts named their payer: MERCHANT (decision 168). */
    payer: { type: String, enum: CHECKOUT_PAYERS },
    merchantName: { type: String, required: true },
    provider: { type: String, required: true },
    /** Set once the provider initialized the transaction. */
    authorizationUrl: { type: String, default: null },
    accessCode: { type: String, default: null },
    createdAt: { type: Date, required: true },
    expiresAt: { type: Date, required: true },
  },
  { versionKey: false },
);

/**
 * The claim of a caller's idempotency key (`_id` a name-based id of the user and the key):
 * the reference its checkout got, and what it was for, so that the same key for another
 * checkout is refused instead of answering the wrong one.
 */
const keySchema = new Schema(
  {
    _id: { type: String, required: true },
    reference: { type: String, required: true },
    amountKobo: { type: Number, required: true },
    purpose: { type: purposeSchema, required: true },
  },
  { timestamps: true, versionKey: false },
);

/**
 * An attempt to open a session at the provider, by the provider's reference it used
 * (`attemptReference`): claimed by its insert, so two callers never use one reference.
 */
const attemptSchema = new Schema(
  {
    _id: { type: String, required: true },
    reference: { type: String, required: true },
    startedAt: { type: Date, required: true },
    failedAt: { type: Date, default: null },
  },
  { versionKey: false },
);

/**
 * The provider's transaction a session is paid through, by the session's reference: the
 * first attempt to record its answer wins, so every caller hands out the same page.
 */
const openedSchema = new Schema(
  {
    _id: { type: String, required: true },
    providerReference: { type: String, required: true },
    authorizationUrl: { type: String, required: true },
    accessCode: { type: String, required: true },
    openedAt: { type: Date, required: true },
  },
  { versionKey: false },
);

/** The outcome of a session: the first insert for a reference wins, every other attempt reads it. */
const outcomeSchema = new Schema(
  {
    _id: { type: String, required: true },
    status: { type: String, required: true, enum: DECIDED },
    /** What decided it: `sandbox`, `paystack` (a verified webhook), `sweep`. */
    source: { type: String, required: true },
    decidedAt: { type: Date, required: true },
  },
  { versionKey: false },
);

/** A session still waiting for its outcome: the sweep's list, removed once decided. */
const pendingSchema = new Schema(
  {
    _id: { type: String, required: true },
    expiresAt: { type: Date, required: true },
    /**
     * Ended early (`close`, its delivery cancelled) with its charge under way at the provider:
     * looked at when `expiresAt` says, not at the session's own later time.
     */
    closing: { type: Boolean },
  },
  { versionKey: false },
);
// The sweep's read, on MongoDB (FerretDB reads the list whole; it holds open sessions only).
pendingSchema.index({ expiresAt: 1 });

/**
 * A provider's checkout that expired with a transaction handed out, asked about again while a
 * payment after its end may still come (`CHECKOUT_LATE_CHECKS_MS`): what a webhook that never
 * arrives would otherwise leave taken and never credited. Removed after the last check.
 */
const lateCheckSchema = new Schema(
  {
    _id: { type: String, required: true },
    expiredAt: { type: Date, required: true },
    /** The checks made so far; the next is due at `expiredAt` + the delay of this number. */
    checks: { type: Number, required: true },
    nextCheckAt: { type: Date, required: true },
    /**
     * The bucket of `checkout_late_check_buckets` it is listed in (libs/time-buckets), which is
     * how the sweep finds it: `nextCheckAt`'s, or a later one when it was listed after that.
     * Absent on a record of the version before, listed by a backfill (`listStoredLateChecks`).
     */
    listedIn: { type: Number },
  },
  { versionKey: false },
);

/** A late check of an expired checkout as stored (`checkout_late_checks`). */
export interface LateCheckRecord {
  _id: string;
  expiredAt: Date;
  checks: number;
  nextCheckAt: Date;
  listedIn?: number;
}

/**
 * The span of a bucket of late checks: a sweep reads the few from its cursor to now, each
 * by `_id`, whatever the number of checks due in the days ahead.
 */
export const LATE_CHECK_BUCKET_MS = 5 * 60_000;

/** The bucket a late check is listed in. */
export const lateCheckListedIn = (check: LateCheckRecord): number =>
  check.listedIn ?? bucketStart(new Date(check.nextCheckAt), LATE_CHECK_BUCKET_MS);

/** The sweep cursor's `_id` for the late checks' buckets. */
const LATE_CHECK_CURSOR = 'checkout_late_checks';

/**
 * Where the sweep starts before any sweep raised its cursor: checks are listed in a bucket not
 * ended when listed (the first an hour ahead), so a day covers any listed before the first
 * sweep that went through, however long the first ones failed (the cursor is written by it).
 */
const FIRST_LATE_CHECK_LOOK_BACK_MS = 86_400_000;

/** The first pass of the backfill that lists the late checks stored before their buckets. */
const LATE_CHECKS_LISTED = 'checkout_late_check_buckets';

/**
 * A claim of work one replica does at a time (`claimLease`): a late check, by
 * `<reference>#<check>`, so that one replica asks the provider, not each whose sweep finds it
 * due (deleted when its check fails, so the next sweep tries again; kept when done); the taking
 * back of a reversal, by its id (deleted when done).
 */
const leaseSchema = new Schema(
  {
    _id: { type: String, required: true },
    startedAt: { type: Date, required: true },
  },
  { versionKey: false },
);

/**
 * A send of an outcome's event, claimed by its insert so that one replica sends it, by its
 * name (`sendName`): the first send (its claimant puts the event in the outbox, marks it
 * `sentAt`, then sends it), or one of the sweep's resends of an outbox entry.
 */
const sendSchema = new Schema(
  {
    _id: { type: String, required: true },
    claimedAt: { type: Date, required: true },
    /** Set once the event is in the outbox: from there on the sweep resends it. */
    sentAt: { type: Date, default: null },
  },
  { versionKey: false },
);

/** A decided outcome whose consumer has not acknowledged it yet: sent again until it does. */
const outboxSchema = new Schema(
  {
    _id: { type: String, required: true },
    event: { type: String, required: true },
    payload: { type: Schema.Types.Mixed, required: true },
    nextAttemptAt: { type: Date, required: true },
  },
  { versionKey: false, minimize: false },
);
outboxSchema.index({ nextAttemptAt: 1 });

/**
 * A payment the provider took that no checkout credits (another amount or currency than the
 * checkout's), by the provider's reference: an operator refunds it at the provider, then
 * records that here (`uncredited_settlements`).
 */
const uncreditedSchema = new Schema(
  {
    _id: { type: String, required: true },
    checkoutReference: { type: String, required: true },
    userId: { type: String, required: true },
    why: { type: String, required: true },
    at: { type: Date, required: true },
  },
  { versionKey: false },
);
uncreditedSchema.index({ at: -1 });

/** An operator's word that an uncredited payment was dealt with, once, by its `_id`. */
const settlementSchema = new Schema(
  {
    _id: { type: String, required: true },
    note: { type: String, required: true },
    at: { type: Date, required: true },
    /** The operator who recorded it (decision 157); unset on settlements recorded before. */
    by: { type: String },
  },
  { versionKey: false },
);

/**
 * Money the provider gave back to a payer (a refund, or a chargeback lost) from a transaction
 * of one of our checkouts, by the provider's id of the refund: taken back from the wallet the
 * checkout credited (`Reversals`). The ledger's parts (`reversal:<_id>:<n>`) decide what is
 * taken; `takenKobo` and `parts` are what was counted of them (a hint to go on from, written
 * together). Open while `settledAt` is null; the sweep's list is `checkout_reversals_open`.
 */
const reversalSchema = new Schema(
  {
    _id: { type: String, required: true },
    providerReference: { type: String, required: true },
    checkoutReference: { type: String, required: true },
    /** The wallet the checkout credited: its user's, the merchant's for a delivery's. */
    userId: { type: String, required: true },
    amountKobo: { type: Number, required: true },
    receivedAt: { type: Date, required: true },
    /** Set once the checkout is known to have credited the money (or known never to). */
    credited: { type: Boolean, default: null },
    takenKobo: { type: Number, required: true },
    parts: { type: Number, required: true },
    settledAt: { type: Date, default: null },
    /**
     * What was given back to the wallet once its checkout's payment went back to its payer
     * (decision 174): null until then, and for a reversal that took nothing of a checkout that
     * never credited it.
     */
    givenBackKobo: { type: Number, default: null },
    givenBackAt: { type: Date, default: null },
  },
  { versionKey: false },
);
reversalSchema.index({ receivedAt: -1 });

/** The passes of the backfill that numbers the reversals recorded before they were (libs/backfills). */
const checkoutPassSchema = new Schema(
  {
    _id: { type: String, required: true },
    startedAt: { type: Date, required: true },
  },
  { versionKey: false },
);

/** The first pass of the backfill that numbers each checkout's reversals recorded before. */
const REVERSALS_NUMBERED = 'checkout_reversals_of';

/**
 * The reversals of a checkout, numbered 1, 2, … by insert (`_id` `<checkoutReference>:<k>`): a
 * reversal takes the first free number, and one that finds it taken reads on. What a checkout
 * given back to its payer reads to give its wallet back what its reversals took.
 */
const reversalOfCheckoutSchema = new Schema(
  {
    _id: { type: String, required: true },
    refundId: { type: String, required: true },
  },
  { versionKey: false },
);

/**
 * A reversal not settled yet, by its id, and when the sweep looks at it next: a list of the open
 * ones only, which the sweep scans, removed once settled.
 */
/** A reversal on the sweep's list. */
export interface ReversalListing {
  _id: string;
  nextCheckAt: Date;
  listedAt?: Date;
}

const openReversalSchema = new Schema(
  {
    _id: { type: String, required: true },
    nextCheckAt: { type: Date, required: true },
    /**
     * When it was listed: how long a listing has waited for a record that never came, whatever
     * its next look (absent on listings made before session 64: noted at the sweep's first look
     * at one, `noteReversalListedAt`).
     */
    listedAt: { type: Date },
  },
  { versionKey: false },
);
openReversalSchema.index({ nextCheckAt: 1 });

/**
 * Money a payer who is not the merchant (a delivery's recipient) paid for what no longer uses
 * it, given back to them at the provider (decision 168), by the checkout's reference: claimed
 * once by its insert. `OPEN` until the provider queued the refund (`QUEUED`; the sandbox took
 * no money and queues nothing) or refused it (`REFUSED`, listed uncredited for an operator),
 * or failed it after queueing (`FAILED`, listed too). The sweep's list is
 * `checkout_payer_refunds_open`.
 */
const payerRefundSchema = new Schema(
  {
    _id: { type: String, required: true },
    /** The paid transaction at the provider. */
    providerReference: { type: String, required: true },
    userId: { type: String, required: true },
    amountKobo: { type: Number, required: true },
    currency: { type: String, required: true },
    note: { type: String, required: true },
    requestedAt: { type: Date, required: true },
    state: { type: String, required: true, enum: PAYER_REFUND_STATES },
    /** The provider's reason, for a refund refused or failed. */
    why: { type: String, default: null },
    /** The provider's id of the refund, once known: a `refund.failed` of another is not ours. */
    refundId: { type: String, default: null },
    settledAt: { type: Date, default: null },
    /**
     * Refunds asked of the provider so far, counted before each is sent: one asked before may
     * stand at the provider though its answer was lost, and is looked for first.
     */
    tries: { type: Number, required: true },
  },
  { versionKey: false },
);
payerRefundSchema.index({ requestedAt: -1 });

/** A payer's refund still to ask the provider for, and when the sweep asks next. */
const openPayerRefundSchema = new Schema(
  {
    _id: { type: String, required: true },
    nextTryAt: { type: Date, required: true },
    /** Tries in a row that failed, whatever failed: the next waits longer. */
    failures: { type: Number, default: 0 },
  },
  { versionKey: false },
);
openPayerRefundSchema.index({ nextTryAt: 1 });

/**
 * Where a checkout's money went back, by the checkout's reference: the merchant's wallet or
 * its payer at the provider, decided by the first insert (decision 168), so that no two
 * callers (a cancel and a late payment, an order node of the version before crediting it)
 * ever give it back both ways.
 */
const givenBackSchema = new Schema(
  {
    _id: { type: String, required: true },
    to: { type: String, required: true, enum: ['WALLET', 'PAYER'] },
    at: { type: Date, required: true },
  },
  { versionKey: false },
);

export type SessionRecord = InferSchemaType<typeof sessionSchema>;
export type OutcomeRecord = InferSchemaType<typeof outcomeSchema> & { status: DecidedStatus };
export type OutboxRecord = InferSchemaType<typeof outboxSchema>;
export type AttemptRecord = InferSchemaType<typeof attemptSchema>;
export type OpenedRecord = InferSchemaType<typeof openedSchema>;
export type SendRecord = InferSchemaType<typeof sendSchema>;
export type UncreditedRecord = InferSchemaType<typeof uncreditedSchema>;
export type SettlementRecord = InferSchemaType<typeof settlementSchema>;
export type ReversalRecord = InferSchemaType<typeof reversalSchema>;
export type PayerRefundRecord = InferSchemaType<typeof payerRefundSchema> & {
  state: PayerRefundState;
};

/**
 * A page of the uncredited payments: all, or only the settled (`true`) or unsettled; after the
 * one whose `_id` is `after`.
 */
export interface UncreditedQuery {
  limit: number;
  after?: string;
  settled?: boolean;
}

/** A page of the reversals: all, or only the open (`true`) or settled; after `after`. */
export interface ReversalQuery {
  limit: number;
  after?: string;
  open?: boolean;
}

/** A page of the refunds to payers: all, or those in one state; after `after` (a checkout's). */
export interface PayerRefundQuery {
  limit: number;
  after?: string;
  state?: PayerRefundState;
}

/** 404: a page asked for after an item the list never held. */
const unknownAfter = (what: string, after: string) =>
  notFound(`after: no ${what} ${after}; pass the last one of the page before, as listed`);

/**
 * A page of `model`'s documents matching `filter`, newest by `at` first (ties by `_id`), after
 * the one whose `_id` is `after` (404 when there is none: `what` names it). A scan: for
 * operators' lists of collections that stay small.
 */
async function newestFirst<T extends { _id: string }>(
  // The models differ in their document types; what is read comes back as `T`.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  model: Model<any>,
  at: keyof T & string,
  filter: Record<string, unknown>,
  { limit, after }: { limit: number; after?: string },
  what: string,
): Promise<T[]> {
  const query: Record<string, unknown> = { ...filter };
  if (after !== undefined) {
    const last = await model.findById(after).lean<T>();
    if (!last) throw unknownAfter(what, after);
    query.$or = [{ [at]: { $lt: last[at] } }, { [at]: last[at], _id: { $lt: last._id } }];
  }
  return model
    .find(query)
    .sort({ [at]: -1, _id: -1 })
    .limit(limit)
    .lean<T[]>();
}

const reversalOfCheckoutId = (checkoutReference: string, k: number) => `${checkoutReference}:${k}`;

export function defineCheckoutModels(connection: Connection) {
  return {
    CheckoutSession: connection.model('CheckoutSession', sessionSchema, 'checkout_sessions'),
    CheckoutKey: connection.model('CheckoutKey', keySchema, 'checkout_keys'),
    CheckoutAttempt: connection.model('CheckoutAttempt', attemptSchema, 'checkout_attempts'),
    CheckoutOpened: connection.model('CheckoutOpened', openedSchema, 'checkout_opened'),
    CheckoutOutcome: connection.model('CheckoutOutcome', outcomeSchema, 'checkout_outcomes'),
    CheckoutPending: connection.model('CheckoutPending', pendingSchema, 'checkout_pending'),
    CheckoutLateCheck: connection.model(
      'CheckoutLateCheck',
      lateCheckSchema,
      'checkout_late_checks',
    ),
    ...defineNamedOwnerListModels(connection, 'checkout_late_check_buckets', 'LateCheckBucket'),
    SweepCursor: defineSweepCursorModel(connection),
    CheckoutLateClaim: connection.model('CheckoutLateClaim', leaseSchema, 'checkout_late_claims'),
    CheckoutReversalTurn: connection.model(
      'CheckoutReversalTurn',
      leaseSchema,
      'checkout_reversal_turns',
    ),
    CheckoutOutbox: connection.model('CheckoutOutbox', outboxSchema, 'checkout_outbox'),
    CheckoutSend: connection.model('CheckoutSend', sendSchema, 'checkout_sends'),
    Uncredited: connection.model('UncreditedPayment', uncreditedSchema, 'uncredited_payments'),
    UncreditedSettlement: connection.model(
      'UncreditedSettlement',
      settlementSchema,
      'uncredited_settlements',
    ),
    Reversal: connection.model('CheckoutReversal', reversalSchema, 'checkout_reversals'),
    OpenReversal: connection.model(
      'CheckoutOpenReversal',
      openReversalSchema,
      'checkout_reversals_open',
    ),
    ReversalOfCheckout: connection.model(
      'CheckoutReversalOf',
      reversalOfCheckoutSchema,
      'checkout_reversals_of',
    ),
    CheckoutPass: connection.model(
      'CheckoutBackfillPass',
      checkoutPassSchema,
      'checkout_backfill_passes',
    ),
    GivenBack: connection.model('CheckoutGivenBack', givenBackSchema, 'checkout_given_back'),
    PayerRefund: connection.model(
      'CheckoutPayerRefund',
      payerRefundSchema,
      'checkout_payer_refunds',
    ),
    OpenPayerRefund: connection.model(
      'CheckoutOpenPayerRefund',
      openPayerRefundSchema,
      'checkout_payer_refunds_open',
    ),
    PayerRefundTurn: connection.model(
      'CheckoutPayerRefundTurn',
      leaseSchema,
      'checkout_payer_refund_turns',
    ),
  };
}

export type CheckoutModels = ReturnType<typeof defineCheckoutModels>;

const samePurpose = (a: CheckoutPurpose, b: CheckoutPurpose) => a.kind === b.kind && a.id === b.id;

/**
 * Whether a reversal's count is later than the one stored: over more parts, or over as many
 * counted less (a part given up since).
 */
export function isLaterCount(
  stored: Pick<ReversalRecord, 'parts' | 'takenKobo'>,
  count: { parts: number; takenKobo: number },
): boolean {
  if (typeof stored.parts !== 'number') return false;
  if (stored.parts < count.parts) return true;
  return (
    stored.parts === count.parts &&
    typeof stored.takenKobo === 'number' &&
    stored.takenKobo > count.takenKobo
  );
}

/**
 * Checkout sessions on a database whose conditional updates are not atomic (decision 16):
 * whatever must happen once is an insert whose `_id` decides, every read on a request's way
 * is by `_id`, and the sweeps read only the small collections of what is still open.
 */
export class CheckoutStore {
  /** The late checks of each 5-minute bucket of their next check's time. */
  readonly lateCheckBuckets: TimeBuckets;

  constructor(private readonly models: () => CheckoutModels) {
    this.lateCheckBuckets = new TimeBuckets({
      list: OwnerList.named(models, 'LateCheckBucket'),
      cursors: () => this.m.SweepCursor,
      cursorId: LATE_CHECK_CURSOR,
      spanMs: LATE_CHECK_BUCKET_MS,
      firstLookBackMs: FIRST_LATE_CHECK_LOOK_BACK_MS,
    });
  }

  private get m() {
    return this.models();
  }

  /** Records a payment no checkout credits; once however often it is seen. */
  async recordUncredited(record: UncreditedRecord): Promise<void> {
    await insertOnce(() => this.m.Uncredited.create(record));
  }

  /**
   * A page of the uncredited payments, newest first, each with its settlement; with `settled`,
   * only those settled (or not). After `after` in the whole list's order, whatever it is now:
   * one settled since its page was read moves nothing. A scan, read whole and sorted: an
   * operator's call on a collection that stays small (one document per charge of the wrong
   * amount); settlements are read by `_id`, only until the page is full.
   */
  async uncredited({
    limit,
    after,
    settled,
  }: UncreditedQuery): Promise<(UncreditedRecord & { settlement: SettlementRecord | null })[]> {
    const found = await this.m.Uncredited.find().sort({ at: -1, _id: -1 }).lean();
    const start = after === undefined ? 0 : found.findIndex((p) => p._id === after) + 1;
    if (start === 0 && after !== undefined) throw unknownAfter('uncredited payment', after);
    const page: (UncreditedRecord & { settlement: SettlementRecord | null })[] = [];
    for (const payment of found.slice(start)) {
      if (page.length === limit) break;
      const settlement = await this.m.UncreditedSettlement.findById(payment._id).lean();
      if (settled === undefined || (settlement !== null) === settled) {
        page.push({ ...payment, settlement });
      }
    }
    return page;
  }

  uncreditedPayment(providerReference: string) {
    return this.m.Uncredited.findById(providerReference).lean();
  }

  /** Records its settlement, once: the first stands, and says so (`won`). */
  settleUncredited(record: SettlementRecord) {
    return claimById(this.m.UncreditedSettlement, record, 'uncredited payment settlement');
  }

  /**
   * The reference of the checkout an idempotency key names: `reference` when this call is
   * the key's first, else the first call's. 409 when the key was used for another checkout.
   */
  async claimKey(
    keyId: string,
    reference: string,
    what: { amountKobo: number; purpose: CheckoutPurpose },
  ): Promise<string> {
    const record = { _id: keyId, reference, ...what };
    const { standing: earlier, won } = await claimById(this.m.CheckoutKey, record, 'checkout key');
    if (won) return reference;
    if (earlier.amountKobo !== what.amountKobo || !samePurpose(earlier.purpose, what.purpose)) {
      throw conflict(
        'This idempotency key was already used for another checkout (another amount or purpose); use a new key',
      );
    }
    return earlier.reference;
  }

  session(reference: string): Promise<SessionRecord | null> {
    return this.m.CheckoutSession.findById(reference).lean<SessionRecord>();
  }

  /**
   * Records a new session, after its pending entry; true when this call wrote it. An entry
   * there already is an earlier start's that stopped before its session (or one at once): the
   * sweep may drop it as sessionless, having looked before this session was stored, so it is
   * listed again after; of the two, this insert or the sweep's look after its delete, one lists
   * it (`Checkouts.dropSessionless`).
   */
  async createSession(record: SessionRecord): Promise<boolean> {
    const listed = await this.listPending(record._id, record.expiresAt);
    const created = await insertOnce(() => this.m.CheckoutSession.create(record));
    if (!listed) await this.listPending(record._id, record.expiresAt);
    return created;
  }

  /** Puts a session on the sweep's list, due at `expiresAt`, unless it is there. */
  listPending(reference: string, expiresAt: Date): Promise<boolean> {
    return insertOnce(() => this.m.CheckoutPending.create({ _id: reference, expiresAt }));
  }

  /**
   * Claims the provider's reference `attempt._id` for one call: null when this caller won it,
   * else the attempt that holds it.
   */
  async claimAttempt(attempt: AttemptRecord): Promise<AttemptRecord | null> {
    const { standing, won } = await claimById(this.m.CheckoutAttempt, attempt, 'checkout attempt');
    return won ? null : standing;
  }

  /** Marks an attempt whose call failed (only its claimant writes it): its reference is spent. */
  async attemptFailed(providerReference: string, failedAt: Date): Promise<void> {
    await this.m.CheckoutAttempt.updateOne({ _id: providerReference }, { $set: { failedAt } });
  }

  /**
   * Records the transaction a session is paid through, unless another attempt did first:
   * answers the one that stands. Then copies it onto the session, where checkouts opened
   * before attempts existed keep theirs and older replicas read it during a rollout.
   */
  async recordOpened(opened: OpenedRecord): Promise<OpenedRecord> {
    const { standing } = await claimById(this.m.CheckoutOpened, opened, 'opened checkout');
    const { authorizationUrl, accessCode } = standing;
    await this.m.CheckoutSession.updateOne(
      { _id: standing._id },
      { $set: { authorizationUrl, accessCode } },
    );
    return standing;
  }

  opened(reference: string): Promise<OpenedRecord | null> {
    return this.m.CheckoutOpened.findById(reference).lean<OpenedRecord>();
  }

  outcome(reference: string): Promise<OutcomeRecord | null> {
    return this.m.CheckoutOutcome.findById(reference).lean<OutcomeRecord>();
  }

  /** Claims the outcome of a session: this one when it is the first, else the one that was. */
  async claimOutcome(
    reference: string,
    status: DecidedStatus,
    source: string,
    decidedAt: Date,
  ): Promise<{ outcome: OutcomeRecord; won: boolean }> {
    const record: OutcomeRecord = { _id: reference, status, source, decidedAt };
    const { standing, won } = await claimById(this.m.CheckoutOutcome, record, 'checkout outcome');
    return { outcome: standing, won };
  }

  async isPending(reference: string): Promise<boolean> {
    return (await this.m.CheckoutPending.findById(reference).lean()) !== null;
  }

  /** Claims the send `send._id` for one caller: null when this caller won it, else the claim. */
  async claimSend(send: SendRecord): Promise<SendRecord | null> {
    const { standing, won } = await claimById(this.m.CheckoutSend, send, 'checkout send');
    return won ? null : standing;
  }

  /** Marks a claimed first send whose event is in the outbox (only its claimant writes it). */
  async markSent(name: string, at: Date): Promise<void> {
    await this.m.CheckoutSend.updateOne({ _id: name }, { $set: { sentAt: at } });
  }

  async removePending(reference: string): Promise<void> {
    await this.m.CheckoutPending.deleteOne({ _id: reference });
  }

  /**
   * The sweep looks at the session again at `at` (its charge still under way at the
   * provider): its place on the pending list moves there. A hint, written whole: two sweeps
   * at once each write a time about as far ahead.
   */
  async recheckPendingAt(reference: string, at: Date, closing = false): Promise<void> {
    await this.m.CheckoutPending.updateOne(
      { _id: reference },
      { $set: { expiresAt: at, ...(closing && { closing }) } },
    );
  }

  /**
   * Lists an expired checkout for the late checks, once (a sweep that retries changes nothing
   * but the bucket, when the first one's has passed).
   */
  async watchLate(reference: string, expiredAt: Date, firstCheckAt: Date): Promise<void> {
    // Without its bucket until its entry is added (`relistLate`): a writer stopping in between
    // leaves it as the version before would, which its retry, or the backfill, lists.
    const fresh: LateCheckRecord = {
      _id: reference,
      expiredAt,
      checks: 0,
      nextCheckAt: firstCheckAt,
    };
    const stored = (await insertOnce(() => this.m.CheckoutLateCheck.create(fresh)))
      ? fresh
      : await this.lateCheck(reference);
    // Checked for the last time since: nothing waits any more.
    if (!stored) return;
    await this.relistLate(stored);
  }

  async lateCheck(reference: string): Promise<LateCheckRecord | null> {
    return this.m.CheckoutLateCheck.findById(reference).lean<LateCheckRecord>();
  }

  /**
   * The bucket a check due at `at` is listed in: its own, or the one of now when that has
   * passed (a sweep reads no bucket behind its cursor, which never passes one not ended).
   */
  private lateBucketFor(at: Date): number {
    return this.lateCheckBuckets.bucketOf(Math.max(at.getTime(), Date.now()));
  }

  /**
   * Lists the check where its time says (`lateBucketFor`), unless it is listed there or later
   * already. The entry is added before the record points there: a check is always listed
   * where its record says. `$max`: a check is never moved back (FerretDB reads, then writes:
   * two at once may keep the earlier, which lists it too).
   */
  async relistLate(check: LateCheckRecord): Promise<number> {
    const bucket = this.lateBucketFor(new Date(check.nextCheckAt));
    const listed = lateCheckListedIn(check);
    if (check.listedIn !== undefined && listed >= bucket) {
      await this.lateCheckBuckets.add(listed, check._id);
      return listed;
    }
    return this.listLateIn(check._id, bucket);
  }

  /**
   * Adds the check's entry in `bucket`, then points its record there (never back: `$max`),
   * with `changes` in the same write. The bucket.
   */
  private async listLateIn(
    reference: string,
    bucket: number,
    changes: Partial<LateCheckRecord> = {},
  ): Promise<number> {
    await this.lateCheckBuckets.add(bucket, reference);
    const set = Object.keys(changes).length > 0 ? { $set: changes } : {};
    await this.m.CheckoutLateCheck.updateOne(
      { _id: reference },
      { ...set, $max: { listedIn: bucket } },
    );
    return bucket;
  }

  /**
   * The buckets of late checks from the sweep's cursor to the one of `now`, at most
   * `maxBuckets`, each with the checks listed in it, due or not yet.
   */
  async lateCheckBucketsDue(now: Date, maxBuckets: number): Promise<Bucket<LateCheckRecord>[]> {
    return this.lateCheckBuckets.readDue(
      now,
      maxBuckets,
      (id) => this.lateCheck(id),
      lateCheckListedIn,
    );
  }

  /** The buckets of the hour behind the late checks' cursor, with their checks. */
  lateChecksBehind(now: Date): Promise<Bucket<LateCheckRecord>[]> {
    return this.lateCheckBuckets.readBehind(now, (id) => this.lateCheck(id), lateCheckListedIn);
  }

  /**
   * Lists in their buckets the late checks stored without one, by a node of the version before
   * (libs/backfills): the sweep would never find them. A scan, once at the first start and
   * after a rollout, of a list that holds the last few days' abandoned checkouts.
   */
  async listStoredLateChecks(pass: BackfillPass): Promise<void> {
    await runPass(pass, passRecordsIn(this.m.CheckoutPass), LATE_CHECKS_LISTED, async () => {
      const unlisted = this.m.CheckoutLateCheck.find({ listedIn: { $exists: false } })
        .lean<LateCheckRecord[]>()
        .cursor();
      for await (const check of unlisted) await this.relistLate(check);
    });
  }

  /**
   * Claims late check `check` of a checkout for this replica (`claimLease`): the lease, or null
   * while another replica holds it and may still be at it (`leaseMs`: the provider's timeout
   * and the writes after).
   */
  claimLateCheck(reference: string, check: number, leaseMs: number): Promise<Lease | null> {
    return claimLease(this.m.CheckoutLateClaim, lateCheckName(reference, check), leaseMs);
  }

  /** Gives a late check's claim up: its check failed, and the next sweep may try again. */
  releaseLateCheck(lease: Lease): Promise<void> {
    return releaseLease(this.m.CheckoutLateClaim, lease);
  }

  /**
   * Claims the taking back of a reversal for this replica (`claimLease`): its parts are written
   * by one caller at a time, so that a part one gives up is never being written by another.
   */
  claimReversalTurn(id: string, leaseMs: number): Promise<Lease | null> {
    return claimLease(this.m.CheckoutReversalTurn, id, leaseMs);
  }

  releaseReversalTurn(lease: Lease): Promise<void> {
    return releaseLease(this.m.CheckoutReversalTurn, lease);
  }

  /**
   * The next late check, or none: the record is removed. Its entry in the bucket its time says
   * is added first; the bucket only moves forward (`$max`: a writer from an older read, a
   * check put behind as another replica made it, never lists it back where a read may have
   * closed its entry). The bucket it is listed in now, or null when none.
   */
  async lateChecked(
    reference: string,
    checks: number,
    nextCheckAt: Date | null,
  ): Promise<number | null> {
    if (!nextCheckAt) {
      await this.m.CheckoutLateCheck.deleteOne({ _id: reference });
      return null;
    }
    return this.listLateIn(reference, this.lateBucketFor(nextCheckAt), { checks, nextCheckAt });
  }

  /** Open sessions past their time, oldest first (a scan of the open ones only). */
  async duePending(now: Date, limit: number): Promise<{ _id: string; closing?: boolean }[]> {
    return this.m.CheckoutPending.find({ expiresAt: { $lte: now } })
      .sort({ expiresAt: 1 })
      .limit(limit)
      .lean<{ _id: string; closing?: boolean }[]>();
  }

  /** Puts an outcome's event in the outbox, unless it is there already. */
  async enqueue(reference: string, event: OutcomeEvent, nextAttemptAt: Date): Promise<void> {
    await insertOnce(() =>
      this.m.CheckoutOutbox.create({
        _id: reference,
        event: event.name,
        payload: event.payload,
        nextAttemptAt,
      }),
    );
  }

  /** Unacknowledged events due again (a scan of the unacknowledged ones only). */
  dueEvents(now: Date, limit: number): Promise<OutboxRecord[]> {
    return this.m.CheckoutOutbox.find({ nextAttemptAt: { $lte: now } })
      .sort({ nextAttemptAt: 1 })
      .limit(limit)
      .lean<OutboxRecord[]>();
  }

  async postpone(reference: string, nextAttemptAt: Date): Promise<void> {
    await this.m.CheckoutOutbox.updateOne({ _id: reference }, { $set: { nextAttemptAt } });
  }

  /**
   * Records a reversal the provider reported: the first record of its id stands. Listed for the
   * sweep first (due `recheckMs` after it was received: its own call settles it first), so that
   * a call stopped in between leaves it listed (a listing without its record is dropped by the
   * sweep once it is surely not coming, one of a reversal settled by it).
   */
  async recordReversal(record: ReversalRecord, recheckMs: number): Promise<ReversalRecord> {
    const nextCheckAt = new Date(record.receivedAt.getTime() + recheckMs);
    await insertOnce(() =>
      this.m.OpenReversal.create({ _id: record._id, nextCheckAt, listedAt: new Date() }),
    );
    return (await claimById(this.m.Reversal, record, 'reversal')).standing;
  }

  /** Numbers the reversal `refundId` among its checkout's, once however often it is noted. */
  async noteReversalOf(checkoutReference: string, refundId: string): Promise<void> {
    for (let k = 1; ;) {
      const _id = reversalOfCheckoutId(checkoutReference, k);
      const noted = await this.m.ReversalOfCheckout.findById(_id).lean();
      if (noted?.refundId === refundId) return;
      if (noted) {
        k += 1;
      } else if (await insertOnce(() => this.m.ReversalOfCheckout.create({ _id, refundId }))) {
        return;
      }
      // Else another reversal took the k-th place meanwhile: read it, then go on.
    }
  }

  /** The ids of the reversals noted of a checkout (`noteReversalOf`), in the order noted. */
  async reversalsOf(checkoutReference: string): Promise<string[]> {
    const ids: string[] = [];
    for (let k = 1; ; k++) {
      const noted = await this.m.ReversalOfCheckout.findById(
        reversalOfCheckoutId(checkoutReference, k),
      ).lean();
      if (!noted) return ids;
      ids.push(noted.refundId);
    }
  }

  /**
   * Numbers the reversals recorded before they were numbered, or by a node of the version
   * before (libs/backfills): a checkout given back to its payer would not read them. Then lists
   * for the reversal sweep those of checkouts given back to their payers since this version
   * first ran (by a node of the version before, during the rollout, or before this numbered
   * them): they give back what they took. Those given back before it are the operators' (the
   * version before told them to credit the merchant), and are left. Scans of the reversals and
   * of the payers' refunds, which are few (one per refund at the provider).
   */
  async numberStoredReversals(pass: BackfillPass): Promise<void> {
    const records = passRecordsIn(this.m.CheckoutPass);
    const began = new Date();
    await runPass(pass, records, REVERSALS_NUMBERED, async (since) => {
      const unnumbered = this.m.Reversal.find(unrecordedSince('receivedAt', since), {
        checkoutReference: 1,
      })
        .lean<Pick<ReversalRecord, '_id' | 'checkoutReference'>[]>()
        .cursor();
      for await (const reversal of unnumbered) {
        await this.noteReversalOf(reversal.checkoutReference, reversal._id);
      }
      const first = await records.find(REVERSALS_NUMBERED);
      const firstRan = first?.startedAt ? new Date(first.startedAt) : began;
      const givenBackSince = new Date(
        Math.max(since?.getTime() ?? 0, firstRan.getTime() - CLOCK_SKEW_MS),
      );
      const givenBack = this.m.PayerRefund.find(
        { requestedAt: { $gte: givenBackSince } },
        { _id: 1 },
      )
        .lean<Pick<PayerRefundRecord, '_id'>[]>()
        .cursor();
      for await (const refund of givenBack) {
        for (const refundId of await this.reversalsOf(refund._id)) {
          await this.rescheduleReversal(refundId, new Date());
        }
      }
    });
  }

  /**
   * Settles a reversal as given back to its wallet (decision 174): `givenBackKobo` is what the
   * wallet got back of what was taken. One already settled keeps when it was; each write is
   * whole on its own, so a caller stopping between them leaves nothing half-written. Off the
   * sweep's list.
   */
  async reversalGivenBack(
    record: Pick<ReversalRecord, '_id' | 'givenBackAt'>,
    givenBackKobo: number,
  ): Promise<void> {
    const givenBackAt = record.givenBackAt ?? new Date();
    const settledNow = await updateByIdWhere(
      this.m.Reversal,
      record._id,
      { settledAt: null },
      { $set: { givenBackKobo, givenBackAt, settledAt: givenBackAt } },
    );
    if (!settledNow) {
      await this.m.Reversal.updateOne(
        { _id: record._id },
        { $set: { givenBackKobo, givenBackAt } },
      );
    }
    await this.rescheduleReversal(record._id, null);
  }

  /**
   * What is known of a reversal since: whether its checkout credited it (once known, never
   * unknown again), what is counted of its parts, and when it
   * is looked at next, or never again (null: settled, off the sweep's list). A settled
   * reversal stays settled.
   */
  async reversalProgress(
    id: string,
    progress: {
      credited: boolean | null;
      takenKobo: number;
      parts: number;
      nextCheckAt: Date | null;
    },
  ): Promise<void> {
    const { credited, takenKobo, parts, nextCheckAt } = progress;
    // Over fewer parts, or over as many counted less: counted again from the ledger before a
    // settle, a part given up since is taken out of what was counted. Read by `_id` and
    // compared here: a condition beside the `_id` reads the whole collection on FerretDB.
    const stored = await this.m.Reversal.findById(id).lean<ReversalRecord>();
    if (stored && isLaterCount(stored, { parts, takenKobo })) {
      await this.m.Reversal.updateOne({ _id: id }, { $set: { takenKobo, parts } });
    }
    if (credited !== null) await this.m.Reversal.updateOne({ _id: id }, { $set: { credited } });
    if (!nextCheckAt) {
      await updateByIdWhere(
        this.m.Reversal,
        id,
        { settledAt: null },
        { $set: { settledAt: new Date() } },
      );
    }
    await this.rescheduleReversal(id, nextCheckAt);
  }

  /**
   * Puts a reversal on the sweep's list at `nextCheckAt` (listed again if it was taken off: the
   * sweep drops it at its next look if it is settled), or off it (null).
   */
  async rescheduleReversal(id: string, nextCheckAt: Date | null): Promise<void> {
    if (nextCheckAt) {
      await upsertById(this.m.OpenReversal, id, {
        $set: { nextCheckAt },
        $setOnInsert: { listedAt: new Date() },
      });
    } else {
      await this.m.OpenReversal.deleteOne({ _id: id });
    }
  }

  /**
   * A page of the reversals, newest first, after `after` in that order (the sweep settles
   * reversals as it goes: an offset into the open ones skipped some). A scan: an operator's
   * call on a collection that stays small (one document per refund made at the provider).
   */
  reversals({ limit, after, open }: ReversalQuery): Promise<ReversalRecord[]> {
    const filter = open === undefined ? {} : { settledAt: open ? null : { $ne: null } };
    return newestFirst<ReversalRecord>(
      this.m.Reversal,
      'receivedAt',
      filter,
      { limit, after },
      'reversal',
    );
  }

  /**
   * Notes `at` as when a listing made before listings kept it was made, unless one is noted
   * already (by another sweep); the time it holds.
   */
  async noteReversalListedAt(id: string, at: Date): Promise<Date> {
    const listing = await this.m.OpenReversal.findById(id).lean<ReversalListing>();
    if (!listing || listing.listedAt) return listing?.listedAt ?? at;
    await this.m.OpenReversal.updateOne({ _id: id }, { $set: { listedAt: at } });
    // Another sweep's note, made at once, may stand instead: the one stored is the one held.
    const noted = await this.m.OpenReversal.findById(id).lean<ReversalListing>();
    return noted?.listedAt ?? at;
  }

  /** The reversals due another look, and since when (a scan of the open ones only). */
  dueReversals(now: Date, limit: number): Promise<ReversalListing[]> {
    return this.m.OpenReversal.find({ nextCheckAt: { $lte: now } })
      .sort({ nextCheckAt: 1 })
      .limit(limit)
      .lean<ReversalListing[]>();
  }

  reversal(id: string): Promise<ReversalRecord | null> {
    return this.m.Reversal.findById(id).lean<ReversalRecord>();
  }

  /**
   * Claims a payer's refund of a checkout, listed for the sweep first (a claim whose caller
   * stops before its first try is asked for by the sweep): the record that stands.
   */
  async claimPayerRefund(record: PayerRefundRecord): Promise<PayerRefundRecord> {
    await insertOnce(() =>
      this.m.OpenPayerRefund.create({ _id: record._id, nextTryAt: record.requestedAt }),
    );
    return (await claimById(this.m.PayerRefund, record, 'payer refund')).standing;
  }

  /** Refunds to payers, newest first: a scan (an operator's list; the sweep reads its own). */
  payerRefunds({ limit, after, state }: PayerRefundQuery): Promise<PayerRefundRecord[]> {
    const filter = state ? { state } : {};
    const page = { limit, after };
    return newestFirst<PayerRefundRecord>(
      this.m.PayerRefund,
      'requestedAt',
      filter,
      page,
      'refund to a payer of checkout',
    );
  }

  payerRefund(reference: string): Promise<PayerRefundRecord | null> {
    return this.m.PayerRefund.findById(reference).lean<PayerRefundRecord>();
  }

  /**
   * A payer's refund settled (queued, refused or failed at the provider), off the sweep's list.
   * Only one in state `from` is settled: an open one, or a queued one that failed.
   */
  async settlePayerRefund(
    reference: string,
    from: PayerRefundState,
    settled: { state: Exclude<PayerRefundState, 'OPEN'>; why?: string; refundId?: string | null },
  ): Promise<void> {
    const { state, why = null, refundId } = settled;
    await updateByIdWhere(
      this.m.PayerRefund,
      reference,
      { state: from },
      { $set: { state, why, settledAt: new Date(), ...(refundId ? { refundId } : {}) } },
    );
    await this.m.OpenPayerRefund.deleteOne({ _id: reference });
  }

  /** Counts a refund asked of the provider, before it is sent. */
  async payerRefundAsked(reference: string, tries: number): Promise<void> {
    await updateByIdWhere(this.m.PayerRefund, reference, { state: 'OPEN' }, { $set: { tries } });
  }

  /** A try that failed, the `failures`-th in a row: the next at `nextTryAt`. */
  async reschedulePayerRefund(reference: string, failures: number, nextTryAt: Date): Promise<void> {
    await upsertById(this.m.OpenPayerRefund, reference, { $set: { nextTryAt, failures } });
  }

  /** Tries of a refund that failed in a row so far. */
  async payerRefundFailures(reference: string): Promise<number> {
    const open = await this.m.OpenPayerRefund.findById(reference).lean();
    return open?.failures ?? 0;
  }

  /** Names the payer of a checkout opened before checkouts named theirs; never changes one. */
  async namePayer(reference: string, payer: CheckoutPayer): Promise<void> {
    await updateByIdWhere(this.m.CheckoutSession, reference, { payer: null }, { $set: { payer } });
  }

  /**
   * Decides, once, where a checkout's money goes back (`WALLET` or `PAYER`): the first
   * caller's way stands, and every caller reads it.
   */
  async claimGivenBack(reference: string, to: 'WALLET' | 'PAYER'): Promise<'WALLET' | 'PAYER'> {
    const { standing } = await claimById(
      this.m.GivenBack,
      { _id: reference, to, at: new Date() },
      'given back',
    );
    return standing.to as 'WALLET' | 'PAYER';
  }

  /** Payers' refunds due a try (a scan of the open ones only). */
  duePayerRefunds(now: Date, limit: number): Promise<{ _id: string; nextTryAt: Date }[]> {
    return this.m.OpenPayerRefund.find({ nextTryAt: { $lte: now } })
      .sort({ nextTryAt: 1 })
      .limit(limit)
      .lean<{ _id: string; nextTryAt: Date }[]>();
  }

  dropOpenPayerRefund(reference: string): Promise<unknown> {
    return this.m.OpenPayerRefund.deleteOne({ _id: reference });
  }

  claimPayerRefundTurn(reference: string, leaseMs: number): Promise<Lease | null> {
    return claimLease(this.m.PayerRefundTurn, reference, leaseMs);
  }

  releasePayerRefundTurn(lease: Lease): Promise<void> {
    return releaseLease(this.m.PayerRefundTurn, lease);
  }

  /** Removes an event from the outbox; true when it was there. */
  async acknowledge(reference: string): Promise<boolean> {
    const { deletedCount } = await this.m.CheckoutOutbox.deleteOne({ _id: reference });
    return deletedCount > 0;
  }
}
