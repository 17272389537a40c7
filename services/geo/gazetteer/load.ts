import { CityTable } from './city-table';
import { buildCountries } from './countries';
import { representativePoints } from './geometry';
import { rankCities } from './importance';
import { buildPointIndex, type PointIndex } from './kd';
import { NameIndex } from './name-index';
import { NIGERIA } from './nigeria';
import { foldName } from '../../../libs/text';
import { readCities, readDivisionNames } from './sources';
import { buildStates } from './states';
import type { Country, State } from './types';

/** Everything the gazetteer knows, with its indexes. Immutable once built. */
export interface Gazetteer {
  /** Most important first: Nigeria, then by name. */
  countries: readonly Country[];
  /** Every name each country answers to (display name first), by country index. */
  countryNames: readonly (readonly string[])[];
  /** Most important first: Nigeria's 37 by name, then by country and name. */
  states: readonly State[];
  /** Every name each state answers to (display name first), by state index. */
  stateNames: readonly (readonly string[])[];
  /** Most important first (importance.ts). */
  cities: CityTable;
  countryIndex: NameIndex;
  stateIndex: NameIndex;
  cityIndex: NameIndex;
  /** Nigeria's LGA names, each to the LGA's most important place; exact lookups only. */
  lgaIndex: NameIndex;
  /** kd-tree over the cities; point ids are city indices. */
  cityPoints: PointIndex;
  countryByCode: ReadonlyMap<string, number>;
  stateById: ReadonlyMap<string, number>;
}

/** Reads the packaged data and builds every index: a second or two; see gazetteer(). */
export function buildGazetteer(): Gazetteer {
  const divisions = readDivisionNames();
  const source = readCities(divisions);
  // Points come from GeoNames rows only: the curated districts are approximate.
  const { lat, lon, curatedFrom } = source;
  const countryPoints = representativePoints(lat, lon, source.countryCode, curatedFrom);
  const statePoints = representativePoints(lat, lon, source.admin1, curatedFrom);

  const countryRecords = buildCountries(countryPoints);
  const stateRecords = buildStates(divisions.admin1, statePoints, countryRecords);
  const countries = countryRecords.map((r) => r.country);
  const states = stateRecords.map((r) => r.state);
  const ranked = rankCities(source, countryRecords, divisions.admin1);
  const cities = new CityTable(source, ranked, countries, states, divisions.admin2);

  return {
    countries,
    countryNames: countryRecords.map((r) => r.names),
    states,
    stateNames: stateRecords.map((r) => r.names),
    cities,
    countryIndex: NameIndex.ofNames(
      countryRecords.map((r) => [...r.names, r.country.countryCode, r.country.countryCodeAlpha3]),
    ),
    stateIndex: NameIndex.ofNames(stateRecords.map((r) => r.names)),
    cityIndex: new NameIndex(
      Array.from({ length: cities.size }, (_, i) => cities.foldedNameOf(i)),
      Array.from({ length: cities.size }, (_, i) => i),
    ),
    lgaIndex: lgaIndex(cities, countries),
    cityPoints: buildPointIndex(cities.lat, cities.lon),
    countryByCode: new Map(countries.map((c, i) => [c.countryCode, i])),
    stateById: new Map(states.map((s, i) => [s.admin1Id, i])),
  };
}

/**
 * Nigeria's LGA names as names of each LGA's most important place ("Ojo", "Kosofe", "Obio
 * Akpor"): addresses name LGAs as often as towns. An LGA named like a Nigerian place adds
 * nothing. Some 300 keys; other countries' second-level names (counties, districts) are
 * left out. Kept apart from the city names so that a prefix or typo search lists places by
 * their own names only.
 */
function lgaIndex(cities: CityTable, countries: readonly Country[]): NameIndex {
  const lgas = new Map<string, number>();
  const named = new Set<string>();
  for (let i = 0; i < cities.size; i++) {
    if (countries[cities.countryIndexOf(i)].countryCode !== NIGERIA) continue;
    named.add(cities.foldedNameOf(i));
    const lga = cities.lgaNameOf(i);
    // Cities are in importance order: the first of an LGA is its most important.
    if (lga !== undefined && !lgas.has(lga)) lgas.set(lga, i);
  }
  const keys: string[] = [];
  const items: number[] = [];
  for (const [lga, item] of lgas) {
    const key = foldName(lga);
    if (key && !named.has(key)) {
      keys.push(key);
      items.push(item);
    }
  }
  return new NameIndex(keys, items);
}

let loaded: Gazetteer | undefined;

/** The process-wide gazetteer, built on first use. */
export function gazetteer(): Gazetteer {
  loaded ??= buildGazetteer();
  return loaded;
}

/**
 * Builds the gazetteer and the city-id lookup now (about two seconds together), so that no
 * request pays for them: for a service's start hook.
 */
export function warmGazetteer(): void {
  gazetteer().cities.indexOf('');
}
