import fc from 'fast-check';
import { ROUTE_TYPES, type RouteType } from '../../../libs/contracts/geo';
import { ZONED_COUNTRIES, classifyRoute, type RoutePlace } from '../../../services/geo/route-type';

const lagos: RoutePlace = {
  countryCode: 'NG',
  stateCode: 'LA',
  regionalZone: 'South West',
  continentCode: 'AF',
};
const ikeja: RoutePlace = { ...lagos };
const ogun: RoutePlace = { ...lagos, stateCode: 'OG' };
const kano: RoutePlace = { ...lagos, stateCode: 'KN', regionalZone: 'North West' };
const accra: RoutePlace = { countryCode: 'GH', stateCode: 'AA', continentCode: 'AF' };
const kumasi: RoutePlace = { countryCode: 'GH', stateCode: 'AH', continentCode: 'AF' };
const london: RoutePlace = { countryCode: 'GB', stateCode: 'ENG', continentCode: 'EU' };
const nigeria: RoutePlace = { countryCode: 'NG', continentCode: 'AF' };
const ghana: RoutePlace = { countryCode: 'GH', continentCode: 'AF' };

describe('ROUTE_TYPES', () => {
  it('lists the five route types of the spec, nearest first', () => {
    expect(ROUTE_TYPES).toEqual([
      'INTER_CITY',
      'INTER_STATE',
      'INTER_REGION',
      'INTER_COUNTRY',
      'INTER_CONTINENT',
    ]);
  });

  it('zones Nigeria only', () => {
    expect([...ZONED_COUNTRIES]).toEqual(['NG']);
  });
});

