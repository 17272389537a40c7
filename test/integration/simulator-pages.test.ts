import { randomUUID } from 'node:crypto';
import type { Logger } from 'moleculer';
import type { DeliveryRecord } from '../../services/order/delivery-record';
import { SIMULATION_BATCH, Simulator } from '../../services/order/simulator';
import { OrderStore, defineOrderModels } from '../../services/order/store';
import type { DeliveryTransitions } from '../../services/order/transitions';
import { useStoreDatabase } from '../support/store-database';

/**
 * The sandbox's simulator drives the simulations under way a page a tick. Those still waiting
 * for their virtual courier (an unpaid checkout, matching not done) stay listed: more of them
 * than a page must not keep the simulator from the ones after.
 */
const db = useStoreDatabase('order', defineOrderModels);

/**
 * A simulator over the real store whose deliveries are read through `read` (each id noted in
 * `seen`): a simulated delivery waiting for its courier, or null for one that is gone.
 */
function simulatorReading(read: (deliveryId: string) => 'waiting' | null) {
  const store = new OrderStore(() => db.models);
  const seen: string[] = [];
  const transitions = {
    async current(deliveryId: string) {
      seen.push(deliveryId);
      if (read(deliveryId) === null) return null;
      return {
        _id: deliveryId,
        simulation: 'delivered',
        lifecycle: { status: 'REQUEST_CREATED' },
      } as unknown as DeliveryRecord;
    },
  } as unknown as DeliveryTransitions;
  const simulator = new Simulator({
    store,
    transitions,
    courierRun: {} as never,
    services: () => ({}) as never,
    scale: 1,
    intervalMs: 60_000,
    logger: () => ({ warn: () => undefined }) as unknown as Logger,
  });
  const tick = () => (simulator as unknown as { tick(): Promise<void> }).tick();
  return { store, simulator, seen, tick };
}

it('reaches, tick after tick, the simulations past a page of ones still waiting', async () => {
  const waiting = new Set<string>();
  const {
    store,
    seen: read,
    tick,
  } = simulatorReading((id) => (waiting.has(id) ? 'waiting' : null));
  const old = Date.now() - 3_600_000;
  for (let i = 0; i < SIMULATION_BATCH + 20; i++) {
    const deliveryId = randomUUID();
    waiting.add(deliveryId);
    await store.startSimulation(deliveryId, new Date(old + i));
  }
  // The newest: its delivery has ended, which the simulator notes by dropping it.
  const ended = randomUUID();
  await store.startSimulation(ended, new Date());

  await tick();
  expect(read).toHaveLength(SIMULATION_BATCH);
  await tick();
  expect(new Set(read).size).toBe(SIMULATION_BATCH + 21);
  expect(await db.models.Simulation.exists({ _id: ended })).toBeNull();
  // Round again from the oldest: every waiting one is driven once per round.
  await tick();
  expect(read.slice(SIMULATION_BATCH + 21)).toEqual(read.slice(0, SIMULATION_BATCH));
});

it('ends a tick at the next simulation once the process is stopping', async () => {
  // The stop comes while the first is driven.
  const { store, simulator, seen, tick } = simulatorReading(() => {
    void simulator.stop();
    return 'waiting';
  });
  for (let i = 0; i < 3; i++) await store.startSimulation(randomUUID(), new Date());
  await tick();
  expect(seen).toHaveLength(1);
});
