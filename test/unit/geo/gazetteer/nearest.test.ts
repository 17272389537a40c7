import fc from 'fast-check';
import { nearestCities, nearestCity } from '../../../../services/geo/gazetteer';
import { distanceKmBetween } from './helpers';

describe('nearestCity', () => {
  it('finds Ikeja, or a Lagos town next to it, for a point in Ikeja', () => {
    const near = nearestCity(6.6018, 3.3515);
    expect(near).not.toBeNull();
    expect(near?.city.admin1Name).toBe('Lagos');
    expect(near?.distanceKm).toBeLessThan(3);
    expect(near?.city.name).toBe('Ikeja');
  });

  it('finds London for a point in central London', () => {
    expect(nearestCity(51.5074, -0.1278)?.city).toMatchObject({
      name: 'London',
      countryCode: 'GB',
    });
  });

  it('finds Yaba (curated) for a point at Yaba', () => {
    expect(nearestCity(6.51, 3.378)?.city).toMatchObject({ name: 'Yaba', source: 'curated' });
  });

  it('works across the antimeridian', () => {
    const near = nearestCity(-17.8, 179.99);
    expect(near?.city.countryCode).toBe('FJ');
    expect(near?.distanceKm).toBeLessThan(300);
  });

  it('reports the great-circle distance to the city', () => {
    fc.assert(
      fc.property(
        fc.double({ min: -60, max: 70, noNaN: true }),
        fc.double({ min: -180, max: 180, noNaN: true }),
        (lat, lon) => {
          const near = nearestCity(lat, lon);
          expect(near).not.toBeNull();
          if (!near) return;
          expect(near.distanceKm).toBeCloseTo(distanceKmBetween({ lat, lon }, near.city), 3);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('is never beaten by another city (checked against a scan of the closest few)', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 4, max: 14, noNaN: true }),
        fc.double({ min: 2.5, max: 15, noNaN: true }),
        (lat, lon) => {
          const [first, ...rest] = nearestCities(lat, lon, 10);
          for (const other of rest)
            expect(other.distanceKm).toBeGreaterThanOrEqual(first.distanceKm);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('returns null for coordinates off the globe', () => {
    expect(nearestCity(91, 0)).toBeNull();
    expect(nearestCity(0, 181)).toBeNull();
    expect(nearestCity(Number.NaN, 0)).toBeNull();
  });

  it('limits nearestCities by count and distance', () => {
    expect(nearestCities(6.6018, 3.3515, 5)).toHaveLength(5);
    const within = nearestCities(6.6018, 3.3515, 1000, 5);
    expect(within.length).toBeGreaterThan(0);
    expect(within.every((n) => n.distanceKm <= 5)).toBe(true);
  });
});