describe('classifyRoute', () => {
  it.each<[string, RoutePlace, RoutePlace, RouteType]>([
    ['Lagos - Ikeja: same state', lagos, ikeja, 'INTER_CITY'],
    ['Lagos - Ogun: other state, both South West', lagos, ogun, 'INTER_STATE'],
    ['Lagos - Kano: South West - North West', lagos, kano, 'INTER_REGION'],
    ['Lagos - Accra: other country, both Africa', lagos, accra, 'INTER_COUNTRY'],
    ['Lagos - London: other continent', lagos, london, 'INTER_CONTINENT'],
    ['Accra - Kumasi: other state of an unzoned country', accra, kumasi, 'INTER_STATE'],
    ['Accra - Accra: same state of an unzoned country', accra, { ...accra }, 'INTER_CITY'],
    [
      'Texas - California: the zone is the country itself',
      { countryCode: 'US', stateCode: 'TX', continentCode: 'NA' },
      { countryCode: 'US', stateCode: 'CA', continentCode: 'NA' },
      'INTER_STATE',
    ],
    [
      'unzoned country: a regionalZone sent anyway is ignored',
      { ...accra, regionalZone: 'Coast' },
      { ...kumasi, regionalZone: 'Forest' },
      'INTER_STATE',
    ],
    [
      'Nigeria: state missing on one side, same zone',
      lagos,
      { ...ogun, stateCode: undefined },
      'INTER_STATE',
    ],
    [
      'Nigeria: state missing on one side, other zone',
      { ...lagos, stateCode: undefined },
      kano,
      'INTER_REGION',
    ],
    ['Nigeria: both states and zones missing', nigeria, { ...nigeria }, 'INTER_REGION'],
    [
      'Nigeria: both states missing, same zone known',
      { ...nigeria, regionalZone: 'South West' },
      { ...nigeria, regionalZone: 'South West' },
      'INTER_STATE',
    ],
    [
      'Nigeria: zone missing on one side',
      lagos,
      { ...ogun, regionalZone: undefined },
      'INTER_REGION',
    ],
    [
      'Nigeria: zone missing on both sides',
      { ...lagos, regionalZone: undefined },
      { ...ogun, regionalZone: undefined },
      'INTER_REGION',
    ],
    [
      'Nigeria: same state wins over inconsistent zones',
      lagos,
      { ...ikeja, regionalZone: 'North West' },
      'INTER_CITY',
    ],
    [
      'unzoned country: state missing on one side',
      accra,
      { ...kumasi, stateCode: undefined },
      'INTER_STATE',
    ],
    ['unzoned country: both states missing', ghana, { ...ghana }, 'INTER_STATE'],
    [
      'empty state codes count as missing',
      { ...accra, stateCode: '' },
      { ...accra, stateCode: '  ' },
      'INTER_STATE',
    ],
    [
      'codes and zones compare trimmed and case-blind',
      { countryCode: 'ng', stateCode: ' og ', regionalZone: 'south  west', continentCode: 'af' },
      lagos,
      'INTER_STATE',
    ],
    ['country codes compare case-blind', { ...lagos, countryCode: 'ng' }, ikeja, 'INTER_CITY'],
    [
      'continent codes compare case-blind',
      accra,
      { ...lagos, continentCode: 'af' },
      'INTER_COUNTRY',
    ],
    [
      'a state code shared by two countries is not the same state',
      { countryCode: 'NG', stateCode: 'AB', continentCode: 'AF' },
      { countryCode: 'GH', stateCode: 'AB', continentCode: 'AF' },
      'INTER_COUNTRY',
    ],
    [
      'unknown continents never match',
      { ...accra, continentCode: '' },
      { ...lagos, continentCode: '' },
      'INTER_CONTINENT',
    ],
    [
      'the country decides before the continent (a country listed on two continents)',
      { countryCode: 'TR', stateCode: '34', continentCode: 'EU' },
      { countryCode: 'TR', stateCode: '06', continentCode: 'AS' },
      'INTER_STATE',
    ],
  ])('%s', (_name, origin, destination, expected) => {
    expect(classifyRoute(origin, destination)).toBe(expected);
    expect(classifyRoute(destination, origin)).toBe(expected);
  });

  const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
  const place: fc.Arbitrary<RoutePlace> = fc.record({
    countryCode: fc.constantFrom('NG', 'ng', ' NG', 'GH', 'GB', 'US', ''),
    stateCode: maybe(fc.constantFrom('LA', 'la', 'OG', 'KN', 'AA', '', ' ')),
    regionalZone: maybe(fc.constantFrom('South West', 'south west', 'North West', '')),
    continentCode: fc.constantFrom('AF', 'af', 'EU', 'NA', ''),
  });

  it('does not depend on which end is the origin (property)', () => {
    fc.assert(
      fc.property(place, place, (a, b) => {
        expect(classifyRoute(a, b)).toBe(classifyRoute(b, a));
      }),
    );
  });

  it('always answers one of ROUTE_TYPES (property)', () => {
    fc.assert(
      fc.property(place, place, (a, b) => {
        expect(ROUTE_TYPES).toContain(classifyRoute(a, b));
      }),
    );
  });

  it('keeps trips within a country below INTER_COUNTRY and others above it (property)', () => {
    fc.assert(
      fc.property(place, place, (a, b) => {
        const sameCountry =
          a.countryCode.trim() !== '' &&
          a.countryCode.trim().toUpperCase() === b.countryCode.trim().toUpperCase();
        const rank = ROUTE_TYPES.indexOf(classifyRoute(a, b));
        expect(rank < ROUTE_TYPES.indexOf('INTER_COUNTRY')).toBe(sameCountry);
      }),
    );
  });

  it('classifies a place with a known country and state as INTER_CITY with itself (property)', () => {
    const known = fc.record({
      countryCode: fc.constantFrom('NG', 'GH', 'US'),
      stateCode: fc.constantFrom('LA', 'OG', 'TX'),
      regionalZone: maybe(fc.constantFrom('South West', 'North West')),
      continentCode: fc.constantFrom('AF', 'NA'),
    });
    fc.assert(
      fc.property(known, (a) => {
        expect(classifyRoute(a, { ...a })).toBe('INTER_CITY');
      }),
    );
  });
});
