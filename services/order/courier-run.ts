import { conflict, notFound } from '../../libs/errors';
import type { AssignAnswer } from '../../libs/contracts/order';
import type { DeliveryRecord, ProofType } from './delivery-record';
import { isTerminal, transition, type EventKind, type LifecycleEvent } from './lifecycle';
import type { ProofChecks } from './proofs';
import type { Settlement } from './settlement';
import type { DeliveryTransitions } from './transitions';

export const NOT_YOUR_DELIVERY = 'Delivery not found among the deliveries you hold';

/** The steps a courier reports, by the last part of their path. */
export const COURIER_STEPS = {
  'arrived-at-pickup': 'ARRIVED_AT_PICKUP',
  collected: 'COLLECTED',
  'in-transit': 'IN_TRANSIT',
  'arrived-at-dropoff': 'ARRIVED_AT_DROPOFF',
  delivered: 'DELIVERED',
  failed: 'FAILED',
  returned: 'RETURNED',
} as const satisfies Record<string, EventKind>;
export type CourierStep = keyof typeof COURIER_STEPS;

/** The proof a step needs, when the delivery asks for one. */
const PROOF_OF: Partial<Record<EventKind, ProofType>> = {
  COLLECTED: 'COLLECTION',
  DELIVERED: 'DELIVERY',
  RETURNED: 'RETURN',
};

/** The proof a courier's step gives, if any. */
export const proofTypeOf = (step: CourierStep): ProofType | undefined =>
  PROOF_OF[COURIER_STEPS[step]];

export interface CourierRunDeps {
  transitions: DeliveryTransitions;
  settlement: Settlement;
  proofs: ProofChecks;
}

/**
 * A delivery from the courier's side: matching assigns it (or gives up), then the courier
 * reports each step. Every change is a transition of the lifecycle table, so a step out of
 * order is refused with the status it found, and a repeat by a retried call changes nothing.
 */
export class CourierRun {
  constructor(private readonly deps: CourierRunDeps) {}

  async assign(deliveryId: string, courierId: string): Promise<AssignAnswer> {
    const { transitions } = this.deps;
    const applied = await transitions.apply(deliveryId, { kind: 'COURIER_ASSIGNED', courierId });
    if (applied.applied) {
      await this.deps.settlement.afterTransition(applied.delivery, applied.transition);
      return { assigned: true, status: applied.delivery.lifecycle.status };
    }
    const { delivery } = applied;
    const { status } = delivery.lifecycle;
    // A repeat of the call that assigned this courier: the same answer, while the delivery
    // lasts. Once it is over (cancelled since, or delivered), the courier has nothing to take.
    const ours = delivery.assignment?.courierId === courierId && !isTerminal(status);
    return { assigned: ours, status };
  }

  async noCourier(deliveryId: string): Promise<{ status: string }> {
    const applied = await this.deps.transitions.apply(deliveryId, { kind: 'NO_COURIER_FOUND' });
    if (applied.applied)
      await this.deps.settlement.afterTransition(applied.delivery, applied.transition);
    return { status: applied.delivery.lifecycle.status };
  }

  /** The delivery, when this courier holds it; 404 otherwise (another's, or none). */
  async held(courierId: string, deliveryId: string): Promise<DeliveryRecord> {
    const delivery = await this.deps.transitions.current(deliveryId);
    if (!delivery || delivery.assignment?.courierId !== courierId) {
      throw notFound(NOT_YOUR_DELIVERY);
    }
    return delivery;
  }

  /** A step the courier reports: checked against the table, then its proof, then applied. */
  async advance(
    courierId: string,
    deliveryId: string,
    step: CourierStep,
    body: { code?: string; reason?: string },
  ): Promise<DeliveryRecord> {
    const delivery = await this.held(courierId, deliveryId);
    const kind = COURIER_STEPS[step];
    let event = eventOf(kind, body);
    // Refused by the table before a proof code is tried: a wrong-order call costs no try.
    const allowed = transition(delivery.lifecycle, event);
    if (!allowed.ok) throw conflict(allowed.message);
    const proofType = PROOF_OF[kind];
    const proof = proofType
      ? delivery.proofs.find((p) => p.type === proofType && p.isActive && !p.scannedAt)
      : undefined;
    if (proof) {
      const scanned = await this.deps.proofs.check(deliveryId, proof, body.code);
      event = { ...event, proof: scanned } as LifecycleEvent;
    }
    const applied = await this.deps.transitions.apply(deliveryId, event, { known: delivery });
    if (!applied.applied) throw conflict(applied.message);
    await this.deps.settlement.afterTransition(applied.delivery, applied.transition);
    return applied.delivery;
  }
}

function eventOf(kind: (typeof COURIER_STEPS)[CourierStep], body: { reason?: string }) {
  if (kind === 'FAILED') return { kind, reason: body.reason ?? '' } satisfies LifecycleEvent;
  return { kind } as LifecycleEvent;
}
