import { geocodeText } from '../../../../services/geo/gazetteer';
import { GEOCODE_LIMITS, geocodeWork } from '../../../../services/geo/gazetteer/geocode';
import { readCities, readDivisionNames } from '../../../../services/geo/gazetteer/sources';
import { haversineKm } from '../../../../libs/geodesy';

describe('geocodeText', () => {
  it.each([
    ['12 Admiralty Way, Lekki, Lagos', 'Lekki', 'Lagos', 'NG'],
    ['Ikeja', 'Ikeja', 'Lagos', 'NG'],
    ['Kano, Nigeria', 'Kano', 'Kano', 'NG'],
    ['Abuja FCT', 'Abuja', 'Federal Capital Territory', 'NG'],
    ['Paris, France', 'Paris', 'Île-de-France', 'FR'],
    ['Yaba, Lagos', 'Yaba', 'Lagos', 'NG'],
    ['Port Harcourt, Rivers State', 'Port Harcourt', 'Rivers', 'NG'],
    ['5 Aba Road, Port Harcourt', 'Port Harcourt', 'Rivers', 'NG'],
    ['Plot 5, Adeola Odeku Street, Victoria Island, Lagos', 'Victoria Island', 'Lagos', 'NG'],
    ['Ikeja GRA, Lagos State, Nigeria', 'Ikeja', 'Lagos', 'NG'],
    ['23 Allen Avenue Ikeja Lagos', 'Ikeja', 'Lagos', 'NG'],
    ['Lagos', 'Lagos', 'Lagos', 'NG'],
    ['Lagos, NG', 'Lagos', 'Lagos', 'NG'],
    ['Sao Paulo, Brazil', 'São Paulo', 'São Paulo', 'BR'],
    ['London', 'London', 'England', 'GB'],
    ['Ibadn', 'Ibadan', 'Oyo', 'NG'],
  ])('%p → %s, %s, %s', (text, city, state, countryCode) => {
    const result = geocodeText(text);
    expect(result).toMatchObject({
      matchedLevel: 'city',
      city: { name: city },
      state: { name: state },
      country: { countryCode },
    });
    expect(result?.lat).toEqual(expect.any(Number));
    expect(result?.lat).toBe(result?.city?.lat);
    expect(result?.lon).toEqual(expect.any(Number));
    expect(result?.lon).toBe(result?.city?.lon);
  });

  it('is more confident when the parts agree', () => {
    const alone = geocodeText('Lekki')?.confidence ?? 0;
    const withState = geocodeText('Lekki, Lagos')?.confidence ?? 0;
    const withAll = geocodeText('Lekki, Lagos State, Nigeria')?.confidence ?? 0;
    expect(alone).toBeLessThan(withState);
    expect(withState).toBeLessThan(withAll);
    for (const c of [alone, withState, withAll]) {
      expect(c).toBeGreaterThan(0);
      expect(c).toBeLessThanOrEqual(1);
    }
    expect(geocodeText('Ibadn')?.confidence).toBeLessThan(geocodeText('Ibadan')?.confidence ?? 0);
  });

  it('falls back to the state, at its capital', () => {
    expect(geocodeText('Lagos State')).toMatchObject({
      matchedLevel: 'state',
      state: { name: 'Lagos' },
      country: { countryCode: 'NG' },
      lat: 6.59651,
      lon: 3.34205,
    });
    expect(geocodeText('Delta')).toMatchObject({ matchedLevel: 'state', state: { name: 'Delta' } });
    expect(geocodeText('FCT')).toMatchObject({
      matchedLevel: 'state',
      state: { name: 'Federal Capital Territory' },
    });
  });

  it('falls back to the country, at its point', () => {
    const nigeria = geocodeText('Somewhere unknown, Nigeria');
    expect(nigeria).toMatchObject({ matchedLevel: 'country', country: { countryCode: 'NG' } });
    expect(nigeria?.city).toBeUndefined();
    expect(nigeria?.state).toBeUndefined();
    expect(nigeria).toMatchObject({ lat: 8.87952, lon: 7.22756 });
    expect(nigeria?.country).toMatchObject({ lat: 8.87952, lon: 7.22756 });
  });

  it('prefers Nigeria when the text names no country, and the named country when it does', () => {
    expect(geocodeText('Niger')?.country.countryCode).toBe('NG');
    expect(geocodeText('Warri')?.city?.countryCode).toBe('NG');
    expect(geocodeText('Lagos, Portugal')?.city).toMatchObject({
      name: 'Lagos',
      countryCode: 'PT',
    });
  });

  it.each(['asdfgh', '', '   ', '12 34', ', ,'])('returns null for %p', (text) => {
    expect(geocodeText(text)).toBeNull();
  });

  it('places a street address at its city, with the same ids, coordinates and confidence every time', () => {
    expect(geocodeText('12 Admiralty Way, Lekki, Lagos')).toEqual({
      matchedLevel: 'city',
      confidence: 0.75,
      lat: 6.44632,
      lon: 3.47717,
      city: {
        locationId: 'ccf39f57-06a8-52e7-8cf7-608d0a78b046',
        name: 'Lekki',
        lat: 6.44632,
        lon: 3.47717,
        countryCode: 'NG',
        regionalZone: 'South West',
        source: 'geonames',
        admin1Id: '7f7f1402-add2-5c78-acee-7e6db363e8fa',
        admin1Name: 'Lagos',
        admin2Id: '65d4a779-2d09-58a2-b128-9936403840dc',
        admin2Name: 'Eti Osa',
      },
      state: {
        admin1Id: '7f7f1402-add2-5c78-acee-7e6db363e8fa',
        code: 'NG.05',
        name: 'Lagos',
        countryCode: 'NG',
        regionalZone: 'South West',
        lat: 6.59651,
        lon: 3.34205,
        capital: 'Ikeja',
      },
      country: {
        countryCode: 'NG',
        countryCodeAlpha3: 'NGA',
        name: 'Nigeria',
        continentCode: 'AF',
        continentName: 'Africa',
        lat: 8.87952,
        lon: 7.22756,
      },
    });
  });
});

