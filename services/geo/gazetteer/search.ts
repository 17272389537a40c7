import { gazetteer } from './load';
import { foldName } from '../../../libs/text';
import type { City, Country, State } from './types';

/** Results when the caller gives no limit. */
export const DEFAULT_SEARCH_LIMIT = 20;

/**
 * Caps of lists. Countries and cities: the specification's 50, with a search or without.
 * States: not specified; a search answers at most 100, and a list without one every state of
 * one country (Nigeria's 37 by default, Slovenia's 212 at most) — see docs/geo-data.md.
 */
export const LIST_LIMITS = { countries: 50, states: 100, cities: 50 } as const;

export interface SearchOptions {
  /** Only places in this country (ISO alpha-2). */
  countryCode?: string;
}

/**
 * Countries matching a name, alias or ISO code: exact first, then by prefix, then by a later
 * word, then within one or two typos; most important first within each. An empty query lists.
 */
export function searchCountries(query: string, limit = DEFAULT_SEARCH_LIMIT): Country[] {
  const g = gazetteer();
  const q = foldName(query);
  if (!q) return listCountries(limit);
  return g.countryIndex.search(q, count(limit)).map((i) => g.countries[i]);
}

/** States by name or alias ("FCT", "Nassarawa", "Lagos State"), ranked as for countries. */
export function searchStates(
  query: string,
  limit = DEFAULT_SEARCH_LIMIT,
  options: SearchOptions = {},
): State[] {
  const g = gazetteer();
  const q = foldName(query);
  if (!q) return listStates(limit, options);
  const inCountry = options.countryCode;
  const accept = inCountry ? (i: number) => g.states[i].countryCode === inCountry : undefined;
  return g.stateIndex.search(q, count(limit), accept).map((i) => g.states[i]);
}

/** Cities by name, ranked as for countries ("lagos" → Lagos, Nigeria before Lagos, Portugal). */
export function searchCities(
  query: string,
  limit = DEFAULT_SEARCH_LIMIT,
  options: SearchOptions = {},
): City[] {
  const g = gazetteer();
  const q = foldName(query);
  if (!q) return listCities(limit, options);
  const country = options.countryCode ? g.countryByCode.get(options.countryCode) : undefined;
  if (options.countryCode && country === undefined) return [];
  const accept =
    country === undefined ? undefined : (i: number) => g.cities.countryIndexOf(i) === country;
  // An LGA's name finds its most important place first ("Ojo", "Kosofe").
  const lgas = g.lgaIndex.exact(q).filter((i) => !accept || accept(i));
  const named = g.cityIndex.search(q, count(limit), accept).filter((i) => !lgas.includes(i));
  return [...lgas, ...named].slice(0, count(limit)).map((i) => g.cities.city(i));
}

/** The most important countries: Nigeria, then the rest by name. */
export function listCountries(limit = DEFAULT_SEARCH_LIMIT): Country[] {
  return gazetteer().countries.slice(0, count(limit));
}

/** The most important states: Nigeria's 37 by name, then the rest by country and name. */
export function listStates(limit = DEFAULT_SEARCH_LIMIT, options: SearchOptions = {}): State[] {
  const states = gazetteer().states;
  const inCountry = options.countryCode;
  return (inCountry ? states.filter((s) => s.countryCode === inCountry) : states).slice(
    0,
    count(limit),
  );
}

/** The most important cities (importance.ts): Nigeria's largest first. */
export function listCities(limit = DEFAULT_SEARCH_LIMIT, options: SearchOptions = {}): City[] {
  const g = gazetteer();
  const wanted = count(limit);
  const country = options.countryCode ? g.countryByCode.get(options.countryCode) : undefined;
  if (options.countryCode && country === undefined) return [];
  const result: City[] = [];
  for (let i = 0; i < g.cities.size && result.length < wanted; i++) {
    if (country === undefined || g.cities.countryIndexOf(i) === country) {
      result.push(g.cities.city(i));
    }
  }
  return result;
}

/** The country with this ISO alpha-2 code (any case). */
export function findCountry(countryCode: string): Country | undefined {
  const g = gazetteer();
  const i = g.countryByCode.get(countryCode.toUpperCase());
  return i === undefined ? undefined : g.countries[i];
}

export function findState(admin1Id: string): State | undefined {
  const g = gazetteer();
  const i = g.stateById.get(admin1Id);
  return i === undefined ? undefined : g.states[i];
}

/** The city with this locationId. The first call hashes every city id (under a second). */
export function findCity(locationId: string): City | undefined {
  const g = gazetteer();
  const i = g.cities.indexOf(locationId);
  return i === undefined ? undefined : g.cities.city(i);
}

function count(limit: number): number {
  return Number.isFinite(limit) ? Math.max(0, Math.floor(limit)) : DEFAULT_SEARCH_LIMIT;
}
