import { CITY_TIER } from './importance';
import { gazetteer, type Gazetteer } from './load';
import { NIGERIA } from './nigeria';
import { foldName } from '../../../libs/text';
import type { GeocodeResult } from './types';

/** Longest place name tried, in words ("Abuja Federal Capital Territory"). */
const MAX_WORDS = 4;
/** Exact city matches kept per phrase, most important first, plus any in a named country. */
const CITY_CANDIDATES = 50;

/** Words that end a street name: what comes just before them is a street, not a place. */
const STREET_WORDS = new Set(
  'road rd street str st way close cl avenue ave av crescent cres drive dr lane ln expressway expy boulevard blvd highway hwy bypass junction roundabout layout plaza mall market bridge'.split(
    ' ',
  ),
);

/** Words that are never a place on their own, though GeoNames has villages by those names. */
const STOP_WORDS = new Set(
  'the of and off by at in on near opp opposite beside behind along via no plot block flat floor suite apt apartment unit house building phase gra state city town area district lga local government estate island central new old north south east west main bus stop park garden gardens village'.split(
    ' ',
  ),
);

type Kind = 'city' | 'state' | 'country';

/** A phrase of the text that names a place. Spans are token positions, end exclusive. */
interface Mention {
  kind: Kind;
  item: number;
  /** The phrase, folded. */
  key: string;
  start: number;
  end: number;
  typos: number;
  /** A city written inside its state's longer name: "Abuja FCT". */
  withOwnState?: boolean;
}

interface Segment {
  words: string[];
  /** Position of the first word among all words of the text. */
  offset: number;
}

/**
 * Best guess of the city, state and country named in free text, or null when nothing in it
 * names a known place. The text is split at commas into segments and each run of up to four
 * words is looked up as a country, state or city name; combinations that agree (a city
 * inside the named state or country) win, then Nigeria when the text names no country, then
 * importance. Failing any city, the state's point, then the country's, are returned.
 * Deterministic: same text, same answer.
 */
export function geocodeText(text: string): GeocodeResult | null {
  return geocode(text).result;
}

/** The work geocoding a text takes (candidates and comparisons), to hold it bounded in tests. */
export function geocodeWork(text: string): GeocodeWork {
  return geocode(text).work;
}

function geocode(text: string): { result: GeocodeResult | null; work: GeocodeWork } {
  const g = gazetteer();
  const segments = split(text);
  const found = findMentions(g, segments);
  const work: GeocodeWork = { mentions: found.length, kept: 0, comparisons: 0 };
  const mentions = prune(g, found, work);
  work.kept = mentions.length;
  if (mentions.length === 0) return { result: null, work };
  work.comparisons += mentions.length * mentions.length;
  const scored = mentions.map((m) => ({ m, ...score(g, m, mentions) }));
  scored.sort(
    (a, b) =>
      b.score - a.score ||
      KIND_ORDER[a.m.kind] - KIND_ORDER[b.m.kind] ||
      a.m.item - b.m.item ||
      a.m.start - b.m.start,
  );
  const best = scored.find(({ m }) => located(g, m));
  return { result: best ? result(g, best.m, best.confidence) : null, work };
}

const KIND_ORDER: Readonly<Record<Kind, number>> = { city: 0, state: 1, country: 2 };

function split(text: string): Segment[] {
  const segments: Segment[] = [];
  let offset = 0;
  for (const part of text.split(/[,;|\n]+/)) {
    const folded = foldName(part);
    if (!folded) continue;
    const words = folded.split(' ');
    segments.push({ words, offset });
    offset += words.length;
  }
  return segments;
}

/**
 * Bounds on the work one text may cause. A phrase repeated many times ("san jose san jose
 * ...") once made thousands of candidates, each compared with every other: a 300-character
 * text cost half a second. A phrase is looked at in its first and last places only, each
 * phrase keeps fewer of its cities the more phrases name cities, and the candidates are
 * capped; an address names a handful of places, far below these.
 */
export const GEOCODE_LIMITS = {
  /** Exact city matches over all phrases. */
  cityMentions: 200,
  /** All candidates: cities, states and countries. */
  mentions: 400,
  /** Segments retried whole with typos. */
  typoSegments: 8,
} as const;

