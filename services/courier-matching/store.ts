import { randomUUID } from 'node:crypto';
import { setTimeout } from 'node:timers/promises';
import { Schema, type Connection } from 'mongoose';
import type { CourierFleet } from '../../libs/contracts/matching';
import { claimEnd, defineClaimEndModel, insertOnce, setNewerById } from '../../libs/mongo';
import { defineWriterLockModels, WriterLocks } from '../../libs/writer-locks';
import { markedRecorded, unrecordedSince, type BackfillPass } from '../../libs/backfills';
import { OwnerList, defineNamedOwnerListModels, listedAs } from '../../libs/owner-list';
import { definePlaceModel, StoredPlaces } from '../../libs/places';
import { escapeRegExp } from '../../libs/text';
import { claimHolds, type RegNoClaim } from './reg-no-claims';
import { defineSearchModels } from './search-store';
import { MERCHANT_COURIERS_MAX } from './schemas';
import { defineTokenModels } from './token-store';

const fleetSchema = new Schema(
  {
    typeId: { type: String, required: true },
    regNo: { type: String, required: true },
    make: { type: String, required: true },
    model: { type: String, required: true },
    colour: { type: String, required: true },
  },
  { _id: false },
);

const locationSchema = new Schema(
  {
    lat: { type: Number, required: true },
    lon: { type: Number, required: true },
    at: { type: Date, required: true },
  },
  { _id: false },
);

const courierSchema = new Schema(
  {
    /** The courier profile id. */
    _id: { type: String, required: true },
    name: { type: String, required: true },
    phone: { type: String, required: true },
    profilePhoto: { type: String, default: null },
    fleet: { type: fleetSchema, required: true },
    active: { type: Boolean, required: true, default: true },
    /** The sandbox's courier of one simulated delivery: never offered a real one. */
    virtual: { type: Boolean, default: undefined },
    /** Written before `courier_locations` existed only (a fallback for those couriers). */
    lastLocation: { type: locationSchema, default: null },
  },
  { timestamps: true, versionKey: false },
);
courierSchema.index({ createdAt: -1, _id: -1 });
// Operators' list: real couriers (virtual false or absent) or the virtual ones, newest first,
// without reading past the others (one virtual courier per simulated delivery).
courierSchema.index({ virtual: 1, createdAt: -1, _id: -1 });
courierSchema.index({ 'fleet.typeId': 1 });

/**
 * A courier's position as last written from Redis, apart from the courier: FerretDB writes a
 * document whole from the copy an update read (decision 16), so a position written onto the
 * courier, racing an operator's change, could undo it, a retirement among them (decision 99).
 */
const courierLocationSchema = new Schema(
  { _id: String, lat: Number, lon: Number, at: Date },
  { versionKey: false },
);

/** A registration number's claim (reg-no-claims.ts): `_id` is the number. */
const regNoSchema = new Schema(
  {
    _id: { type: String, required: true },
    courierId: { type: String, required: true },
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false },
);

/**
 * A courier on a merchant's own list, `_id` `<userId>:<courierId>`: adding twice, or ten
 * times at once, inserts one link. Read through the merchant's list of additions
 * (`merchant_courier_list`, libs/owner-list), each by `_id`: the index serves MongoDB only.
 */
const merchantCourierSchema = new Schema(
  {
    _id: { type: String, required: true },
    userId: { type: String, required: true },
    courierId: { type: String, required: true },
    /** Which of the merchant's places it holds (libs/places); none if added before places. */
    place: { type: Number },
    /** The addition that holds the place (`merchantCourierHolder`): one of its own each time. */
    holder: { type: String },
    /** Set when stored by a writer that listed it first: backfill passes skip it (libs/backfills). */
    recordedFirst: Boolean,
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false },
);
merchantCourierSchema.index({ userId: 1, createdAt: 1, _id: 1 });

export interface CourierLocationRecord {
  lat: number;
  lon: number;
  at: Date;
}

export interface CourierRecord {
  _id: string;
  name: string;
  phone: string;
  profilePhoto: string | null;
  fleet: CourierFleet;
  active: boolean;
  virtual?: boolean;
  lastLocation: CourierLocationRecord | null;
  createdAt: Date;
  updatedAt: Date;
}

