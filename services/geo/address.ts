import { cellToLatLng, latLngToCell } from 'h3-js';
import { badRequest, serviceUnavailable } from '../../libs/errors';
import { foldName } from '../../libs/text';
import {
  PRESERVED_NUMBERS,
  PRESERVED_STRINGS,
  type AddressInput,
  type ResolvedAddress,
} from '../../libs/contracts/geo';
import {
  findCity,
  findCountry,
  findState,
  geocodeText,
  nearestCities,
  stateNamed,
  type City,
  type Country,
  type State,
} from './gazetteer';
import type { GeocodedPoint, TextGeocoder } from './external-geocoder';
import { decodePhrase, encodePhrase, readsAsPhrase } from './phrase';
import { assignDefined } from './views';

const PRESERVED_FIELDS = [...PRESERVED_STRINGS, ...PRESERVED_NUMBERS];

export const H3_RESOLUTION = 9;

/**
 * Loads a saved address of the caller's (owned by the order service): null when there is
 * none, `UNREADABLE` while the service that keeps them cannot be reached.
 */
export type SavedAddressLookup = (
  id: string,
) => Promise<ResolvedAddress | null | typeof UNREADABLE>;
export const UNREADABLE = 'unreadable';

/** What a stop's input says of itself, kept over a saved address it names. */
const OWN_FIELDS = ['floor', 'contactName', 'contactPhone', 'contactEmail'] as const;

interface Place {
  lat: number;
  lon: number;
  city?: City;
  state?: State;
  country: Country;
  /**
   * Where the point came from: the place or feature a text or id named (centre: a city's, or
   * what the geocoder found), or the caller (exact: coordinates, a phrase).
   */
  centre: boolean;
}

const unresolvable = (field: string, message: string) =>
  badRequest(`${field}: ${message}`, [{ field, message }]);

/**
 * How far a point may be from the nearest known place that describes it (its state, LGA and
 * so its tariff): farther than any land point of Nigeria is from one (some 76 km, by Lake
 * Chad), far short of the 579 km from 0, 0, where a device without a fix puts its point, to
 * Takoradi, which described it before.
 */
export const MAX_PLACE_DISTANCE_KM = 100;

/** The point described by the nearest known place, if one is within MAX_PLACE_DISTANCE_KM. */
function placeNear(lat: number, lon: number): Place | undefined {
  const [nearest] = nearestCities(lat, lon, 1, MAX_PLACE_DISTANCE_KM);
  const country = nearest ? findCountry(nearest.city.countryCode) : undefined;
  if (!nearest || !country) return undefined;
  const state = nearest.city.admin1Id ? findState(nearest.city.admin1Id) : undefined;
  return { lat, lon, city: nearest.city, state, country, centre: false };
}

/** Places looked through for the nearest of a geocoded point's own country and state. */
const NEAREST_OF_STATE = 50;

/**
 * A geocoded point, in the country and state the geocoder puts it in when it names ones we
 * know, described by the nearest place of those: the nearest place alone can be across a
 * state line (Akute, Ogun, is nearest Ojodu, Lagos) or a border (Seme, Lagos, is nearest
 * Seme-Kpodji, Benin) and would price the trip by the other side's tier, or by none.
 */
function placeOfGeocoded(point: GeocodedPoint): Place | undefined {
  const near = placeNear(point.lat, point.lon);
  // The point of the feature the text named (a street's, a building's), not one the caller
  // gave: two addresses of one street may share it, so it proves no "same place" alone.
  const place = near && { ...near, centre: true };
  if (!place) return undefined;
  const country = (point.countryCode && findCountry(point.countryCode)) || place.country;
  const state = point.state ? stateNamed(country.countryCode, point.state) : undefined;
  const sameCountry = country.countryCode === place.country.countryCode;
  if (sameCountry && (!state || state.admin1Id === place.state?.admin1Id)) return place;
  const city = nearestCities(point.lat, point.lon, NEAREST_OF_STATE, MAX_PLACE_DISTANCE_KM).find(
    (other) =>
      other.city.countryCode === country.countryCode &&
      (!state || other.city.admin1Id === state.admin1Id),
  )?.city;
  const cityState = city?.admin1Id ? findState(city.admin1Id) : undefined;
  return { ...place, country, state: state ?? cityState, city };
}

function placeAt(lat: number, lon: number, field: string): Place {
  const place = placeNear(lat, lon);
  if (place) return place;
  throw unresolvable(
    field,
    `no known place within ${MAX_PLACE_DISTANCE_KM} km of ${lat}, ${lon}; check the coordinates (0, 0 is where a device without a location fix puts them)`,
  );
}

