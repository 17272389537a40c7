import Joi from './joi';
import { URGENCY_TYPES } from './contracts/pricing';
import { documented } from './schemas';

/**
 * A scheduled delivery's date and time window as clients write them, read the same by
 * `POST /api/pricing`, `pricing.quote` and `POST /api/request`: one pattern, one parse, one
 * set of messages. Whether a date can still be booked depends on the tariff's time zone and
 * stays with pricing (services/pricing/schedule.ts).
 */

/**
 * The time zone of the tariff a new installation starts with (Nigeria's); deliveries stored
 * before each kept its own tariff's zone are shown in it.
 */
export const DEFAULT_TIME_ZONE = 'Africa/Lagos';

export const SLOT_PATTERN = /^([01]\d|2[0-3]):([0-5]\d) ?- ?([01]\d|2[0-3]):([0-5]\d)$/;

/** Two digits from `from` to 23, as a regular expression: `1[5-9]|2[0-3]` for 15. */
function hoursFrom(from: number): string {
  const byTens = new Map<string, string[]>();
  for (let hour = from; hour < 24; hour += 1) {
    const [tens, unit] = String(hour).padStart(2, '0');
    byTens.set(tens, [...(byTens.get(tens) ?? []), unit]);
  }
  return [...byTens]
    .map(([tens, units]) => tens + (units.length > 1 ? `[${units[0]}-${units.at(-1)}]` : units[0]))
    .join('|');
}

/**
 * `SLOT_PATTERN` with its start before its end, as one regular expression, so that the
 * document states exactly what is taken and a generator (schemathesis) writes only slots that
 * are: a later hour, or the same hour (`\1`) and a later minute. No lookahead: generators
 * cannot write strings for one.
 */
export const FORWARD_SLOT_PATTERN = (() => {
  const minute = '[0-5]\\d';
  const dash = ' ?- ?';
  const laterHour = Array.from(
    { length: 23 },
    (_, hour) =>
      `${String(hour).padStart(2, '0')}:${minute}${dash}(?:${hoursFrom(hour + 1)}):${minute}`,
  );
  const laterTens = Array.from({ length: 5 }, (_, t) => `${t}\\d${dash}\\1:[${t + 1}-5]\\d`);
  const laterUnit = Array.from({ length: 6 * 9 }, (_, i) => {
    const [tens, unit] = [Math.floor(i / 9), i % 9];
    return `${tens}${unit}${dash}\\1:${tens}[${unit + 1}-9]`;
  });
  const sameHour = `([01]\\d|2[0-3]):(?:${[...laterTens, ...laterUnit].join('|')})`;
  return new RegExp(`^(?:${[...laterHour, sameHour].join('|')})$`);
})();
export const DATE_PATTERN = /^\d{4}-\d{2}-\d{2}$/;

/** Minutes after midnight. */
export interface Slot {
  start: number;
  end: number;
}

/** "09:00 - 12:00" → {start: 540, end: 720}; null when malformed or not forward. */
export function parseSlot(text: string): Slot | null {
  const match = SLOT_PATTERN.exec(text.trim());
  if (!match) return null;
  const start = Number(match[1]) * 60 + Number(match[2]);
  const end = Number(match[3]) * 60 + Number(match[4]);
  return start < end ? { start, end } : null;
}

/** The canonical spelling, "09:00 - 12:00". */
export function formatSlot(slot: Slot): string {
  const hhmm = (m: number) =>
    `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
  return `${hhmm(slot.start)} - ${hhmm(slot.end)}`;
}

/** A real calendar date in `YYYY-MM-DD` (no 2026-02-30). */
export function isCalendarDate(text: string): boolean {
  if (!DATE_PATTERN.test(text)) return false;
  const date = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === text;
}

/** A time window, answered in its canonical spelling (what is stored and priced). */
const slotText = () =>
  // Taken as sent, untrimmed: the document's pattern is then exactly the check.
  documented(Joi.string(), {
    pattern: FORWARD_SLOT_PATTERN.source,
    description: 'A time window like 09:00 - 12:00, its start before its end',
  })
    .custom((text: string, helpers) => {
      // parseSlot forgives spaces around a stored slot; a body's is taken as sent.
      const slot = SLOT_PATTERN.test(text) ? parseSlot(text) : null;
      return slot ? formatSlot(slot) : helpers.error('any.invalid');
    })
    .messages({
      'any.invalid':
        '{{#label}} must be a time window like 09:00 - 12:00, its start before its end',
    });

const dateText = () =>
  documented(Joi.string(), { format: 'date' })
    .custom((text: string, helpers) => (isCalendarDate(text) ? text : helpers.error('any.invalid')))
    .messages({ 'any.invalid': '{{#label}} must be a calendar date like 2026-12-24 (YYYY-MM-DD)' });

/**
 * Refused unless `urgencyType` is SCHEDULED. Being joi's `.when`, the document states it as
 * `if`/`then` (gateway/json-schema); that they are required when SCHEDULED is a rule of the
 * handler (`readScheduleText`), stated by `SCHEDULE_RULES` in libs/delivery-fields.
 */
const onlyWhenScheduled = (schema: Joi.Schema) =>
  schema.when('urgencyType', {
    not: 'SCHEDULED',
    then: Joi.forbidden().messages({
      'any.unknown': '{{#label}} applies only when urgencyType is SCHEDULED',
    }),
  });

/** A scheduled delivery's date and slot, as every body and action that takes them checks them. */
export const scheduleFields = {
  deliveryDate: onlyWhenScheduled(dateText()),
  deliverySlot: onlyWhenScheduled(slotText()),
};

/** `slot`, the alias of `deliverySlot` that the public bodies also take. */
export const slotAlias = () => onlyWhenScheduled(slotText()).description('Alias of deliverySlot');

/** When a delivery goes, as the public bodies (quote, request) take it. */
export const urgencyFields = () => ({
  urgencyType: Joi.string()
    .valid(...URGENCY_TYPES)
    .default('STANDARD'),
  ...scheduleFields,
  slot: slotAlias(),
});
