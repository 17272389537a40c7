import { findArea } from '../../../../services/geo/gazetteer';
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

  it('knows FCT and Abuja as Federal Capital Territory', () => {
    for (const name of ['FCT', 'abuja', 'Federal Capital Territory']) {
      expect(findArea('NG', name)).toMatchObject({ area: { state: 'Federal Capital Territory' } });
    }
  });

  it('explains what it cannot find, with a suggestion', () => {
    expect(findArea('XX')).toEqual({ problem: 'Country "XX" not found' });
    expect(findArea('NG', 'Lagoss')).toEqual({
      problem: 'State "Lagoss" not found in Nigeria; did you mean Lagos?',
    });
    expect(findArea('NG', 'Lagos', 'Ikejaa')).toEqual({
      problem: 'LGA or city "Ikejaa" not found in Lagos; did you mean Ikeja?',
    });
    expect(findArea('NG', 'Lagos', 'Qwertyuiop')).toEqual({
      problem: 'LGA or city "Qwertyuiop" not found in Lagos',
    });
    // a state of another country is not a state of this one
    expect(findArea('NG', 'California')).toMatchObject({ problem: expect.any(String) });
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
