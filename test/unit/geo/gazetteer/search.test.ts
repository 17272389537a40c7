import {
  foldName,
  listCities,
  listCountries,
  listStates,
  searchCities,
  searchCountries,
  searchStates,
} from '../../../../services/geo/gazetteer';

const names = (places: readonly { name: string }[]) => places.map((p) => p.name);

describe('foldName', () => {
  it.each([
    ['São Paulo', 'sao paulo'],
    ['  Ado-Ekiti ', 'ado ekiti'],
    ["Nuku'alofa", 'nukualofa'],
    ['Nuku‘alofa', 'nukualofa'],
    ['Zürich', 'zurich'],
    ['Łódź', 'lodz'],
    ['Straße', 'strasse'],
    ['ABUJA', 'abuja'],
    ['Port   Harcourt', 'port harcourt'],
  ])('folds %p to %p', (text, folded) => {
    expect(foldName(text)).toBe(folded);
  });
});

describe('searchCities', () => {
  it.each([
    ['lagos', 'Lagos', 'NG'],
    ['LAGOS', 'Lagos', 'NG'],
    ['abuja', 'Abuja', 'NG'],
    ['kano', 'Kano', 'NG'],
    ['ibadan', 'Ibadan', 'NG'],
    ['paris', 'Paris', 'FR'],
    ['london', 'London', 'GB'],
  ])('%p finds %s (%s) first', (query, name, countryCode) => {
    expect(searchCities(query, 10)[0]).toMatchObject({ name, countryCode });
  });

  it.each([
    ['Ojo', 'Ojo'],
    ['Amuwo Odofin', 'Amuwo Odofin'],
    ['kosofe', 'Kosofe'],
    ['obio akpor', 'Obio/Akpor'],
  ])('finds a place of the LGA %p, which is named by no place of its own', (query, lga) => {
    expect(searchCities(query, 10)[0]).toMatchObject({ countryCode: 'NG', admin2Name: lga });
  });

  it('ranks Lagos, Nigeria before Lagos, Portugal', () => {
    const lagos = searchCities('lagos', 10).filter((c) => c.name === 'Lagos');
    expect(lagos.map((c) => c.countryCode)).toEqual(['NG', 'PT']);
  });

  it('finds Port Harcourt among the first results for "port"', () => {
    expect(names(searchCities('port', 5))).toContain('Port Harcourt');
    expect(searchCities('port', 5)[0].name).toBe('Port Harcourt');
  });

  it('matches a later word of the name ("harcourt")', () => {
    expect(searchCities('harcourt', 5)[0].name).toBe('Port Harcourt');
  });

  it('is accent-insensitive both ways', () => {
    expect(searchCities('Sao Paulo', 5)[0]).toMatchObject({ name: 'São Paulo', countryCode: 'BR' });
    expect(names(searchCities('zurich', 5))).toContain('Zürich');
    expect(searchCities('Ikéja', 1)[0].name).toBe('Ikeja');
  });

  it.each([
    ['ibadn', 'Ibadan'],
    ['lagso', 'Lagos'],
    ['abujaa', 'Abuja'],
    ['kadunna', 'Kaduna'],
    ['port harcuort', 'Port Harcourt'],
  ])('tolerates the typo in %p', (query, name) => {
    expect(searchCities(query, 5)[0].name).toBe(name);
  });

  it('ranks exact names, then prefixes, then typos', () => {
    // "kan": the village Kan (Myanmar) is an exact match, Kano a prefix match.
    const kan = searchCities('kan', 5);
    expect(kan[0].name).toBe('Kan');
    expect(kan[1].name).toBe('Kano');
    // "lagos": exact Lagos (both), names starting with "lagos", a later word, then typos.
    const rank = (name: string) => {
      const folded = foldName(name);
      if (folded === 'lagos') return 0;
      if (folded.startsWith('lagos')) return 1;
      if (folded.includes(' lagos')) return 2;
      return 3;
    };
    const ranks = searchCities('lagos', 12).map((c) => rank(c.name));
    expect(ranks).toEqual([...ranks].sort());
    expect(new Set(ranks)).toEqual(new Set([0, 1, 2, 3]));
  });

  it('puts important places first within a rank', () => {
    // Every prefix match for "a": Nigeria's largest cities lead.
    expect(names(searchCities('a', 3))).toEqual(['Abuja', 'Aba', 'Abeokuta']);
  });

  it('respects the limit and the country filter', () => {
    expect(searchCities('san', 7)).toHaveLength(7);
    expect(searchCities('san', 0)).toEqual([]);
    const inNigeria = searchCities('lagos', 10, { countryCode: 'NG' });
    expect(inNigeria.length).toBeGreaterThan(0);
    expect(inNigeria.every((c) => c.countryCode === 'NG')).toBe(true);
    expect(searchCities('lagos', 10, { countryCode: 'XX' })).toEqual([]);
  });

  it('finds nothing for gibberish', () => {
    expect(searchCities('qxzqxzqxz', 10)).toEqual([]);
  });
});

