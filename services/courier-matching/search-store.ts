import { Schema, type Connection } from 'mongoose';
import type { StartSearchParams } from '../../libs/contracts/matching';
import { claimEnd, defineClaimEndModel, insertOnce } from '../../libs/mongo';
import type { OfferOutcome } from './matching-rules';

/**
 * Matching's records. Whatever must happen once is claimed by inserting a document whose
 * `_id` names it (FerretDB's conditional updates are not atomic): the n-th offer of a
 * delivery, an offer's outcome, a courier's hold and its release, a search's end. Every lookup
 * is by `_id`.
 */

const plain = { versionKey: false, minimize: false, strict: false } as const;
const { Mixed } = Schema.Types;

const searchSchema = new Schema({ _id: String, deliveryId: String, state: String }, plain);
/** The searches still running, `_id` = delivery id: what the sweep reads (kept small). */
const activeSearchSchema = new Schema({ _id: String, since: Date }, plain);
const offerSchema = new Schema({ _id: String, deliveryId: String, courierId: String }, plain);
const offerOutcomeSchema = new Schema({ _id: String, outcome: String, at: Date }, plain);
/**
 * `_id` = courier id: a courier holds one offer or one delivery at a time, never two. Only
 * inserted and deleted: an accepted offer's hold is the delivery's by its outcome (`holding`).
 */
const holdSchema = new Schema({ _id: String, deliveryId: String, kind: String }, plain);
/** `_id` = delivery id: how its search ended (a courier, none found, or ended by order). */
const searchEndSchema = new Schema(
  { _id: String, outcome: String, courierId: Mixed, offerId: String },
  plain,
);
/**
 * `_id` = a sandbox's virtual courier whose delivery is over but who could not be freed then
 * (Redis away): the sweep frees it (searches.ts `freeLeftOver`).
 */
const virtualToFreeSchema = new Schema({ _id: String, deliveryId: String, at: Date }, plain);
/**
 * `_id` = `<delivery id>:<k>`, k = 1, 2, …: the k-th courier or offer a search noted out of it
 * (search-notes.ts). Only inserted: one array on the search, noted by `$addToSet`, lost all but
 * one of eight notes made at once (FerretDB reads, then writes the whole document).
 */
const searchNoteSchema = new Schema(
  { _id: String, deliveryId: String, k: Number, kind: String, courierId: String, offerId: String },
  plain,
);

export function defineSearchModels(connection: Connection) {
  return {
    Search: connection.model('Search', searchSchema, 'searches'),
    ActiveSearch: connection.model('ActiveSearch', activeSearchSchema, 'active_searches'),
    Offer: connection.model('Offer', offerSchema, 'offers'),
    OfferOutcome: connection.model('OfferOutcome', offerOutcomeSchema, 'offer_outcomes'),
    Hold: connection.model('CourierHold', holdSchema, 'courier_holds'),
    // `<offer id>:<attempt>`: who lets go the courier an offer holds (`releaseHold`).
    HoldRelease: defineClaimEndModel(connection, 'CourierHoldRelease', 'courier_hold_releases'),
    SearchEnd: connection.model('SearchEnd', searchEndSchema, 'search_ends'),
    SearchNote: connection.model('SearchNote', searchNoteSchema, 'search_notes'),
    VirtualToFree: connection.model(
      'VirtualCourierToFree',
      virtualToFreeSchema,
      'virtual_couriers_to_free',
    ),
  };
}

type SearchModels = ReturnType<typeof defineSearchModels>;

export interface SearchRecord extends StartSearchParams {
  _id: string;
  startedAt: Date;
  /** How many offers were made (a hint: the offers themselves are the truth). */
  offers: number;
  /**
   * Couriers who declined or let an offer expire (but a search's only courier who let one
   * expire: `missed`): not asked again for this delivery. Noted here by versions before
   * session 58, now in `search_notes` (search-notes.ts); written empty for those versions,
   * which spread it.
   */
  tried: string[];
  /**
   * A search that may go to one courier only: the offers they let expire (`MISSED_OFFERS_MAX`,
   * searches.ts). As `tried`: noted here before session 58, absent until one is missed.
   */
  missed?: string[];
  /** MERCHANT_SPECIAL_COURIERS: the merchant's active couriers when the search started. */
  merchantCourierIds?: string[];
}

