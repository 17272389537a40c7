import fc from 'fast-check';
import Joi, { characterCount } from '../../../libs/joi';
import { VALIDATION_OPTIONS } from '../../../libs/validation';

const accepts = (schema: Joi.Schema, value: unknown) =>
  schema.validate(value, VALIDATION_OPTIONS).error === undefined;

describe('characterCount', () => {
  it('counts code points: a surrogate pair is one character, a lone surrogate one too', () => {
    expect(characterCount('')).toBe(0);
    expect(characterCount('abc')).toBe(3);
    expect(characterCount('€')).toBe(1);
    expect(characterCount('😀😀')).toBe(2);
    expect(characterCount('\ud83d')).toBe(1);
    expect(characterCount('\ude00\ud83d')).toBe(2);
  });

  it('agrees with the string iterator on any text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        expect(characterCount(text)).toBe([...text].length);
      }),
    );
  });
});

describe('string lengths count characters, as JSON Schema does', () => {
  it('takes 60 emoji under max(60), which joi alone counts as 120', () => {
    expect(accepts(Joi.string().max(60), '😀'.repeat(60))).toBe(true);
    expect(accepts(Joi.string().max(60), '😀'.repeat(61))).toBe(false);
    expect(accepts(Joi.string().min(2), '😀')).toBe(false);
    expect(accepts(Joi.string().length(2), '😀😀')).toBe(true);
    expect(accepts(Joi.string().length(2), '😀')).toBe(false);
  });

  it('bounds what the client sent from above and what trimming keeps from below', () => {
    const trimmed = Joi.string().trim().min(2).max(4);
    expect(trimmed.validate(' ab ', VALIDATION_OPTIONS)).toEqual({ value: 'ab' });
    expect(accepts(trimmed, '  ab ')).toBe(false);
    expect(accepts(trimmed, ' a  ')).toBe(false);
    expect(accepts(Joi.string().trim().length(2), ' ab')).toBe(false);
  });

  it('keeps joi’s messages and rule names (the OpenAPI document reads them)', () => {
    const { error } = Joi.string().max(1).validate('ab');
    expect(error?.details[0]).toMatchObject({
      type: 'string.max',
      message: '"value" length must be less than or equal to 1 characters long',
    });
    expect(Joi.string().min(1).max(3).describe().rules).toEqual([
      { name: 'min', args: { limit: 1 } },
      { name: 'max', args: { limit: 3 } },
    ]);
  });

  it('takes a reference as a limit', () => {
    const schema = Joi.object({ text: Joi.string().max(Joi.ref('limit')), limit: Joi.number() });
    expect(accepts(schema, { text: '😀😀', limit: 2 })).toBe(true);
    expect(accepts(schema, { text: '😀😀😀', limit: 2 })).toBe(false);
  });

  it('accepts exactly what JSON Schema minLength/maxLength accept: bounds on code points', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 6 }),
        fc.integer({ min: 0, max: 6 }),
        fc.string({ unit: 'binary', maxLength: 10 }),
        (min, span, text) => {
          const max = min + span;
          const codePoints = [...text].length;
          // joi refuses '' unless allowed; allowed, it skips the rules, so only where min is 0.
          const schema = min === 0 ? Joi.string().allow('') : Joi.string().min(min);
          expect(accepts(schema.max(max), text)).toBe(min <= codePoints && codePoints <= max);
        },
      ),
    );
  });
});
