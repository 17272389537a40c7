import { kgToGrams } from '../../libs/money';

import type { FleetTypeDetail } from '../../libs/contracts/geo';

/** What fleet choice reads of a fleet type as geo describes it (`geo.listFleetTypes`). */
export type FleetOption = Pick<
  FleetTypeDetail,
  'id' | 'code' | 'name' | 'icon' | 'maxWeight' | 'active'
>;

export const canCarry = (fleet: FleetOption, weightGrams: number) =>
  fleet.active && kgToGrams(fleet.maxWeight) >= weightGrams;

/**
 * The fleet type that carries the load: the requested one (an active one) when it can carry
 * it, else the first active one that can (geo lists them smallest first). Null: none can.
 */
export function chooseFleet(
  activeFleets: readonly FleetOption[],
  requested: FleetOption | undefined,
  weightGrams: number,
): FleetOption | null {
  if (requested && canCarry(requested, weightGrams)) return requested;
  return activeFleets.find((fleet) => canCarry(fleet, weightGrams)) ?? null;
}
