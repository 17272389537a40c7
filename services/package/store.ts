import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { FieldError } from '../../libs/errors';
import { PACKAGE_SIZES } from '../../libs/contracts/package';
import { Schema, type Connection, type InferSchemaType } from 'mongoose';
import {
  claimById,
  claimEnd,
  defineClaimEndModel,
  findByIdWhere,
  insertOnce,
  isDuplicateKey,
  updateByIdWhere,
} from '../../libs/mongo';
import {
  latestPassId,
  markedRecorded,
  passRecordsIn,
  unrecordedSince,
  type BackfillPass,
} from '../../libs/backfills';
import { OwnerList, defineNamedOwnerListModels, ownedItems } from '../../libs/owner-list';
import { defineWriterLockModels, WriterLocks } from '../../libs/writer-locks';

const packageSchema = new Schema(
  {
    _id: { type: String, default: () => randomUUID() },
    userId: { type: String, required: true },
    packageType: { type: String, required: true },
    name: { type: String, required: true },
    image: { type: String, default: null },
    description: { type: String, default: null },
    quantity: { type: Number, required: true },
    size: { type: String, required: true, enum: PACKAGE_SIZES },
    valueKobo: { type: Number, required: true },
    /**
     * The delivery that took this package, as lists read it: set by `package.assign` for the
     * delivery that holds the package's claim (the claim is the lock, this follows it).
     */
    p2pDeliveryId: { type: String, default: null },
    deletedAt: { type: Date, default: null },
    /** Set when stored by a writer that listed it first: backfill passes skip it (libs/backfills). */
    recordedFirst: Boolean,
  },
  { timestamps: true, versionKey: false },
);

/** The update that puts the edited fields back as `before` had them. */
function restoring(before: object, changes: object) {
  const was = before as Record<string, unknown>;
  const keys = Object.keys(changes);
  const kept = keys.filter((k) => was[k] !== undefined);
  const absent = keys.filter((k) => was[k] === undefined);
  return {
    $set: Object.fromEntries(kept.map((k) => [k, was[k]])),
    ...(absent.length > 0 ? { $unset: Object.fromEntries(absent.map((k) => [k, 1])) } : {}),
  };
}

/**
 * Who holds a package: a delivery id, or DELETED. The package id is the claim's `_id`, so
 * the first insert wins and every other one fails with a duplicate key. This is the lock:
 * FerretDB does not make a conditional update atomic, a unique `_id` it does enforce.
 */
const claimSchema = new Schema(
  {
    _id: { type: String, required: true },
    holder: { type: String, required: true },
    userId: { type: String, required: true },
    /**
     * Set on every claim this version takes: a delivery's after its selection is recorded, a
     * deletion's (which needs none). The pass over claims an older version took skips it.
     */
    recordedFirst: Boolean,
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false },
);
// Declared for MongoDB; FerretDB on SQLite filters by nothing but `_id` (release reads by it).
claimSchema.index({ holder: 1 });

/**
 * The deliveries holding a claim their selection does not name (decision 136): claims taken by
 * a version before selections were recorded, `_id` the delivery id, written by a backfill pass.
 * Only their releases read every claim. The passes' own records are kept here too, under ids
 * no delivery has (`OLDER_CLAIMS_RECORDED`).
 */
const olderClaimHolderSchema = new Schema(
  {
    _id: { type: String, required: true },
    /** On the passes' records: when the pass began. */
    startedAt: Date,
  },
  { versionKey: false },
);

/** The first pass's record over older claims (`latestPassId` of it, the latest pass's). */
export const OLDER_CLAIMS_RECORDED = '$older-claims-recorded';

/**
 * The packages a delivery asked `package.assign` for, `_id` the delivery id: written once,
 * before any claim, so that every claim a delivery holds is of a package named here and
 * `package.release` reads them by `_id`. Kept after the release: a retried release reads it
 * again, and a missing one means a delivery that claimed before these documents existed.
 */
const selectionSchema = new Schema(
  {
    _id: { type: String, required: true },
    packageIds: { type: [String], required: true },
    /** Set by the release, before it reads the claims: a later assign takes nothing. */
    released: Boolean,
    /** Written by a release that found no selection: the delivery's assign never recorded one. */
    unassigned: Boolean,
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false },
);

