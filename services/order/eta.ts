import { DEFAULT_CIRCUITY, haversineKm, type GeoPoint } from '../../libs/geodesy';
import { COURIER_TO_PICKUP } from '../../libs/contracts/order';
import type { DeliveryStatus } from './lifecycle';

/** Statuses in which the courier is still on the way to the pickup. */
const TO_PICKUP = COURIER_TO_PICKUP as ReadonlySet<DeliveryStatus>;
/** Statuses in which the packages are on their way to the drop-off. */
const TO_DROPOFF: ReadonlySet<DeliveryStatus> = new Set([
  'COLLECTED',
  'IN_TRANSIT',
  'ARRIVED_AT_DROPOFF',
]);

/** Statuses in which the courier is on the delivery's errand: there and back included. */
export const UNDER_WAY: ReadonlySet<DeliveryStatus> = new Set([
  ...TO_PICKUP,
  ...TO_DROPOFF,
  'RETURNING',
]);

/** The window around the arithmetic: traffic makes a trip later more often than earlier. */
export const ETA_EARLY_FACTOR = 0.85;
export const ETA_LATE_FACTOR = 1.3;

export interface EtaInput {
  status: DeliveryStatus;
  courier: GeoPoint;
  pickup: GeoPoint;
  dropoff: GeoPoint;
  /** The priced trip, pickup to drop-off (the delivery's `distanceKm`). */
  tripKm: number;
  speedKmh: number;
}

/**
 * Road kilometres left until the drop-off: to the pickup and then the priced trip while the
 * courier is on the way to collect, straight to the drop-off once collected; null when the
 * delivery is not under way.
 */
export function remainingKm(input: EtaInput): number | null {
  const road = (a: GeoPoint, b: GeoPoint) => haversineKm(a, b) * DEFAULT_CIRCUITY;
  if (TO_PICKUP.has(input.status)) return road(input.courier, input.pickup) + input.tripKm;
  if (TO_DROPOFF.has(input.status)) return road(input.courier, input.dropoff);
  return null;
}

/** When the delivery should arrive, as a window; null when it is not under way. */
export function etaWindow(input: EtaInput, now: Date): { from: string; to: string } | null {
  const km = remainingKm(input);
  if (km === null || !(input.speedKmh > 0)) return null;
  const seconds = (km / input.speedKmh) * 3600;
  const at = (factor: number) => new Date(now.getTime() + Math.ceil(seconds * factor) * 1000);
  return { from: at(ETA_EARLY_FACTOR).toISOString(), to: at(ETA_LATE_FACTOR).toISOString() };
}
