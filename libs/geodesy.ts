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

/** Road length over straight-line length, where no router measured the road. */
export const DEFAULT_CIRCUITY = 1.3;
