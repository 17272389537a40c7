import { continents, countries as countryFacts } from 'countries-list';
import * as isoCountries from 'i18n-iso-countries';
import english from 'i18n-iso-countries/langs/en.json';
import type { Point } from './geometry';
import { NIGERIA } from './nigeria';
import { compareText, foldName } from '../../../libs/text';
import type { Country } from './types';

isoCountries.registerLocale(english);

export interface CountryRecord {
  country: Country;
  /** Display name first, then every other English or native name it is known by. */
  names: string[];
  /** The ISO name of its capital, as countries-list spells it. */
  capital: string;
}

/**
 * The ISO 3166-1 countries (plus Kosovo, XK), Nigeria first and the rest by name. Display
 * names come from countries-list ("Russia", "Ivory Coast"), which reads better in a picker
 * than the ISO short names ("Russian Federation") that i18n-iso-countries adds as aliases.
 */
export function buildCountries(points: ReadonlyMap<string, Point>): CountryRecord[] {
  const records: CountryRecord[] = [];
  for (const code of Object.keys(isoCountries.getAlpha2Codes())) {
    const facts = countryFacts[code as keyof typeof countryFacts];
    const alpha3 = isoCountries.alpha2ToAlpha3(code);
    if (!facts || !alpha3) continue;
    const country: Country = {
      countryCode: code,
      countryCodeAlpha3: alpha3,
      name: facts.name,
      continentCode: facts.continent,
      continentName: continents[facts.continent],
      ...points.get(code),
    };
    const iso = isoCountries.getName(code, 'en', { select: 'all' }) ?? [];
    const names = [...new Set([facts.name, facts.native, ...(facts.alias ?? []), ...iso])];
    records.push({ country, names, capital: facts.capital });
  }
  return records.sort(
    (a, b) =>
      Number(b.country.countryCode === NIGERIA) - Number(a.country.countryCode === NIGERIA) ||
      compareText(foldName(a.country.name), foldName(b.country.name)),
  );
}
