import type { Logger } from 'moleculer';
import { call, type Caller } from '../../libs/contracts';
import { virtualStart } from '../../libs/contracts/matching';
import { DEFAULT_CIRCUITY, haversineKm } from '../../libs/geodesy';
import { LookupCache } from '../../libs/lookup-cache';
import { Periodic } from '../../libs/periodic';
import { proofTypeOf, type CourierRun, type CourierStep } from './courier-run';
import type { DeliveryRecord } from './delivery-record';
import { isTerminal } from './lifecycle';
import { latestProofCode } from './notifications';
import {
  nextSimulatedStep,
  simulatedPosition,
  SIMULATED_FAILURE,
  type SimulationRoute,
} from './simulation';
import type { OrderStore, SimulationMark } from './store';
import type { DeliveryTransitions } from './transitions';

/** Simulations driven per tick; the next ticks take the rest, a page each. */
export const SIMULATION_BATCH = 100;

export interface SimulatorDeps {
  store: OrderStore;
  transitions: DeliveryTransitions;
  courierRun: CourierRun;
  services: () => Caller;
  /** SIMULATOR_TIME_SCALE. */
  scale: number;
  intervalMs: number;
  logger: () => Logger;
}

/**
 * How long a fleet speed read from geo is kept: a change is heard at once (geo's broadcast;
 * a read under way then is not kept), but a geo replica that had not heard it yet may have
 * answered the old speed, or the broadcast been lost; then it holds a minute, not until
 * order restarts.
 */
const SPEED_KEPT_MS = 60_000;

/**
 * The sandbox's virtual couriers (staging only): once matching has assigned a simulated
 * delivery to its virtual courier, this moves the courier along the route at its fleet's
 * speed, scaled, and reports each step through the same path as a real courier's — the
 * transition table, and the proof codes read from the outbox as a person would give them.
 * Stateless between ticks (the delivery's last transition says where the run is), so
 * replicas and restarts simply carry on.
 */
export class Simulator {
  private readonly periodic: Periodic;
  /** Fleet speeds read from geo, kept `SPEED_KEPT_MS` at most. */
  private readonly speeds = new LookupCache<number>({
    cacheMs: SPEED_KEPT_MS,
    lookup: async (fleetTypeId) =>
      (await call(this.deps.services(), 'geo.getFleetType', { fleetTypeId })).averageSpeedKmh,
  });
  /**
   * The last simulation of the page driven last: simulations waiting for a courier (or a
   * payment) stay listed, and more of them than a page must not hold the others still.
   */
  private after: SimulationMark | undefined;

  constructor(private readonly deps: SimulatorDeps) {
    this.periodic = new Periodic(
      deps.intervalMs,
      () => this.tick(),
      (err) => deps.logger().warn('simulator tick failed; the next one retries', { err }),
    );
  }

  start(): void {
    this.periodic.start();
  }

  stop(): Promise<void> {
    return this.periodic.stop();
  }

  private async tick(now = new Date()): Promise<void> {
    let page: SimulationMark[];
    try {
      page = await this.deps.store.simulations(SIMULATION_BATCH, this.after);
    } catch (err) {
      this.deps.logger().warn('simulator: simulations not read; next tick retries', { err });
      return;
    }
    this.after = page.length < SIMULATION_BATCH ? undefined : page[page.length - 1];
    for (const { deliveryId: id } of page) {
      // A process stopping waits for the tick: each drive may wait on geo and matching.
      if (this.periodic.stopping) return;
      try {
        await this.drive(id, now);
      } catch (err) {
        this.deps.logger().warn('simulator: step not taken; next tick retries', {
          deliveryId: id,
          err: (err as Error).message,
        });
      }
    }
  }

  private async drive(deliveryId: string, now: Date): Promise<void> {
    const { store, transitions, courierRun } = this.deps;
    const delivery = await transitions.current(deliveryId);
    const mode = delivery?.simulation;
    if (!delivery || !mode || isTerminal(delivery.lifecycle.status)) {
      await store.endSimulation(deliveryId);
      return;
    }
    const courierId = delivery.assignment?.courierId;
    if (!courierId) return; // matching's part: the virtual courier has not accepted yet
    const route = await this.route(delivery);
    const status = delivery.lifecycle.status;
    const next = nextSimulatedStep(mode, status, route, this.deps.scale);
    if (!next) return;
    const elapsed = now.getTime() - new Date(delivery.updatedAt).getTime();
    const position = simulatedPosition(
      mode,
      status,
      route,
      next.afterMs > 0 ? elapsed / next.afterMs : 1,
    );
    if (position) {
      await call(this.deps.services(), 'courier-matching.placeVirtualCourier', {
        courierId,
        ...position,
      });
    }
    if (elapsed < next.afterMs) return;
    try {
      await courierRun.advance(
        courierId,
        deliveryId,
        next.step,
        await this.body(delivery, next.step),
      );
    } catch (err) {
      if ((err as { code?: number }).code !== 409) throw err;
      // Another replica's tick took this step first; or nobody did, and the refusal says why
      // every tick will fail it (the warning is the sandbox's operator's only clue).
      const after = await transitions.current(deliveryId);
      if (after?.version === delivery.version) throw err;
    }
  }

  /** What the virtual courier sends with a step: the code the person was sent, a reason. */
  private async body(delivery: DeliveryRecord, step: CourierStep) {
    if (step === 'failed') return { reason: SIMULATED_FAILURE };
    const proofType = proofTypeOf(step);
    if (!proofType) return {};
    const code = latestProofCode(await this.deps.store.notificationsOf(delivery._id), proofType);
    return code ? { code } : {};
  }

  private async route(delivery: DeliveryRecord): Promise<SimulationRoute> {
    const addresses = await this.deps.store.addresses([delivery.originId, delivery.destinationId]);
    const origin = addresses.get(delivery.originId)?.fields;
    const destination = addresses.get(delivery.destinationId)?.fields;
    if (!origin || !destination) throw new Error(`delivery ${delivery._id} lost its addresses`);
    const pickup = { lat: origin.lat, lon: origin.lon };
    const dropoff = { lat: destination.lat, lon: destination.lon };
    const start = virtualStart(pickup);
    return {
      start,
      pickup,
      dropoff,
      approachKm: haversineKm(start, pickup) * DEFAULT_CIRCUITY,
      tripKm: delivery.distanceKm,
      speedKmh: await this.speedOf(delivery.fleetType.id),
    };
  }

  /** A fleet type changed (geo's broadcast): its speed is read again at the next step. */
  forgetSpeed(fleetTypeId: string): void {
    this.speeds.forget(fleetTypeId);
  }

  private async speedOf(fleetTypeId: string): Promise<number> {
    const kmh = await this.speeds.get(fleetTypeId);
    // geo answers a fleet type or fails: the lookup never answers none.
    if (kmh === null) throw new Error(`fleet type ${fleetTypeId} has no speed`);
    return kmh;
  }
}
