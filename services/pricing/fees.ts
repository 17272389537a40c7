import Decimal from 'decimal.js';
import { formatNaira, Money } from '../../libs/money';
import type { Slot } from '../../libs/schedule';
import { isOffHours } from './schedule';
import type { RouteType } from '../../libs/contracts/geo';
import type { FeeAmounts, UrgencyType } from '../../libs/contracts/pricing';
import type { Tariff } from './tariff';

/**
 * The fee engine: pure, deterministic, in kobo. Each component is computed exactly with
 * decimal.js and rounded once, half up, to a whole kobo; sums of components are then exact
 * integers. The formula is documented in docs/pricing.md.
 */

/** What a matching courier pricing rule charges instead of the tariff's trip fees. */
export interface CourierRate {
  amountKobo: number;
  isPerKg: boolean;
}

export interface FeeInput {
  distanceKm: number;
  routeType: RouteType;
  weightGrams: number;
  valueKobo: number;
  fleetCode: string;
  urgency: UrgencyType;
  /** Required for SCHEDULED. */
  slot?: Slot;
  courierRate?: CourierRate;
}

const toKobo = (amount: Decimal.Value): number =>
  new Money(amount).toDecimalPlaces(0, Decimal.ROUND_HALF_UP).toNumber();

const kg = (grams: number) => new Money(grams).dividedBy(1000);

function tripFee(input: FeeInput, tariff: Tariff): number {
  if (input.courierRate) {
    const { amountKobo, isPerKg } = input.courierRate;
    return toKobo(isPerKg ? kg(input.weightGrams).times(amountKobo) : amountKobo);
  }
  const rate = tariff.routes[input.routeType];
  const extraKm = Money.max(0, new Money(input.distanceKm).minus(rate.includedKm));
  return toKobo(extraKm.times(rate.perKmFeeKobo).plus(rate.baseFeeKobo));
}

/** Per started kg above the included weight: 5.2 kg with 5 included charges 1 kg. */
function weightFee(input: FeeInput, tariff: Tariff): number {
  const extraKg = Money.max(0, kg(input.weightGrams).minus(tariff.includedWeightKg)).ceil();
  return toKobo(extraKg.times(tariff.routes[input.routeType].perKgFeeKobo));
}

function fleetFee(input: FeeInput, tariff: Tariff): number {
  // Own keys only: a fleet coded `constructor` must not find Object's.
  const fees = tariff.fleetFeesKobo;
  return Object.hasOwn(fees, input.fleetCode) ? fees[input.fleetCode] : fees.default;
}

function surcharge(input: FeeInput, tariff: Tariff, tripAndLoad: number): number {
  if (input.urgency === 'PRIORITY') {
    const share = new Money(tariff.priority.rate).times(tripAndLoad);
    return toKobo(Money.max(share, tariff.priority.minimumKobo));
  }
  if (input.urgency === 'SCHEDULED') {
    const { feeKobo, offHoursFeeKobo, openingTime, closingTime } = tariff.scheduled;
    const offHours = input.slot !== undefined && isOffHours(input.slot, openingTime, closingTime);
    return feeKobo + (offHours ? offHoursFeeKobo : 0);
  }
  return 0;
}

/** Nothing declared, nothing insured: the breakdown then shows `insuranceCharge: null`. */
function insuranceFee(input: FeeInput, tariff: Tariff): number {
  if (input.valueKobo <= 0) return 0;
  const share = new Money(tariff.insurance.rate).times(input.valueKobo);
  return toKobo(Money.max(share, tariff.insurance.minimumKobo));
}

function serviceFee(subtotal: number, tariff: Tariff): number {
  const { rate, minimumKobo, maximumKobo } = tariff.serviceFee;
  const share = new Money(rate).times(subtotal);
  return toKobo(Money.min(Money.max(share, minimumKobo), maximumKobo));
}

/**
 * Prices one trip. With a courier rate the courier's own price replaces the trip fee, and
 * weight, fleet and urgency are the courier's business: they are zero.
 */
export function computeFees(input: FeeInput, tariff: Tariff): FeeAmounts {
  const byCourier = input.courierRate !== undefined;
  const base = tripFee(input, tariff);
  const weight = byCourier ? 0 : weightFee(input, tariff);
  const fleet = byCourier ? 0 : fleetFee(input, tariff);
  const extra = byCourier ? 0 : surcharge(input, tariff, base + weight + fleet);
  const insurance = insuranceFee(input, tariff);
  const deliverySubtotal = base + weight + fleet + extra + insurance;
  const service = serviceFee(deliverySubtotal, tariff);
  const hubRate = new Money(tariff.routes[input.routeType].hubCommissionRate);
  const hubCommission = toKobo(hubRate.times(deliverySubtotal));
  return {
    base,
    weight,
    fleet,
    surcharge: extra,
    insurance,
    deliverySubtotal,
    serviceFee: service,
    hubCommission,
    total: deliverySubtotal + service + hubCommission,
  };
}

/** The `costs` block: decimal strings, with the hub commission spelled out. */
export function toCosts(fees: FeeAmounts) {
  return {
    base: formatNaira(fees.base),
    fleet: formatNaira(fees.fleet),
    deliverySubtotal: formatNaira(fees.deliverySubtotal),
    total: formatNaira(fees.total),
    weight: formatNaira(fees.weight),
    insurance: formatNaira(fees.insurance),
    surcharge: formatNaira(fees.surcharge),
    serviceFee: formatNaira(fees.serviceFee),
    hubCommission: formatNaira(fees.hubCommission),
  };
}

/** The `breakdown` block: the same amounts as `costs`, `insuranceCharge` null when uninsured. */
export function toBreakdown(fees: FeeAmounts, insured: boolean) {
  return {
    baseCharge: formatNaira(fees.base),
    weightCharge: formatNaira(fees.weight),
    insuranceCharge: insured ? formatNaira(fees.insurance) : null,
    fleetCharge: formatNaira(fees.fleet),
    surchargeCharge: formatNaira(fees.surcharge),
    serviceFeeCharge: formatNaira(fees.serviceFee),
  };
}