/** Work done for one text, for tests: candidates found and kept, and pairs compared. */
export interface GeocodeWork {
  mentions: number;
  kept: number;
  comparisons: number;
}

interface Span {
  key: string;
  start: number;
  end: number;
  typos: number;
  whole: boolean;
}

/** The phrases of the text that may name a place, a repeated phrase at its first and last places. */
function phrases(segments: readonly Segment[]): Span[] {
  const spans: Span[] = [];
  for (const { words, offset } of segments) {
    for (let start = 0; start < words.length; start++) {
      for (let len = 1; len <= MAX_WORDS && start + len <= words.length; len++) {
        if (/^\d+$/.test(words[start + len - 1])) break;
        const key = words.slice(start, start + len).join(' ');
        const whole = start === 0 && len === words.length;
        if (len === 1 && STOP_WORDS.has(key)) continue;
        if (streetName(words, start, len)) continue;
        if (key.length <= 2 && !whole) continue;
        spans.push({ key, start: offset + start, end: offset + start + len, typos: 0, whole });
      }
    }
  }
  const first = new Map<string, number>();
  const last = new Map<string, number>();
  spans.forEach((span, i) => {
    if (!first.has(span.key)) first.set(span.key, i);
    last.set(span.key, i);
  });
  return spans.filter((span, i) => first.get(span.key) === i || last.get(span.key) === i);
}

/**
 * Whether the run is (part of) a street's name: it ends in a street word or one follows it,
 * directly or after one generic word ("Ogun State Road", "Allen Avenue").
 */
function streetName(words: readonly string[], start: number, len: number): boolean {
  const next = words[start + len] ?? '';
  return (
    STREET_WORDS.has(words[start + len - 1]) ||
    STREET_WORDS.has(next) ||
    (STOP_WORDS.has(next) && STREET_WORDS.has(words[start + len + 1] ?? ''))
  );
}

function findMentions(g: Gazetteer, segments: readonly Segment[]): Mention[] {
  const names = countryNames(g);
  const mentions: Mention[] = [];
  const spans = phrases(segments);
  const push = (m: Mention) => {
    if (mentions.length < GEOCODE_LIMITS.mentions) mentions.push(m);
  };
  for (const { whole, ...span } of spans) {
    for (const item of names.byName.get(span.key) ?? []) push({ kind: 'country', item, ...span });
    const byCode = whole ? names.byCode.get(span.key) : undefined;
    if (byCode !== undefined) push({ kind: 'country', item: byCode, ...span });
    for (const item of g.stateIndex.exact(span.key)) push({ kind: 'state', item, ...span });
  }
  // Cities last, so that a named country can keep its cities among the candidates.
  const named = new Set(mentions.filter((m) => m.kind === 'country').map((m) => m.item));
  const cities = new Map<string, number[]>();
  for (const { key } of spans) {
    if (!cities.has(key)) cities.set(key, [...g.cityIndex.exact(key), ...g.lgaIndex.exact(key)]);
  }
  const naming = spans.filter(({ key }) => (cities.get(key) ?? []).length > 0).length;
  const perPhrase = Math.min(
    CITY_CANDIDATES,
    Math.max(1, Math.floor(GEOCODE_LIMITS.cityMentions / Math.max(1, naming))),
  );
  let cityMentions = 0;
  for (const { key, start, end, typos } of spans) {
    const span = { key, start, end, typos };
    const items = cities.get(key) ?? [];
    // Cities of a named country first, then the most important.
    const inNamed = items.filter((item) => named.has(g.cities.countryIndexOf(item)));
    const rest = items.filter((item) => !named.has(g.cities.countryIndexOf(item)));
    for (const item of [...inNamed, ...rest].slice(0, perPhrase)) {
      if (cityMentions >= GEOCODE_LIMITS.cityMentions) break;
      cityMentions++;
      push({ kind: 'city', item, ...span });
    }
  }
  addTypoMatches(g, segments, mentions);
  return mentions;
}

