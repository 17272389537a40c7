import fc from 'fast-check';
import { resolveAddress, resolvePlace, samePlace } from '../../../services/geo/address';
import { assignDefined, compact } from '../../../services/geo/views';

describe('compact', () => {
  it('keeps the defined properties in their order, null included, and drops undefined ones', () => {
    expect(Object.entries(compact({ b: 1, a: undefined, c: null, d: '' }))).toEqual([
      ['b', 1],
      ['c', null],
      ['d', ''],
    ]);
  });

  it('gives what filtering the entries gives (property)', () => {
    const value = fc.oneof(fc.constant(undefined), fc.constant(null), fc.integer(), fc.string());
    fc.assert(
      // Our sources are literals of field names; `__proto__` would set a prototype instead.
      fc.property(
        fc.dictionary(
          fc.string().filter((k) => k !== '__proto__'),
          value,
        ),
        (source) => {
          const filtered = Object.fromEntries(
            Object.entries(source).filter(([, v]) => v !== undefined),
          );
          const compacted = compact(source);
          expect(Object.entries(compacted)).toEqual(Object.entries(filtered));
          expect(Object.getPrototypeOf(compacted)).toBe(Object.prototype);
        },
      ),
    );
  });

  it('adds after what the target holds, leaving the source as it was', () => {
    const source = { b: 2, c: undefined };
    expect(
      Object.keys(assignDefined<{ a?: number; b: number; c?: number }>({ a: 1 }, source)),
    ).toEqual(['a', 'b']);
    expect(source).toEqual({ b: 2, c: undefined });
  });
});

describe('resolvePlace', () => {
  it("puts the caller's own fields first, then what geo resolved, and leaves out what it does not know", () => {
    const resolved = resolvePlace(
      { lat: 6.6018, lon: 3.3515, addressLine2: 'Block C', swLat: 6.5 },
      'origin',
    );
    const keys = Object.keys(resolved);
    expect(keys.slice(0, 3)).toEqual(['addressLine2', 'swLat', 'addressLine1']);
    expect(resolved).toMatchObject({ addressLine2: 'Block C', swLat: 6.5, lat: 6.6018 });
    for (const value of Object.values(resolved)) expect(value).not.toBeUndefined();
    expect(keys).not.toContain('centerLat');
    expect(keys).not.toContain('contactName');
  });

  it('refuses a point farther than MAX_PLACE_DISTANCE_KM from any known place, naming the field', () => {
    const refusal = (at: { lat: number; lon: number }) => {
      try {
        resolvePlace(at, 'destination');
      } catch (err) {
        return err as { code: number; data: { errors: { field: string; message: string }[] } };
      }
      throw new Error(`resolved ${JSON.stringify(at)}`);
    };
    const nowhere = refusal({ lat: 0, lon: 0 });
    expect(nowhere.code).toBe(400);
    expect(nowhere.data.errors).toEqual([
      { field: 'destination', message: expect.stringMatching(/no known place within 100 km/) },
    ]);
    // Out at sea off Lagos: 237 km from the shore's towns.
    expect(refusal({ lat: 4.3, lon: 3.5 }).code).toBe(400);
    // Where Nigeria's known places are farthest apart, by Lake Chad, it is still described.
    expect(resolvePlace({ lat: 13.5, lon: 14 }, 'destination')).toMatchObject({
      countryCode: 'NG',
    });
  });
});

