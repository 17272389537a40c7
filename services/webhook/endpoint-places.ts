/**
 * WEBHOOK_MAX_ENDPOINTS held exactly, however many registrations run at once: each endpoint
 * takes one of its owner's numbered places by inserting the place's document (`_id`
 * `<owner>:<k>`), which only one insert can do (FerretDB's conditional updates are not
 * atomic, decision 16). Counting the endpoints before inserting one let simultaneous
 * registrations pass the cap by their number (13 of 10 under bench:soak at 50 connections).
 */

/** A taken place: which endpoint holds it, since when. */
export interface EndpointPlace {
  _id: string;
  webhookId: string;
  at: Date;
}

export const placeId = (owner: string, k: number) => `${owner}:${k}`;

/**
 * How long a place may wait for its endpoint to be stored before it is taken for a
 * registration that died half-way: far longer than a registration takes (as an owner list's
 * entry waits `PENDING_ITEM_MS` for its item, libs/owner-list).
 */
export const PLACE_PENDING_MS = 5 * 60_000;

/** What a place's holder is, as far as the place is concerned. */
export interface PlaceHolder {
  deleted: boolean;
  place?: number;
}

/**
 * Whether place `k`, taken, may be taken again: its endpoint was deleted (and the place not
 * given back: the delete stopped half-way), holds another place (its registration's insert
 * here was written but reported lost), or was never stored by a registration long gone.
 */
export function placeLeftBehind(
  k: number,
  place: Pick<EndpointPlace, 'at'>,
  endpoint: PlaceHolder | null,
  now: Date,
): boolean {
  if (endpoint) return endpoint.deleted || endpoint.place !== k;
  return now.getTime() - place.at.getTime() >= PLACE_PENDING_MS;
}

/**
 * Which places an owner's new endpoint may try: the first `count`, skipping those its live
 * endpoints hold (under a busy database every failed insert waits for the write lock like
 * one that succeeds). `count` is the most for which the endpoints registered before places
 * existed (which hold none), those holding a place at `count` or above (registered under a
 * higher cap) and `count` more stay within the cap: however many registrations run at once,
 * each takes a place below `count` or none.
 */
export function placesOf(
  cap: number,
  endpoints: readonly { place?: number }[],
): { count: number; held: ReadonlySet<number> } {
  const held = new Set<number>();
  let unplaced = 0;
  for (const e of endpoints) {
    if (e.place === undefined) unplaced++;
    else held.add(e.place);
  }
  let count = Math.max(0, cap - unplaced);
  const heldFrom = (k: number) => [...held].filter((place) => place >= k).length;
  while (count > 0 && unplaced + count + heldFrom(count) > cap) count--;
  return { count, held };
}

/** What taking a place reads and writes. */
export interface PlaceStore {
  /** Inserts the place; false when it is taken. */
  claimPlace(place: EndpointPlace): Promise<boolean>;
  place(id: string): Promise<EndpointPlace | null>;
  /** Deletes the place if `webhookId` still holds it. */
  releasePlace(id: string, webhookId: string): Promise<void>;
  endpoint(webhookId: string): Promise<PlaceHolder | null>;
}

/**
 * The number of the first place of `owner`'s that no live endpoint holds and that its insert
 * gives `webhookId` (a registration under way may hold one no list shows yet); else the first
 * of those left behind (`placeLeftBehind`), given back and taken again; undefined when every
 * one is held.
 */
export async function takePlace(
  store: PlaceStore,
  owner: string,
  places: { count: number; held: ReadonlySet<number> },
  webhookId: string,
  now: Date,
): Promise<number | undefined> {
  const claim = (k: number) => store.claimPlace({ _id: placeId(owner, k), webhookId, at: now });
  const taken: number[] = [];
  for (let k = 0; k < places.count; k++) {
    if (places.held.has(k)) continue;
    if (await claim(k)) return k;
    taken.push(k);
  }
  for (const k of taken) {
    const held = await store.place(placeId(owner, k));
    if (held) {
      if (!placeLeftBehind(k, held, await store.endpoint(held.webhookId), now)) continue;
      await store.releasePlace(held._id, held.webhookId);
    }
    // Freed since, or left behind: whoever else found it so races for it too, the insert decides.
    if (await claim(k)) return k;
  }
  return undefined;
}
