import Decimal from 'decimal.js';
import Joi from 'joi';
import { minutesOf } from './schedule';
import { ROUTE_TYPES, type Tariff } from './tariff';

/** Validation of tariffs sent by operators; complete for a country, partial otherwise. */

const MAX_KOBO = 1e12; // ₦10 billion: far above any fee, far below unsafe integers
const kobo = () => Joi.number().integer().min(0).max(MAX_KOBO);

/** A share as a decimal string ("0.05"); numbers are accepted and kept exact as written. */
const rate = (max: number) =>
  Joi.alternatives()
    .try(
      Joi.number().min(0).max(max),
      Joi.string()
        .trim()
        .pattern(/^\d+(\.\d{1,6})?$/),
    )
    .custom((value: number | string, helpers) => {
      const d = new Decimal(value);
      return d.gt(max) ? helpers.error('number.max', { limit: max }) : d.toString();
    })
    .messages({
      'alternatives.match': `{{#label}} must be a share between 0 and ${max}, like 0.05 for 5 %`,
      'number.max': `{{#label}} must be at most ${max}`,
    });

const time = () =>
  Joi.string()
    .pattern(/^([01]\d|2[0-3]):[0-5]\d$/)
    .messages({ 'string.pattern.base': '{{#label}} must be a time like 08:00' });

const routeRate = Joi.object({
  baseFeeKobo: kobo(),
  includedKm: Joi.number().min(0).max(10_000),
  perKmFeeKobo: kobo(),
  perKgFeeKobo: kobo(),
  hubCommissionRate: rate(1),
});

const tariffShape = Joi.object({
  timezone: Joi.string().custom((zone: string, helpers) => {
    try {
      new Intl.DateTimeFormat('en', { timeZone: zone });
      return zone;
    } catch {
      return helpers.error('any.invalid');
    }
  }, 'IANA time zone'),
  routes: Joi.object(Object.fromEntries(ROUTE_TYPES.map((t) => [t, routeRate]))),
  includedWeightKg: Joi.number().min(0).max(100_000),
  fleetFeesKobo: Joi.object({ default: kobo() }).pattern(/^[a-z][a-z0-9-]{1,31}$/, kobo()),
  priority: Joi.object({ rate: rate(5), minimumKobo: kobo() }),
  scheduled: Joi.object({
    feeKobo: kobo(),
    offHoursFeeKobo: kobo(),
    openingTime: time(),
    closingTime: time(),
  }),
  insurance: Joi.object({
    rate: rate(1),
    minimumKobo: kobo(),
    maxDeclaredValueKobo: kobo().min(1),
  }),
  serviceFee: Joi.object({ rate: rate(1), minimumKobo: kobo(), maximumKobo: kobo() }),
});

/** A state or city tier: any subset of the fields. */
export const tariffOverrideSchema = tariffShape.min(1).messages({
  'object.min': '{{#label}} must change at least one rate',
});

/** A country tier: every field. */
export const completeTariffSchema = tariffShape.options({ presence: 'required' });

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
