import type { Logger } from 'moleculer';
import type { Caller } from '../../../libs/contracts';
import { conflict } from '../../../libs/errors';
import type { CourierRun } from '../../../services/order/courier-run';
import type { DeliveryRecord } from '../../../services/order/delivery-record';
import { Simulator } from '../../../services/order/simulator';
import type { OrderStore } from '../../../services/order/store';
import type { DeliveryTransitions } from '../../../services/order/transitions';

/**
 * A step the virtual courier is refused (409) is either one another replica's tick took
 * first, which the delivery's version then shows, or one every tick will be refused: that one
 * is told, not retried in silence.
 */
const DELIVERY_ID = 'd-1';
const PLACE = { lat: 6.5, lon: 3.4 };

/** A simulated delivery at pickup, its next step long due, at `version`. */
function atPickup(version: number): DeliveryRecord {
  return {
    _id: DELIVERY_ID,
    simulation: 'delivered',
    lifecycle: { status: 'ARRIVED_AT_PICKUP' },
    assignment: { courierId: 'virtual-1' },
    originId: 'o',
    destinationId: 'd',
    distanceKm: 5,
    fleetType: { id: 'bike' },
    updatedAt: new Date(Date.now() - 3_600_000),
    version,
  } as unknown as DeliveryRecord;
}

/** Runs one tick over the delivery whose reads answer `versions` in turn; what was warned. */
async function tickRefused(versions: number[]) {
  const warned: string[] = [];
  const reads = [...versions];
  const simulator = new Simulator({
    store: {
      simulations: async () => [{ deliveryId: DELIVERY_ID, since: new Date() }],
      addresses: async () =>
        new Map([
          ['o', { fields: PLACE }],
          ['d', { fields: { lat: 6.55, lon: 3.45 } }],
        ]),
      notificationsOf: async () => [],
    } as unknown as OrderStore,
    transitions: {
      current: async () => atPickup(reads.shift() ?? versions[versions.length - 1]),
    } as unknown as DeliveryTransitions,
    courierRun: {
      advance: async () => {
        throw conflict('proof locked: too many wrong codes');
      },
    } as unknown as CourierRun,
    services: () =>
      ({
        call: async (action: string) =>
          action === 'geo.getFleetType' ? { averageSpeedKmh: 30 } : {},
      }) as unknown as Caller,
    scale: 1,
    intervalMs: 60_000,
    logger: () => ({ warn: (message: string) => warned.push(message) }) as unknown as Logger,
  });
  await (simulator as unknown as { periodic: { runOnce(): Promise<void> } }).periodic.runOnce();
  return warned;
}

it('tells a step refused while the delivery stayed as it was', async () => {
  expect(await tickRefused([3, 3])).toEqual(['simulator: step not taken; next tick retries']);
});

it('passes over a step another replica took meanwhile', async () => {
  expect(await tickRefused([3, 4])).toEqual([]);
});
