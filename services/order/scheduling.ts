import { bucketStart } from '../../libs/time-buckets';
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

/**
 * The instant after which no courier is sought for the delivery: for a SCHEDULED delivery, the
 * last a courier found could leave and, by the trip's estimate, still arrive before its slot
 * closes (null: none, a simulation, or a record older than `slotEndsAt`). Matching's search
 * ends at it, and one started after it ends at its first step: the delivery is closed
 * NO_COURIER_FOUND and refunded rather than a courier sent for a slot it cannot make.
 */
export function searchNotAfter(
  delivery: Pick<DeliveryRecord, 'slotEndsAt' | 'etaSeconds' | 'simulation'>,
): Date | null {
  if (!delivery.slotEndsAt || delivery.simulation) return null;
  return new Date(new Date(delivery.slotEndsAt).getTime() - delivery.etaSeconds * 1000);
}

/**
 * The span of one bucket of `scheduled_search_buckets`: the sweep reads a handful of them a
 * tick (from its cursor to now), each by `_id`, whatever the number booked further ahead.
 */
export const SEARCH_BUCKET_MS = 5 * 60_000;

/** The start of the bucket that holds `at`: a multiple of `SEARCH_BUCKET_MS` since the epoch. */
export const dueBucket = (at: Date | number): number => bucketStart(at, SEARCH_BUCKET_MS);
