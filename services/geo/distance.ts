import Decimal from 'decimal.js';

// Points and the great-circle distance are shared with courier matching, from geo's contract.
export {
  EARTH_MEAN_RADIUS_KM,
  haversineKm,
  isGeoPoint,
  type GeoPoint,
} from '../../libs/contracts/geo';

/** Road length over straight-line length when no routing server is configured. */
export const DEFAULT_CIRCUITY = 1.3;

const SECONDS_PER_HOUR = 3600;
const DISTANCE_DECIMALS = 3;

function assertDistance(km: number, what: string): void {
  if (!Number.isFinite(km) || km < 0) {
    throw new RangeError(`${what} must be a finite number >= 0, got ${km}`);
  }
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