describe('resolveAddress with a geocoder', () => {
  const geocoding = (
    point: { lat: number; lon: number; state?: string; countryCode?: string } | null,
  ) => ({
    savedAddress: async () => null,
    geocoder: { geocode: async () => point },
  });

  it('describes text by the point the geocoder found', async () => {
    const resolved = await resolveAddress(
      '12 Allen Avenue, Ikeja, Lagos',
      'origin',
      geocoding({ lat: 6.6018, lon: 3.3515 }),
    );
    expect(resolved).toMatchObject({ lat: 6.6018, lon: 3.3515, state: 'Lagos' });
  });

  it('puts a point in the state the geocoder names, described by that state’s nearest place', async () => {
    // Akute, Ogun: its nearest known places are across the line, in Lagos.
    const akute = { lat: 6.676, lon: 3.364 };
    const nearest = await resolveAddress('Akute', 'origin', geocoding(akute));
    expect(nearest).toMatchObject({ state: 'Lagos' });
    const named = await resolveAddress(
      'Akute, Ogun',
      'origin',
      geocoding({ ...akute, state: 'Ogun State' }),
    );
    expect(named).toMatchObject({ ...akute, state: 'Ogun', regionalZone: 'South West' });
    expect(named.lgaOrCity).toBeDefined();
    expect(named.lgaOrCity).not.toBe(nearest.lgaOrCity);
    // A state it does not know: the nearest place's.
    const unknown = await resolveAddress(
      'Akute',
      'origin',
      geocoding({ ...akute, state: 'Atlantis' }),
    );
    expect(unknown).toMatchObject({ state: 'Lagos' });
  });

  it('shows the caller’s addressLine1 and geocodes address, with or without a geocoder', async () => {
    const input = {
      address: '12 Allen Avenue, Ikeja, Lagos',
      addressLine1: 'Shop 4, Allen Plaza',
      addressLine2: 'Opposite the bank',
    };
    const online = await resolveAddress(input, 'origin', geocoding({ lat: 6.6018, lon: 3.3515 }));
    const offline = await resolveAddress(input, 'origin', geocoding(null));
    for (const resolved of [online, offline]) {
      expect(resolved).toMatchObject({
        addressLine1: 'Shop 4, Allen Plaza',
        addressLine2: 'Opposite the bank',
        state: 'Lagos',
      });
    }
    expect(online).toMatchObject({ lat: 6.6018, lon: 3.3515 });
    // Text alone is shown as sent, either way.
    const text = '12 Allen Avenue, Ikeja, Lagos';
    for (const point of [{ lat: 6.6018, lon: 3.3515 }, null]) {
      expect(await resolveAddress({ address: text }, 'origin', geocoding(point))).toMatchObject({
        addressLine1: text,
      });
    }
  });

  it('lets two street texts the geocoder puts on one point be a trip; the same text is refused', async () => {
    // Nominatim answers a street's point for each house number it does not know.
    const street = geocoding({ lat: 6.6018, lon: 3.3515 });
    const [twelve, forty, again] = await Promise.all(
      ['12 Allen Avenue, Ikeja', '40 Allen Avenue, Ikeja', ' 12 allen avenue,  IKEJA'].map((text) =>
        resolveAddress(text, 'origin', street),
      ),
    );
    expect(twelve.h3Index).toBe(forty.h3Index);
    expect(samePlace(twelve, forty)).toBe(false);
    expect(samePlace(twelve, again)).toBe(true);
    // Nor is a pin the caller dropped there the same as a text found there.
    const pin = await resolveAddress({ lat: 6.6018, lon: 3.3515 }, 'destination', street);
    expect(samePlace(twelve, pin)).toBe(false);
    expect(samePlace(pin, { ...pin })).toBe(true);
  });

  it('puts a point in the country the geocoder names, across a border from its nearest place', async () => {
    // Seme, Lagos, at the Benin border: its nearest known place is Seme-Kpodji, Benin.
    const seme = { lat: 6.37, lon: 2.72 };
    expect(await resolveAddress('Seme', 'origin', geocoding(seme))).toMatchObject({
      countryCode: 'BJ',
    });
    const named = await resolveAddress(
      'Seme Border, Badagry',
      'origin',
      geocoding({ ...seme, countryCode: 'ng', state: 'Lagos' }),
    );
    expect(named).toMatchObject({ ...seme, countryCode: 'NG', state: 'Lagos' });
    // The country alone: the nearest place of that country, and its state.
    const country = await resolveAddress(
      'Seme',
      'origin',
      geocoding({ ...seme, countryCode: 'NG' }),
    );
    expect(country).toMatchObject({ countryCode: 'NG', state: 'Lagos', lgaOrCity: 'Badagry' });
    // A country we do not know: the nearest place's, as before.
    const unknown = await resolveAddress(
      'Seme',
      'origin',
      geocoding({ ...seme, countryCode: 'zz' }),
    );
    expect(unknown).toMatchObject({ countryCode: 'BJ' });
  });

  it('resolves the text offline when the geocoder’s point is far from every known place', async () => {
    const resolved = await resolveAddress(
      '12 Allen Avenue, Ikeja, Lagos',
      'origin',
      geocoding({ lat: 0, lon: 0 }),
    );
    expect(resolved).toMatchObject({ state: 'Lagos', countryCode: 'NG' });
    expect(resolved.lat).not.toBe(0);
  });
});
