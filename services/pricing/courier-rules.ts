import { foldName } from '../../libs/text';

/**
 * Courier pricing rules: a courier's own price for trips between two areas. An area is a
 * state, or one LGA/city of a state, written "Lagos" or "Ikeja, Lagos".
 */
export interface Area {
  state: string;
  lgaOrCity?: string;
}

export interface CourierRule {
  id: string;
  courierId: string;
  capBy: 'LOCATION';
  countryCode: string;
  from: Area;
  to: Area;
  /** Only trips up to this distance; null for any distance. */
  withinKmRadius: number | null;
  isPerKg: boolean;
  amountKobo: number;
  /** Lower numbers are tried first; overlapping rules of one courier need different ones. */
  priority: number;
  createdAt: Date;
}

export interface TripEnds {
  origin: { countryCode?: string; state?: string; lgaOrCity?: string };
  destination: { countryCode?: string; state?: string; lgaOrCity?: string };
  distanceKm: number;
}

/** "Ikeja, Lagos" → {lgaOrCity: "Ikeja", state: "Lagos"}; null when not one or two parts. */
export function parseArea(text: string): Area | null {
  const parts = text.split(',').map((p) => p.trim());
  if (parts.some((p) => p === '')) return null;
  if (parts.length === 1) return { state: parts[0] };
  if (parts.length === 2) return { lgaOrCity: parts[0], state: parts[1] };
  return null;
}

export function formatArea(area: Area): string {
  return area.lgaOrCity ? `${area.lgaOrCity}, ${area.state}` : area.state;
}

const same = (a: string | undefined, b: string | undefined) =>
  a !== undefined && b !== undefined && foldName(a) === foldName(b);

function covers(area: Area, place: { state?: string; lgaOrCity?: string }): boolean {
  return (
    same(area.state, place.state) && (!area.lgaOrCity || same(area.lgaOrCity, place.lgaOrCity))
  );
}

/** Two areas share ground when one contains the other. */
export function areasOverlap(a: Area, b: Area): boolean {
  return same(a.state, b.state) && (!a.lgaOrCity || !b.lgaOrCity || same(a.lgaOrCity, b.lgaOrCity));
}

/**
 * Rules overlap when some trip matches both: same courier and country, overlapping origin
 * and destination areas (radii always share short trips). Only overlapping rules with the
 * same priority are ambiguous.
 */
export function ambiguousWith(rule: CourierRule, others: readonly CourierRule[]): CourierRule[] {
  return others.filter(
    (other) =>
      other.id !== rule.id &&
      other.courierId === rule.courierId &&
      other.countryCode === rule.countryCode &&
      other.priority === rule.priority &&
      areasOverlap(other.from, rule.from) &&
      areasOverlap(other.to, rule.to),
  );
}

const specificity = (rule: CourierRule) =>
  (rule.from.lgaOrCity ? 1 : 0) + (rule.to.lgaOrCity ? 1 : 0) + (rule.withinKmRadius ? 1 : 0);

/**
 * The rule that prices this trip: lowest priority first; then the more specific one, then
 * the older one, then the id, so that even rules created in a race resolve the same way.
 */
export function matchRule(rules: readonly CourierRule[], trip: TripEnds): CourierRule | null {
  const matching = rules.filter(
    (rule) =>
      rule.countryCode === trip.origin.countryCode &&
      rule.countryCode === trip.destination.countryCode &&
      covers(rule.from, trip.origin) &&
      covers(rule.to, trip.destination) &&
      (rule.withinKmRadius === null || trip.distanceKm <= rule.withinKmRadius),
  );
  matching.sort(
    (a, b) =>
      a.priority - b.priority ||
      specificity(b) - specificity(a) ||
      a.createdAt.getTime() - b.createdAt.getTime() ||
      a.id.localeCompare(b.id),
  );
  return matching[0] ?? null;
}

/** The `courierPricingRule` block of a quote. */
export function toRuleView(rule: CourierRule) {
  return {
    id: rule.id,
    capBy: rule.capBy,
    from: formatArea(rule.from),
    to: formatArea(rule.to),
    withinKmRadius: rule.withinKmRadius,
    isPerKg: rule.isPerKg,
  };
}

/**
 * Every courier's rules, in memory: a quote naming a SPECIFIC courier reads them there, never
 * the database (a query by courier reads the whole collection on FerretDB, decision 114).
 */
export class CourierRuleBook {
  private readonly byCourier = new Map<string, CourierRule[]>();

  constructor(rules: Iterable<CourierRule>) {
    for (const rule of rules) {
      const held = this.byCourier.get(rule.courierId);
      if (held) held.push(rule);
      else this.byCourier.set(rule.courierId, [rule]);
    }
  }

  /** The rules of one courier; none for a courier without any. */
  of(courierId: string): readonly CourierRule[] {
    return this.byCourier.get(courierId) ?? [];
  }
}
