import { formatKg } from '../../libs/money';
import type { FleetTypeRecord } from './models';

export interface FleetTypeSeed {
  code: string;
  name: string;
  description: string;
  maxWeightGrams: number;
  averageSpeedKmh: number;
}

/**
 * Defaults for a Nigerian city courier; speeds are door-to-door averages with traffic and
 * stops, not cruising speeds. Operators change them through the admin API.
 */
export const DEFAULT_FLEET_TYPES: readonly FleetTypeSeed[] = [
  {
    code: 'bike',
    name: 'Bike',
    description: 'Motorcycle dispatch for documents and small parcels up to 20 kg',
    maxWeightGrams: 20_000,
    averageSpeedKmh: 30,
  },
  {
    code: 'car',
    name: 'Car',
    description: 'Saloon car for parcels and fragile items up to 100 kg',
    maxWeightGrams: 100_000,
    averageSpeedKmh: 40,
  },
  {
    code: 'van',
    name: 'Van',
    description: 'Cargo van for bulky goods and multi-package orders up to 1,000 kg',
    maxWeightGrams: 1_000_000,
    averageSpeedKmh: 35,
  },
  {
    code: 'truck',
    name: 'Truck',
    description: 'Light truck for pallets and heavy freight up to 5,000 kg',
    maxWeightGrams: 5_000_000,
    averageSpeedKmh: 30,
  },
];

/** The public item of `GET /api/fleet-types`. */
export interface FleetTypeItem {
  id: string;
  name: string;
  icon: string | null;
  description: string | null;
}

/** What operators and other services see. */
export interface FleetTypeDetail extends FleetTypeItem {
  code: string;
  maxWeight: string;
  averageSpeedKmh: number;
  active: boolean;
  createdAt: string;
  updatedAt: string;
}

export function toFleetTypeItem(record: FleetTypeRecord): FleetTypeItem {
  return {
    id: record._id,
    name: record.name,
    icon: record.icon ?? null,
    description: record.description ?? null,
  };
}

export function toFleetTypeDetail(record: FleetTypeRecord): FleetTypeDetail {
  return {
    ...toFleetTypeItem(record),
    code: record.code,
    maxWeight: formatKg(record.maxWeightGrams),
    averageSpeedKmh: record.averageSpeedKmh,
    active: record.active,
    createdAt: record.createdAt.toISOString(),
    updatedAt: record.updatedAt.toISOString(),
  };
}

/** Smallest first, so "the first compatible fleet type" is the cheapest vehicle that fits. */
export function byCapacity(a: FleetTypeRecord, b: FleetTypeRecord): number {
  return a.maxWeightGrams - b.maxWeightGrams || a.code.localeCompare(b.code);
}
