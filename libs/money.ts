import Decimal from 'decimal.js';

/**
 * Money lives in the database as integer kobo and weight as integer grams; these are
 * the only conversions to and from the decimal strings of the API.
 */
const Money = Decimal.clone({ precision: 40, rounding: Decimal.ROUND_HALF_UP });

const KOBO_PER_NAIRA = 100;
const GRAMS_PER_KG = 1000;

export type Numeric = number | string | Decimal;

function toDecimal(value: Numeric, what: string): Decimal {
  const d = new Money(value);
  if (!d.isFinite()) throw new RangeError(`${what} must be a finite number, got ${String(value)}`);
  return d;
}

/** Integer kobo → NGN string with exactly two decimals ("1234.50"). */
export function formatNaira(kobo: Numeric): string {
  const k = toDecimal(kobo, 'kobo');
  if (!k.isInteger()) throw new RangeError(`kobo must be an integer, got ${k.toString()}`);
  return k.dividedBy(KOBO_PER_NAIRA).toFixed(2);
}

/** NGN amount (number or string) → integer kobo, rounded half up to the nearest kobo. */
export function nairaToKobo(naira: Numeric): number {
  return toDecimal(naira, 'amount')
    .times(KOBO_PER_NAIRA)
    .toDecimalPlaces(0, Decimal.ROUND_HALF_UP)
    .toNumber();
}

/** Integer grams → kg string with exactly five decimals ("2.00000"). */
export function formatKg(grams: Numeric): string {
  const g = toDecimal(grams, 'grams');
  if (!g.isInteger()) throw new RangeError(`grams must be an integer, got ${g.toString()}`);
  return g.dividedBy(GRAMS_PER_KG).toFixed(5);
}

/** kg (number or string) → integer grams, rounded half up. */
export function kgToGrams(kg: Numeric): number {
  return toDecimal(kg, 'weight')
    .times(GRAMS_PER_KG)
    .toDecimalPlaces(0, Decimal.ROUND_HALF_UP)
    .toNumber();
}
