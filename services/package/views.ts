import type { PackageView, Selection } from '../../libs/contracts/package';
import { formatKg, formatNaira } from '../../libs/money';
import { packageWeightGrams } from './sizes';
import type { PackageRecord } from './store';

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
    weight: formatKg(packageWeightGrams(record.size, record.quantity)),
    value: formatNaira(record.valueKobo),
    size: record.size,
    type: 'PACKAGE_ITEM',
    selectedOptions: [],
    createdAt: record.createdAt.toISOString(),
    updatedAt: record.updatedAt.toISOString(),
    deletedAt: record.deletedAt ? record.deletedAt.toISOString() : null,
  };
}

/** A selection with its totals: integers for arithmetic, decimal strings for answers. */
export function toSelection(records: PackageRecord[]): Selection {
  const totalWeightGrams = records.reduce(
    (sum, p) => sum + packageWeightGrams(p.size, p.quantity),
    0,
  );
  const totalValueKobo = records.reduce((sum, p) => sum + p.valueKobo, 0);
  return {
    packages: records.map(toPackageView),
    totalWeightGrams,
    totalValueKobo,
    totalWeight: formatKg(totalWeightGrams),
    totalValue: formatNaira(totalValueKobo),
  };
}
