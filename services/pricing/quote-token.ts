import { createHmac, timingSafeEqual } from 'node:crypto';
import { routeOf, type Route, type Trip } from '../../libs/contracts/geo';
import { haversineKm, type GeoPoint } from '../../libs/geodesy';
import { QUOTE_ID } from '../../libs/contracts/pricing';

/**
 * A Mode A quote's id (decision 142): what the quote priced, signed, so that a request that
 * names it is priced on the same road distance and is never charged another total. Quotes are
 * not stored (decision 25): the id carries what the request needs and the HMAC under
 * `QUOTE_SECRET` makes it ours. Its text is opaque to integrators.
 */
export interface QuoteClaims {
  /** The account the quote was made for: only its requests may use it. */
  userId: string;
  /** Epoch milliseconds after which the quote holds nothing. */
  expiresAt: number;
  /** The fleet type priced: the ETA of the held distance is at its speed. */
  fleetTypeId: string;
  origin: GeoPoint;
  destination: GeoPoint;
  distance: Route['distance'];
  totalKobo: number;
}

const VERSION = QUOTE_ID.version;

function digest(secret: string, signed: string): Buffer {
  return createHmac('sha256', secret).update(signed).digest();
}

export function signQuote(secret: string, claims: QuoteClaims): string {
  const body = Buffer.from(
    JSON.stringify([
      claims.userId,
      claims.expiresAt,
      claims.fleetTypeId,
      [claims.origin.lat, claims.origin.lon],
      [claims.destination.lat, claims.destination.lon],
      [claims.distance.distanceKm, claims.distance.etaSeconds],
      claims.totalKobo,
    ]),
  ).toString('base64url');
  const signed = `${VERSION}.${body}`;
  return `${signed}.${digest(secret, signed).toString('base64url')}`;
}

export type QuoteReading =
  | { ok: true; claims: QuoteClaims }
  | { ok: false; reason: 'unsigned' | 'foreign' | 'expired' | 'outlived'; expiresAt?: number };

/**
 * How far past the quote lifetime of the moment a quote's expiry may lie: the clocks of the
 * replica that signed it and of the one reading it may differ by this much.
 */
export const QUOTE_CLOCK_SLACK_MS = 60_000;

/**
 * What a distance's rounding may take below the straight line: geo rounds to 0.001 km, half
 * up (0.0005 km at most), and computes the line as this does; twice that, to spare floats.
 */
const DISTANCE_ROUNDING_KM = 0.001;

const isNumber = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value);
const isPair = (value: unknown): value is [number, number] =>
  Array.isArray(value) && value.length === 2 && value.every(isNumber);

/** The claims of a signed body; undefined when it is not the shape `signQuote` writes. */
function claimsOf(body: string): QuoteClaims | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== 7) return undefined;
  const [userId, expiresAt, fleetTypeId, origin, destination, distance, totalKobo] = parsed;
  if (typeof userId !== 'string' || typeof fleetTypeId !== 'string') return undefined;
  if (!isNumber(expiresAt) || !isNumber(totalKobo)) return undefined;
  if (!isPair(origin) || !isPair(destination) || !isPair(distance)) return undefined;
  return {
    userId,
    expiresAt,
    fleetTypeId,
    origin: { lat: origin[0], lon: origin[1] },
    destination: { lat: destination[0], lon: destination[1] },
    distance: { distanceKm: distance[0], etaSeconds: distance[1] },
    totalKobo,
  };
}

/**
 * A quote id read for `userId` at `now`: its claims, or why it holds nothing. The HMAC is
 * compared in constant time before anything of the body is read.
 */
export function readQuote(
  secret: string,
  quoteId: string,
  /** `ttlMs`: how long a quote is held now (QUOTE_TTL_MS). */
  reader: { userId: string; now: number; ttlMs: number },
): QuoteReading {
  if (!QUOTE_ID.pattern.test(quoteId)) return { ok: false, reason: 'unsigned' };
  const cut = quoteId.lastIndexOf('.');
  // The digest's text, not its bytes: a last character's unused bits cannot make another id.
  const given = Buffer.from(quoteId.slice(cut + 1));
  const expected = Buffer.from(digest(secret, quoteId.slice(0, cut)).toString('base64url'));
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return { ok: false, reason: 'unsigned' };
  }
  const claims = claimsOf(quoteId.slice(VERSION.length + 1, cut));
  if (!claims) return { ok: false, reason: 'unsigned' };
  if (claims.userId !== reader.userId) return { ok: false, reason: 'foreign' };
  if (reader.now >= claims.expiresAt) {
    return { ok: false, reason: 'expired', expiresAt: claims.expiresAt };
  }
  // Held for longer than quotes are now: signed before QUOTE_TTL_MS was lowered, or forged
  // under a key that leaked. Not held for days.
  if (claims.expiresAt > reader.now + reader.ttlMs + QUOTE_CLOCK_SLACK_MS) {
    return { ok: false, reason: 'outlived', expiresAt: claims.expiresAt };
  }
  return { ok: true, claims };
}

const samePoint = (a: GeoPoint, b: GeoPoint) => a.lat === b.lat && a.lon === b.lon;

/**
 * The route a quoted request is priced on: the quote's distance and ETA when both ends
 * resolved to the quote's points for the same fleet type and either the quote's distance is
 * the longer, or the road is not measured now (routing is down and the straight-line estimate
 * stands in; not known to be unmeasured, the longer rule alone holds). So a routing server that answered the quote but not the request does not
 * change the price, whichever way the estimate errs. Never a shorter distance than a road
 * measured now: a quote made on the estimate while routing was down does not lower the price
 * of a request once the road is known (its total then differs, and the request is refused).
 * Other ends are another trip, priced as it is.
 */
export function heldRoute(trip: Trip, fleetTypeId: string, claims: QuoteClaims): Route {
  const route = routeOf(trip);
  const same =
    fleetTypeId === claims.fleetTypeId &&
    samePoint(route.origin, claims.origin) &&
    samePoint(route.destination, claims.destination);
  const held =
    trip.roadMeasured === false || claims.distance.distanceKm > route.distance.distanceKm;
  if (!same || !held) return route;
  // No trip is shorter than the straight line (geo prices the longer of road and line): a quote
  // that says otherwise was not made by geo's answer, whatever signed it. Its points are the
  // request's own here, which geo resolved: coordinates in range.
  const possible =
    claims.distance.distanceKm >=
    haversineKm(claims.origin, claims.destination) - DISTANCE_ROUNDING_KM;
  return possible ? { ...route, distance: { ...claims.distance } } : route;
}
