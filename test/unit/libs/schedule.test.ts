import fc from 'fast-check';
import Joi from '../../../libs/joi';
import {
  DATE_PATTERN,
  FORWARD_SLOT_PATTERN,
  formatSlot,
  isCalendarDate,
  parseSlot,
  scheduleFields,
  slotAlias,
  SLOT_PATTERN,
} from '../../../libs/schedule';
import { validate } from '../../../libs/validation';
import { ComponentSchemas } from '../../../services/gateway/json-schema';

/** What the validator takes: the form as sent (untrimmed), its start before its end. */
const taken = (text: string) => SLOT_PATTERN.test(text) && parseSlot(text) !== null;

describe('delivery slots', () => {
  it('are documented by a pattern that takes exactly what the validator takes', () => {
    const times = Array.from(
      { length: 24 * 60 },
      (_, m) => `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`,
    );
    let compared = 0;
    // Every end for a start every 7 minutes (each hour and minute digit met), each spacing.
    for (const dash of [' - ', '-', ' -', '- ']) {
      for (let start = 0; start < times.length; start += 7) {
        for (const end of times) {
          const text = `${times[start]}${dash}${end}`;
          if (FORWARD_SLOT_PATTERN.test(text) !== taken(text)) throw new Error(text);
          compared += 1;
        }
      }
    }
    expect(compared).toBeGreaterThan(1_000_000);
    fc.assert(
      fc.property(fc.stringMatching(/^[0-9: -]{5,15}$/), (text) => {
        expect(FORWARD_SLOT_PATTERN.test(text)).toBe(taken(text));
      }),
      { numRuns: 2000 },
    );
  });

  it.each([
    ['09:00 - 12:00', { start: 540, end: 720 }],
    ['09:00-12:00', { start: 540, end: 720 }],
    [' 09:00 -12:00 ', { start: 540, end: 720 }],
    ['00:00 - 23:59', { start: 0, end: 1439 }],
  ])('reads %s', (text, slot) => expect(parseSlot(text)).toEqual(slot));

  it.each([
    '12:00 - 09:00',
    '09:00 - 09:00',
    '9:00 - 12:00',
    '24:00 - 25:00',
    '09:60 - 10:00',
    'morning',
  ])('refuses %s', (text) => expect(parseSlot(text)).toBeNull());

  it('formats slots canonically, and reads back what it wrote', () => {
    expect(formatSlot({ start: 540, end: 720 })).toBe('09:00 - 12:00');
    expect(formatSlot({ start: 0, end: 1439 })).toBe('00:00 - 23:59');
    expect(parseSlot(formatSlot({ start: 65, end: 600 }))).toEqual({ start: 65, end: 600 });
  });
});

describe('delivery dates', () => {
  it('accepts only real calendar dates', () => {
    expect(isCalendarDate('2026-12-24')).toBe(true);
    expect(isCalendarDate('2028-02-29')).toBe(true);
    expect(isCalendarDate('2026-02-29')).toBe(false);
    expect(isCalendarDate('2026-13-01')).toBe(false);
    expect(isCalendarDate('24/12/2026')).toBe(false);
    expect(isCalendarDate('2026-12-24T00:00:00Z')).toBe(false);
    expect(DATE_PATTERN.test('2026-12-24')).toBe(true);
  });
});

/** A body that takes the schedule as the public bodies do. */
const body = Joi.object({
  urgencyType: Joi.string().valid('STANDARD', 'PRIORITY', 'SCHEDULED').default('STANDARD'),
  ...scheduleFields,
  slot: slotAlias(),
});

/** The field errors of `input`, or the validated value. */
function read(input: object): { value?: unknown; errors?: { field: string; message: string }[] } {
  try {
    return { value: validate(body, input) };
  } catch (err) {
    return {
      errors: (err as { data: { errors: { field: string; message: string }[] } }).data.errors,
    };
  }
}

describe('the schedule fields', () => {
  const scheduled = { urgencyType: 'SCHEDULED' };

  it('answer a slot in its canonical spelling, the date as sent', () => {
    expect(read({ ...scheduled, deliveryDate: '2030-01-15', deliverySlot: '09:00-12:00' })).toEqual(
      {
        value: { ...scheduled, deliveryDate: '2030-01-15', deliverySlot: '09:00 - 12:00' },
      },
    );
    expect(read({ ...scheduled, slot: '13:00 -15:00' }).value).toMatchObject({
      slot: '13:00 - 15:00',
    });
  });

  it('take them untrimmed, as the document’s date format and slot pattern state them', () => {
    expect(read({ ...scheduled, deliveryDate: ' 2030-01-15 ' }).errors).toEqual([
      {
        field: 'deliveryDate',
        message: 'deliveryDate must be a calendar date like 2026-12-24 (YYYY-MM-DD)',
      },
    ]);
    expect(read({ ...scheduled, deliverySlot: ' 09:00 - 12:00' }).errors?.[0].field).toBe(
      'deliverySlot',
    );
    expect(SLOT_PATTERN.test(' 09:00 - 12:00')).toBe(false);
  });

  it.each([
    [
      { deliveryDate: '2026-02-30' },
      'deliveryDate must be a calendar date like 2026-12-24 (YYYY-MM-DD)',
    ],
    [
      { deliveryDate: 'tomorrow' },
      'deliveryDate must be a calendar date like 2026-12-24 (YYYY-MM-DD)',
    ],
    [
      { deliverySlot: '12:00 - 09:00' },
      'deliverySlot must be a time window like 09:00 - 12:00, its start before its end',
    ],
    [
      { slot: 'morning' },
      'slot must be a time window like 09:00 - 12:00, its start before its end',
    ],
  ])('refuse %j: %s', (fields, message) => {
    expect(read({ ...scheduled, ...fields }).errors).toEqual([
      { field: Object.keys(fields)[0], message },
    ]);
  });

  it.each(['STANDARD', 'PRIORITY', undefined])(
    'apply only when SCHEDULED (urgencyType %s)',
    (urgencyType) => {
      const fields = {
        deliveryDate: '2030-01-15',
        deliverySlot: '09:00 - 12:00',
        slot: '09:00 - 12:00',
      };
      expect(read({ urgencyType, ...fields }).errors).toEqual(
        Object.keys(fields).map((field) => ({
          field,
          message: `${field} applies only when urgencyType is SCHEDULED`,
        })),
      );
    },
  );

  it('are documented with their form and their condition', () => {
    const json = new ComponentSchemas().convert(body);
    const properties = json.properties as Record<string, Record<string, unknown>>;
    expect(properties.deliveryDate).toMatchObject({ type: 'string', format: 'date' });
    expect(properties.deliverySlot).toMatchObject({ pattern: FORWARD_SLOT_PATTERN.source });
    expect(properties.slot).toMatchObject({
      pattern: FORWARD_SLOT_PATTERN.source,
      description: 'Alias of deliverySlot',
    });
    // Refused unless SCHEDULED: `urgencyType` defaults to STANDARD, so its absence is not.
    expect(json.allOf).toContainEqual({
      if: { properties: { urgencyType: { const: 'SCHEDULED' } }, required: ['urgencyType'] },
      else: { not: { required: ['deliveryDate'] } },
    });
  });
});