/**
 * What a delivery's `package.assign` answered, `_id` the delivery id: decided once, by the first
 * run to insert it, before it acts on it (gives its claims back, or answers that it holds them).
 * Runs of one assign at once (a retry beside its first run) then answer alike: one run holding
 * every package while another gives one back could answer `assigned` with a package unclaimed.
 */
const assignOutcomeSchema = new Schema(
  {
    _id: { type: String, required: true },
    outcome: { type: String, required: true, enum: ['assigned', 'refused'] },
    refused: { type: [{ _id: false, field: String, message: String }], default: [] },
    at: { type: Date, required: true },
  },
  { versionKey: false },
);

export type AssignOutcome = { outcome: 'assigned' } | { outcome: 'refused'; refused: FieldError[] };

interface AssignOutcomeRecord {
  _id: string;
  outcome: AssignOutcome['outcome'];
  refused: FieldError[];
  at: Date;
}

const toAssignOutcome = ({ outcome, refused }: AssignOutcomeRecord): AssignOutcome =>
  outcome === 'assigned'
    ? { outcome }
    : { outcome, refused: refused.map(({ field, message }) => ({ field, message })) };

export const DELETED = 'deleted';
/** A claim's outcome when every claim it met was given back before it was read. */
export const GIVEN_BACK = 'given back';
/** Inserts a claim tries while the claims it meets are given back under it. */
const CLAIM_TRIES = 3;

/** A package a delivery gives back, and which take of it that ends (its list entry's tag). */
export interface HeldPackage {
  packageId: string;
  take: string;
}

export type PackageRecord = InferSchemaType<typeof packageSchema> & {
  createdAt: Date;
  updatedAt: Date;
};

export function definePackageModels(connection: Connection) {
  return {
    Package: connection.model('Package', packageSchema, 'packages'),
    Claim: connection.model('PackageClaim', claimSchema, 'package_claims'),
    Selection: connection.model('PackageSelection', selectionSchema, 'package_selections'),
    AssignOutcome: connection.model(
      'PackageAssignOutcome',
      assignOutcomeSchema,
      'package_assign_outcomes',
    ),
    OlderClaimHolder: connection.model(
      'PackageOlderClaimHolder',
      olderClaimHolderSchema,
      'package_older_claim_holders',
    ),
    // `<packageId>:<holder>:<createdAt>:<attempt>`: the one call that ends a claim (`claimEnd`,
    // decision 130); a package claimed again is another claim to end.
    ClaimEnd: defineClaimEndModel(connection, 'PackageClaimEnd', 'package_claim_ends'),
    // An edit of a package under way, `_id` the package (libs/writer-locks).
    ...defineWriterLockModels(connection, 'package_edit', 'PackageEdit'),
    // Each user's packages in the order they were saved, read by `_id` (libs/owner-list).
    ...defineNamedOwnerListModels(connection, 'user_packages', 'UserPackage'),
  };
}

export type PackageModels = ReturnType<typeof definePackageModels>;

/** Not deleted, not taken by a delivery: what a user may still edit, delete or select. */
const open = (userId: string) => ({ userId, deletedAt: null, p2pDeliveryId: null });
/**
 * Whether the user's list shows the package: a deleted package never opens again; a taken one
 * opens again only by being returned, which adds it to the list anew.
 */
export const isOpen = (userId: string, p: PackageRecord | null): p is PackageRecord =>
  p?.userId === userId && p.deletedAt == null && p.p2pDeliveryId == null;

const newestSavedFirst = (a: PackageRecord, b: PackageRecord) =>
  b.createdAt.getTime() - a.createdAt.getTime();

/**
 * The package service's persistence: every query its actions make. Writes name one `_id`
 * each: FerretDB pushes only `_id` equality down to SQLite, and any other filter makes a
 * write scan the whole collection while it holds the database's write lock.
 */
export class PackageStore {
  /** Each user's packages, newest last: every package a user ever saved, open or not. */
  private readonly byUser: OwnerList;

