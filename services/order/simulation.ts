import type { SimulationMode } from '../../libs/contracts/matching';
import { pointBetween, type GeoPoint } from '../../libs/geodesy';
import type { CourierStep } from './courier-run';
import type { DeliveryStatus } from './lifecycle';

/**
 * The sandbox's virtual courier, pure: which step it reports next and when, and where it is
 * meanwhile. Times are real-world ones divided by the time scale (SIMULATOR_TIME_SCALE).
 */

/** How long the courier waits at a stop (handing over, collecting), in simulated time. */
export const HANDOVER_MS = 2 * 60_000;
/** From collected to on the way. */
export const DEPARTURE_MS = 30_000;
export const SIMULATED_FAILURE = 'Simulated failure: the recipient could not be reached';

export interface SimulationRoute {
  /** Where the virtual courier started, the pickup, the drop-off. */
  start: GeoPoint;
  pickup: GeoPoint;
  dropoff: GeoPoint;
  /** Road kilometres to the pickup, and of the priced trip. */
  approachKm: number;
  tripKm: number;
  speedKmh: number;
}

export interface SimulatedStep {
  step: CourierStep;
  /** After the delivery's last transition. */
  afterMs: number;
}

const travelMs = (km: number, speedKmh: number) => (km / speedKmh) * 3_600_000;

/** The virtual courier's next report, or null when there is none to make (over, or waiting). */
export function nextSimulatedStep(
  mode: SimulationMode,
  status: DeliveryStatus,
  route: SimulationRoute,
  scale: number,
): SimulatedStep | null {
  const at = (step: CourierStep, ms: number): SimulatedStep => ({ step, afterMs: ms / scale });
  const travel = (km: number) => travelMs(km, route.speedKmh);
  switch (status) {
    case 'COURIER_ASSIGNED':
      return at('arrived-at-pickup', travel(route.approachKm));
    case 'ARRIVED_AT_PICKUP':
      return at('collected', HANDOVER_MS);
    case 'COLLECTED':
      return at('in-transit', DEPARTURE_MS);
    case 'IN_TRANSIT':
      // A failing run gives up half-way, then brings the packages back.
      return mode === 'failed'
        ? at('failed', travel(route.tripKm / 2))
        : at('arrived-at-dropoff', travel(route.tripKm));
    case 'ARRIVED_AT_DROPOFF':
      return at('delivered', HANDOVER_MS);
    case 'RETURNING':
      return at('returned', travel(route.tripKm / 2));
    default:
      return null;
  }
}

/** Where the virtual courier is, `fraction` (0..1) of the way through its current leg. */
export function simulatedPosition(
  mode: SimulationMode,
  status: DeliveryStatus,
  route: SimulationRoute,
  fraction: number,
): GeoPoint | null {
  const f = Math.min(1, Math.max(0, fraction));
  const halfway = pointBetween(route.pickup, route.dropoff, 0.5);
  switch (status) {
    case 'COURIER_ASSIGNED':
      return pointBetween(route.start, route.pickup, f);
    case 'ARRIVED_AT_PICKUP':
    case 'COLLECTED':
      return route.pickup;
    case 'IN_TRANSIT':
      return mode === 'failed'
        ? pointBetween(route.pickup, halfway, f)
        : pointBetween(route.pickup, route.dropoff, f);
    case 'ARRIVED_AT_DROPOFF':
      return route.dropoff;
    case 'RETURNING':
      return pointBetween(halfway, route.pickup, f);
    default:
      return null;
  }
}
