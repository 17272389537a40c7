import { distanceKm, nearestPoints } from './kd';
import { gazetteer } from './load';
import type { NearestCity } from './types';

/**
 * The city nearest to a point (great-circle distance) and how far it is; for reverse
 * geocoding a map pin or a courier's position. Null only for coordinates off the globe.
 */
export function nearestCity(lat: number, lon: number): NearestCity | null {
  return nearestCities(lat, lon, 1)[0] ?? null;
}

/** The `count` cities nearest to a point, nearest first, optionally within `maxKm`. */
export function nearestCities(
  lat: number,
  lon: number,
  count: number,
  maxKm = Infinity,
): NearestCity[] {
  if (!isCoordinate(lat, 90) || !isCoordinate(lon, 180) || !(count >= 1)) return [];
  const g = gazetteer();
  return nearestPoints(g.cityPoints, lat, lon, Math.floor(count), maxKm).map((i) => ({
    city: g.cities.city(i),
    distanceKm: distanceKm(lat, lon, g.cities.lat[i], g.cities.lon[i]),
  }));
}

function isCoordinate(value: number, bound: number): boolean {
  return Number.isFinite(value) && value >= -bound && value <= bound;
}
