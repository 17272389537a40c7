export interface Point {
  lat: number;
  lon: number;
}

const RAD = Math.PI / 180;

/**
 * A point that stands for a set of places: their mean on the sphere (so a country across the
 * antimeridian does not average to the other side of the world), moved to the nearest of the
 * places themselves so that it always falls where people live — a plain centroid of a
 * crescent-shaped country can land abroad or at sea.
 */
export function representativePoint(
  lat: ArrayLike<number>,
  lon: ArrayLike<number>,
  members: readonly number[],
): Point | undefined {
  if (members.length === 0) return undefined;
  let x = 0;
  let y = 0;
  let z = 0;
  for (const i of members) {
    const cosLat = Math.cos(lat[i] * RAD);
    x += cosLat * Math.cos(lon[i] * RAD);
    y += cosLat * Math.sin(lon[i] * RAD);
    z += Math.sin(lat[i] * RAD);
  }
  let best = members[0];
  let bestDot = -Infinity;
  for (const i of members) {
    // Largest dot product with the mean vector = smallest angle to it.
    const cosLat = Math.cos(lat[i] * RAD);
    const dot =
      x * cosLat * Math.cos(lon[i] * RAD) +
      y * cosLat * Math.sin(lon[i] * RAD) +
      z * Math.sin(lat[i] * RAD);
    if (dot > bestDot) {
      bestDot = dot;
      best = i;
    }
  }
  return { lat: lat[best], lon: lon[best] };
}

/** representativePoint of each group of the first `count` points, grouped by `key`. */
export function representativePoints(
  lat: ArrayLike<number>,
  lon: ArrayLike<number>,
  key: ArrayLike<string | undefined>,
  count: number,
): Map<string, Point> {
  const groups = new Map<string, number[]>();
  for (let i = 0; i < count; i++) {
    const k = key[i];
    if (k === undefined) continue;
    const members = groups.get(k);
    if (members) members.push(i);
    else groups.set(k, [i]);
  }
  const points = new Map<string, Point>();
  for (const [k, members] of groups) {
    const point = representativePoint(lat, lon, members);
    if (point) points.set(k, point);
  }
  return points;
}
