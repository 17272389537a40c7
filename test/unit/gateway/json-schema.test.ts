import fc from 'fast-check';
import Joi from '../../../libs/joi';
import {
  NOT_BLANK,
  documented,
  email,
  httpsUrl,
  named,
  plainText,
  schemaOf,
  view,
} from '../../../libs/schemas';
import { VALIDATION_OPTIONS } from '../../../libs/validation';
import { textsAboutMatching } from '../helpers';
import { ComponentSchemas, type JsonSchema } from '../../../services/gateway/json-schema';
import { createFleetTypeParams } from '../../../services/geo/schemas';

const convert = (schema: Joi.Schema, components = new ComponentSchemas()) =>
  components.convert(schema);

/** Whether a string satisfies the string keywords the converter writes (a tiny validator). */
function documentAccepts(schema: JsonSchema, text: string): boolean {
  const length = [...text].length;
  if (typeof schema.minLength === 'number' && length < schema.minLength) return false;
  if (typeof schema.maxLength === 'number' && length > schema.maxLength) return false;
  if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern, 'u').test(text)) {
    return false;
  }
  return ((schema.allOf ?? []) as JsonSchema[]).every((part) => documentAccepts(part, text));
}

/** Strings that probe the edges: blanks, control characters, lengths around the limits. */
const probes = fc.oneof(
  fc.string({ maxLength: 14 }),
  fc.string({
    unit: fc.constantFrom(' ', '\t', '\n', '\u00a0', '\ufeff', '\u0085', '\u0007', 'a', 'é', '😀'),
    maxLength: 14,
  }),
);

describe('strings: what joi refuses, the document refuses', () => {
  it.each([
    ['a plain string (never empty)', Joi.string()],
    ['a trimmed string', Joi.string().trim()],
    ['a trimmed string with bounds', Joi.string().trim().min(3).max(10)],
    ['a length', Joi.string().length(4)],
    ['plain text of at least one character', plainText(10).min(1)],
  ])('%s (property)', (_name, schema) => {
    const json = convert(schema);
    fc.assert(
      fc.property(probes, (text) => {
        // Lengths count code points in JSON Schema and UTF-16 units in joi: compare on BMP text.
        fc.pre(![...text].some((c) => c.length > 1) || schema.describe().rules === undefined);
        expect(documentAccepts(json, text)).toBe(schema.validate(text).error === undefined);
      }),
      { numRuns: 3000 },
    );
  });

  /** Every pattern the document states for a string, its own and those under `allOf`. */
  const patternsOf = (schema: JsonSchema): string[] => [
    ...(typeof schema.pattern === 'string' ? [schema.pattern] : []),
    ...((schema.allOf ?? []) as JsonSchema[]).flatMap(patternsOf),
  ];

  /** Texts of the characters at a form's edges. */
  const edges = (units: string[], maxLength: number) =>
    fc.string({ unit: fc.constantFrom(...units), maxLength });

  /**
   * Fields whose form is a pattern: texts of the characters at its edges, and the texts the
   * document's patterns describe, each of which joi must take as well (validated as a request's
   * fields are).
   */
  it.each<[string, Joi.Schema, fc.Arbitrary<string>]>([
    [
      'a fleet type code',
      createFleetTypeParams.extract('code'),
      edges([' ', '\t', '\u00a0', '\u0085', 'k', 'E', '7', '-', '_', '!'], 36),
    ],
    [
      'an e-mail address',
      email(),
      fc.oneof(
        edges(['a', 'Z', '0', '.', '@', '-', '_', '+', '!', ' ', 'é', '"', '[', '1'], 12),
        fc.emailAddress(),
        fc.emailAddress().map((address) => ` ${address}`),
        // Local parts around their 64 characters, labels around their 63.
        fc
          .tuple(fc.integer({ min: 60, max: 68 }), fc.integer({ min: 60, max: 66 }))
          .map(([local, label]) => `${'a'.repeat(local)}@${'b'.repeat(label)}.ng`),
      ),
    ],
    [
      'an https URL',
      httpsUrl(),
      fc
        .array(
          fc.constantFrom(
            ...['https://', 'HTTPS://', 'https:', 'a', 'B', '1', '-', '.', '..', '/', '/./'],
            ...[':443', ':8443', ':99999', '?', '#', "'", '@', '%2e', '%41', '%zz', ' ', 'é'],
            ...['{', '|', '\\', '[::1]', 'xn--ls8h'],
          ),
          { maxLength: 12 },
        )
        .map((parts) => parts.join('')),
    ],
  ])('%s (property)', (_name, schema, sample) => {
    const json = convert(schema);
    const texts = fc.oneof(sample, ...patternsOf(json).map(textsAboutMatching));
    fc.assert(
      fc.property(texts, (text) => {
        const accepted = schema.validate(text, VALIDATION_OPTIONS).error === undefined;
        expect(documentAccepts(json, text)).toBe(accepted);
      }),
      { numRuns: 3000 },
    );
  });

  it('states the empty string where joi allows it', () => {
    expect(convert(Joi.string().trim().max(5).allow(''))).toEqual({ type: 'string', maxLength: 5 });
  });

  it('says that a trimmed required text needs a character trimming keeps', () => {
    expect(convert(Joi.string().trim().min(1))).toEqual({
      type: 'string',
      minLength: 1,
      pattern: NOT_BLANK,
    });
  });
});