  /**
   * A user's edits of a package, one at a time (decision 132): FerretDB writes an edit as the
   * whole package it read, so two edits of different fields at once kept one (a value lost,
   * and with it the cash a courier collects and the insurance priced). An edit waits for one
   * under way, up to `WRITER_WAIT_MS`.
   */
  readonly edits: WriterLocks;

  constructor(private readonly models: () => PackageModels) {
    this.byUser = OwnerList.named(this.models, 'UserPackage');
    this.edits = WriterLocks.named(this.models, 'PackageEdit', 'Package');
  }

  private get Package() {
    return this.models().Package;
  }

  private get Claim() {
    return this.models().Claim;
  }

  private get Selection() {
    return this.models().Selection;
  }

  private get AssignOutcome() {
    return this.models().AssignOutcome;
  }

  /**
   * Records the packages a delivery asks for, before it claims any (a retry finds the first
   * record). 'other' when the delivery recorded a selection without some of these (it must not
   * claim them, or its release would not find them); 'released' once it was released.
   */
  async recordSelection(
    deliveryId: string,
    packageIds: string[],
  ): Promise<'recorded' | 'other' | 'released'> {
    if (await insertOnce(() => this.Selection.create({ _id: deliveryId, packageIds }))) {
      return 'recorded';
    }
    const selection = await this.selectionOf(deliveryId);
    if (selection?.released) return 'released';
    const recorded = new Set(selection?.packageIds);
    return packageIds.every((id) => recorded.has(id)) ? 'recorded' : 'other';
  }

  /** The outcome a run of the delivery's assign decided, if one did (`decideAssign`). */
  async assignOutcome(deliveryId: string): Promise<AssignOutcome | null> {
    const stored = await this.AssignOutcome.findById(deliveryId).lean<AssignOutcomeRecord>();
    return stored ? toAssignOutcome(stored) : null;
  }

  /** Decides the delivery's assign as `wanted` unless a run decided first: the one that stands. */
  async decideAssign(deliveryId: string, wanted: AssignOutcome): Promise<AssignOutcome> {
    const record: AssignOutcomeRecord = {
      _id: deliveryId,
      outcome: wanted.outcome,
      refused: wanted.outcome === 'refused' ? wanted.refused : [],
      at: new Date(),
    };
    const { standing } = await claimById(this.AssignOutcome, record, 'package assign outcome');
    return toAssignOutcome(standing);
  }

  /** Closes the delivery's selection to assigns, recording an empty one if it has none. */
  async closeSelection(deliveryId: string): Promise<void> {
    const none = { _id: deliveryId, packageIds: [], released: true, unassigned: true };
    if (await insertOnce(() => this.Selection.create(none))) return;
    await this.Selection.updateOne({ _id: deliveryId }, { $set: { released: true } });
  }

  async isReleased(deliveryId: string): Promise<boolean> {
    return Boolean((await this.selectionOf(deliveryId))?.released);
  }

  /**
   * Takes the package for `holder` by inserting its claim. Returns 'taken', 'already' when the
   * holder has it, the other holder's name when someone else does, or GIVEN_BACK when each
   * claim it met was given back before it could be read (the package is free, but others are
   * taking it as fast).
   */
  async claim(packageId: string, userId: string, holder: string) {
    for (let tries = 1; ; tries += 1) {
      try {
        await this.Claim.create(markedRecorded({ _id: packageId, holder, userId }));
        return 'taken' as const;
      } catch (err) {
        if (!isDuplicateKey(err)) throw err;
        const current = await this.Claim.findById(packageId).lean();
        if (current) return current.holder === holder ? ('already' as const) : current.holder;
        // Given back between the insert and the read (a delivery cancelled): free again.
        if (tries === CLAIM_TRIES) return GIVEN_BACK;
      }
    }
  }