interface MerchantCourierRecord {
  _id: string;
  userId: string;
  courierId: string;
  createdAt: Date;
  place?: number;
  holder?: string;
}

export function defineMatchingModels(connection: Connection) {
  return {
    Courier: connection.model('Courier', courierSchema, 'couriers'),
    CourierLocation: connection.model(
      'CourierLocation',
      courierLocationSchema,
      'courier_locations',
    ),
    RegNo: connection.model('CourierRegNo', regNoSchema, 'courier_reg_nos'),
    // `<number>:<courier id>:<claim's createdAt ms>:<attempt>`: who ends a number's claim
    // (`claimEnd`), its giving back or its release to the next taker.
    RegNoEnd: defineClaimEndModel(connection, 'CourierRegNoEnd', 'courier_reg_no_ends'),
    // An operator's change of a courier under way, `_id` the courier (libs/writer-locks).
    ...defineWriterLockModels(connection, 'courier_edit', 'CourierEdit'),
    MerchantCourier: connection.model(
      'MerchantCourier',
      merchantCourierSchema,
      'merchant_couriers',
    ),
    // `<link>:<addition>:<attempt>`: the one removal that deletes a link (`removeFromList`).
    MerchantCourierEnd: defineClaimEndModel(
      connection,
      'MerchantCourierEnd',
      'merchant_courier_ends',
    ),
    // Each merchant's additions to its list, in order, read by `_id` (libs/owner-list).
    ...defineNamedOwnerListModels(connection, 'merchant_courier_list', 'MerchantList'),
    /** `_id` = `<userId>:<k>`: the addition (`merchantCourierHolder`) that holds the k-th place. */
    MerchantCourierPlace: definePlaceModel(
      connection,
      'MerchantCourierPlace',
      'merchant_courier_places',
    ),
    ...defineTokenModels(connection),
    ...defineSearchModels(connection),
  };
}

export type MatchingModels = ReturnType<typeof defineMatchingModels>;

export type NewCourierRecord = Omit<CourierRecord, 'createdAt' | 'updatedAt' | 'lastLocation'>;

/** Field paths of a courier to `$set`: `name`, `fleet.colour`, ... */
export type CourierSet = Record<string, string | boolean | null>;

export interface CourierFilter {
  active?: boolean;
  fleetTypeId?: string;
  regNo?: string;
  /** True: only virtual couriers; otherwise they are left out (one per simulated delivery). */
  virtual?: boolean;
}

/** What taking a registration number came to. */
export type RegNoTaking =
  /** This call inserted the claim: undo it if the courier is not written. */
  | { took: true }
  /** The courier already held it (a retry, or the number it has). */
  | { took: false }
  /**
   * Another courier holds it; null when others kept taking, ending or giving it back meanwhile.
   */
  | { heldBy: string | null };

/** Rounds of taking a number: a stale claim released, then taken by another, is lost once. */
const TAKE_ATTEMPTS = 3;

/** A merchant's link to a courier: its `_id`. */
const merchantCourierId = (userId: string, courierId: string) => `${userId}:${courierId}`;

/**
 * An addition of a courier to a merchant's list, as the holder of its place: the link's `_id`
 * and a UUID of its own, so that two additions of one courier at once, or a removal's late
 * release and the next addition, never free each other's place.
 */
export const merchantCourierHolder = (userId: string, courierId: string) =>
  `${merchantCourierId(userId, courierId)}:${randomUUID()}`;
const linkOfHolder = (holder: string) => holder.slice(0, holder.lastIndexOf(':'));
/** Which addition a link is: its holder, or its time for a link stored before holders. */
const additionOf = (link: MerchantCourierRecord) =>
  link.holder ?? String(new Date(link.createdAt).getTime());

/** How often an addition refused at the cap looks again for its twin's link. */
const TWIN_POLL_MS = 50;

const oldestAddedFirst = (a: MerchantCourierRecord, b: MerchantCourierRecord) =>
  a.createdAt.getTime() - b.createdAt.getTime() || (a._id < b._id ? -1 : a._id > b._id ? 1 : 0);

/** The courier directory's persistence: every query its actions make. */
export class CourierStore {
  /**
   * Each merchant's additions to its list, newest last; a removed courier's stays, closed, and
   * a courier added again is added anew (each addition has a tag of its own).
   */
  private readonly additions: OwnerList;