describe('numbers and objects', () => {
  it('makes an integer of integer() wherever it stands among the rules', () => {
    expect(convert(Joi.number().min(1).max(9).integer())).toEqual({
      type: 'integer',
      minimum: 1,
      maximum: 9,
    });
  });

  it('states the safe range joi keeps numbers in, where a number has no bound of its own', () => {
    const safe = { minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER };
    expect(convert(Joi.number())).toEqual({ type: 'number', ...safe });
    expect(convert(Joi.number().min(0))).toEqual({ type: 'number', ...safe, minimum: 0 });
    expect(convert(Joi.number().positive())).toEqual({
      type: 'number',
      exclusiveMinimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
    });
    expect(convert(Joi.number().unsafe())).toEqual({ type: 'number' });
    for (const value of [1e300, -1e300, Number.MAX_SAFE_INTEGER + 2]) {
      expect(Joi.number().validate(value).error).toBeDefined();
    }
    expect(Joi.number().validate(Number.MAX_SAFE_INTEGER).error).toBeUndefined();
  });

  it('lets Joi.object() without keys take any properties, and Joi.object({}) none', () => {
    expect(convert(Joi.object())).toMatchObject({ type: 'object', additionalProperties: true });
    expect(convert(Joi.object({}))).toMatchObject({ additionalProperties: false });
  });

  it('leaves out the forbidden keys of a closed object', () => {
    const json = convert(Joi.object({ a: Joi.string(), b: Joi.any().forbidden() }));
    expect(Object.keys(json.properties as object)).toEqual(['a']);
  });
});

describe('a key that depends on a sibling', () => {
  it('becomes if/then/else on the object, the sibling default taken into account', () => {
    const schema = Joi.object({
      kind: Joi.string().valid('A', 'B').default('A'),
      when: Joi.string().when('kind', { not: 'B', then: Joi.forbidden() }),
      id: Joi.string(),
      name: Joi.string().when('id', { is: Joi.exist(), otherwise: Joi.required() }),
    });
    const json = convert(schema);
    expect(json.allOf).toEqual([
      // kind defaults to A, so a missing kind is not B: required in the condition.
      {
        if: { properties: { kind: { const: 'B' } }, required: ['kind'] },
        else: { not: { required: ['when'] } },
      },
      { if: { properties: { id: {} }, required: ['id'] }, else: { required: ['name'] } },
    ]);
    expect((json.properties as JsonSchema).when).toEqual({ type: 'string', minLength: 1 });
  });

  it('is refused when the condition cannot be stated', () => {
    const schema = Joi.object({
      a: Joi.number(),
      b: Joi.number().when('a', { is: 1, then: Joi.number().min(5) }),
    });
    expect(() => convert(schema)).toThrow(/b.*can be documented/);
  });
});

