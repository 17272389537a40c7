import type { RouteType } from '../../libs/contracts/geo';

/** What route classification needs to know about one end of a trip. */
export interface RoutePlace {
  /** ISO 3166-1 alpha-2. */
  countryCode: string;
  /** First-level division (state, FCT, county...) within the country. */
  stateCode?: string;
  /** Group of states; only meaningful in the countries of ZONED_COUNTRIES. */
  regionalZone?: string;
  continentCode: string;
}

/**
 * Countries whose states are grouped into regional zones (Nigeria: the six geopolitical
 * zones). Everywhere else a country is a single zone, so two of its states are INTER_STATE.
 */
export const ZONED_COUNTRIES: ReadonlySet<string> = new Set(['NG']);

/** Codes and zone names come from several data sets: compare them trimmed and case-blind. */
function normalize(value: string | undefined): string | undefined {
  const trimmed = value?.trim().replace(/\s+/g, ' ').toUpperCase();
  return trimmed ? trimmed : undefined;
}

/**
 * True only when both values are known and equal: an unknown value never matches, not
 * even another unknown one, so missing data can widen a route type but never narrow it.
 */
function sameKnown(a: string | undefined, b: string | undefined): boolean {
  const x = normalize(a);
  return x !== undefined && x === normalize(b);
}

/**
 * Classifies a trip. Every comparison is a symmetric equality, so the result does not
 * depend on which end is the origin.
 *
 * A missing state on either side counts as a different state. That includes both sides
 * missing (two country-level places): calling that INTER_CITY would claim both ends share
 * a state when they may be a thousand kilometres apart, and would price the trip at the
 * cheapest tier. Within a zoned country a missing zone likewise counts as another zone.
 */
export function classifyRoute(origin: RoutePlace, destination: RoutePlace): RouteType {
  if (!sameKnown(origin.countryCode, destination.countryCode)) {
    return sameKnown(origin.continentCode, destination.continentCode)
      ? 'INTER_COUNTRY'
      : 'INTER_CONTINENT';
  }
  if (sameKnown(origin.stateCode, destination.stateCode)) return 'INTER_CITY';

  const country = normalize(origin.countryCode) ?? '';
  // Outside zoned countries the zone is the country itself, already known to be shared;
  // a regionalZone sent for such a country is ignored.
  if (!ZONED_COUNTRIES.has(country)) return 'INTER_STATE';
  return sameKnown(origin.regionalZone, destination.regionalZone) ? 'INTER_STATE' : 'INTER_REGION';
}