describe('searchStates', () => {
  it.each([
    ['fct', 'Federal Capital Territory'],
    ['abuja fct', 'Federal Capital Territory'],
    ['federal capital', 'Federal Capital Territory'],
    ['akwa', 'Akwa Ibom'],
    ['cross river state', 'Cross River'],
    ['nassarawa', 'Nasarawa'],
    ['lagos', 'Lagos'],
    ['ogu', 'Ogun'],
  ])('%p finds %s first', (query, name) => {
    const [state] = searchStates(query, 5);
    expect(state).toMatchObject({ name, countryCode: 'NG' });
  });

  it('tolerates a typo ("Anambara")', () => {
    expect(searchStates('Anambara', 1)[0].name).toBe('Anambra');
  });

  it('finds states elsewhere too', () => {
    expect(searchStates('California', 1)[0]).toMatchObject({
      countryCode: 'US',
      regionalZone: 'United States',
    });
  });
});

describe('searchCountries', () => {
  it.each([
    ['nigeria', 'NG'],
    ['nig', 'NG'],
    ['NG', 'NG'],
    ['nga', 'NG'],
    ['france', 'FR'],
    ['usa', 'US'],
    ['united states of america', 'US'],
    ['uk', 'GB'],
    ["cote d'ivoire", 'CI'],
    ['ivory coast', 'CI'],
    ['turkey', 'TR'],
    ['nigeira', 'NG'],
  ])('%p finds %s first', (query, countryCode) => {
    expect(searchCountries(query, 3)[0].countryCode).toBe(countryCode);
  });

  it('gives ISO codes, continent and a point', () => {
    expect(searchCountries('nigeria', 1)[0]).toEqual({
      countryCode: 'NG',
      countryCodeAlpha3: 'NGA',
      name: 'Nigeria',
      continentCode: 'AF',
      continentName: 'Africa',
      lat: expect.any(Number),
      lon: expect.any(Number),
    });
  });
});

describe('lists without a query', () => {
  it('lead with Nigeria and its largest cities', () => {
    expect(listCountries(1)[0].countryCode).toBe('NG');
    expect(names(listCities(5))).toEqual(['Lagos', 'Kano', 'Ibadan', 'Abuja', 'Port Harcourt']);
    expect(listCities(50)).toHaveLength(50);
    expect(listCountries(50)).toHaveLength(50);
  });

  it('list every country once', () => {
    const all = listCountries(1000);
    expect(all.length).toBeGreaterThanOrEqual(249);
    expect(new Set(all.map((c) => c.countryCode)).size).toBe(all.length);
  });

  it('is what an empty query returns', () => {
    expect(searchCities('  ', 3)).toEqual(listCities(3));
    expect(searchStates('', 37)).toEqual(listStates(37));
    expect(searchCountries('', 2)).toEqual(listCountries(2));
  });
});
