import { nameBasedId } from '../../libs/ids';
import { kgToGrams } from '../../libs/money';

/**
 * Matching's rules, pure: which couriers' fleets can carry a delivery, how far the search
 * reaches as it goes on, and how offers are named. docs/couriers.md ("Matching") explains them.
 */

export interface FleetTypeCapacity {
  id: string;
  /** kg, as geo writes it (five decimals). */
  maxWeight: string;
  active: boolean;
}

/**
 * The fleet types whose couriers may take a delivery: the one it was priced for, and every
 * active type that carries at least its weight (a larger vehicle may take a small load at
 * the price quoted; a smaller one never takes a load over its limit).
 */
export function carryingFleetTypes(
  types: readonly FleetTypeCapacity[],
  pricedFleetTypeId: string,
  weightGrams: number,
): string[] {
  const ids = new Set<string>();
  for (const type of types) {
    // In exact decimals, as pricing chose the fleet: 2.01 kg is 2009.9999999999998 g in floats.
    const carries = kgToGrams(type.maxWeight) >= weightGrams;
    if (type.id === pricedFleetTypeId ? carries || type.active : type.active && carries) {
      ids.add(type.id);
    }
  }
  // The type it was priced for stays even when geo no longer lists it: its couriers exist.
  ids.add(pricedFleetTypeId);
  return [...ids].sort();
}

/** What `ableToCarry` reads of a courier's directory entry. */
export interface NamedCourier {
  _id: string;
  fleet: { typeId: string };
  active: boolean;
  virtual?: boolean;
}

/**
 * Of `couriers`, the ids of those who may be offered the delivery for their vehicle: at work,
 * real, on a fleet type that carries it (`carryingFleetTypes`), in the order given. A courier
 * named for it on a smaller vehicle would never be offered it.
 */
export function ableToCarry(
  couriers: readonly NamedCourier[],
  types: readonly FleetTypeCapacity[],
  pricedFleetTypeId: string,
  weightGrams: number,
): string[] {
  const carrying = new Set(carryingFleetTypes(types, pricedFleetTypeId, weightGrams));
  return couriers
    .filter((c) => c.active && !c.virtual && carrying.has(c.fleet.typeId))
    .map((c) => c._id);
}

export interface SearchReach {
  /** Radius of the first round, km. */
  startKm: number;
  /** Added every `widenEveryMs`, up to `maxKm`. */
  stepKm: number;
  maxKm: number;
  widenEveryMs: number;
}

/** How far from the pickup the search looks after `elapsedMs`: wider as time passes. */
export function searchRadiusKm(reach: SearchReach, elapsedMs: number): number {
  const rounds = Math.max(0, Math.floor(elapsedMs / reach.widenEveryMs));
  return Math.min(reach.maxKm, reach.startKm + rounds * reach.stepKm);
}

/**
 * When, after the start, the radius next grows (ms): the next multiple of `widenEveryMs`;
 * undefined once it is at its widest.
 */
export function nextWideningMs(reach: SearchReach, elapsedMs: number): number | undefined {
  if (searchRadiusKm(reach, elapsedMs) >= reach.maxKm) return undefined;
  const rounds = Math.max(0, Math.floor(elapsedMs / reach.widenEveryMs));
  return (rounds + 1) * reach.widenEveryMs;
}

/**
 * The n-th offer of a delivery (from 1), a UUID as every path parameter is: inserting it is
 * the claim to make that offer, so two matchers never make the n-th offer twice.
 */
export const offerId = (deliveryId: string, n: number) =>
  nameBasedId('offer', deliveryId, String(n));

export const OFFER_OUTCOMES = ['ACCEPTED', 'DECLINED', 'EXPIRED', 'WITHDRAWN'] as const;
export type OfferOutcome = (typeof OFFER_OUTCOMES)[number];

/** What the courier is told when an offer can no longer be accepted. */
export function offerClosed(outcome: OfferOutcome): string {
  switch (outcome) {
    case 'ACCEPTED':
      return 'This offer was accepted already';
    case 'DECLINED':
      return 'This offer was declined';
    case 'EXPIRED':
      return 'This offer expired; wait for the next one';
    case 'WITHDRAWN':
      return 'This offer was withdrawn: the delivery no longer needs a courier';
  }
}

/**
 * Whether a courier who owes `owedKobo` in cash collected on delivery may be offered one that
 * collects `collectKobo` more: not past `limitKobo` (0: no limit). One who owes nothing may
 * take any, so that a delivery worth more than the limit still finds a courier.
 */
export function withinCashLimit(owedKobo: number, collectKobo: number, limitKobo: number): boolean {
  return limitKobo === 0 || owedKobo === 0 || owedKobo + collectKobo <= limitKobo;
}

/**
 * When the sandbox's virtual courier takes its offer: `acceptMs` after it was made (simulated
 * time), or half-way through the offer's time when that is shorter. With the offer's time below
 * its moment (`MATCHING_OFFER_TIMEOUT_MS` under 20 s at `SIMULATOR_TIME_SCALE` 1) each offer
 * expired first, was made again, and the simulation ended `NO_COURIER_FOUND`.
 */
export function simulatedAcceptAt(
  offer: { offeredAt: Date; expiresAt: Date },
  acceptMs: number,
): number {
  const offeredAt = offer.offeredAt.getTime();
  return offeredAt + Math.min(acceptMs, (offer.expiresAt.getTime() - offeredAt) / 2);
}
