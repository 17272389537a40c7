import { randomUUID } from 'node:crypto';
import type Redis from 'ioredis';
import { serviceUnavailable } from '../../libs/errors';
import { orUnavailable } from '../../libs/redis';
import { SlidingWindow, checkLimit } from '../../libs/sliding-window';

/** The specification's limit: a user may cancel twice every 3 hours. */
export const CANCEL_LIMIT = 2;
export const CANCEL_WINDOW_MS = 3 * 60 * 60 * 1000;

export interface CancelWindowOptions {
  /** Namespaces the keys: `<keyPrefix><userId>`, e.g. `${NAMESPACE}:cancels:`. */
  keyPrefix: string;
  limit: number;
  windowMs: number;
}

/** Redis, which counts cancellations, cannot be reached: the cancel is not attempted. */
export const cancelWindowUnavailable = () =>
  serviceUnavailable(
    'Cancellations cannot be counted right now; nothing was cancelled, retry in a few seconds',
  );

/**
 * "At most `limit` cancels every `windowMs`" per user, shared by every order replica and
 * kept in Redis, so a restart forgets nothing. A cancel attempt reserves a slot first and
 * gives it back if the cancel is refused or fails, so only cancels that happened count.
 * Redis failures reject with a 503 (`cancelWindowUnavailable`).
 */
export class CancelWindow {
  private readonly window: SlidingWindow;

  constructor(
    redis: Redis,
    private readonly options: CancelWindowOptions,
  ) {
    // Here, not at the first cancel, where any error would read as Redis being unreachable.
    checkLimit(options.limit);
    this.window = new SlidingWindow(redis, options.keyPrefix, options.windowMs);
  }

  /**
   * Takes a slot for this cancel attempt atomically (one Lua script): ok when taken, else
   * `retryAt`, the time (ms since the epoch) the oldest slot frees. `attemptId` names this
   * attempt alone (a fresh UUID, not the delivery id: giving back a refused second attempt
   * on a delivery must not give back the first one's slot); reserving it again answers ok
   * without taking a second slot. `now` (ms) replaces the Redis server's clock.
   */
  reserve(
    userId: string,
    attemptId: string,
    now?: number,
  ): Promise<{ ok: true } | { ok: false; retryAt: number }> {
    return orUnavailable(
      () => this.window.take(userId, attemptId, this.options.limit, now),
      cancelWindowUnavailable,
    );
  }

  /**
   * The slots `userId` holds, oldest first, and the time now, both by the Redis server's clock
   * (the one the slots were taken by); 503 without Redis.
   */
  slots(userId: string): Promise<{ now: number; slots: CancelSlot[] }> {
    return orUnavailable(async () => {
      const { now, places } = await this.window.places(userId);
      return { now, slots: places.map(({ member, takenAt }) => ({ attemptId: member, takenAt })) };
    }, cancelWindowUnavailable);
  }

  /**
   * Gives a reserved slot back (the cancel was refused or failed): it must not count. Safe to
   * repeat. Rejects with the 503 when Redis cannot be reached (the slot then frees with the
   * window): a caller answering the cancel's own error should log this one, not answer it.
   */
  release(userId: string, attemptId: string): Promise<void> {
    return orUnavailable(() => this.window.give(userId, attemptId), cancelWindowUnavailable);
  }

  /** The 400 of a refused reservation: the limit, and when the user may cancel again. */
  exceededMessage(retryAt: number): string {
    const { limit, windowMs } = this.options;
    return (
      `A request may be cancelled only ${times(limit)} every ${duration(windowMs)}; ` +
      `cancel again after ${new Date(retryAt).toISOString()}`
    );
  }
}

/** A slot of the window: the cancel attempt that took it, and when (ms since the epoch). */
export interface CancelSlot {
  attemptId: string;
  takenAt: number;
}

/**
 * A new cancel attempt's id, `<deliveryId>:<uuid>`: its own (giving back a refused second attempt
 * on a delivery must not give back the first one's slot), and naming the delivery, so that a
 * slot whose cancel stopped midway can be told from one whose cancel happened (`lostCancelSlots`).
 */