describe('geocodeWork', () => {
  const repeat = (phrase: string, separator = ' ') =>
    Array.from({ length: 60 }, () => phrase)
      .join(separator)
      .slice(0, 300);

  // Before the bounds, "san jose" × 37 made 1,650 candidates and some 5 million comparisons.
  it.each([
    ['san jose'],
    ['salem'],
    ['santa maria'],
    ['salem aurora oxford hudson marion milton newton union'],
    ['springfield franklin clinton georgetown madison washington arlington richmond'],
  ])('keeps the candidates and comparisons of %p repeated to 300 characters bounded', (phrase) => {
    const work = geocodeWork(repeat(phrase));
    expect(GEOCODE_LIMITS.mentions).toBeLessThanOrEqual(400);
    expect(work.mentions).toBeLessThanOrEqual(GEOCODE_LIMITS.mentions);
    expect(work.comparisons).toBeLessThanOrEqual(2 * GEOCODE_LIMITS.mentions ** 2);
  });

  it('tries a repeated unknown segment with typos once', () => {
    expect(geocodeWork(repeat('abcdefghij', ',')).mentions).toBeLessThanOrEqual(10);
  });

  it('does the same few comparisons for an ordinary address', () => {
    expect(geocodeWork('12 Admiralty Way, Lekki Phase 1, Lagos')).toEqual({
      mentions: 4,
      kept: 4,
      comparisons: 29,
    });
  });
});