/** Segments that named nothing exactly are tried whole, with one or two typos ("Ibadn"). */
function addTypoMatches(g: Gazetteer, segments: readonly Segment[], mentions: Mention[]): void {
  const tried = new Set<string>();
  // A near miss is trusted in a country the text names, else in Nigeria only: "Kubwa" is not
  // Kudwā in India, nor "Isolo" Iesolo in Italy.
  const named = new Set(mentions.filter((m) => m.kind === 'country').map((m) => m.item));
  if (named.size === 0) named.add(g.countryByCode.get(NIGERIA) ?? 0);
  const cityAccepted = (item: number) => named.has(g.cities.countryIndexOf(item));
  const stateAccepted = (item: number) =>
    named.has(g.countryByCode.get(g.states[item].countryCode) ?? -1);
  for (const { words, offset } of segments) {
    const start = offset;
    const end = offset + words.length;
    if (mentions.some((m) => m.start >= start && m.end <= end)) continue;
    const key = words.join(' ');
    if (words.every((w) => STOP_WORDS.has(w) || /^\d+$/.test(w))) continue;
    if (tried.has(key)) continue;
    if (tried.size >= GEOCODE_LIMITS.typoSegments) break;
    tried.add(key);
    for (const { item, typos } of g.cityIndex.fuzzy(key, 5, false, cityAccepted)) {
      mentions.push({ kind: 'city', item, key, start, end, typos });
    }
    for (const { item, typos } of g.stateIndex.fuzzy(key, 3, false, stateAccepted)) {
      mentions.push({ kind: 'state', item, key, start, end, typos });
    }
    for (const { item, typos } of g.countryIndex.fuzzy(key, 2, false)) {
      mentions.push({ kind: 'country', item, key, start, end, typos });
    }
  }
}

/**
 * A name inside a longer name is not a mention of its own: "Lagos" in "Lagos Island", "Niger"
 * in "Niger State", "Benin" in "Benin City". One exception: a city inside a state's name whose
 * rest also names that state ("Abuja FCT" = Abuja + FCT) stays, as a city in its state.
 */
function prune(g: Gazetteer, mentions: readonly Mention[], work: GeocodeWork): Mention[] {
  // Mentions by start: an outer mention starts at most MAX_WORDS - 1 words before.
  const byStart = new Map<number, Mention[]>();
  for (const m of mentions) {
    const list = byStart.get(m.start) ?? [];
    list.push(m);
    byStart.set(m.start, list);
  }
  const kept: Mention[] = [];
  for (const m of mentions) {
    const outer: Mention[] = [];
    const length = m.end - m.start;
    for (let start = m.start - (MAX_WORDS - 1); start <= m.start; start++) {
      for (const o of byStart.get(start) ?? []) {
        work.comparisons++;
        if (m.end <= o.end && o.end - o.start > length) outer.push(o);
      }
    }
    if (outer.length === 0) {
      kept.push(m);
      continue;
    }
    const state = m.kind === 'city' ? g.cities.state[m.item] : -1;
    const ownState = outer.find(
      (o) => o.kind === 'state' && o.item === state && restNamesState(g, o, m),
    );
    if (ownState && outer.every((o) => o.kind === 'state')) kept.push({ ...m, withOwnState: true });
  }
  return kept;
}

/** Whether the words of `outer` other than those of `inner` are a name of outer's state. */
function restNamesState(g: Gazetteer, outer: Mention, inner: Mention): boolean {
  const words = outer.key.split(' ');
  const rest = [
    ...words.slice(0, inner.start - outer.start),
    ...words.slice(inner.end - outer.start),
  ].join(' ');
  return rest.length > 0 && g.stateIndex.exact(rest).includes(outer.item);
}

function overlaps(a: Mention, b: Mention): boolean {
  return a.start < b.end && b.start < a.end;
}

/**
 * Nigeria when the text names no country: as much as a named country's agreement, so that
 * an unknown word's namesake abroad ("Victoria Garden City, Lekki") never outranks a
 * Nigerian place named beside it.
 */
const NIGERIA_BONUS = 3;

/** Importance as a bonus; tiers from importance.ts. */
const TIER_BONUS: readonly number[] = [1, 0.8, 0.8, 0.5, 0.3, 0.1];