function placeOfCity(city: City): Place | undefined {
  const country = findCountry(city.countryCode);
  if (!country) return undefined;
  const state = city.admin1Id ? findState(city.admin1Id) : undefined;
  return { lat: city.lat, lon: city.lon, city, state, country, centre: true };
}

function placeOfText(query: string, field: string): Place {
  if (readsAsPhrase(query)) {
    const [lat, lon] = cellToLatLng(
      decodeOrThrow(
        query,
        field,
        (reason) =>
          `"${query.trim()}" is written as a three-word phrase, and ${reason}: check its words, or write a place with spaces or commas`,
      ),
    );
    return placeAt(lat, lon, field);
  }
  const found = geocodeText(query);
  if (!found) throw unresolvable(field, `no place found for "${query}"; add a city or state`);
  return { ...found, centre: true };
}

function decodeOrThrow(phrase: string, field: string, said = (reason: string) => reason): string {
  try {
    return decodePhrase(phrase);
  } catch (err) {
    throw unresolvable(field, said((err as Error).message));
  }
}

/** Precedence: coordinates, then mapPlaceId, then phrase, then text. */
function locate(input: Exclude<AddressInput, string>, field: string): Place {
  if (input.lat !== undefined && input.lon !== undefined) {
    // An earlier answer sent back: a point it put at the centre of what a text named is still
    // that, not one the caller chose, or two texts of one town would be "the same place".
    const centre = input.centerLat === input.lat && input.centerLon === input.lon;
    return { ...placeAt(input.lat, input.lon, field), centre };
  }
  if (input.mapPlaceId) {
    // A uuid, read as every other uuid of the API is: in any case.
    const city = findCity(input.mapPlaceId.toLowerCase());
    const place = city && placeOfCity(city);
    if (place) return place;
    if (!input.phrase && !input.address && !input.addressLine1) {
      throw unresolvable(field, `unknown mapPlaceId "${input.mapPlaceId}"`);
    }
  }
  if (input.phrase) {
    // Three words name a cell or nothing: a mistyped phrase is refused with the word it got
    // wrong, not searched for as a place name (one letter off, "orange.garden.sugr" found a
    // city named Orange abroad).
    const [lat, lon] = cellToLatLng(decodeOrThrow(input.phrase, `${field}.phrase`));
    return placeAt(lat, lon, field);
  }
  return placeOfText(String(input.address ?? input.addressLine1), field);
}

/** The stop's own note, or an earlier answer's sent back (a route's, a delivery's stop). */
const stopNote = (input: Exclude<AddressInput, string>) => input.additionalNote ?? input.note;

function describe(place: Place, input: Exclude<AddressInput, string>, line?: string) {
  const h3Index = latLngToCell(place.lat, place.lon, H3_RESOLUTION);
  const { city, state, country } = place;
  // The caller's own fields first, as given.
  const resolved: Partial<ResolvedAddress> = {};
  for (const field of PRESERVED_FIELDS) {
    if (input[field] !== undefined) (resolved as Record<string, unknown>)[field] = input[field];
  }
  return assignDefined<ResolvedAddress>(resolved, {
    addressLine1: line ?? city?.name ?? state?.name ?? country.name,
    floor: input.floor,
    lat: place.lat,
    lon: place.lon,
    centerLat: place.centre ? place.lat : undefined,
    centerLon: place.centre ? place.lon : undefined,
    country: country.name,
    countryCode: country.countryCode,
    countryCodeAlpha3: country.countryCodeAlpha3,
    state: state?.name,
    lgaOrCity: city ? (city.admin2Name ?? city.name) : undefined,
    regionalZone: state?.regionalZone ?? city?.regionalZone,
    continentCode: country.continentCode,
    continentName: country.continentName,
    admin1Id: state?.admin1Id,
    admin1Name: state?.name,
    admin2Id: city?.admin2Id,
    admin2Name: city?.admin2Name,
    // Ids are read in any case, and answered as they are made.
    mapPlaceId: input.mapPlaceId?.toLowerCase(),
    h3Index,
    phrase: encodePhrase(h3Index),
    resolution: H3_RESOLUTION,
    contactName: input.contactName,
    contactPhone: input.contactPhone,
    contactEmail: input.contactEmail,
    note: stopNote(input),
  });
}

/**
 * Resolves an address input by what locates it, any saved address `id` aside (validated by
 * `addressInput()`).
 * `field` names it in errors. Precedence: coordinates, mapPlaceId, phrase, then text.
 */
export function resolvePlace(input: AddressInput, field: string): ResolvedAddress {
  if (typeof input === 'string') {
    return describe(placeOfText(input, field), {}, displayLine(input));
  }
  return describe(locate(input, field), input, displayLine(input));
}

