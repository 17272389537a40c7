import KDBush from 'kdbush';
import * as geokdbush from 'geokdbush';

export type PointIndex = KDBush;

/** A static kd-tree over (lon, lat) points; point i gets id i. */
export function buildPointIndex(lat: Float64Array, lon: Float64Array): PointIndex {
  const index = new KDBush(lat.length, 64);
  for (let i = 0; i < lat.length; i++) index.add(lon[i], lat[i]);
  return index.finish();
}

/** Ids of the `count` points nearest (great-circle) to the given point, nearest first. */
export function nearestPoints(
  index: PointIndex,
  lat: number,
  lon: number,
  count: number,
  maxKm = Infinity,
): number[] {
  return geokdbush.around(index, lon, lat, count, maxKm);
}

/** Great-circle distance in kilometres. */
export function distanceKm(lat1: number, lon1: number, lat2: number, lon2: number): number {
  return geokdbush.distance(lon1, lat1, lon2, lat2);
}
