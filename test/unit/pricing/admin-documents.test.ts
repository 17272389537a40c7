import fc from 'fast-check';
import type Joi from '../../../libs/joi';
import { ComponentSchemas, type JsonSchema } from '../../../services/gateway/json-schema';
import { createCourierRuleActions } from '../../../services/pricing/courier-rule-admin';
import { shareAtMost, tariffOverrideSchema } from '../../../services/pricing/tariff-schema';
import { VALIDATION_OPTIONS } from '../../../libs/validation';

/** The patterns the document gives a string, all of which must match. */
function patterns(schema: JsonSchema): RegExp[] {
  const own = typeof schema.pattern === 'string' ? [new RegExp(schema.pattern)] : [];
  return [...own, ...((schema.allOf ?? []) as JsonSchema[]).flatMap(patterns)];
}
const matches = (schema: JsonSchema, text: string) =>
  (schema.maxLength === undefined || text.length <= (schema.maxLength as number)) &&
  patterns(schema).every((p) => p.test(text));

describe('courier rule areas', () => {
  const params = createCourierRuleActions({} as never, { reload: async () => undefined })
    .createCourierRule.params as Joi.Schema;
  const from = (new ComponentSchemas().convert(params).properties as JsonSchema).from as JsonSchema;
  const accepted = (text: string) =>
    params.validate({
      courierId: '7a0d5d44-2f7c-4b7e-8d4e-1c2b3a4d5e6f',
      from: text,
      to: 'Lagos',
      amountKobo: 1,
    }).error === undefined;

  it('are documented as exactly what is accepted (property)', () => {
    const part = fc.string({
      unit: fc.constantFrom('a', 'Z', ' ', '\t', '-', 'é', '\u00a0', '\u0001', '\u000b', '\u0085'),
      maxLength: 110,
    });
    const areas = fc.oneof(
      part,
      fc.tuple(part, part).map(([a, b]) => `${a},${b}`),
      fc.tuple(part, part, part).map(([a, b, c]) => `${a},${b},${c}`),
    );
    fc.assert(
      fc.property(areas, (text) => {
        expect(matches(from, text)).toBe(accepted(text));
      }),
      { numRuns: 3000 },
    );
  });

  it('count characters, as the document’s readers do, not UTF-16 units', () => {
    // Each emoji is two units and one character.
    expect(accepted('😀'.repeat(60))).toBe(true);
    expect(accepted('😀'.repeat(100))).toBe(true);
    expect(accepted('😀'.repeat(101))).toBe(false);
    expect(new RegExp(from.pattern as string, 'u').test('😀'.repeat(60))).toBe(true);
  });

  it('refuse control characters, as geo.findArea does, naming the field', () => {
    const { error } = params.validate({
      courierId: '7a0d5d44-2f7c-4b7e-8d4e-1c2b3a4d5e6f',
      from: 'Ikeja\u001b, Lagos',
      to: 'Lagos',
      amountKobo: 1,
    });
    expect(error?.message).toBe(
      '"from" must be plain text: no control characters other than tabs and line breaks',
    );
    expect(matches(from, 'Ikeja\u001b, Lagos')).toBe(false);
  });

  it.each([['Lagos'], ['Ikeja, Lagos'], [' Eti-Osa ,Lagos ']])('accept %j', (text) => {
    expect(accepted(text) && matches(from, text)).toBe(true);
  });
});

describe('tariff shares', () => {
  it.each([[1], [5]])(
    'up to %i: the pattern is what the rate accepts as text (property)',
    (max) => {
      const field = max === 1 ? 'serviceFee' : 'priority';
      const pattern = new RegExp(shareAtMost(max));
      // Decimal strings and other numeric text, with blanks around them at times; validated as
      // actions validate, where text is never read as a number.
      const share = fc.oneof(
        fc.stringMatching(/^\d{1,3}(\.\d{1,6})?$/),
        fc.constantFrom(
          `${max}`,
          `${max}.000000`,
          `${max}.000001`,
          `0${max}`,
          '00.5',
          '.5',
          '1e-1',
        ),
      );
      const blank = fc.constantFrom('', '', '', ' ', '\t', '\u00a0', '\n');
      const shares = fc.tuple(blank, share, blank).map(([before, s, after]) => before + s + after);
      fc.assert(
        fc.property(shares, (text) => {
          const { error } = tariffOverrideSchema.validate(
            { [field]: { rate: text } },
            VALIDATION_OPTIONS,
          );
          expect(pattern.test(text)).toBe(error === undefined);
        }),
        { numRuns: 3000 },
      );
    },
  );
});

describe('tariff shares given as text', () => {
  it.each([[' 0.05'], ['0.05 '], [' 0.05 '], ['\t1']])(
    'refuse %j: blanks are not trimmed',
    (text) => {
      const { error } = tariffOverrideSchema.validate(
        { serviceFee: { rate: text } },
        VALIDATION_OPTIONS,
      );
      expect(error?.details.map((d) => d.path.join('.'))).toEqual(['serviceFee.rate']);
    },
  );
});

describe('tariff shares given as numbers', () => {
  it('are kept as decimal strings of at most 6 places, or refused (property)', () => {
    const text = /^\d+(\.\d{1,6})?$/;
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1, noNaN: true }), (share) => {
        const { value, error } = tariffOverrideSchema.validate({ serviceFee: { rate: share } });
        if (error) {
          expect(error.message).toMatch(/at most 6 decimal places/);
        } else {
          expect(value.serviceFee.rate).toMatch(text);
          expect(Number(value.serviceFee.rate)).toBe(share);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('keep 0.075 as written and refuse what would be an exponent', () => {
    expect(tariffOverrideSchema.validate({ serviceFee: { rate: 0.075 } }).value).toEqual({
      serviceFee: { rate: '0.075' },
    });
    expect(
      tariffOverrideSchema.validate({ serviceFee: { rate: 2.220446049250313e-16 } }).error,
    ).toBeDefined();
  });
});

describe('tariff overrides', () => {
  it('are documented as holding at least one rate in each group, as joi refuses {}', () => {
    const override = new ComponentSchemas().convert(tariffOverrideSchema);
    const groups = override.properties as Record<string, JsonSchema>;
    expect(override.minProperties).toBe(1);
    for (const group of [
      'routes',
      'fleetFeesKobo',
      'priority',
      'scheduled',
      'insurance',
      'serviceFee',
    ]) {
      expect([group, groups[group].minProperties]).toEqual([group, 1]);
    }
    const routes = groups.routes.properties as Record<string, JsonSchema>;
    expect(routes.INTER_CITY.minProperties).toBe(1);
  });
});
