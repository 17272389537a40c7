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
 * registration that died half-way: far longer than a registration takes.
 */
export const PLACE_PENDING_MS = 5 * 60_000;

/**
 * Whether a taken place may be taken again: its endpoint was deleted (and the place not given
 * back: the delete stopped half-way), or never stored by a registration long gone.
 */
export function placeLeftBehind(
  place: Pick<EndpointPlace, 'at'>,
  endpoint: { deleted: boolean } | null,
  now: Date,
): boolean {
  if (endpoint) return endpoint.deleted;
  return now.getTime() - place.at.getTime() >= PLACE_PENDING_MS;
}

/**
 * How many places an owner's new endpoints may take: the cap less the endpoints registered
 * before places existed, which hold none.
 */
export const placesFor = (cap: number, endpoints: readonly { place?: number }[]) =>
  cap - endpoints.filter((e) => e.place === undefined).length;

/** What taking a place reads and writes. */
export interface PlaceStore {
  /** Inserts the place; false when it is taken. */
  claimPlace(place: EndpointPlace): Promise<boolean>;
  place(id: string): Promise<EndpointPlace | null>;
  /** Deletes the place if `webhookId` still holds it. */
  releasePlace(id: string, webhookId: string): Promise<void>;
  endpoint(webhookId: string): Promise<{ deleted: boolean } | null>;
}

/**
 * The number of the first free place of `owner`'s `places`, now held by `webhookId`; else
 * the first left behind (`placeLeftBehind`), given back and taken again; undefined when every
 * one is held.
 */
export async function takePlace(
  store: PlaceStore,
  owner: string,
  places: number,
  webhookId: string,
  now: Date,
): Promise<number | undefined> {
  const claim = (k: number) => store.claimPlace({ _id: placeId(owner, k), webhookId, at: now });
  for (let k = 0; k < places; k++) if (await claim(k)) return k;
  for (let k = 0; k < places; k++) {
    const held = await store.place(placeId(owner, k));
    if (held) {
      if (!placeLeftBehind(held, await store.endpoint(held.webhookId), now)) continue;
      await store.releasePlace(held._id, held.webhookId);
    }
    // Freed since, or left behind: whoever else found it so races for it too, the insert decides.
    if (await claim(k)) return k;
  }
  return undefined;
}
