import { isFields } from '../../libs/fields';
import { foldName } from '../../libs/text';
import type { RouteType } from '../../libs/contracts/geo';

/**
 * A tariff: every rate the fee engine needs. Money is integer kobo (fields end in `Kobo`),
 * shares are decimal strings ("0.05" = 5 %), so nothing here is ever a binary fraction of
 * money. A country tier holds a complete tariff; state and city tiers hold overrides that
 * replace it field by field (see `mergeTariff`).
 */
export interface RouteRate {
  /** Charged for every trip of this route type; covers the first `includedKm`. */
  baseFeeKobo: number;
  includedKm: number;
  perKmFeeKobo: number;
  /** Per started kg above the tariff's `includedWeightKg`. */
  perKgFeeKobo: number;
  /** Share of the delivery subtotal kept by the hubs a trip of this type passes through. */
  hubCommissionRate: string;
}

export interface Tariff {
  /** IANA zone in which delivery dates and slots are read. */
  timezone: string;
  routes: Record<RouteType, RouteRate>;
  includedWeightKg: number;
  /** Flat fee per fleet type code (bike, car...); `default` for codes not listed. */
  fleetFeesKobo: Record<string, number> & { default: number };
  priority: { rate: string; minimumKobo: number };
  scheduled: {
    feeKobo: number;
    /** Added when the slot starts before `openingTime` or ends after `closingTime`. */
    offHoursFeeKobo: number;
    openingTime: string;
    closingTime: string;
  };
  insurance: { rate: string; minimumKobo: number; maxDeclaredValueKobo: number };
  serviceFee: { rate: string; minimumKobo: number; maximumKobo: number };
}

type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? DeepPartial<T[K]> : T[K] };

/** What a state or city tier changes; a country tier is a complete `Tariff`. */
export type TariffOverride = DeepPartial<Tariff>;

export const TIER_LEVELS = ['country', 'state', 'city'] as const;
export type TierLevel = (typeof TIER_LEVELS)[number];

/** Where a tier applies. `city` is the `lgaOrCity` of resolved addresses (an LGA in Nigeria). */
export interface TierScope {
  countryCode: string;
  state?: string;
  city?: string;
}

export function levelOf(scope: TierScope): TierLevel {
  if (scope.city !== undefined) return 'city';
  return scope.state !== undefined ? 'state' : 'country';
}

/**
 * One key per scope: "NG", "NG/lagos", "NG/lagos/eti osa". Names are folded as the
 * gazetteer folds them (case, accents and punctuation ignored: "Eti-Osa" is "eti osa").
 */
export function scopeKey(scope: TierScope): string {
  return [scope.countryCode.toUpperCase(), scope.state, scope.city]
    .filter((part): part is string => part !== undefined)
    .map((part, i) => (i === 0 ? part : foldName(part)))
    .join('/');
}

/** The scopes that may price a trip starting here, most general first. */
export function scopesOf(origin: {
  countryCode?: string;
  state?: string;
  lgaOrCity?: string;
}): TierScope[] {
  if (!origin.countryCode) return [];
  const scopes: TierScope[] = [{ countryCode: origin.countryCode }];
  if (origin.state) {
    scopes.push({ countryCode: origin.countryCode, state: origin.state });
    if (origin.lgaOrCity) {
      scopes.push({ countryCode: origin.countryCode, state: origin.state, city: origin.lgaOrCity });
    }
  }
  return scopes;
}

function overlay(base: unknown, override: unknown): unknown {
  if (!isFields(base) || !isFields(override)) {
    return override === undefined ? base : override;
  }
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(override)) {
    merged[key] = overlay(base[key], value);
  }
  return merged;
}

/** The country tariff with each more specific override laid over it, leaf by leaf. */
export function mergeTariff(country: Tariff, ...overrides: TariffOverride[]): Tariff {
  return overrides.reduce<Tariff>((tariff, o) => overlay(tariff, o) as Tariff, country);
}
