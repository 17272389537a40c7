import {
  GEOPOLITICAL_ZONES,
  listStates,
  searchCities,
  searchStates,
} from '../../../../services/geo/gazetteer';
import { distanceKmBetween } from './helpers';

const NIGERIA_BOX = { minLat: 4, maxLat: 14, minLon: 2.5, maxLon: 15 };

describe('Nigerian states', () => {
  const states = listStates(100, { countryCode: 'NG' });

  it('are the 36 states and FCT, each in one of the six geopolitical zones', () => {
    expect(states).toHaveLength(37);
    expect(new Set(states.map((s) => s.name)).size).toBe(37);
    for (const state of states) expect(GEOPOLITICAL_ZONES).toContain(state.regionalZone);
    const perZone = Object.fromEntries(
      GEOPOLITICAL_ZONES.map((z) => [z, states.filter((s) => s.regionalZone === z).length]),
    );
    expect(perZone).toEqual({
      'North Central': 7,
      'North East': 6,
      'North West': 7,
      'South East': 5,
      'South South': 6,
      'South West': 6,
    });
  });

  it('puts FCT in North Central under its official name', () => {
    const [fct] = searchStates('FCT', 1);
    expect(fct).toMatchObject({
      name: 'Federal Capital Territory',
      code: 'NG.11',
      regionalZone: 'North Central',
      capital: 'Abuja',
    });
  });

  it('normalises the GeoNames names ("Rivers State", "Nassarawa", "Akwa Ibom State")', () => {
    expect(states.map((s) => s.name)).toEqual(
      expect.arrayContaining(['Rivers', 'Nasarawa', 'Akwa Ibom', 'Cross River', 'Lagos']),
    );
    expect(states.some((s) => / State$/.test(s.name))).toBe(false);
    expect(searchStates('Nassarawa', 1)[0].name).toBe('Nasarawa');
    expect(searchStates('Rivers State', 1)[0].name).toBe('Rivers');
  });

  it('are listed first, by name, before any other country', () => {
    const first = listStates(37);
    expect(first.every((s) => s.countryCode === 'NG')).toBe(true);
    expect(first.map((s) => s.name)).toEqual([...first.map((s) => s.name)].sort());
  });

  it.each(states.map((s) => [s.name, s]))('%s has its point inside Nigeria', (_name, state) => {
    expect(state.lat).toBeGreaterThanOrEqual(NIGERIA_BOX.minLat);
    expect(state.lat).toBeLessThanOrEqual(NIGERIA_BOX.maxLat);
    expect(state.lon).toBeGreaterThanOrEqual(NIGERIA_BOX.minLon);
    expect(state.lon).toBeLessThanOrEqual(NIGERIA_BOX.maxLon);
  });

  it('places each state at its capital, which GeoNames has at the same spot', () => {
    for (const state of states) {
      const capital = searchCities(state.capital ?? '', 5, { countryCode: 'NG' }).find(
        (c) => c.admin1Id === state.admin1Id && c.name === state.capital,
      );
      expect(capital).toBeDefined();
      expect(distanceKmBetween(state, capital ?? state)).toBeLessThan(1);
    }
  });

  it('places Delta at Asaba, not Warri', () => {
    const [delta] = searchStates('Delta', 1, { countryCode: 'NG' });
    expect(delta.capital).toBe('Asaba');
    expect(distanceKmBetween(delta, { lat: 6.198, lon: 6.732 })).toBeLessThan(2);
  });
});

describe('Nigerian cities', () => {
  it.each([
    ['Lagos', 'Lagos'],
    ['Lekki', 'Lagos'],
    ['Ikeja', 'Lagos'],
    ['Yaba', 'Lagos'],
    ['Port Harcourt', 'Rivers'],
    ['Ibadan', 'Oyo'],
    ['Kano', 'Kano'],
    ['Abuja', 'Federal Capital Territory'],
  ])('%s is in %s State', (name, stateName) => {
    const [city] = searchCities(name, 1);
    expect(city).toMatchObject({ name, countryCode: 'NG', admin1Name: stateName });
    const [state] = searchStates(stateName, 1, { countryCode: 'NG' });
    expect(city.admin1Id).toBe(state.admin1Id);
    expect(city.regionalZone).toBe(state.regionalZone);
    expect(distanceKmBetween(city, state)).toBeLessThan(200);
  });

  it('gives LGAs as admin2 with readable names', () => {
    expect(searchCities('Ikeja', 1)[0]).toMatchObject({ admin2Name: 'Ikeja' });
    expect(searchCities('Yaba', 1)[0]).toMatchObject({
      admin2Name: 'Lagos Mainland',
      source: 'curated',
    });
    expect(searchCities('Abuja', 1)[0]).toMatchObject({
      admin2Name: 'Abuja Municipal Area Council',
    });
  });

  it('gives cities elsewhere their country as zone', () => {
    expect(searchCities('Paris', 1)[0]).toMatchObject({
      countryCode: 'FR',
      regionalZone: 'France',
    });
  });
});