/** What puts a courier out of a search (search-notes.ts). */
export type SearchNote =
  /**
   * They declined or let the offer `offerId` (made at `offeredAt`) expire: not asked again for
   * MATCHING_REASK_AFTER_MS; or they were retired as it was made (`forGood`): never asked again.
   * Notes of the versions before session 68 name neither.
   */
  | {
      kind: 'TRIED';
      courierId: string;
      offerId?: string;
      offeredAt?: Date;
      forGood?: true;
    }
  /** The search's only courier let this offer expire (`MISSED_OFFERS_MAX`, searches.ts). */
  | { kind: 'MISSED'; offerId: string };

export type SearchNoteRecord = SearchNote & {
  _id: string;
  deliveryId: string;
  k: number;
  at: Date;
};

export const searchNoteId = (deliveryId: string, k: number) => `${deliveryId}:${k}`;

export interface OfferRecord {
  _id: string;
  deliveryId: string;
  n: number;
  courierId: string;
  offeredAt: Date;
  expiresAt: Date;
}

export interface HoldRecord {
  _id: string;
  deliveryId: string;
  offerId: string;
  /** As stored: OFFER (versions before kept DELIVERY once accepted); `holding` tells which. */
  kind: 'OFFER' | 'DELIVERY';
  at: Date;
}

/**
 * What a call to let a courier go of an offer found: it let them go; another call is letting
 * them go (and marks them free), under its lease; or the courier held another offer or trip,
 * or nothing (let go already).
 */
export type HoldRelease = 'RELEASED' | 'RELEASING' | 'HOLDS_OTHER' | 'HOLDS_NOTHING';

export type SearchEndOutcome = 'ASSIGNED' | 'NO_COURIER' | 'ENDED';

export interface SearchEndRecord {
  _id: string;
  outcome: SearchEndOutcome;
  courierId: string | null;
  /** ASSIGNED: the offer accepted, the search's last (none on ends written before it was kept). */
  offerId?: string;
  at: Date;
}

export class SearchStore {
  constructor(private readonly models: () => SearchModels) {}

  private get m() {
    return this.models();
  }

  // --- searches

  claimSearch(search: SearchRecord): Promise<boolean> {
    return insertOnce(() => this.m.Search.create(search));
  }

  async search(deliveryId: string): Promise<SearchRecord | null> {
    return (await this.m.Search.findById(deliveryId).lean()) as SearchRecord | null;
  }

  async noteOffer(deliveryId: string, n: number): Promise<void> {
    await this.m.Search.updateOne({ _id: deliveryId }, { $max: { offers: n } });
  }

  async searchNote(deliveryId: string, k: number): Promise<SearchNoteRecord | null> {
    return (await this.m.SearchNote.findById(
      searchNoteId(deliveryId, k),
    ).lean()) as SearchNoteRecord | null;
  }

  /** False when another note took the k-th place first. */
  claimSearchNote(note: SearchNoteRecord): Promise<boolean> {
    return insertOnce(() => this.m.SearchNote.create(note));
  }

  async activate(deliveryId: string, since: Date): Promise<void> {
    await insertOnce(() => this.m.ActiveSearch.create({ _id: deliveryId, since }));
  }

  async deactivate(deliveryId: string): Promise<void> {
    await this.m.ActiveSearch.deleteOne({ _id: deliveryId });
  }

  /** The searches still running, oldest first: a small collection, read whole by the sweep. */
  async active(): Promise<string[]> {
    const found = await this.m.ActiveSearch.find().sort({ since: 1, _id: 1 }).lean();
    return found.map((s) => String(s._id));
  }

