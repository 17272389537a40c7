import type { PackageSize } from '../../libs/contracts/package';

/** Weight of one item of each size. A package's weight is this times its quantity. */
const ITEM_WEIGHT_GRAMS: Record<PackageSize, number> = {
  SMALL: 2_000,
  MEDIUM: 7_000,
  LARGE: 15_000,
};

export function packageWeightGrams(size: PackageSize, quantity: number): number {
  return ITEM_WEIGHT_GRAMS[size] * quantity;
}
