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

describe('custom messages', () => {
  const options = { abortEarly: false, errors: { wrap: { label: false } } } as const;
  const messagesOf = (schema: Joi.Schema, value: unknown) =>
    schema.validate(value, options).error?.details.map((d) => d.message);

  it('render as joi renders its own, labels wrapped as the options say', () => {
    const id = Joi.string()
      .pattern(/^\d+$/)
      .messages({ 'string.pattern.base': '{{#label}} must be digits' });
    expect(id.label('id').validate('x').error?.message).toBe('"id" must be digits');
    expect(messagesOf(id.label('id'), 'x')).toEqual(['id must be digits']);
  });

  it("reword their children's errors, an inner schema's own message first", () => {
    const schema = Joi.object({
      a: Joi.number().messages({ 'number.base': '{{#label}} wants a number (inner)' }),
      b: Joi.number(),
    }).messages({ 'number.base': '{{#label}} wants a number (outer)' });
    expect(messagesOf(schema, { a: 'x', b: 'y' })).toEqual([
      'a wants a number (inner)',
      'b wants a number (outer)',
    ]);
  });

  it('leave the errors of other codes as joi words them', () => {
    const schema = Joi.number().max(3).messages({ 'number.base': 'not this one' });
    expect(messagesOf(schema.label('n'), 5)).toEqual(['n must be less than or equal to 3']);
  });

  it('are not compiled again on every validation (joi merges its own messages each time)', () => {
    // The module joi compiles message templates with; the cost this avoids (docs/performance.md).
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- joi's internal module
    const compiler = require('joi/lib/messages') as { compile: (...args: unknown[]) => unknown };
    const schema = Joi.object({
      inner: Joi.object({ n: Joi.number().messages({ 'number.base': 'a number' }) }).messages({
        'object.base': 'an object',
      }),
    }).messages({ 'object.unknown': 'not known' });
    const compile = jest.spyOn(compiler, 'compile');
    try {
      for (let i = 0; i < 3; i++) schema.validate({ inner: { n: 1 } }, options);
      expect(compile).not.toHaveBeenCalled();
    } finally {
      compile.mockRestore();
    }
  });
});