  async end(deliveryId: string): Promise<SearchEndRecord | null> {
    return (await this.m.SearchEnd.findById(deliveryId).lean()) as SearchEndRecord | null;
  }

  claimEnd(end: SearchEndRecord): Promise<boolean> {
    return insertOnce(() => this.m.SearchEnd.create(end));
  }

  // --- offers

  claimOffer(offer: OfferRecord): Promise<boolean> {
    return insertOnce(() => this.m.Offer.create(offer));
  }

  async offer(offerId: string): Promise<OfferRecord | null> {
    return (await this.m.Offer.findById(offerId).lean()) as OfferRecord | null;
  }

  async offerOutcome(offerId: string): Promise<OfferOutcome | null> {
    const found = (await this.m.OfferOutcome.findById(offerId).lean()) as {
      outcome: OfferOutcome;
    } | null;
    return found?.outcome ?? null;
  }

  claimOfferOutcome(offerId: string, outcome: OfferOutcome): Promise<boolean> {
    return insertOnce(() => this.m.OfferOutcome.create({ _id: offerId, outcome, at: new Date() }));
  }

  // --- virtual couriers left to free

  /** Once however often noted: a repeat of the end that failed to free it notes it again. */
  async noteToFree(courierId: string, deliveryId: string, at: Date): Promise<void> {
    await insertOnce(() => this.m.VirtualToFree.create({ _id: courierId, deliveryId, at }));
  }

  /** The oldest `limit` virtual couriers left to free: a collection nearly always empty. */
  async toFree(limit: number): Promise<string[]> {
    const found = await this.m.VirtualToFree.find().sort({ at: 1, _id: 1 }).limit(limit).lean();
    return found.map((v) => String(v._id));
  }

  async freed(courierId: string): Promise<void> {
    await this.m.VirtualToFree.deleteOne({ _id: courierId });
  }

  // --- holds

  claimHold(hold: HoldRecord): Promise<boolean> {
    return insertOnce(() => this.m.Hold.create(hold));
  }

  async hold(courierId: string): Promise<HoldRecord | null> {
    return (await this.m.Hold.findById(courierId).lean()) as HoldRecord | null;
  }

  /**
   * What the courier holds, as they hold it: an offer they accepted is the delivery. Not
   * written on the hold at the accept: FerretDB updates `{ _id, offerId }` by reading it, then
   * writing the whole document by `_id`, so a hold let go and claimed by the courier's next
   * offer in between came back as the old delivery's (a courier held by a delivery they did
   * not have, passed over by every search).
   */
  async holding(courierId: string): Promise<HoldRecord | null> {
    const hold = await this.hold(courierId);
    if (hold?.kind !== 'OFFER') return hold;
    const accepted = (await this.offerOutcome(hold.offerId)) === 'ACCEPTED';
    return accepted ? { ...hold, kind: 'DELIVERY' } : hold;
  }

  /**
   * Lets the courier go, if this offer's hold is still theirs, by one call only (`claimEnd`;
   * a hold of an offer is claimed once, so the offer names it). Without the claim, four calls
   * racing the courier's next hold deleted that hold in 34 rounds of 50.
   */
  async releaseHold(
    courierId: string,
    offerId: string,
    clock = () => new Date(),
  ): Promise<HoldRelease> {
    const hold = await this.hold(courierId);
    if (hold?.offerId !== offerId) return hold ? 'HOLDS_OTHER' : 'HOLDS_NOTHING';
    if (!(await claimEnd(this.m.HoldRelease, offerId, clock))) return 'RELEASING';
    const { deletedCount } = await this.m.Hold.deleteOne({ _id: courierId, offerId });
    // None: a claimant before this one, stopped past its lease, deleted it after all.
    return deletedCount > 0 ? 'RELEASED' : 'HOLDS_NOTHING';
  }
}