  /**
   * Gives back the claims `holder` has on these packages, each read by `_id` and deleted by
   * the one call that claimed its end (`claimEnd`, decision 130). FerretDB deletes
   * `{_id, holder}` by reading it, then deleting by `_id`: two releases of one delivery at
   * once could both read its claim, and the second delete the claim another delivery made in
   * between (putting it back let a third take the package meanwhile: two deliveries took one
   * package in 12 rounds of 50). Answers how many of the claims are still there, ended by
   * another call: it may have stopped before its delete, which a call after the lease takes
   * over.
   */
  async dropClaims(packageIds: string[], holder: string, clock?: () => Date): Promise<number> {
    const ending = await Promise.all(
      packageIds.map(async (_id) => {
        const claim = await this.Claim.findById(_id).lean();
        if (claim?.holder !== holder) return false;
        const instance = `${_id}:${holder}:${claim.createdAt.getTime()}`;
        if (await claimEnd(this.models().ClaimEnd, instance, clock)) {
          // By `_id` alone (decision 73: anything beside it reads every claim): nothing but
          // this call ends this claim, so the `_id` is still it.
          await this.Claim.deleteOne({ _id });
          return false;
        }
        // Lost to a call that may have deleted it since: only a claim still there is left.
        const now = await this.Claim.findById(_id).lean();
        return now?.holder === holder && now.createdAt.getTime() === claim.createdAt.getTime();
      }),
    );
    return ending.filter(Boolean).length;
  }

  /**
   * The packages the delivery `holder` has claimed, and which take of each: the claims of its
   * recorded selection, each by `_id`, that it holds (a package of a refused selection may be
   * another delivery's). Only a delivery that may hold claims an older version took without a
   * selection pays for a scan, which on FerretDB reads every claim (decision 136): one the
   * pass over those claims recorded, or, until that pass has run after a rolling update's
   * time, one without a selection (its assign never ran, or an older replica's did).
   */
  async claimedBy(holder: string): Promise<HeldPackage[]> {
    const [selection, olderHolder] = await Promise.all([
      this.selectionOf(holder),
      this.models().OlderClaimHolder.findById(holder).lean(),
    ]);
    const selected = selection && !selection.unassigned ? selection.packageIds : null;
    const scan = olderHolder !== null || (!selected && !(await this.olderClaimsRecorded()));
    const claims = scan
      ? await this.Claim.find({ holder }).lean()
      : await Promise.all([...new Set(selected)].map((id) => this.Claim.findById(id).lean()));
    return claims.flatMap((c) =>
      c?.holder === holder ? [{ packageId: c._id, take: String(c.createdAt.getTime()) }] : [],
    );
  }

  /** Known true, once read so: a pass only ever adds to what is recorded. */
  private olderClaimsKnownRecorded = false;

  /**
   * Whether every claim an older version took is recorded by its holder: once a pass has run
   * after a rolling update's time (`BACKFILL_AFTER_ROLLOUT_MS`), not just the first pass,
   * which replicas of the older version still assigning outlive.
   */
  private async olderClaimsRecorded(): Promise<boolean> {
    if (this.olderClaimsKnownRecorded) return true;
    const latest = latestPassId(OLDER_CLAIMS_RECORDED);
    this.olderClaimsKnownRecorded = Boolean(
      await this.models().OlderClaimHolder.findById(latest).lean(),
    );
    return this.olderClaimsKnownRecorded;
  }

  /** The pass records of the pass over older claims (libs/backfills). */
  olderClaimPasses() {
    return passRecordsIn(this.models().OlderClaimHolder);
  }

  /**
   * The claims of deliveries stored since `since` by a writer that did not record a selection
   * first: an older version's (a deleted package's claim needs none).
   */
  olderClaimsSince(since: Date | null): AsyncIterable<{ _id: string; holder: string }> {
    return this.Claim.find(
      { ...unrecordedSince('createdAt', since), holder: { $ne: DELETED } },
      { holder: 1 },
    )
      .lean()
      .cursor();
  }

  /** Records that `holder` holds a claim its selection may not name; its releases scan. */
  async recordOlderClaimHolder(holder: string): Promise<void> {
    await insertOnce(() => this.models().OlderClaimHolder.create({ _id: holder }));
  }

  /** The delivery's selection, as its assign or its release recorded it. */
  selectionOf(deliveryId: string) {
    return this.Selection.findById(deliveryId).lean();
  }

  /** A user's package that is not deleted (it may be taken by a delivery). */
  findLive(userId: string, packageId: string) {
    return findByIdWhere<PackageRecord>(this.Package, packageId, { userId, deletedAt: null });
  }

  async isLive(userId: string, packageId: string): Promise<boolean> {
    return Boolean(await this.findLive(userId, packageId));
  }

