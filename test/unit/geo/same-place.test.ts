import { resolvePlace, samePlace } from '../../../services/geo/address';
import { gazetteer } from '../../../services/geo/gazetteer/load';

const same = (a: Parameters<typeof resolvePlace>[0], b: Parameters<typeof resolvePlace>[0]) =>
  samePlace(resolvePlace(a, 'origin'), resolvePlace(b, 'destination'));

describe('samePlace (decision 13)', () => {
  it('lets two different addresses that fall back to one city centre be a trip', () => {
    // Both resolve to Ikeja's centre, in one cell: once refused as "the same".
    const a = resolvePlace('12 Allen Avenue, Ikeja, Lagos', 'origin');
    const b = resolvePlace('Computer Village, Ikeja, Lagos', 'destination');
    expect(a.h3Index).toBe(b.h3Index);
    expect(samePlace(a, b)).toBe(false);
    expect(
      same(
        'Plot 5 Adeola Odeku Street, Victoria Island',
        '1 Ozumba Mbadiwe Avenue, Victoria Island',
      ),
    ).toBe(false);
  });

  it('refuses the same text, folded', () => {
    expect(same('Ikeja, Lagos', '  ikeja,  LAGOS ')).toBe(true);
    expect(same('Ikeja', { address: 'Ikeja' })).toBe(true);
  });

  it('refuses two exact points in one cell, and only those', () => {
    expect(same({ lat: 6.6018, lon: 3.3515 }, { lat: 6.6018, lon: 3.3515 })).toBe(true);
    expect(same({ lat: 6.6018, lon: 3.3515 }, { lat: 6.6019, lon: 3.3516 })).toBe(true);
    expect(same({ lat: 6.6018, lon: 3.3515 }, { lat: 6.62, lon: 3.36 })).toBe(false);
  });

  it('does not call an exact point the same as a city centre that shares its cell', () => {
    const centre = resolvePlace('Ikeja', 'origin');
    const pin = { lat: centre.lat, lon: centre.lon };
    expect(same(pin, 'Ikeja')).toBe(false);
  });
});

describe('a mapPlaceId', () => {
  it('names its city in any case, as every uuid of the API is read', () => {
    const g = gazetteer();
    const id = g.cities.idOf(0);
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const exact = resolvePlace({ mapPlaceId: id }, 'origin');
    expect(resolvePlace({ mapPlaceId: id.toUpperCase() }, 'origin')).toEqual(exact);
  });
});

describe('a phrase', () => {
  it('names its cell, and a mistyped one is refused naming the field, not searched for', () => {
    const ikeja = resolvePlace('Ikeja, Lagos', 'origin');
    expect(resolvePlace({ phrase: ikeja.phrase }, 'origin').h3Index).toBe(ikeja.h3Index);
    const [first, second] = ikeja.phrase.split('.');
    const typo = `${first}.${second}.qqzzxq`;
    let refused: unknown;
    try {
      resolvePlace({ phrase: typo }, 'destination');
    } catch (err) {
      refused = err;
    }
    expect(refused).toMatchObject({
      code: 400,
      data: { errors: [expect.objectContaining({ field: 'destination.phrase' })] },
    });
    expect(() => resolvePlace({ phrase: 'ikeja' }, 'origin')).toThrow(/origin\.phrase/);
  });
});
