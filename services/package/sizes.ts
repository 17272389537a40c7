import { formatKg, formatNaira } from '../../libs/money';
import type { PackageRecord } from './models';

export const PACKAGE_SIZES = ['SMALL', 'MEDIUM', 'LARGE'] as const;
export type PackageSize = (typeof PACKAGE_SIZES)[number];

/** Weight of one item of each size. A package's weight is this times its quantity. */
export const ITEM_WEIGHT_GRAMS: Record<PackageSize, number> = {
  SMALL: 2_000,
  MEDIUM: 7_000,
  LARGE: 15_000,
};

export function packageWeightGrams(size: PackageSize, quantity: number): number {
  return ITEM_WEIGHT_GRAMS[size] * quantity;
}

/** The package record of the API: money and weight as decimal strings, links null until set. */
export interface PackageView {
  id: string;
  userId: string;
  p2pDeliveryId: string | null;
  errandDeliveryId: string | null;
  errandStoreId: string | null;
  productId: string | null;
  variantCombinationId: string | null;
  packageType: string;
  name: string;
  image: string | null;
  description: string | null;
  quantity: number;
  weight: string;
  value: string;
  size: PackageSize;
  type: 'PACKAGE_ITEM';
  selectedOptions: unknown[];
  createdAt: string;
  updatedAt: string;
  deletedAt: string | null;
}

export function toPackageView(record: PackageRecord): PackageView {
  return {
    id: record._id,
    userId: record.userId,
    p2pDeliveryId: record.p2pDeliveryId ?? null,
    errandDeliveryId: null,
    errandStoreId: null,
    productId: null,
    variantCombinationId: null,
    packageType: record.packageType,
    name: record.name,
    image: record.image ?? null,
    description: record.description ?? null,
    quantity: record.quantity,
    weight: formatKg(packageWeightGrams(record.size as PackageSize, record.quantity)),
    value: formatNaira(record.valueKobo),
    size: record.size as PackageSize,
    type: 'PACKAGE_ITEM',
    selectedOptions: [],
    createdAt: record.createdAt.toISOString(),
    updatedAt: record.updatedAt.toISOString(),
    deletedAt: record.deletedAt ? record.deletedAt.toISOString() : null,
  };
}