  findOwn(userId: string, packageId: string) {
    return findByIdWhere<PackageRecord>(this.Package, packageId, { userId });
  }

  /**
   * The user's open packages, newest saved first: the user's list read down to its floor, each
   * package by `_id` (libs/owner-list `readLiveItems`). What that costs grows with the user's open
   * packages and the few closed ones above them, never with the user's history or anyone
   * else's. With `wanted`, the read stops at that many: the latest listed, saved or given back
   * by a delivery (a package given back enters the list again at the top).
   */
  async listOpen(userId: string, wanted?: number): Promise<PackageRecord[]> {
    const open = await this.byUser.readLiveItems(
      userId,
      (id) => this.byId(id),
      (p) => isOpen(userId, p),
      { wanted },
    );
    return open.sort(newestSavedFirst);
  }

  /** The entries of the user's list (every package saved, some twice): a bound of the open ones. */
  savedCount(userId: string): Promise<number> {
    return this.byUser.length(userId);
  }

  async countOpen(userId: string): Promise<number> {
    return (await this.listOpen(userId)).length;
  }

  /** One lookup by `_id` each: FerretDB pushes down nothing else (an `$in` scans). */
  async findOpen(userId: string, packageIds: string[]): Promise<PackageRecord[]> {
    const found = await Promise.all(packageIds.map((_id) => this.byId(_id)));
    return found.filter((p) => isOpen(userId, p));
  }

  private async byId(packageId: string): Promise<PackageRecord | null> {
    return (await this.Package.findById(packageId).lean()) as PackageRecord | null;
  }

  /** Puts the packages saved without being listed on their users' lists (libs/backfills). */
  async listStoredPackages(pass: BackfillPass): Promise<void> {
    await this.byUser.backfill(pass, (since) =>
      ownedItems(
        this.Package.find(unrecordedSince('createdAt', since), { userId: 1, createdAt: 1 })
          .sort({ createdAt: 1 })
          .lean()
          .cursor(),
      ),
    );
  }

  /** Throws a duplicate-key error when `_id` is given and taken. */
  async insert(fields: { userId: string; _id?: string }): Promise<PackageRecord> {
    const _id = fields._id ?? randomUUID();
    // Before the package: a saved package is always on its user's list.
    await this.byUser.addBeforeStoring(fields.userId, _id);
    return (
      await this.Package.create(markedRecorded({ ...fields, _id }))
    ).toObject() as PackageRecord;
  }

  /**
   * Null when the package is not the user's, deleted or taken, or was claimed while the edit
   * was written. FerretDB writes the document whole from the copy the update read (decision
   * 99): an edit written as a delivery or a delete that claimed the package meanwhile marked it
   * could put back the copy without their mark, or their mark the copy without the edit. So the
   * claim is read after the write: claimed, the edit is refused as if the claim came first, its
   * fields put back as they were, and the claim's mark written again; held by nobody yet marked,
   * the mark of a delivery released while the edit was written (put back by the edit's copy) is
   * cleared again, unless a delivery has claimed the package since (then the mark is its own).
   */
  async updateOpen(userId: string, packageId: string, changes: Record<string, unknown>) {
    const before = await this.byId(packageId);
    if (!(await updateByIdWhere(this.Package, packageId, open(userId), { $set: changes }))) {
      return null;
    }
    const holder = await this.holderOf(packageId);
    if (holder !== null) {
      // Refused: what the user was told was not changed is not (the package may come back to
      // their list when the delivery is released). Only fields still as this edit wrote them:
      // another edit's since is not undone.
      const stored = await this.byId(packageId);
      const ours = Object.keys(changes).filter((k) =>
        isDeepStrictEqual((stored as Record<string, unknown> | null)?.[k], changes[k]),
      );
      if (before && ours.length > 0) {
        const undone = Object.fromEntries(ours.map((k) => [k, changes[k]]));
        await this.Package.updateOne({ _id: packageId }, restoring(before, undone));
      }
      await this.markAsHolder(packageId, holder);
      return null;
    }
    const edited = await this.byId(packageId);
    if (!edited?.p2pDeliveryId) return edited;
    // The mark may be that of a delivery that claimed the package since the claim was read
    // above (the edit came first, and stands): the claim decides, as everywhere.
    if ((await this.holderOf(packageId)) === edited.p2pDeliveryId) return edited;
    await this.clearMark(packageId, edited.p2pDeliveryId);
    // FerretDB writes back the package the clear read: a claim taken meanwhile, whose mark
    // landed in between, is marked again.
    const since = await this.holderOf(packageId);
    const marked = since === null ? null : await this.markAsHolder(packageId, since);
    return { ...edited, p2pDeliveryId: marked };
  }

