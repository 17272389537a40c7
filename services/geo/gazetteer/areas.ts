import type { Area } from '../../../libs/contracts/geo';
import { allowedTypos, boundedDistance } from './fuzzy';
import { gazetteer } from './load';
import { foldName } from '../../../libs/text';
import { searchStates } from './search';
import type { State } from './types';

/** A place found, or what is wrong and which part of the place (`countryCode`, `state`, `lgaOrCity`). */
export type AreaLookup =
  { area: Area } | { problem: string; part: 'countryCode' | 'state' | 'lgaOrCity' };

/**
 * Names operators use that the gazetteer does not know: it has "FCT" and "Abuja FCT" for
 * Federal Capital Territory but not the bare "Abuja", which no other Nigerian state is called.
 */
const STATE_ALIASES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  NG: { abuja: 'federal capital territory' },
};

/** Country code → folded name or alias → state index; built on first use. */
let statesByCountry: Map<string, Map<string, number>> | undefined;

function stateNamesOf(countryCode: string): ReadonlyMap<string, number> {
  statesByCountry ??= indexStates();
  return statesByCountry.get(countryCode) ?? new Map<string, number>();
}

function indexStates(): Map<string, Map<string, number>> {
  const g = gazetteer();
  const byCountry = new Map<string, Map<string, number>>();
  g.states.forEach((state, i) => {
    let names = byCountry.get(state.countryCode);
    if (!names) byCountry.set(state.countryCode, (names = new Map()));
    // States come most important first, so a name two of them share means the first.
    for (const name of g.stateNames[i]) {
      const folded = foldName(name);
      if (!names.has(folded)) names.set(folded, i);
    }
  });
  for (const [countryCode, aliases] of Object.entries(STATE_ALIASES)) {
    const names = byCountry.get(countryCode);
    for (const [alias, official] of Object.entries(aliases)) {
      const i = names?.get(official);
      if (names && i !== undefined && !names.has(alias)) names.set(alias, i);
    }
  }
  return byCountry;
}

/** State index → folded `lgaOrCity` → its display spelling; each state's built on first use. */
const lgasByState = new Map<number, Map<string, string>>();

function lgaNamesOf(state: number): ReadonlyMap<string, string> {
  let names = lgasByState.get(state);
  if (!names) {
    names = indexLgas(state);
    lgasByState.set(state, names);
  }
  return names;
}

/** One pass over the city columns: no `City` objects and no ids, which cost a SHA-1 each. */
function indexLgas(state: number): Map<string, string> {
  const cities = gazetteer().cities;
  const names = new Map<string, string>();
  for (let i = 0; i < cities.size; i++) {
    if (cities.state[i] !== state) continue;
    const name = cities.lgaOrCityOf(i);
    const folded = foldName(name);
    // Cities come most important first: of two spellings that fold alike, the commoner wins.
    if (!names.has(folded)) names.set(folded, name);
  }
  return names;
}

/**
 * What to offer for an unknown LGA: a city of that name answers to its LGA in addresses
 * ("Abuja" → "Abuja Municipal Area Council"), else the nearest spelling within the typos
 * that search forgives.
 */
function lgaSuggestion(state: number, query: string): string | undefined {
  if (!query) return undefined;
  const cities = gazetteer().cities;
  for (let i = 0; i < cities.size; i++) {
    if (cities.state[i] === state && cities.hasFoldedName(i, query)) return cities.lgaOrCityOf(i);
  }
  return closest(query, lgaNamesOf(state));
}

function closest(query: string, names: ReadonlyMap<string, string>): string | undefined {
  const max = allowedTypos(query);
  let best: { name: string; distance: number } | undefined;
  for (const [folded, name] of names) {
    const distance = boundedDistance(query, folded, max, false);
    if (distance <= max && (!best || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}

function stateSuggestion(query: string, countryCode: string): string | undefined {
  // An empty query would list states, not search them.
  if (!foldName(query)) return undefined;
  return searchStates(query, 1, { countryCode })[0]?.name;
}

const didYouMean = (name: string | undefined) => (name ? `; did you mean ${name}?` : '');

/**
 * The state of `countryCode` named `name`, as a geocoder spells it: its names and aliases, or
 * one of them followed by "State" ("Ogun State", as OpenStreetMap names Nigeria's).
 */
export function stateNamed(countryCode: string, name: string): State | undefined {
  const names = stateNamesOf(countryCode.toUpperCase());
  const folded = foldName(name);
  const at = names.get(folded) ?? names.get(folded.replace(/ state$/, ''));
  return at === undefined ? undefined : gazetteer().states[at];
}

/**
 * Checks that a country, a state of it and an LGA/city of that state exist, and returns
 * their names exactly as resolved addresses spell them, so that what an operator types
 * ("lagos", "Eti-Osa") matches what addresses carry ("Lagos", "Eti Osa").
 */
export function findArea(countryCode: string, state?: string, lgaOrCity?: string): AreaLookup {
  const g = gazetteer();
  const countryAt = g.countryByCode.get(countryCode.toUpperCase());
  if (countryAt === undefined)
    return { problem: `Country "${countryCode}" not found`, part: 'countryCode' };
  const country = g.countries[countryAt];
  const area: Area = { countryCode: country.countryCode, country: country.name };
  if (state === undefined) return { area };

  const stateAt = stateNamesOf(country.countryCode).get(foldName(state));
  if (stateAt === undefined) {
    const guess = stateSuggestion(state, country.countryCode);
    return {
      problem: `State "${state}" not found in ${country.name}${didYouMean(guess)}`,
      part: 'state',
    };
  }
  area.state = g.states[stateAt].name;
  if (lgaOrCity === undefined) return { area };

  const folded = foldName(lgaOrCity);
  const lga = lgaNamesOf(stateAt).get(folded);
  if (lga === undefined) {
    const guess = lgaSuggestion(stateAt, folded);
    return {
      problem: `LGA or city "${lgaOrCity}" not found in ${area.state}${didYouMean(guess)}`,
      part: 'lgaOrCity',
    };
  }
  area.lgaOrCity = lga;
  return { area };
}
