import type { WebhookEventType } from '../../libs/contracts/webhook';
import { nameBasedId } from '../../libs/ids';
import { isMatchingEligible, type Effect, type Lifecycle, type LifecycleEvent } from './lifecycle';

/**
 * Which webhook events a delivery's changes make, pure. Each change makes the most specific
 * events that describe it; `delivery.status_changed` covers the visible steps no other event
 * names, so an integrator hears of each change once (a cancel is one `delivery.cancelled`).
 */

/** Creation: created, and paid when it was paid on the spot (wallet). */
export function creationEvents(lifecycle: Lifecycle): WebhookEventType[] {
  return isMatchingEligible(lifecycle)
    ? ['delivery.created', 'delivery.paid']
    : ['delivery.created'];
}

export interface ChangeOfState {
  event: LifecycleEvent;
  lifecycle: Lifecycle;
  effects: readonly Effect[];
  step: { hidden: boolean } | null;
}

export function transitionEvents(change: ChangeOfState): WebhookEventType[] {
  const types: WebhookEventType[] = [];
  if (change.event.kind === 'PAYMENT_FAILED') types.push('payment.failed');
  if (change.effects.some((e) => e.kind === 'MATCHING_ELIGIBLE')) types.push('delivery.paid');
  const specific = specificEvent(change);
  if (specific) types.push(specific);
  else if (types.length === 0 && change.step && !change.step.hidden) {
    types.push('delivery.status_changed');
  }
  return types;
}

function specificEvent(change: ChangeOfState): WebhookEventType | null {
  if (change.lifecycle.status === 'CANCELLED') return 'delivery.cancelled';
  if (change.event.kind === 'COURIER_ASSIGNED') return 'courier.assigned';
  if (change.event.kind === 'DELIVERED') return 'delivery.delivered';
  return null;
}

/** Events per change at most: a change's events keep their order within the delivery's. */
const PER_CHANGE = 10;

/** The place of a change's i-th event among its delivery's events (creation is version 0). */
export const eventSequence = (version: number, index: number) => version * PER_CHANGE + index;

/** Stable: the same event of the same delivery is published under the same id, however often. */
export const webhookEventId = (deliveryId: string, sequence: number) =>
  nameBasedId('delivery-event', deliveryId, String(sequence));