describe('named schemas', () => {
  const number = {
    type: 'number',
    minimum: Number.MIN_SAFE_INTEGER,
    maximum: Number.MAX_SAFE_INTEGER,
  };
  const point = view('Point', { x: Joi.number(), y: Joi.number().optional() });

  it('are components, referred to wherever they are used', () => {
    const components = new ComponentSchemas();
    const json = convert(Joi.object({ a: point, b: Joi.array().items(point) }), components);
    expect(json.properties).toEqual({
      a: { $ref: '#/components/schemas/Point' },
      b: { type: 'array', items: { $ref: '#/components/schemas/Point' } },
    });
    expect(components.schemas.Point).toEqual({
      type: 'object',
      properties: { x: number, y: number },
      required: ['x'],
      additionalProperties: false,
    });
  });

  it('read the same inside an object whose fields are all required', () => {
    const components = new ComponentSchemas();
    const loose = named('Loose', Joi.object({ z: Joi.number() }));
    convert(view('Outer', { loose, point, kept: loose.required() }), components);
    expect(components.schemas.Loose.required).toBeUndefined();
    // As in joi, a schema's own presence decides whether it may be missing: `.required()`.
    expect(components.schemas.Outer.required).toEqual(['point', 'kept']);
  });

  it('may be null where allowed: the component, or null', () => {
    const components = new ComponentSchemas();
    const json = convert(Joi.object({ p: point.allow(null) }), components);
    expect((json.properties as JsonSchema).p).toEqual({
      anyOf: [{ $ref: '#/components/schemas/Point' }, { type: 'null' }],
    });
    expect(components.schemas.Point.type).toBe('object');
  });

  it('are one schema per name', () => {
    const components = new ComponentSchemas();
    convert(point, components);
    expect(() => convert(view('Point', { x: Joi.string() }), components)).toThrow(
      /Two different schemas are named Point/,
    );
  });
});

describe('documented keywords', () => {
  it('are merged in; a second pattern holds as well', () => {
    const schema = documented(Joi.string().pattern(/^a/), { pattern: 'b$', format: 'x' });
    expect(convert(schema)).toEqual({
      type: 'string',
      pattern: '^a',
      format: 'x',
      allOf: [{ pattern: 'b$' }],
    });
  });

  it('of a schema documented twice are all kept, the same keyword twice as allOf', () => {
    const once = documented(Joi.string(), { pattern: '^a', format: 'x' });
    const twice = documented(once, { not: { pattern: '^ab$' }, pattern: 'b$' });
    expect(convert(twice)).toEqual({
      type: 'string',
      minLength: 1,
      pattern: '^a',
      format: 'x',
      not: { pattern: '^ab$' },
      allOf: [{ pattern: 'b$' }],
    });
    // The first alone is what it was.
    expect(convert(once)).toEqual({ type: 'string', minLength: 1, pattern: '^a', format: 'x' });
  });

  it('may hold joi schemas, converted and named like any other', () => {
    const components = new ComponentSchemas();
    const point = view('Point', { x: Joi.number() });
    const schema = documented(Joi.object({ p: Joi.object() }), {
      then: { properties: { p: schemaOf(point) } },
    });
    expect(convert(schema, components).then).toEqual({
      properties: { p: { $ref: '#/components/schemas/Point' } },
    });
    expect(components.schemas.Point).toBeDefined();
  });
});

describe('patterns', () => {
  it('refuses a pattern with flags, which JSON Schema cannot state', () => {
    expect(() => convert(Joi.object({ a: Joi.string().pattern(/^a+$/i) }))).toThrow(
      /no regex flags/,
    );
    expect(convert(Joi.object({ a: Joi.string().pattern(/^[Aa]+$/) }))).toMatchObject({
      properties: { a: { pattern: '^[Aa]+$' } },
    });
  });
});
