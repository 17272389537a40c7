import type { FleetTypeDetail } from '../../libs/contracts/geo';
import { formatKg } from '../../libs/money';
import type { City, Country, State } from './gazetteer';
import type { FleetTypeRecord } from './store';

/** Items of `GET /api/countries|states|cities`, in the spec's shapes; absent fields omitted. */
interface CountryItem {
  value: string;
  name: string;
  type: 'INTER_COUNTRY';
  country: string;
  countryCode: string;
  countryCodeAlpha3: string;
  continentCode: string;
  continentName: string;
  lat?: number;
  lon?: number;
}

interface StateItem {
  value: string;
  name: string;
  type: 'INTER_STATE';
  state: string;
  country: string;
  countryCode: string;
  continentCode: string;
  continentName: string;
  regionalZone: string;
  admin1Id: string;
  admin1Name: string;
  lat: number;
  lon: number;
}

interface CityItem {
  value: string;
  locationId: string;
  /** Not in the spec's list; without it a city item would not say which city it is. */
  name: string;
  country: string;
  countryCode: string;
  countryCodeAlpha3: string;
  lat: number;
  lon: number;
  lgaOrCity: string;
  state?: string;
  regionalZone: string;
  adminUnitName?: string;
}

/**
 * Copies the defined properties of `source`, an object literal, onto `target` in their order:
 * the API omits what it does not know, never sends null. A loop, not `Object.entries` and
 * `Object.fromEntries`: those made each address of a quote cost 2 µs and a slow object to
 * send (docs/performance.md, session 18).
 */
export function assignDefined<T extends object>(target: Partial<T>, source: T): T {
  const into = target as Record<string, unknown>;
  // for...in also walks inherited enumerable keys; an object literal has none.
  for (const key in source) {
    const value = source[key];
    if (value !== undefined) into[key] = value;
  }
  return target as T;
}

/** `value` without its undefined properties. */
export const compact = <T extends object>(value: T): T => assignDefined({}, value);

export function toCountryItem(country: Country): CountryItem {
  return compact({
    value: country.countryCode,
    name: country.name,
    type: 'INTER_COUNTRY' as const,
    country: country.name,
    countryCode: country.countryCode,
    countryCodeAlpha3: country.countryCodeAlpha3,
    continentCode: country.continentCode,
    continentName: country.continentName,
    lat: country.lat,
    lon: country.lon,
  });
}

export function toStateItem(state: State, country: Country): StateItem {
  return {
    value: state.admin1Id,
    name: state.name,
    type: 'INTER_STATE',
    state: state.name,
    country: country.name,
    countryCode: country.countryCode,
    continentCode: country.continentCode,
    continentName: country.continentName,
    regionalZone: state.regionalZone,
    admin1Id: state.admin1Id,
    admin1Name: state.name,
    lat: state.lat,
    lon: state.lon,
  };
}

/** A city's `value` is its `locationId`: the offline gazetteer has no map-provider place ids. */
export function toCityItem(city: City, country: Country): CityItem {
  return compact({
    value: city.locationId,
    locationId: city.locationId,
    name: city.name,
    country: country.name,
    countryCode: country.countryCode,
    countryCodeAlpha3: country.countryCodeAlpha3,
    lat: city.lat,
    lon: city.lon,
    lgaOrCity: city.admin2Name ?? city.name,
    state: city.admin1Name,
    regionalZone: city.regionalZone,
    adminUnitName: city.admin2Name ?? city.admin1Name,
  });
}

/** The public item of `GET /api/fleet-types`. */
interface FleetTypeItem {
  id: string;
  name: string;
  icon: string | null;
  description: string | null;
}

export function toFleetTypeItem(record: FleetTypeRecord): FleetTypeItem {
  return {
    id: record._id,
    name: record.name,
    icon: record.icon ?? null,
    description: record.description ?? null,
  };
}

export function toFleetTypeDetail(record: FleetTypeRecord): FleetTypeDetail {
  return {
    ...toFleetTypeItem(record),
    code: record.code,
    maxWeight: formatKg(record.maxWeightGrams),
    averageSpeedKmh: record.averageSpeedKmh,
    active: record.active,
    createdAt: record.createdAt.toISOString(),
    updatedAt: record.updatedAt.toISOString(),
  };
}