/**
 * The line an address is shown by, however it was located: the caller's `addressLine1` (a
 * pre-resolved object's display line), else the text it was geocoded from (`address` is
 * geocoded first, the spec's alias), never a three-word phrase given as text.
 */
function displayLine(input: AddressInput): string | undefined {
  const line = typeof input === 'string' ? input : (input.addressLine1 ?? input.address);
  return typeof line === 'string' && !readsAsPhrase(line) ? line : undefined;
}

export interface ResolveOptions {
  savedAddress: SavedAddressLookup;
  /** Street-level geocoding for text, tried before the offline gazetteer. */
  geocoder?: TextGeocoder;
}

/** Whether the input names a place besides its saved address `id`. */
function locatesItself(input: Exclude<AddressInput, string>): boolean {
  return ['lat', 'address', 'addressLine1', 'mapPlaceId', 'phrase'].some(
    (k) => input[k] !== undefined && input[k] !== '',
  );
}

/** A stop's contact fields (the contract's Contact group). */
const CONTACT_FIELDS = ['contactName', 'contactPhone', 'contactEmail', 'note'] as const;

/**
 * A saved address as a place: the contract answers contact fields only where they were sent,
 * so those of the delivery it was saved from (someone's name and phone) are not carried on.
 */
function withoutContacts(saved: ResolvedAddress): ResolvedAddress {
  const place = { ...saved };
  for (const field of CONTACT_FIELDS) delete place[field];
  return place;
}

/** The text to geocode when text is all the input has to go on. */
function textOnly(input: AddressInput): string | undefined {
  if (typeof input === 'string') return readsAsPhrase(input) ? undefined : input;
  if (input.lat !== undefined || input.mapPlaceId || input.phrase) return undefined;
  const line = input.address ?? input.addressLine1;
  return typeof line === 'string' && !readsAsPhrase(line) ? line : undefined;
}

/**
 * As `resolvePlace`, but a saved address `id` comes first and skips geocoding, and text goes
 * to the external geocoder first when one is configured.
 */
export async function resolveAddress(
  input: AddressInput,
  field: string,
  options: ResolveOptions,
): Promise<ResolvedAddress> {
  if (typeof input !== 'string' && input.id) {
    const saved = await options.savedAddress(input.id);
    if (saved && saved !== UNREADABLE) {
      const own = Object.fromEntries(
        OWN_FIELDS.flatMap((k) => (input[k] === undefined ? [] : [[k, input[k]]])),
      );
      const note = stopNote(input) === undefined ? {} : { note: stopNote(input) };
      return { ...withoutContacts(saved), ...own, ...note };
    }
    // Not one (any more): the rest of the input, when it locates the stop, is geocoded.
    if (!locatesItself(input)) {
      if (saved === UNREADABLE) {
        throw serviceUnavailable(
          'Saved addresses cannot be read right now; retry in a few seconds, or send the address itself',
        );
      }
      throw unresolvable(`${field}.id`, `no saved address ${input.id}`);
    }
  }
  const text = textOnly(input);
  const point = text && options.geocoder ? await options.geocoder.geocode(text) : null;
  // A point far from every known place is the geocoder's mistake, not the caller's (who sent
  // no coordinates): the text is resolved offline instead.
  const place = text && point ? placeOfGeocoded(point) : undefined;
  if (place) return describe(place, typeof input === 'string' ? {} : input, displayLine(input));
  return resolvePlace(input, field);
}

/**
 * Two addresses are the same place when both are points the caller gave (coordinates, a
 * phrase, a saved address) in the same res-9 cell (about 0.1 km²), or when both stand at the
 * point a text or id named (a place's centre, or what the geocoder found for a street) and
 * were written alike (folded: "Ikeja, Lagos" = "ikeja,  LAGOS"). Two texts that differ and
 * resolve into one cell ("12 Allen Avenue, Ikeja" and "Computer Village, Ikeja" at Ikeja's
 * centre, or two house numbers the geocoder puts on one street's point) are two places: a
 * trip of 0 km, priced at the tariff's included distance (decision 13).
 */
export function samePlace(a: ResolvedAddress, b: ResolvedAddress): boolean {
  if (a.h3Index !== b.h3Index) return false;
  const centre = (x: ResolvedAddress) => x.centerLat !== undefined;
  if (!centre(a) && !centre(b)) return true;
  if (!centre(a) || !centre(b)) return false;
  return foldName(String(a.addressLine1 ?? '')) === foldName(String(b.addressLine1 ?? ''));
}

export const SAME_PLACE_MESSAGE = 'Origin and destination cannot be the same';
