/** Distances on the Earth, for every service that measures one (geo, order, matching). */

/** Degrees, WGS 84. */
export interface GeoPoint {
  lat: number;
  lon: number;
}

/** IUGG mean Earth radius (R1); the sphere that best fits the ellipsoid on average. */
export const EARTH_MEAN_RADIUS_KM = 6371.0088;

export function isGeoPoint(point: GeoPoint): boolean {
  return (
    Number.isFinite(point.lat) &&
    Number.isFinite(point.lon) &&
    Math.abs(point.lat) <= 90 &&
    Math.abs(point.lon) <= 180
  );
}

function assertGeoPoint(point: GeoPoint, what: string): void {
  if (!isGeoPoint(point)) {
    throw new RangeError(
      `${what} must have lat in [-90, 90] and lon in [-180, 180], got ${point.lat}, ${point.lon}`,
    );
  }
}

const toRadians = (degrees: number): number => (degrees * Math.PI) / 180;

/** Great-circle distance on the mean-radius sphere (error under 0.5 % against WGS 84). */
export function haversineKm(a: GeoPoint, b: GeoPoint): number {
  assertGeoPoint(a, 'a');
  assertGeoPoint(b, 'b');
  const phi1 = toRadians(a.lat);
  const phi2 = toRadians(b.lat);
  const sinHalfDLat = Math.sin((phi2 - phi1) / 2);
  const sinHalfDLon = Math.sin(toRadians(b.lon - a.lon) / 2);
  const h = sinHalfDLat * sinHalfDLat + Math.cos(phi1) * Math.cos(phi2) * sinHalfDLon * sinHalfDLon;
  // Rounding can push h a hair above 1 near antipodes, where asin would return NaN.
  return 2 * EARTH_MEAN_RADIUS_KM * Math.asin(Math.sqrt(Math.min(1, h)));
}

/**
 * The point `fraction` (0..1) of the way from `a` to `b`, on a straight line in degrees, the
 * short way round: from lon 179.9 to -179.9 across the antimeridian, not through lon 0. Fine for
 * the short legs it draws (a simulated courier's way), not for a great circle.
 */
export function pointBetween(a: GeoPoint, b: GeoPoint, fraction: number): GeoPoint {
  const apart = b.lon - a.lon;
  const eastward = apart > 180 ? apart - 360 : apart < -180 ? apart + 360 : apart;
  const lon = a.lon + eastward * fraction;
  return {
    lat: a.lat + (b.lat - a.lat) * fraction,
    lon: lon > 180 ? lon - 360 : lon < -180 ? lon + 360 : lon,
  };
}

/** Road length over straight-line length, where no router measured the road. */
export const DEFAULT_CIRCUITY = 1.3;

/**
 * The grid, in degrees (about 1.1 km), a point is told on to someone who needs its area, not
 * its door: the tracking page's map, a courier's offer. Told exactly, a drop-off placed by its
 * distance from a shop's public address was its customer's door.
 */
const AREA_GRID_DEGREES = 0.01;
const CELLS_PER_DEGREE = 1 / AREA_GRID_DEGREES;

/** `point` at the middle of its grid cell (0.01°), with no binary fraction noise: 6.45, not 6.4500000000000002. */
export function onAreaGrid({ lat, lon }: GeoPoint): GeoPoint {
  const snap = (degrees: number) => Math.round(degrees * CELLS_PER_DEGREE) / CELLS_PER_DEGREE;
  return { lat: snap(lat), lon: snap(lon) };
}