  /** Each merchant's list places: MERCHANT_COURIERS_MAX held exactly. */
  readonly listPlaces: StoredPlaces;

  /**
   * An operator's change of a courier, one at a time (decision 132): FerretDB writes a change
   * as the whole courier it read, so two at once undid each other (a retirement put back to
   * work by a change of name). A change waits for one under way, up to `WRITER_WAIT_MS`.
   */
  readonly edits: WriterLocks;

  constructor(private readonly models: () => MatchingModels) {
    this.additions = OwnerList.named(models, 'MerchantList');
    this.edits = WriterLocks.named(models, 'CourierEdit', 'Courier');
    this.listPlaces = new StoredPlaces(
      () => this.models().MerchantCourierPlace,
      async (holder) => {
        const link = await this.models()
          .MerchantCourier.findById(linkOfHolder(holder))
          .lean<MerchantCourierRecord>();
        // A removed link is deleted, and another addition's link is not this one's: either way
        // this addition's link reads as never stored (its place free after a while).
        return link?.holder === holder ? { gone: false, place: link.place ?? undefined } : null;
      },
    );
  }

  find(courierId: string): Promise<CourierRecord | null> {
    return this.models().Courier.findById(courierId).lean<CourierRecord>();
  }

  /**
   * The couriers of `ids` in that order, those that do not exist left out: one lookup by `_id`
   * each, FerretDB pushes down nothing else (an `$in` read every courier).
   */
  async findInOrder(ids: string[]): Promise<CourierRecord[]> {
    const found = await Promise.all(ids.map((id) => this.find(id)));
    return found.filter((c) => c !== null);
  }

  /** Newest first, a page at a time. */
  list(filter: CourierFilter, page: { limit: number; offset: number }): Promise<CourierRecord[]> {
    return this.models()
      .Courier.find({
        ...(filter.active === undefined ? {} : { active: filter.active }),
        ...(filter.fleetTypeId ? { 'fleet.typeId': filter.fleetTypeId } : {}),
        ...(filter.regNo ? { 'fleet.regNo': filter.regNo } : {}),
        // Exact values (null is also an absent field), which MongoDB reads from the index.
        virtual: filter.virtual ? true : { $in: [false, null] },
      })
      .sort({ createdAt: -1, _id: -1 })
      .skip(page.offset)
      .limit(page.limit)
      .lean<CourierRecord[]>();
  }

  /** Throws a duplicate-key error when the id is taken. */
  async create(fields: NewCourierRecord): Promise<CourierRecord> {
    const record = await this.models().Courier.create({ ...fields, lastLocation: null });
    return record.toObject() as CourierRecord;
  }

  /** The sandbox's virtual courier of a delivery, once: a repeat leaves the first. */
  async ensureVirtual(fields: NewCourierRecord): Promise<void> {
    await insertOnce(() =>
      this.models().Courier.create({ ...fields, virtual: true, lastLocation: null }),
    );
  }

  /**
   * The courier as changed; null when there is none. Its `updatedAt` is the directory's version
   * (positions.ts), compared across replicas: it never goes back from the one it follows,
   * whatever this replica's clock says (one a few seconds behind the last writer's had the
   * change refused by the index, the courier's reports frozen until a later edit).
   */
  async update(courierId: string, changes: CourierSet): Promise<CourierRecord | null> {
    const { Courier } = this.models();
    const before = await Courier.findById(courierId, { updatedAt: 1 }).lean<{ updatedAt?: Date }>();
    if (!before) return null;
    const after = new Date(before.updatedAt ?? 0).getTime() + 1;
    const updatedAt = new Date(Math.max(Date.now(), after || 0));
    return Courier.findOneAndUpdate(
      { _id: courierId },
      { $set: { ...changes, updatedAt } },
      { returnDocument: 'after', timestamps: false },
    ).lean<CourierRecord>();
  }

