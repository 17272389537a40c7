import Decimal from 'decimal.js';
import Joi from '../../libs/joi';
import { documented, kilograms, named } from '../../libs/schemas';
import { minutesOf } from './schedule';
import { FLEET_TYPES_MAX, ROUTE_TYPES } from '../../libs/contracts/geo';
import { MAX_AMOUNT_KOBO } from '../../libs/contracts/payment';
import type { Tariff } from './tariff';

/** Validation of tariffs sent by operators; complete for a country, partial otherwise. */

/**
 * Any amount of a tariff: what the payment service may move at once (₦10 billion, far above any
 * fee). It bounds `insurance.maxDeclaredValueKobo`, which the quote holds every load to, and so
 * what a pay-on-delivery collects: above it `payment.collectOnDelivery` would refuse the amount
 * after delivery, for good.
 */
const kobo = () => Joi.number().integer().min(0).max(MAX_AMOUNT_KOBO);

/** Decimal strings of at most 6 places up to `max` (a whole number below 10), as a pattern. */
export function shareAtMost(max: number): string {
  if (!Number.isInteger(max) || max < 1 || max > 9)
    throw new Error(`no share pattern up to ${max}`);
  return `^0*(?:[0-${max - 1}](?:\\.\\d{1,6})?|${max}(?:\\.0{1,6})?)$`;
}

/**
 * A share as a decimal string ("0.05") of at most 6 places; numbers are accepted and kept exact
 * as written, and answered as such strings.
 */
const rate = (max: number) =>
  Joi.alternatives()
    .try(
      documented(Joi.number().min(0).max(max), { multipleOf: 0.000001 }),
      // Not trimmed: the document's pattern refuses blanks around a share, and so does this.
      documented(Joi.string().pattern(/^\d+(\.\d{1,6})?$/), { pattern: shareAtMost(max) }),
    )
    .custom((value: number | string, helpers) => {
      const d = new Decimal(value);
      if (d.gt(max)) return helpers.error('number.max', { limit: max });
      // A number such as 2.220446049250313e-16 would be kept as an exponent or 17 places.
      if (d.decimalPlaces() > 6) return helpers.error('number.shareDigits');
      return d.toString();
    })
    .messages({
      'alternatives.match': `{{#label}} must be a share between 0 and ${max}, like 0.05 for 5 %`,
      'number.max': `{{#label}} must be at most ${max}`,
      'number.shareDigits': '{{#label}} must have at most 6 decimal places, like 0.075',
    });

const time = () =>
  Joi.string()
    .pattern(/^([01]\d|2[0-3]):[0-5]\d$/)
    .messages({ 'string.pattern.base': '{{#label}} must be a time like 08:00' });

/**
 * A group of rates holds at least one: `{}` would change nothing, and a tier must change a
 * rate. Stated for the document too (joi-to-json leaves an object's `min` out).
 */
const someRates = <T extends Joi.ObjectSchema>(group: T, keywords: object = {}): T =>
  documented(group.min(1), { minProperties: 1, ...keywords });

/**
 * `default` and one fee per fleet type there may be: a tier's rates are listed and merged into
 * one reply (decision 33), and the keys were not bounded but by the body's size.
 */
const FLEET_FEES_MAX = FLEET_TYPES_MAX + 1;

const routeRate = someRates(
  Joi.object({
    baseFeeKobo: kobo(),
    includedKm: Joi.number().min(0).max(10_000),
    perKmFeeKobo: kobo(),
    perKgFeeKobo: kobo(),
    hubCommissionRate: rate(1),
  }),
);

const tariffShape = Joi.object({
  timezone: Joi.string().custom((zone: string, helpers) => {
    try {
      new Intl.DateTimeFormat('en', { timeZone: zone });
      return zone;
    } catch {
      return helpers.error('any.invalid');
    }
  }, 'IANA time zone'),
  routes: someRates(Joi.object(Object.fromEntries(ROUTE_TYPES.map((t) => [t, routeRate])))),
  includedWeightKg: kilograms().min(0).max(100_000),
  fleetFeesKobo: someRates(
    Joi.object({ default: kobo() })
      .pattern(/^[a-z][a-z0-9-]{1,31}$/, kobo())
      .max(FLEET_FEES_MAX)
      .messages({
        'object.max': `{{#label}} takes at most ${FLEET_FEES_MAX} fees: \`default\` and one for each fleet type there may be (${FLEET_TYPES_MAX})`,
      }),
    { maxProperties: FLEET_FEES_MAX },
  ),
  priority: someRates(Joi.object({ rate: rate(5), minimumKobo: kobo() })),
  scheduled: someRates(
    Joi.object({
      feeKobo: kobo(),
      offHoursFeeKobo: kobo(),
      openingTime: time(),
      closingTime: time(),
    }),
  ),
  insurance: someRates(
    Joi.object({
      rate: rate(1),
      minimumKobo: kobo(),
      maxDeclaredValueKobo: kobo().min(1),
    }),
  ),
  serviceFee: someRates(Joi.object({ rate: rate(1), minimumKobo: kobo(), maximumKobo: kobo() })),
});

/** A state or city tier: any subset of the fields. */
export const tariffOverrideSchema = someRates(tariffShape).messages({
  'object.min': '{{#label}} must change at least one rate',
});

/** A country tier: every field. */
export const completeTariffSchema = tariffShape.options({ presence: 'required' });

/** The same, named for the document. */
export const tariffView = named('Tariff', completeTariffSchema).description(
  'Every rate: a country tier, or the tariff that prices a place. Money in integer kobo, shares as decimals ("0.05").',
);
export const tariffOverrideView = named('TariffOverride', tariffOverrideSchema).description(
  'The rates a state or city tier changes; the others come from the wider tiers',
);
/** Rates as stored: complete (country), some (state, city), or none (a removal). */
export const tariffRatesView = named('TariffRates', tariffShape).description(
  'A complete tariff (country tier), the rates it overrides (state, city), or `{}` (a removal)',
);

/**
 * Rules joi cannot see field by field; checked on the merged tariff, so a state tier cannot
 * make its country's opening hours or fee bounds inconsistent either.
 */
export function tariffProblems(tariff: Tariff): string[] {
  const problems: string[] = [];
  const { openingTime, closingTime } = tariff.scheduled;
  if (minutesOf(openingTime) >= minutesOf(closingTime)) {
    problems.push(
      `scheduled.openingTime (${openingTime}) must be before closingTime (${closingTime})`,
    );
  }
  const { minimumKobo, maximumKobo } = tariff.serviceFee;
  if (minimumKobo > maximumKobo) {
    problems.push(
      `serviceFee.minimumKobo (${minimumKobo}) must not exceed maximumKobo (${maximumKobo})`,
    );
  }
  return problems;
}
