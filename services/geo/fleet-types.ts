import type { FleetTypeRecord } from './store';

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

/** Smallest first, so "the first compatible fleet type" is the cheapest vehicle that fits. */
export function byCapacity(a: FleetTypeRecord, b: FleetTypeRecord): number {
  return a.maxWeightGrams - b.maxWeightGrams || a.code.localeCompare(b.code);
}
