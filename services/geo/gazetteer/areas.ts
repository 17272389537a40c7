import { boundedDistance } from './fuzzy';
import { gazetteer } from './load';
import { foldName } from './normalize';
import { searchStates } from './search';

/** A place named by an operator (a pricing tier, a courier rule), spelled as addresses are. */
export interface Area {
  countryCode: string;
  country: string;
  state?: string;
  lgaOrCity?: string;
}

export type AreaLookup = { area: Area } | { problem: string };

/** State index → folded `lgaOrCity` → its display spelling; built on first use. */
let lgasByState: Map<number, Map<string, string>> | undefined;

function lgaNames(state: number): Map<string, string> {
  if (!lgasByState) {
    const g = gazetteer();
    lgasByState = new Map();
    for (let i = 0; i < g.cities.size; i++) {
      const s = g.cities.state[i];
      if (s < 0) continue;
      let names = lgasByState.get(s);
      if (!names) lgasByState.set(s, (names = new Map()));
      const name = g.cities.lgaOrCityOf(i);
      const folded = foldName(name);
      if (!names.has(folded)) names.set(folded, name);
    }
  }
  return lgasByState.get(state) ?? new Map();
}

function closest(query: string, names: ReadonlyMap<string, string>): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const [folded, name] of names) {
    const distance = boundedDistance(query, folded, 3, false);
    if (distance <= 3 && (!best || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}

/** Names operators use that are not the gazetteer's ("FCT" for Federal Capital Territory). */
const STATE_ALIASES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  NG: { fct: 'federal capital territory', abuja: 'federal capital territory' },
};

const suggest = (name: string | undefined) => (name ? `; did you mean ${name}?` : '');

/**
 * Checks that a country, a state of it and an LGA/city of that state exist, and returns
 * their names exactly as resolved addresses spell them, so that what an operator types
 * ("lagos", "Eti-Osa") matches what addresses carry ("Lagos", "Eti Osa").
 */
export function findArea(countryCode: string, state?: string, lgaOrCity?: string): AreaLookup {
  const g = gazetteer();
  const countryAt = g.countryByCode.get(countryCode.toUpperCase());
  if (countryAt === undefined) return { problem: `Country "${countryCode}" not found` };
  const country = g.countries[countryAt];
  const area: Area = { countryCode: country.countryCode, country: country.name };
  if (state === undefined) return { area };

  const folded = foldName(state);
  const wanted = STATE_ALIASES[country.countryCode]?.[folded] ?? folded;
  const stateAt = g.states.findIndex(
    (s, i) =>
      s.countryCode === country.countryCode &&
      g.stateNames[i].some((name) => foldName(name) === wanted),
  );
  if (stateAt < 0) {
    const [guess] = searchStates(state, 1, { countryCode: country.countryCode });
    return {
      problem: `State "${state}" not found in ${country.name}${suggest(guess?.name)}`,
    };
  }
  area.state = g.states[stateAt].name;
  if (lgaOrCity === undefined) return { area };

  const names = lgaNames(stateAt);
  const lga = names.get(foldName(lgaOrCity));
  if (!lga) {
    return {
      problem: `LGA or city "${lgaOrCity}" not found in ${area.state}${suggest(closest(foldName(lgaOrCity), names))}`,
    };
  }
  area.lgaOrCity = lga;
  return { area };
}
