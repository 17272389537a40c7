import { Schema, type Connection } from 'mongoose';
import { insertOnce } from './mongo';

/**
 * A cap on what one owner may have (webhook endpoints, API keys, courier tokens, a merchant's
 * couriers) held exactly, however many creations run at once: each record takes one of its
 * owner's numbered places by inserting the place's document (`_id` `<owner>:<k>`), which only
 * one insert can do (FerretDB's conditional updates are not atomic, decision 16). Counting the
 * records before inserting one let simultaneous creations pass the cap by their number (13
 * webhook endpoints of 10 under bench:soak at 50 connections; decisions 89 and 90). A place is
 * given back by one delete however many give it back at once (`releasePlace`, decision 98).
 */

/** A taken place: which record holds it, since when. */
export interface Place {
  _id: string;
  holder: string;
  at: Date;
}

export const placeId = (owner: string, k: number) => `${owner}:${k}`;

/**
 * How long a place may wait for its record to be stored before it is taken for a creation that
 * died half-way: far longer than a creation takes (as an owner list's entry waits
 * `PENDING_ITEM_MS` for its item, libs/owner-list).
 */
export const PLACE_PENDING_MS = 5 * 60_000;

/** What a place's holder is, as far as the place is concerned. */
export interface PlaceHolder {
  /** Deleted or revoked: it no longer counts against the cap. */
  gone: boolean;
  place?: number;
}

/**
 * Whether place `k`, taken, may be taken again: its record is gone (and the place not given
 * back: the removal stopped half-way), holds another place (its creation's insert here was
 * written but reported lost), or was never stored by a creation long gone. A record removed
 * outright reads as never stored: its place is free `PLACE_PENDING_MS` after it was taken.
 */
export function placeLeftBehind(
  k: number,
  place: Pick<Place, 'at'>,
  holder: PlaceHolder | null,
  now: Date,
): boolean {
  if (holder) return holder.gone || holder.place !== k;
  return now.getTime() - place.at.getTime() >= PLACE_PENDING_MS;
}

/** The places a new record may try (`placesOf`). */
export interface OpenPlaces {
  count: number;
  held: ReadonlySet<number>;
}

/**
 * Which places an owner's new record may try: the first `count`, skipping those its live
 * records hold (under a busy database every failed insert waits for the write lock like one
 * that succeeds). `count` is the most for which the records created before places existed
 * (which hold none), those holding a place at `count` or above (created under a higher cap)
 * and `count` more stay within the cap: however many creations run at once, each takes a place
 * below `count` or none.
 */
export function placesOf(cap: number, live: readonly { place?: number }[]): OpenPlaces {
  const held = new Set<number>();
  let unplaced = 0;
  for (const record of live) {
    if (record.place === undefined) unplaced++;
    else held.add(record.place);
  }
  let count = Math.max(0, cap - unplaced);
  const heldFrom = (k: number) => [...held].filter((place) => place >= k).length;
  while (count > 0 && unplaced + count + heldFrom(count) > cap) count--;
  return { count, held };
}

/** What taking a place reads and writes. */
export interface PlaceStore {
  /** Inserts the place; false when it is taken. */
  claimPlace(place: Place): Promise<boolean>;
  place(id: string): Promise<Place | null>;
  /**
   * Deletes the place if `holder` still holds it. FerretDB reads the filter and deletes by `_id`
   * apart (decision 16), so only the caller that claimed the release calls this
   * (`releasePlace`).
   */
  deletePlace(id: string, holder: string): Promise<void>;
  holder(id: string): Promise<PlaceHolder | null>;
}

/**
 * The number of the first place of `owner`'s that no live record holds and that its insert
 * gives `holder` (a creation under way may hold one no list shows yet); else one `holder`
 * took already (an earlier run of the same creation); else the first of those left behind
 * (`placeLeftBehind`), given back and taken again; undefined when every one is held.
 */
export async function takePlace(
  store: PlaceStore,
  owner: string,
  places: OpenPlaces,
  holder: string,
  now: Date,
): Promise<number | undefined> {
  const claim = (k: number) => store.claimPlace({ _id: placeId(owner, k), holder, at: now });
  const taken: number[] = [];
  for (let k = 0; k < places.count; k++) {
    if (places.held.has(k)) continue;
    if (await claim(k)) return k;
    taken.push(k);
  }
  for (const k of taken) {
    const held = await store.place(placeId(owner, k));
    // Taken by an earlier run of this creation (a retry of a record named after its request),
    // which stopped before storing it: this run's place.
    if (held?.holder === holder) return k;
    if (held) {
      if (!placeLeftBehind(k, held, await store.holder(held.holder), now)) continue;
      await releasePlace(store, held._id, held.holder, now);
    }
    // Freed since, or left behind: whoever else found it so races for it too, the insert decides.
    if (await claim(k)) return k;
  }
  return undefined;
}

/** The document whose insert claims the release of place `id` from `holder`, try `attempt`. */
export const releaseId = (id: string, holder: string, attempt: number) =>
  `release ${JSON.stringify([id, holder, attempt])}`;

/**
 * Frees place `id` of `holder`, once however many free it at the same instant (a removal giving
 * it back while creations take it for left behind). FerretDB reads a delete's filter and
 * deletes by `_id` apart (decision 16): two deletes of `holder`'s place could both read it held
 * by `holder`, and the later one delete the place a creation had taken again in between, which
 * lets the cap be passed by one. So the release is claimed by inserting a document that names
 * it, and only the claim's winner deletes (a failed delete takes its claim back). A claim whose
 * winner died before deleting leaves the place held: `PLACE_PENDING_MS` after it, the next
 * release takes the next attempt's claim.
 * The claims are kept (one small document a release): deleting one would let a late release
 * of the same holder claim it again.
 */
