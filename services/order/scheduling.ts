import type { DeliveryRecord } from './delivery-record';

/**
 * When the search for a paid delivery's courier starts: at once (null), or for a SCHEDULED
 * delivery `leadMs` before it must leave to reach its slot's start (the slot's start less the
 * trip's estimate), so that a courier is found for its date, not the day it was booked. A
 * sandbox simulation is driven at once whatever its date.
 */
export function searchStartsAt(
  delivery: Pick<DeliveryRecord, 'slotStartsAt' | 'etaSeconds' | 'simulation'>,
  leadMs: number,
): Date | null {
  if (!delivery.slotStartsAt || delivery.simulation) return null;
  return new Date(new Date(delivery.slotStartsAt).getTime() - delivery.etaSeconds * 1000 - leadMs);
}