export function cancelAttemptId(deliveryId: string): string {
  return `${deliveryId}:${randomUUID()}`;
}

/** The delivery an attempt id names; undefined for an id of the version before (a bare UUID). */
export function deliveryOfAttempt(attemptId: string): string | undefined {
  const end = attemptId.lastIndexOf(':');
  return end > 0 ? attemptId.slice(0, end) : undefined;
}

/**
 * How old a slot must be before its cancel is taken for stopped: far longer than a cancel takes
 * (ORDER_STALE_REQUEST_MS when that is longer), for nothing cuts a cancel's writes short at the
 * caller's timeout, and a slot given back under a cancel that then lands would let a third
 * cancel through.
 */
export const LOST_SLOT_AGE_MS = 15 * 60_000;

const isOlder = (slot: CancelSlot, now: number, ageMs: number) => now - slot.takenAt > ageMs;

/** The deliveries whose state `lostCancelSlots` needs: those named by slots older than `lostAfterMs`. */
export function deliveriesOfStaleSlots(
  slots: readonly CancelSlot[],
  now: number,
  lostAfterMs: number,
): string[] {
  const named = slots
    .filter((slot) => isOlder(slot, now, lostAfterMs))
    .map((slot) => deliveryOfAttempt(slot.attemptId));
  return [...new Set(named.filter((id): id is string => id !== undefined))];
}

/**
 * The slots of a full window that no cancel holds: a process stopped between taking a slot and
 * the change (or between a refusal and giving the slot back) leaves one nobody gives back, and
 * it would use one of the user's cancels for hours. `cancelled` holds, for the deliveries the
 * slots name, whether each reads CANCELLED now (a delivery not read is left alone). Only slots
 * taken more than `lostAfterMs` before `now` are given back: a cancel under way that long has
 * stopped. A delivery not cancelled holds none. A cancelled one holds one, its newest: the
 * cancel happened at one of its attempts, and the newest counts it at least as long as it must
 * count (keeping an older one, of an attempt stopped before a retry cancelled, would free the
 * window before the cancel's 3 hours). While one of its attempts is under way (a slot not yet
 * that old), none of its slots is given back: refused, that attempt gives back its own. Slots
 * of attempt ids without a delivery (the version before) free with the window.
 */
export function lostCancelSlots(
  slots: readonly CancelSlot[],
  cancelled: ReadonlyMap<string, boolean>,
  now: number,
  lostAfterMs: number,
): string[] {
  const byDelivery = new Map<string, CancelSlot[]>();
  for (const slot of slots) {
    const deliveryId = deliveryOfAttempt(slot.attemptId);
    if (deliveryId === undefined) continue;
    byDelivery.set(deliveryId, [...(byDelivery.get(deliveryId) ?? []), slot]);
  }
  const lost: string[] = [];
  for (const [deliveryId, own] of byDelivery) {
    const isCancelled = cancelled.get(deliveryId);
    if (isCancelled === undefined) continue;
    const stale = own.filter((slot) => isOlder(slot, now, lostAfterMs));
    if (!isCancelled) {
      lost.push(...stale.map((slot) => slot.attemptId));
    } else if (stale.length === own.length) {
      const newest = own.reduce((a, b) => (b.takenAt > a.takenAt ? b : a));
      lost.push(...own.filter((slot) => slot !== newest).map((slot) => slot.attemptId));
    }
  }
  return lost;
}

function times(count: number): string {
  return count === 1 ? 'once' : count === 2 ? 'twice' : `${count} times`;
}

/** Whole hours, minutes or seconds where the length is one, else milliseconds. */
function duration(ms: number): string {
  const units: [number, string][] = [
    [3_600_000, 'hour'],
    [60_000, 'minute'],
    [1_000, 'second'],
    [1, 'millisecond'],
  ];
  const [size, unit] = units.find(([size]) => ms % size === 0) ?? units[units.length - 1];
  const count = ms / size;
  return count === 1 ? unit : `${count} ${unit}s`;
}
