import Decimal from 'decimal.js';

/** Degrees, WGS 84. */
export interface GeoPoint {
  lat: number;
  lon: number;
}

/** IUGG mean Earth radius (R1); the sphere that best fits the ellipsoid on average. */
export const EARTH_MEAN_RADIUS_KM = 6371.0088;

/** Road length over straight-line length when no routing server is configured. */
export const DEFAULT_CIRCUITY = 1.3;

const SECONDS_PER_HOUR = 3600;
const DISTANCE_DECIMALS = 3;

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

function assertDistance(km: number, what: string): void {
  if (!Number.isFinite(km) || km < 0) {
    throw new RangeError(`${what} must be a finite number >= 0, got ${km}`);
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

/** Road distance estimated from the straight line when no routing server answers. */
export function roadDistanceKm(straightKm: number, circuity: number = DEFAULT_CIRCUITY): number {
  assertDistance(straightKm, 'straightKm');
  // Below 1 the "road" would be shorter than the straight line: a configuration mistake.
  if (!Number.isFinite(circuity) || circuity < 1) {
    throw new RangeError(`circuity must be a finite number >= 1, got ${circuity}`);
  }
  return straightKm * circuity;
}

/**
 * The distance that prices and times a trip: the larger of the two, because a router can
 * snap both ends onto one road and report less than the straight line, and a trip is never
 * shorter than the straight line.
 */
export function routeDistance(distances: { straightKm: number; roadKm: number }): number {
  assertDistance(distances.straightKm, 'straightKm');
  assertDistance(distances.roadKm, 'roadKm');
  return Math.max(distances.straightKm, distances.roadKm);
}

/**
 * Whole seconds, rounded up so a promise is never earlier than the arithmetic. Decimal
 * keeps float noise (1.1 km * 3600 / 30 km/h = 132.00000000000003) from adding a second.
 */
export function etaSeconds(distanceKm: number, speedKmh: number): number {
  assertDistance(distanceKm, 'distanceKm');
  if (!Number.isFinite(speedKmh) || speedKmh <= 0) {
    throw new RangeError(`speedKmh must be a finite number > 0, got ${speedKmh}`);
  }
  return new Decimal(distanceKm)
    .times(SECONDS_PER_HOUR)
    .dividedBy(speedKmh)
    .toDecimalPlaces(0, Decimal.ROUND_CEIL)
    .toNumber();
}

/**
 * `distanceKm` as the API shows it: three decimals (metres), half up on the decimal
 * written form, so 1.0005 becomes 1.001 although the double is slightly below it.
 */
export function roundDistanceKm(km: number): number {
  assertDistance(km, 'distanceKm');
  return new Decimal(km).toDecimalPlaces(DISTANCE_DECIMALS, Decimal.ROUND_HALF_UP).toNumber();
}
