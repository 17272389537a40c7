import type KDBush from 'kdbush';
import type * as GeoKdbush from 'geokdbush';

/*
 * kdbush and geokdbush ship as ES modules only. Node (>= 22.12) loads those with require(),
 * but jest 29 swaps in its own module loader, which cannot; so both are loaded through
 * Node's own require, which behaves the same under node, tsx and jest.
 */
const nodeRequire = process.getBuiltinModule('node:module').createRequire(__filename);

const KDBushClass = (nodeRequire('kdbush') as { default: typeof KDBush }).default;
const geokdbush = nodeRequire('geokdbush') as typeof GeoKdbush;

export type PointIndex = KDBush;

/** A static kd-tree over (lon, lat) points; point i gets id i. */
export function buildPointIndex(lat: Float64Array, lon: Float64Array): PointIndex {
  // Coordinates are kept as Float64Array, kdbush's default. Passing the class would fail
  // under jest, whose Float64Array is another realm's.
  const index = new KDBushClass(lat.length, 64);
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
