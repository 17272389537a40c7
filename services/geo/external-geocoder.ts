import { LookupCache } from '../../libs/lookup-cache';
import { isFields } from '../../libs/fields';
import { quoted } from '../../libs/outbound-fetch';
import { isGeoPoint, type GeoPoint } from './distance';
import { createUpstream, unhealthy, type Outcome, type UpstreamOptions } from './upstream';

/**
 * A place the geocoder found: its point, and the country and state its boundaries put it in
 * when it names them (`address.country_code`, `address.state`): a point near a border is
 * nearer some towns of the other side.
 */
export interface GeocodedPoint extends GeoPoint {
  state?: string;
  /** ISO 3166-1 alpha-2, as the server wrote it (Nominatim: lower case). */
  countryCode?: string;
}

/** Street-level text geocoding from an external server; null when it has no answer. */
export interface TextGeocoder {
  geocode(text: string): Promise<GeocodedPoint | null>;
}

/** An hour: places do not move, and a quote and the order after it ask for the same text. */
export const DEFAULT_GEOCODER_CACHE_MS = 3_600_000;
/** Texts are at most 300 characters (the contract), so a full cache holds a few MB at most. */
export const DEFAULT_GEOCODER_CACHE_ENTRIES = 5_000;

export interface NominatimOptions extends UpstreamOptions {
  /** Server root: `https://nominatim.openstreetmap.org` or a self-hosted one. */
  baseUrl: string;
  /** Nominatim's usage policy asks every client to name itself. */
  userAgent: string;
  /** Bias to these ISO alpha-2 countries, e.g. `ng`. */
  countryCodes?: string;
  /** How long an answer (a place, or "no such place") is reused for the same text; 0: never. */
  cacheMs?: number;
  /** Places kept, and as many "no such place" answers apart from them. */
  cacheEntries?: number;
}

/**
 * Nominatim's `place_rank` of the coarsest place taken as an address's point: below it lie
 * countries (4), states (8) and their like, whose middle is no place to fetch a parcel from.
 */
const MIN_PLACE_RANK = 10;

/**
 * A coordinate as Nominatim writes it (a decimal in a string), or a number; NaN for anything
 * else, which `Number` would read as 0 (`null`, `""`, `[]`): the middle of the Gulf of Guinea.
 */
function coordinate(value: unknown): number {
  if (typeof value === 'number') return value;
  return typeof value === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(value) ? Number(value) : NaN;
}

/** A found place, or null when the server found none: both real answers. */
function readPlaces(status: number, body: string): Outcome<GeocodedPoint | null> {
  if (status < 200 || status > 299) return unhealthy(`HTTP ${status}${quoted(body)}`);
  let results: unknown;
  try {
    results = JSON.parse(body);
  } catch {
    return unhealthy(`answer is not JSON${quoted(body)}`);
  }
  if (!Array.isArray(results)) return unhealthy('answer is not a list of places');
  const first: unknown = results[0];
  if (first === undefined) return { ok: true, value: null }; // no match: not a failure
  const point = isFields(first) ? { lat: coordinate(first.lat), lon: coordinate(first.lon) } : null;
  if (!point || !isGeoPoint(point)) return unhealthy('first place has no valid lat/lon');
  // A state's or a country's middle is no street's place (the text named only the area): the
  // offline gazetteer reads such a text as it reads it with the geocoder away.
  if (
    isFields(first) &&
    typeof first.place_rank === 'number' &&
    first.place_rank < MIN_PLACE_RANK
  ) {
    return { ok: true, value: null };
  }
  const address = isFields(first) && isFields(first.address) ? first.address : undefined;
  const state = typeof address?.state === 'string' ? address.state : undefined;
  const code = address?.country_code;
  const countryCode = typeof code === 'string' && /^[A-Za-z]{2}$/.test(code) ? code : undefined;
  return {
    ok: true,
    value: { ...point, ...(state ? { state } : {}), ...(countryCode ? { countryCode } : {}) },
  };
}

/**
 * Nominatim folds case and blanks itself, so texts that differ only in those are one
 * question: asked, and cached, once.
 */
const normalise = (text: string): string => text.trim().replace(/\s+/g, ' ').toLowerCase();

/** Thrown by a lookup that got no answer, so that the cache keeps nothing for it. */
class NoAnswer extends Error {}

/**
 * A Nominatim-compatible `/search` client. It never throws after creation: any failure
 * (timeout, HTTP error, odd answer, the circuit open) is reported and answered with null, so
 * the offline gazetteer takes over. Answers are cached per normalised text; failures are not.
 */
export function createNominatimGeocoder(options: NominatimOptions): TextGeocoder {
  const upstream = createUpstream('Geocoder', options);
  const headers = { accept: 'application/json', 'user-agent': options.userAgent };
  const entries = options.cacheEntries ?? DEFAULT_GEOCODER_CACHE_ENTRIES;
  const cache = new LookupCache<GeocodedPoint>({
    cacheMs: options.cacheMs ?? DEFAULT_GEOCODER_CACHE_MS,
    maxEntries: entries,
    maxNegativeEntries: entries,
    now: options.now,
    async lookup(text) {
      const params = new URLSearchParams({
        q: text,
        format: 'jsonv2',
        limit: '1',
        // The country and state the place lies in, by the server's boundaries (`address`).
        addressdetails: '1',
      });
      if (options.countryCodes) params.set('countrycodes', options.countryCodes);
      const outcome = await upstream.get(`/search?${params}`, headers, readPlaces);
      if (!outcome.ok) throw new NoAnswer(outcome.reason);
      return outcome.value;
    },
  });

  return {
    async geocode(text) {
      try {
        return await cache.get(normalise(text));
      } catch (err) {
        if (err instanceof NoAnswer) return null; // already reported by the upstream
        throw err;
      }
    },
  };
}