describe('geocodeText in Nigeria, when the text names no country', () => {
  // Each of these once answered a foreign place: Victoria (Canada), Iesolo (Italy), Kudwā
  // (India), Lügde (Germany), Kequ (China), Olne (Belgium), Chiba (Japan), Moe (Australia),
  // Nyanga (Gabon), Elele for Eleme, the state of Ogun for a road in Ikeja, nothing for LGAs.
  it.each([
    ['Victoria Garden City, Lekki', 'Lekki', 'Lagos', 'Eti Osa'],
    ['Ogun State Road, Ikeja', 'Ikeja', 'Lagos', 'Ikeja'],
    ['Eleme', undefined, 'Rivers', 'Eleme'],
    ['Ojo', undefined, 'Lagos', 'Ojo'],
    ['Amuwo Odofin', undefined, 'Lagos', 'Amuwo Odofin'],
    ['Kosofe', undefined, 'Lagos', 'Kosofe'],
    ['Obio Akpor', undefined, 'Rivers', 'Obio/Akpor'],
    ['Ojo, Lagos', undefined, 'Lagos', 'Ojo'],
  ])('%p → a place in %s, %s (LGA %s)', (text, city, state, lga) => {
    const result = geocodeText(text);
    expect(result).toMatchObject({
      matchedLevel: 'city',
      state: { name: state },
      country: { countryCode: 'NG' },
      city: { admin2Name: lga, ...(city && { name: city }) },
    });
  });

  // GeoNames has no row for these; the curated supplement has, so they are found at home
  // rather than answered by a namesake abroad or not at all.
  it.each([
    ['Jakande Estate, Isolo', 'Isolo', 'Lagos', 'Oshodi/Isolo'],
    ['Kubwa', 'Kubwa', 'Federal Capital Territory', 'Bwari'],
    ['Lugbe', 'Lugbe', 'Federal Capital Territory', 'Abuja Municipal Area Council'],
    ['Nyanya, Abuja', 'Nyanya', 'Federal Capital Territory', 'Abuja Municipal Area Council'],
    ['Ketu', 'Ketu', 'Lagos', 'Kosofe'],
    ['Onne', 'Onne', 'Rivers', 'Eleme'],
    ['Choba, Port Harcourt', 'Choba', 'Rivers', 'Obio/Akpor'],
    ['Mowe', 'Mowe', 'Ogun', 'Obafemi Owode'],
    ['Mararaba', 'Mararaba', 'Nasarawa', 'Karu'],
    ['14 Adeola Odeku Street, Victoria Island', 'Victoria Island', 'Lagos', 'Eti Osa'],
  ])('%p → %s, %s (LGA %s)', (text, city, state, lga) => {
    expect(geocodeText(text)).toMatchObject({
      matchedLevel: 'city',
      state: { name: state },
      country: { countryCode: 'NG' },
      city: { name: city, admin2Name: lga },
    });
  });

  it('puts every curated district near a GeoNames place of its own LGA, and none its state has', () => {
    const cities = readCities(readDivisionNames());
    const inTheirState = new Set<string>();
    for (let j = 0; j < cities.curatedFrom; j++) {
      inTheirState.add(`${cities.admin1[j]} ${cities.name[j].toLowerCase()}`);
    }
    for (let i = cities.curatedFrom; i < cities.name.length; i++) {
      const district = { lat: cities.lat[i], lon: cities.lon[i] };
      expect([cities.name[i], cities.admin2[i]]).toEqual([cities.name[i], expect.any(String)]);
      expect([
        cities.name[i],
        inTheirState.has(`${cities.admin1[i]} ${cities.name[i].toLowerCase()}`),
      ]).toEqual([cities.name[i], false]);
      let nearestKm = Infinity;
      for (let j = 0; j < cities.curatedFrom; j++) {
        if (cities.admin2[j] !== cities.admin2[i]) continue;
        nearestKm = Math.min(
          nearestKm,
          haversineKm(district, { lat: cities.lat[j], lon: cities.lon[j] }),
        );
      }
      // A wrong LGA code or a slipped digit puts a district tens or hundreds of km away.
      expect([cities.name[i], nearestKm < 30]).toEqual([cities.name[i], true]);
    }
  });

  it.each([
    ['Victoria, British Columbia', 'Victoria', 'CA'],
    ['Lugde, Germany', 'Lügde', 'DE'],
    ['Kudwa, India', 'Kudwā', 'IN'],
    ['Lagos, Portugal', 'Lagos', 'PT'],
    ['Accra, Ghana', 'Accra', 'GH'],
    ['Accra', 'Accra', 'GH'],
    ['Paris', 'Paris', 'FR'],
    ['Nairobi', 'Nairobi', 'KE'],
    ['Cotonou', 'Cotonou', 'BJ'],
  ])('%p, abroad, still resolves to %s (%s)', (text, city, countryCode) => {
    expect(geocodeText(text)).toMatchObject({
      matchedLevel: 'city',
      city: { name: city },
      country: { countryCode },
    });
  });
});