  /**
   * Writes couriers' last positions (the location flusher): one upsert by `_id` per courier,
   * sent a few dozen to a command, into `courier_locations`; the courier's own document (and its `updatedAt`,
   * the directory's version, positions.ts) stays the operators'.
   */
  async writeLocations(
    locations: readonly { courierId: string; lat: number; lon: number; at: Date }[],
  ): Promise<void> {
    if (locations.length === 0) return;
    // A flush that took its positions before another replica's later ones writes none over them.
    await setNewerById(
      this.models().CourierLocation,
      locations.map(({ courierId, lat, lon, at }) => ({
        id: courierId,
        at,
        fields: { lat, lon, at },
      })),
    );
  }

  /** Drops the position last written of a courier (the sandbox's virtual one, once over). */
  async forgetLocation(courierId: string): Promise<void> {
    await this.models().CourierLocation.deleteOne({ _id: courierId });
  }

  /** The positions last written of those of `courierIds` that have one. */
  async storedLocations(
    courierIds: readonly string[],
  ): Promise<Map<string, CourierLocationRecord>> {
    const { CourierLocation } = this.models();
    const found = await Promise.all(
      courierIds.map((id) =>
        CourierLocation.findById(id).lean<CourierLocationRecord & { _id: string }>(),
      ),
    );
    return new Map(found.flatMap((location) => (location ? [[location._id, location]] : [])));
  }

  /**
   * Takes `regNo` for `courierId` by inserting its claim. A claim of another courier that no
   * longer holds (reg-no-claims.ts) is released and the number taken again.
   */
  async takeRegNo(regNo: string, courierId: string, now = () => new Date()): Promise<RegNoTaking> {
    const { RegNo } = this.models();
    for (let attempt = 0; attempt < TAKE_ATTEMPTS; attempt++) {
      if (await insertOnce(() => RegNo.create({ _id: regNo, courierId }))) return { took: true };
      const claim = await RegNo.findById(regNo).lean<RegNoClaim>();
      if (!claim) continue; // given back meanwhile
      if (claim.courierId === courierId) return { took: false };
      const holder = await this.find(claim.courierId);
      if (claimHolds(claim, holder?.fleet.regNo, now())) return { heldBy: claim.courierId };
      // Ended by this call, or by another one under way: then taken by whoever comes first.
      await this.endRegNoClaim(claim, now);
    }
    // Every round found a claim that no longer holds, which others were ending or took first.
    return { heldBy: null };
  }

  /**
   * Gives `regNo` back, unless the courier carries it again (a change made and undone
   * meanwhile) or another courier holds it now.
   */
  async releaseRegNo(regNo: string, courierId: string): Promise<void> {
    const courier = await this.find(courierId);
    if (courier?.fleet.regNo === regNo) return;
    const claim = await this.models().RegNo.findById(regNo).lean<RegNoClaim>();
    if (claim?.courierId === courierId) await this.endRegNoClaim(claim);
  }

  /**
   * Deletes a number's claim as read, by one call only: two takers releasing a stale claim at
   * once, or a giving back racing a taker, each deleted the claim the other had just made, and
   * two couriers had one number (17 rounds of 50, four takers of a stale claim). A call that
   * loses leaves it to the winner.
   */
  private async endRegNoClaim(claim: RegNoClaim, clock?: () => Date): Promise<void> {
    const { RegNo, RegNoEnd } = this.models();
    const { _id, courierId, createdAt } = claim;
    if (await claimEnd(RegNoEnd, `${_id}:${courierId}:${createdAt.getTime()}`, clock)) {
      await RegNo.deleteOne({ _id, courierId, createdAt });
    }
  }

  /**
   * True when this call put the courier on the list, in `place` taken by `holder`
   * (`merchantCourierHolder`); false when it was on it.
   */
  async addToList(
    userId: string,
    courierId: string,
    place: number,
    holder = merchantCourierHolder(userId, courierId),
  ): Promise<boolean> {
    if (await this.isOnList(userId, courierId)) return false;
    // The addition first, so that a stored link is always read; then the link.
    // A tag of its own: each addition is a fresh entry, which waits for its link.
    await this.additions.add(userId, courierId, new Date(), randomUUID());
    return insertOnce(() =>
      this.models().MerchantCourier.create(
        markedRecorded({
          _id: merchantCourierId(userId, courierId),
          userId,
          courierId,
          place,
          holder,
        }),
      ),
    );
  }

