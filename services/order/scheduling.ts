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
export function dueBucket(at: Date | number): number {
  const ms = typeof at === 'number' ? at : at.getTime();
  return ms - (((ms % SEARCH_BUCKET_MS) + SEARCH_BUCKET_MS) % SEARCH_BUCKET_MS);
}

/** The name of the bucket starting at `start`, its list's owner id: readable in the database. */
export const bucketName = (start: number) => new Date(start).toISOString();

/** The starts of the buckets from `from`'s to `to`'s, both included, at most `max` of them. */
export function bucketsBetween(from: number, to: number, max: number): number[] {
  const starts: number[] = [];
  for (let b = dueBucket(from); b <= to && starts.length < max; b += SEARCH_BUCKET_MS) {
    starts.push(b);
  }
  return starts;
}
