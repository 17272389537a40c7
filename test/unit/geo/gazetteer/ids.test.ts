import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import {
  buildGazetteer,
  findCity,
  findState,
  gazetteer,
  searchCities,
  searchStates,
} from '../../../../services/geo/gazetteer';
import { uuidV5 } from '../../../../services/geo/gazetteer/ids';
import { UUID_V5 } from './helpers';

describe('uuidV5', () => {
  it('matches the RFC 9562 test vector', () => {
    // RFC 9562 appendix A.4: DNS namespace, "www.example.com".
    expect(uuidV5('www.example.com', '6ba7b810-9dad-11d1-80b4-00c04fd430c8')).toBe(
      '2ed6657d-e927-568b-95e1-2665a8aea6a2',
    );
  });

  it('gives version-5 UUIDs for any name', () => {
    fc.assert(fc.property(fc.string({ unit: 'grapheme' }), (name) => UUID_V5.test(uuidV5(name))));
  });
});

describe('gazetteer ids', () => {
  const g = gazetteer();

  it('never change: stored addresses refer to them', () => {
    const [lagos] = searchCities('lagos', 1);
    expect(lagos.locationId).toBe('b6f8337e-0b54-5564-9208-0238780da74d');
    expect(lagos.admin1Id).toBe('7f7f1402-add2-5c78-acee-7e6db363e8fa');
    expect(searchStates('lagos', 1)[0].admin1Id).toBe(lagos.admin1Id);
  });

  it('are the same after a second load', () => {
    const again = buildGazetteer();
    expect(again.cities.size).toBe(g.cities.size);
    expect(again.states.map((s) => s.admin1Id)).toEqual(g.states.map((s) => s.admin1Id));
    fc.assert(
      fc.property(fc.integer({ min: 0, max: g.cities.size - 1 }), (i) => {
        expect(again.cities.city(i)).toEqual(g.cities.city(i));
      }),
      { numRuns: 300 },
    );
  });

  it('give every city a unique version-5 UUID that finds it again', () => {
    const ids = new Set<string>();
    for (let i = 0; i < g.cities.size; i++) ids.add(g.cities.idOf(i));
    expect(ids.size).toBe(g.cities.size);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: g.cities.size - 1 }), (i) => {
        const city = g.cities.city(i);
        expect(city.locationId).toMatch(UUID_V5);
        expect(findCity(city.locationId)).toEqual(city);
      }),
      { numRuns: 500 },
    );
  });

  it('give states and LGAs version-5 UUIDs', () => {
    for (const state of g.states) {
      expect(state.admin1Id).toMatch(UUID_V5);
      expect(findState(state.admin1Id)).toBe(state);
    }
    expect(searchCities('ikeja', 1)[0].admin2Id).toMatch(UUID_V5);
    expect(new Set(g.states.map((s) => s.admin1Id)).size).toBe(g.states.length);
  });

  it('keep no string per city once printed: a long-running process does not grow with them', () => {
    setFlagsFromString('--expose-gc');
    const collect = runInNewContext('gc') as () => void;
    const fresh = buildGazetteer();
    fresh.cities.idOf(0);
    collect();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < fresh.cities.size; i++) fresh.cities.idOf(i);
    collect();
    const grown = process.memoryUsage().heapUsed - before;
    // Used after the measure, so that the collector could not take it during it.
    expect(fresh.cities.idOf(1)).toMatch(UUID_V5);
    // 171,000 id strings would be over 10 MB.
    expect(grown).toBeLessThan(2 * 2 ** 20);
  });

  it('find nothing for unknown ids', () => {
    expect(findCity('00000000-0000-5000-8000-000000000000')).toBeUndefined();
    expect(findCity(g.cities.idOf(0).toUpperCase())).toBeUndefined();
    expect(findCity(`${g.cities.idOf(0)} `)).toBeUndefined();
    expect(findCity('')).toBeUndefined();
    expect(findState('nope')).toBeUndefined();
  });
});