  async isOnList(userId: string, courierId: string): Promise<boolean> {
    return (await this.linkOf(userId, courierId)) !== null;
  }

  /**
   * Whether the courier is on the list once the other additions of it under way (those holding
   * a place of the merchant's) are done, waiting for them up to `waitMs`. A scan of the places
   * by holder: asked only by an addition refused at the cap.
   */
  async onListOnceAdded(userId: string, courierId: string, waitMs: number): Promise<boolean> {
    const link = escapeRegExp(merchantCourierId(userId, courierId));
    const twinUnderWay = () =>
      this.models().MerchantCourierPlace.exists({
        _id: { $regex: `^${escapeRegExp(userId)}:` },
        holder: { $regex: `^${link}:` },
      });
    const until = Date.now() + waitMs;
    for (;;) {
      if (await this.isOnList(userId, courierId)) return true;
      if (!(await twinUnderWay()) || Date.now() >= until) return this.isOnList(userId, courierId);
      await setTimeout(TWIN_POLL_MS);
    }
  }

  linkOf(userId: string, courierId: string): Promise<MerchantCourierRecord | null> {
    return this.models()
      .MerchantCourier.findById(merchantCourierId(userId, courierId))
      .lean<MerchantCourierRecord>();
  }

  /**
   * The removed link (with the place it held); null when the courier was not on the list, or
   * another removal of this link is under way. The link is deleted by the one removal that
   * claims its end (`merchant_courier_ends`, keyed by the addition's holder): two removals
   * could both read it, and the second delete the link a new addition made in between.
   */
  async removeFromList(userId: string, courierId: string): Promise<MerchantCourierRecord | null> {
    const link = await this.linkOf(userId, courierId);
    if (!link) return null;
    const { MerchantCourier, MerchantCourierEnd } = this.models();
    const addition = additionOf(link);
    if (!(await claimEnd(MerchantCourierEnd, `${link._id}:${addition}`))) return null;
    // Read again, deleted by `_id` only if it is still this addition's: a removal that waited
    // past its claim's lease was taken over, and the courier may have been added again since.
    const now = await this.linkOf(userId, courierId);
    if (!now || additionOf(now) !== addition) return null;
    const { deletedCount } = await MerchantCourier.deleteOne({ _id: link._id });
    return deletedCount > 0 ? link : null;
  }

  /** The places of the links on a merchant's list (libs/places). */
  async placesOnList(userId: string): Promise<{ place?: number }[]> {
    return (await this.links(userId)).map((link) => ({ place: link.place ?? undefined }));
  }

  /**
   * The couriers on a merchant's list, oldest addition first. Additions take places since
   * decision 90; those counted before were not held exactly, so the read stays capped: the
   * answer always fits one message.
   */
  async merchantCouriers(userId: string): Promise<CourierRecord[]> {
    const links = (await this.links(userId)).sort(oldestAddedFirst);
    return this.findInOrder(links.slice(0, MERCHANT_COURIERS_MAX).map((l) => l.courierId));
  }

  /**
   * The merchant's links: its list of additions read down to its floor (libs/owner-list
   * `readLiveItems`), each addition's link by `_id`. What it costs grows with the merchant's own
   * list, never with other merchants' or the directory.
   */
  private links(userId: string): Promise<MerchantCourierRecord[]> {
    const { MerchantCourier } = this.models();
    // A missing link is a removed courier, unless its link may still be on its way.
    return this.additions.readLiveItems(
      userId,
      (courierId) =>
        MerchantCourier.findById(
          merchantCourierId(userId, courierId),
        ).lean<MerchantCourierRecord>(),
      () => true,
    );
  }

  /** Puts the links stored before `merchant_courier_list` existed on their merchants' lists. */
  async listStoredLinks(pass: BackfillPass): Promise<void> {
    await this.additions.backfill(pass, (since) =>
      listedAs(
        this.models()
          .MerchantCourier.find(unrecordedSince('createdAt', since), {
            userId: 1,
            courierId: 1,
            createdAt: 1,
          })
          .sort({ createdAt: 1, _id: 1 })
          .lean<MerchantCourierRecord[]>()
          .cursor(),
        (link) => ({ ownerId: link.userId, itemId: link.courierId, at: link.createdAt }),
      ),
    );
  }
}