export async function releasePlace(
  store: PlaceStore,
  id: string,
  holder: string,
  now: Date,
): Promise<void> {
  let attempt = 0;
  for (;;) {
    const release: Place = { _id: releaseId(id, holder, attempt), holder, at: now };
    if (await store.claimPlace(release)) {
      try {
        return await store.deletePlace(id, holder);
      } catch (err) {
        // The delete failed: the claim goes with it, so that a retry deletes at once.
        await store.deletePlace(release._id, holder).catch(() => undefined);
        throw err;
      }
    }
    const claimed = await store.place(release._id);
    // Taken back by a delete that failed: the same claim is tried again.
    if (!claimed) continue;
    if (now.getTime() - claimed.at.getTime() < PLACE_PENDING_MS) return;
    attempt++;
  }
}

/** A capped creation: who creates what for whom, and how it is refused. */
export interface PlacedCreation<T> {
  store: PlaceStore;
  owner: string;
  cap: number;
  /** The owner's live records as listed now. */
  live: readonly { place?: number }[];
  /** The new record's id, which its place names. */
  holder: string;
  now: Date;
  /**
   * The error of a refusal: `full` when the live records (`count` of them) fill the cap
   * already, `busy` when creations under way hold every other place (`capRefusals`).
   */
  refused: Refusal;
  /** Stores the record holding place `k`. */
  insert: (k: number) => Promise<T>;
  /** Whether the record is stored (asked after its insert failed: the write may have landed). */
  stored: () => Promise<boolean>;
}

/** How a capped creation is refused, in its owner's and its records' words. */
export interface CapWords {
  /** `User <id>`, `Courier <id>`, or `You` (which takes `have`, the others `has`). */
  owner: string;
  /** What the owner has, counted: `active API keys`, `couriers on its list`. */
  things: string;
  /** Who holds places while under way: `creations`, `registrations`, `additions`. */
  underWay: string;
  /** How to make room: `revoke one with DELETE /admin/api-keys/:keyId first`. */
  advice: string;
  /** The error that carries the message (its status). */
  error: (message: string) => Error;
}

/** Why a capped creation was refused, with the owner's live records and the cap. */
export type Refusal = (why: 'full' | 'busy', count: number, cap: number) => Error;

/** A creation's refusals in its owner's and its records' words. */
export function capRefusals(words: CapWords): Refusal {
  const { owner, things, underWay, advice, error } = words;
  const has = owner === 'You' ? 'have' : 'has';
  return (why, count, cap) =>
    why === 'full'
      ? error(`${owner} already ${has} ${count} ${things} (at most ${cap}); ${advice}`)
      : error(
          `${owner} ${has} ${count} ${things} and ${underWay} under way hold the other places (at most ${cap}); retry in a few seconds, or ${advice}`,
        );
}

/**
 * Creates a record within its owner's cap: refused at once when the live records fill it (no
 * insert tried), else stored in a place taken first. A failed insert gives the place back,
 * unless the record was written after all and holds it.
 */
export async function createInPlace<T>(creation: PlacedCreation<T>): Promise<T> {
  const { store, owner, cap, live, holder, now } = creation;
  if (live.length >= cap) throw creation.refused('full', live.length, cap);
  const k = await takePlace(store, owner, placesOf(cap, live), holder, now);
  if (k === undefined) throw creation.refused('busy', live.length, cap);
  try {
    return await creation.insert(k);
  } catch (err) {
    if (!(await creation.stored().catch(() => true))) {
      await releasePlace(store, placeId(owner, k), holder, now).catch(() => undefined);
    }
    throw err;
  }
}

/**
 * Gives a removed record's place back, if it holds one. Left held if this is not reached: the
 * next creation to find every place held frees it (`placeLeftBehind`).
 */
export async function givePlaceBack(
  store: PlaceStore,
  owner: string,
  record: { id: string; place?: number },
  now = new Date(),
): Promise<void> {
  if (record.place === undefined) return;
  await releasePlace(store, placeId(owner, record.place), record.id, now);
}

const placeSchema = new Schema({ _id: String, holder: String, at: Date }, { versionKey: false });

/** The places of one kind of record, and the claims of their releases, in `collection`. */
export function definePlaceModel(connection: Connection, name: string, collection: string) {
  return connection.model(name, placeSchema, collection);
}

export type PlaceModel = ReturnType<typeof definePlaceModel>;

/** Places kept in a collection, their holders read by `holderOf`. */
export class StoredPlaces implements PlaceStore {
  constructor(
    private readonly model: () => PlaceModel,
    private readonly holderOf: (id: string) => Promise<PlaceHolder | null>,
  ) {}

  claimPlace(place: Place): Promise<boolean> {
    return insertOnce(() => this.model().create(place));
  }

  async place(id: string): Promise<Place | null> {
    return (await this.model().findById(id).lean()) as Place | null;
  }

  /**
   * Read by `_id` and deleted by `_id`: a filter with `holder` beside `_id` would decode every
   * document of the collection on FerretDB, which keeps the claims of every release. Only the
   * release's claimer deletes, so nothing comes between the two.
   */
  async deletePlace(id: string, holder: string): Promise<void> {
    if ((await this.place(id))?.holder !== holder) return;
    await this.model().deleteOne({ _id: id });
  }

  holder(id: string): Promise<PlaceHolder | null> {
    return this.holderOf(id);
  }
}
