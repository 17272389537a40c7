import type { CountryRecord } from './countries';
import type { Point } from './geometry';
import { admin1Uuid } from './ids';
import { NIGERIA, NIGERIAN_STATES, nigerianStateNames } from './nigeria';
import { compareText, foldName } from '../../../libs/text';
import type { State } from './types';

export interface StateRecord {
  state: State;
  /** Display name first, then aliases ("Lagos State", "FCT"). */
  names: string[];
}

/**
 * First-level divisions that have at least one city, Nigeria's 37 first (by name), then the
 * rest by country and name. Divisions without any city have no point to route to, and are
 * mostly GeoNames codes retired by boundary changes, so they are left out.
 */
export function buildStates(
  admin1Names: ReadonlyMap<string, string>,
  points: ReadonlyMap<string, Point>,
  countries: readonly CountryRecord[],
): StateRecord[] {
  const countryByCode = new Map(countries.map((r) => [r.country.countryCode, r.country]));
  const records: StateRecord[] = [];
  for (const ng of NIGERIAN_STATES) {
    records.push({
      state: {
        admin1Id: admin1Uuid(ng.code),
        code: ng.code,
        name: ng.name,
        countryCode: NIGERIA,
        regionalZone: ng.zone,
        lat: ng.lat,
        lon: ng.lon,
        capital: ng.capital,
      },
      names: [...nigerianStateNames(ng), admin1Names.get(ng.code) ?? ng.name],
    });
  }
  for (const [code, point] of points) {
    const countryCode = code.slice(0, code.indexOf('.'));
    const country = countryByCode.get(countryCode);
    const name = admin1Names.get(code);
    if (countryCode === NIGERIA || !country || !name) continue;
    records.push({
      state: {
        admin1Id: admin1Uuid(code),
        code,
        name,
        countryCode,
        regionalZone: country.name,
        ...point,
      },
      names: [name],
    });
  }
  const countryRank = new Map(countries.map((r, i) => [r.country.countryCode, i]));
  return records
    .map((r) => ({ ...r, names: [...new Set(r.names)] }))
    .sort(
      (a, b) =>
        (countryRank.get(a.state.countryCode) ?? 0) - (countryRank.get(b.state.countryCode) ?? 0) ||
        compareText(foldName(a.state.name), foldName(b.state.name)) ||
        compareText(a.state.code, b.state.code),
    );
}