function score(g: Gazetteer, m: Mention, all: readonly Mention[]) {
  const others = all.filter((o) => !overlaps(o, m));
  const countries = others.filter((o) => o.kind === 'country').map((o) => o.item);
  const countryOf =
    m.kind === 'city'
      ? g.cities.countryIndexOf(m.item)
      : m.kind === 'state'
        ? (g.countryByCode.get(g.states[m.item].countryCode) ?? -1)
        : m.item;
  const countryAgrees = countries.includes(countryOf);
  const countryConflicts = countries.length > 0 && !countryAgrees;
  const biased = countries.length === 0 && g.countries[countryOf]?.countryCode === NIGERIA;
  const typos = 0.5 * m.typos;

  if (m.kind === 'country') {
    return { score: 1.2 - typos, confidence: 0.3 - 0.1 * m.typos };
  }
  if (m.kind === 'state') {
    const s = 0.5 + 3 * +countryAgrees - 5 * +countryConflicts + NIGERIA_BONUS * +biased - typos;
    return { score: s, confidence: 0.45 + 0.15 * +countryAgrees - 0.15 * m.typos };
  }
  const state = g.cities.state[m.item];
  const states = others.filter((o) => o.kind === 'state').map((o) => o.item);
  const stateAgrees = m.withOwnState === true || (state >= 0 && states.includes(state));
  const stateConflicts = states.length > 0 && !stateAgrees;
  // A later, different city in the same state: "Lekki, Lagos" or "Garki, Abuja".
  const cityAgrees = others.some(
    (o) =>
      o.kind === 'city' &&
      o.start > m.start &&
      o.item !== m.item &&
      state >= 0 &&
      g.cities.state[o.item] === state,
  );
  // The same words also name the city's own state ("Lagos", "São Paulo"): the city, usually
  // that state's seat, is the more precise reading.
  const namesake = all.some(
    (o) => o.kind === 'state' && o.item === state && o.start === m.start && o.end === m.end,
  );
  const tier = g.cities.tier[m.item];
  const s =
    3 * +stateAgrees +
    +namesake +
    2 * +cityAgrees +
    3 * +countryAgrees -
    5 * +countryConflicts -
    +stateConflicts +
    NIGERIA_BONUS * +biased +
    TIER_BONUS[tier] -
    typos;
  const confidence =
    0.55 +
    0.2 * +(stateAgrees || cityAgrees) +
    0.15 * +countryAgrees +
    0.1 * +(tier <= CITY_TIER.countryCapital) -
    0.1 * +stateConflicts -
    0.15 * m.typos;
  return { score: s, confidence };
}

/** A result needs a point; only a few remote territories have none. */
function located(g: Gazetteer, m: Mention): boolean {
  return m.kind !== 'country' || g.countries[m.item].lat !== undefined;
}

function result(g: Gazetteer, m: Mention, rawConfidence: number): GeocodeResult {
  const confidence = Math.round(Math.min(0.99, Math.max(0.05, rawConfidence)) * 100) / 100;
  if (m.kind === 'city') {
    const city = g.cities.city(m.item);
    const state = g.cities.stateOf(m.item);
    const country = g.cities.countryOf(m.item);
    return {
      city,
      ...(state && { state }),
      country,
      confidence,
      lat: city.lat,
      lon: city.lon,
      matchedLevel: 'city',
    };
  }
  if (m.kind === 'state') {
    const state = g.states[m.item];
    const country = g.countries[g.countryByCode.get(state.countryCode) ?? 0];
    return { state, country, confidence, lat: state.lat, lon: state.lon, matchedLevel: 'state' };
  }
  const country = g.countries[m.item];
  return {
    country,
    confidence,
    lat: country.lat ?? 0,
    lon: country.lon ?? 0,
    matchedLevel: 'country',
  };
}

interface CountryNames {
  byName: Map<string, number[]>;
  byCode: Map<string, number>;
}

const countryNameCache = new WeakMap<Gazetteer, CountryNames>();

/** Folded country names and aliases, and ISO codes (trusted only as a whole segment: "NG"). */
function countryNames(g: Gazetteer): CountryNames {
  let names = countryNameCache.get(g);
  if (!names) {
    names = { byName: new Map(), byCode: new Map() };
    for (let i = 0; i < g.countries.length; i++) {
      for (const name of g.countryNames[i]) {
        const key = foldName(name);
        const items = names.byName.get(key) ?? [];
        if (!items.includes(i)) items.push(i);
        names.byName.set(key, items);
      }
      names.byCode.set(g.countries[i].countryCode.toLowerCase(), i);
      names.byCode.set(g.countries[i].countryCodeAlpha3.toLowerCase(), i);
    }
    countryNameCache.set(g, names);
  }
  return names;
}
