import { findArea, gazetteer } from '../../../../services/geo/gazetteer';
import { nigeriaTierSeeds } from '../../../../services/pricing/nigeria-tariff';

describe('findArea', () => {
  it('answers names spelled as resolved addresses spell them', () => {
    expect(findArea('ng', 'LAGOS', 'eti-osa')).toEqual({
      area: { countryCode: 'NG', country: 'Nigeria', state: 'Lagos', lgaOrCity: 'Eti Osa' },
    });
    expect(findArea('NG', 'Rivers', 'Port Harcourt')).toMatchObject({
      area: { lgaOrCity: 'Port-Harcourt' },
    });
    expect(findArea('NG')).toEqual({ area: { countryCode: 'NG', country: 'Nigeria' } });
  });

  it.each([
    ['Lagos', 'Ikeja', 'Ikeja'],
    ['Lagos', 'Eti Osa', 'Eti Osa'],
    ['lagos state', 'ETI-OSA', 'Eti Osa'],
    ['Oyo', 'ibadan north west', 'Ibadan North West'],
    ['Federal Capital Territory', 'Abuja Municipal Area Council', 'Abuja Municipal Area Council'],
    ['Kano', 'Kano Municipal', 'Kano Municipal'],
    ['Kaduna', "Jema'a", "Jema'A"],
  ])('finds %s / %s as %s', (state, lgaOrCity, spelled) => {
    expect(findArea('NG', state, lgaOrCity)).toMatchObject({ area: { lgaOrCity: spelled } });
  });

  it('answers the spellings that addresses resolved in the state carry', () => {
    const g = gazetteer();
    const lagos = g.states.findIndex((s) => s.countryCode === 'NG' && s.name === 'Lagos');
    let checked = 0;
    for (let i = 0; i < g.cities.size; i++) {
      if (g.cities.state[i] !== lagos) continue;
      const city = g.cities.city(i);
      const lgaOrCity = city.admin2Name ?? city.name;
      expect(findArea('NG', city.admin1Name, lgaOrCity.toUpperCase())).toEqual({
        area: { countryCode: 'NG', country: 'Nigeria', state: 'Lagos', lgaOrCity },
      });
      checked++;
    }
    expect(checked).toBeGreaterThan(20);
  });

  it('knows FCT and Abuja as Federal Capital Territory', () => {
    for (const name of ['FCT', 'abuja', 'Abuja FCT', 'Federal Capital Territory']) {
      expect(findArea('NG', name)).toMatchObject({ area: { state: 'Federal Capital Territory' } });
    }
  });

  it('explains what it cannot find and which part, with a suggestion', () => {
    expect(findArea('XX')).toEqual({ problem: 'Country "XX" not found', part: 'countryCode' });
    expect(findArea('NG', 'Lagoss')).toEqual({
      problem: 'State "Lagoss" not found in Nigeria; did you mean Lagos?',
      part: 'state',
    });
    expect(findArea('NG', 'Lagos', 'Ikejaa')).toEqual({
      problem: 'LGA or city "Ikejaa" not found in Lagos; did you mean Ikeja?',
      part: 'lgaOrCity',
    });
    expect(findArea('NG', 'Lagos', 'Qwertyuiop')).toEqual({
      problem: 'LGA or city "Qwertyuiop" not found in Lagos',
      part: 'lgaOrCity',
    });
    // a state of another country is not a state of this one
    expect(findArea('NG', 'California')).toEqual({
      problem: 'State "California" not found in Nigeria',
      part: 'state',
    });
    // nothing left to search with once folded: no guess at all
    expect(findArea('NG', '--')).toEqual({
      problem: 'State "--" not found in Nigeria',
      part: 'state',
    });
  });

  it('points a city name at the LGA its addresses carry', () => {
    expect(findArea('NG', 'FCT', 'Abuja')).toEqual({
      problem:
        'LGA or city "Abuja" not found in Federal Capital Territory; did you mean Abuja Municipal Area Council?',
      part: 'lgaOrCity',
    });
    expect(findArea('NG', 'Rivers', 'Port Harcout')).toEqual({
      problem: 'LGA or city "Port Harcout" not found in Rivers; did you mean Port-Harcourt?',
      part: 'lgaOrCity',
    });
  });

  it('finds every place the starting tariff names, spelled exactly as stored', () => {
    for (const { scope } of nigeriaTierSeeds()) {
      const found = findArea(scope.countryCode, scope.state, scope.city);
      expect(found).toEqual({
        area: expect.objectContaining({
          countryCode: scope.countryCode,
          ...(scope.state ? { state: scope.state } : {}),
          ...(scope.city ? { lgaOrCity: scope.city } : {}),
        }),
      });
    }
  });
});
