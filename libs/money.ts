import Decimal from 'decimal.js';

/**
 * Money lives in the database as integer kobo and weight as integer grams; these are
 * the only conversions to and from the decimal strings of the API.
 */
/** Exact decimal arithmetic for money and weight: 40 significant digits, half-up rounding. */
export const Money = Decimal.clone({ precision: 40, rounding: Decimal.ROUND_HALF_UP });

const KOBO_PER_NAIRA = 100;
const GRAMS_PER_KG = 1000;

export type Numeric = number | string | Decimal;

function toDecimal(value: Numeric, what: string): Decimal {
  let d: Decimal;
  try {
    d = new Money(value);
  } catch {
    throw new RangeError(`${what} must be a number, got ${String(value)}`);
  }
  if (!d.isFinite()) throw new RangeError(`${what} must be a finite number, got ${String(value)}`);
  return d;
}

function toSafeInteger(d: Decimal, what: string): number {
  const n = d.toNumber();
  if (!Number.isSafeInteger(n)) throw new RangeError(`${what} is too large: ${d.toString()}`);
  return n;
}

/**
 * A safe integer over 10^places as a decimal string with exactly `places` decimals, in
 * integer arithmetic: what `Money` would print, without building decimals for the
 * figures every quote formats. Undefined for anything else, which takes the decimal path.
 */
function scaledInteger(value: Numeric, places: number): string | undefined {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) return undefined;
  const scale = 10 ** places;
  const magnitude = Math.abs(value);
  const fraction = magnitude % scale;
  // A multiple of the scale divided by it: exact, as every step here is for safe integers.
  const whole = (magnitude - fraction) / scale;
  const sign = value < 0 ? '-' : '';
  return `${sign}${whole}.${String(fraction).padStart(places, '0')}`;
}

/** Integer kobo → NGN string with exactly two decimals ("1234.50"). */
export function formatNaira(kobo: Numeric): string {
  const fast = scaledInteger(kobo, 2);
  if (fast !== undefined) return fast;
  const k = toDecimal(kobo, 'kobo');
  if (!k.isInteger()) throw new RangeError(`kobo must be an integer, got ${k.toString()}`);
  return k.dividedBy(KOBO_PER_NAIRA).toFixed(2);
}

/** NGN amount (number or string) → integer kobo, rounded half up to the nearest kobo. */
export function nairaToKobo(naira: Numeric): number {
  const kobo = toDecimal(naira, 'amount').times(KOBO_PER_NAIRA);
  return toSafeInteger(kobo.toDecimalPlaces(0, Decimal.ROUND_HALF_UP), 'amount');
}

/** Integer grams → kg string with exactly five decimals ("2.00000"). */
export function formatKg(grams: Numeric): string {
  const fast = scaledInteger(grams, 3);
  // Grams are the third decimal of a kilogram; the API prints five.
  if (fast !== undefined) return `${fast}00`;
  const g = toDecimal(grams, 'grams');
  if (!g.isInteger()) throw new RangeError(`grams must be an integer, got ${g.toString()}`);
  return g.dividedBy(GRAMS_PER_KG).toFixed(5);
}

/** kg (number or string) → integer grams, rounded half up. */
export function kgToGrams(kg: Numeric): number {
  const grams = toDecimal(kg, 'weight').times(GRAMS_PER_KG);
  return toSafeInteger(grams.toDecimalPlaces(0, Decimal.ROUND_HALF_UP), 'weight');
}