  /** Clears the mark of `deliveryId`, if the package still carries it (by `_id` alone). */
  private async clearMark(packageId: string, deliveryId: string): Promise<void> {
    const mark = { p2pDeliveryId: deliveryId };
    await updateByIdWhere(this.Package, packageId, mark, { $set: { p2pDeliveryId: null } });
  }

  async markDeleted(packageId: string): Promise<void> {
    await this.Package.updateOne({ _id: packageId }, { $set: { deletedAt: new Date() } });
  }

  /** Writes the mark of `holder`, the claim's: deleted, or taken by that delivery. */
  private async markAs(packageId: string, holder: string): Promise<void> {
    if (holder === DELETED) return this.markDeleted(packageId);
    await this.Package.updateOne({ _id: packageId }, { $set: { p2pDeliveryId: holder } });
  }

  /**
   * Marks the package as `holder`'s, its claim's holder when read, and answers who holds it once
   * the mark is written. That holder's own release may have run meanwhile (its mark cleared, its
   * claim dropped): the mark stands only while its claim does, and is the next taker's if any.
   */
  private async markAsHolder(packageId: string, holder: string): Promise<string | null> {
    await this.markAs(packageId, holder);
    const after = await this.holderOf(packageId);
    if (after === holder) return holder;
    await this.clearMark(packageId, holder);
    if (after !== null) await this.markAs(packageId, after);
    return after;
  }

  /**
   * Marks each package taken by the delivery if the delivery holds its claim, whatever the
   * mark said: a mark follows the claim, so a delivery whose claim a release dropped meanwhile
   * does not mark, and the next taker marks over what it left.
   */
  async markTaken(packageIds: string[], deliveryId: string): Promise<string[]> {
    const notHeld = await Promise.all(
      packageIds.map(async (_id) => {
        if ((await this.holderOf(_id)) !== deliveryId) return [_id];
        await this.markAs(_id, deliveryId);
        return [];
      }),
    );
    return notHeld.flat();
  }

  /** Who holds the package's claim: a delivery id, DELETED, or null for nobody. */
  async holderOf(packageId: string): Promise<string | null> {
    return (await this.Claim.findById(packageId).lean())?.holder ?? null;
  }

  /** The packages a delivery holds (its claims say so), by id: what it took. */
  async findHeld(packageIds: string[]): Promise<Map<string, PackageRecord>> {
    const found = await Promise.all(packageIds.map((_id) => this.byId(_id)));
    return new Map(found.filter((p) => p !== null).map((p) => [p._id, p]));
  }

  /**
   * Gives the packages back, then adds each to its user's list again: a read may have raised
   * the list's floor past its entry while it was taken. Once per take, however often retried.
   */
  async markReturned(held: HeldPackage[], deliveryId: string): Promise<void> {
    await Promise.all(
      held.map(async ({ packageId: _id, take }) => {
        // By `_id` alone (decision 73). Only this delivery's mark is cleared; one that took the
        // package since marks it again (`markTaken` follows the claim).
        await this.clearMark(_id, deliveryId);
        // A release late to a package another delivery took since may have cleared that one's
        // mark (FerretDB writes back the package it read before the mark): the claim says who
        // holds the package, and the package stays off its owner's list.
        const holder = await this.holderOf(_id);
        if (holder !== null && holder !== deliveryId) {
          if ((await this.markAsHolder(_id, holder)) !== null) return;
        }
        const back = await this.byId(_id);
        if (back && isOpen(back.userId, back)) {
          await this.byUser.add(back.userId, _id, new Date(), `returned:${deliveryId}:${take}`);
        }
      }),
    );
  }
}
