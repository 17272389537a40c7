import fc from 'fast-check';
import Joi, {
  absentKeyIsNothing,
  absentValues,
  characterCount,
  constantOptions,
} from '../../../libs/joi';
import { loadConfig } from '../../../libs/config';
import { backendDefinitions } from '../../../services/catalog';
import { addressInput, routeParams } from '../../../libs/contracts/geo';
import { email, fromUrl, named, uuid, view } from '../../../libs/schemas';
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

describe('preferences merged once for constant options (decision 76)', () => {
  /** The same options, not frozen: joi merges them, and every schema's preferences, each time. */
  const asJoiMerges = (options: Joi.ValidationOptions): Joi.ValidationOptions => ({
    ...options,
    errors: { ...options.errors, wrap: { ...options.errors?.wrap } },
  });
  const outcome = (schema: Joi.Schema, value: unknown, options: Joi.ValidationOptions) => {
    const { value: validated, error } = schema.validate(value, options);
    return { value: validated, errors: error?.details };
  };

  /** The preferences each validation of `field` ran with, as its `custom` sees them. */
  function seenPreferences(field: Joi.Schema, options: Joi.ValidationOptions, times = 2) {
    const seen: unknown[] = [];
    const schema = Joi.object({
      inner: Joi.object({
        field: field.custom((value, helpers) => {
          seen.push(helpers.prefs);
          return value;
        }),
      }),
    });
    for (let i = 0; i < times; i++) schema.validate({ inner: { field: 'x' } }, options);
    return seen;
  }

  it('are made once: a nested string sees the same frozen settings on every validation', () => {
    const seen = seenPreferences(Joi.string(), VALIDATION_OPTIONS);
    expect(seen[0]).toBe(seen[1]);
    expect(Object.isFrozen(seen[0])).toBe(true);
    expect(seen[0]).toMatchObject({ convert: true, abortEarly: false, allowUnknown: false });
  });

  it('are joi’s own, made each time, for options that are not constant', () => {
    const seen = seenPreferences(Joi.string(), asJoiMerges(VALIDATION_OPTIONS));
    expect(seen[0]).not.toBe(seen[1]);
    expect(seen[0]).toEqual(seen[1]);
    expect(Object.isFrozen(seen[0])).toBe(false);
  });

  it('equal joi’s own merges, key for key', () => {
    const [kept] = seenPreferences(Joi.string(), VALIDATION_OPTIONS, 1);
    const [merged] = seenPreferences(Joi.string(), asJoiMerges(VALIDATION_OPTIONS), 1);
    expect(kept).toEqual(merged);
    const [keptNumber] = seenPreferences(fromUrl(Joi.number()).allow('x'), VALIDATION_OPTIONS, 1);
    const [number] = seenPreferences(
      fromUrl(Joi.number()).allow('x'),
      asJoiMerges(VALIDATION_OPTIONS),
      1,
    );
    expect(keptNumber).toEqual(number);
  });

  it('still trim and change case in nested objects and arrays, validation after validation', () => {
    const schema = Joi.object({
      stops: Joi.array().items(
        Joi.object({
          code: Joi.string().trim().uppercase(),
          contact: Joi.object({ email: email() }),
        }),
      ),
      id: uuid(),
    });
    const input = {
      stops: [{ code: ' ab ', contact: { email: 'Ada@Example.COM' } }, { code: 'cd  ' }],
      id: '5B0C7F8E-4C1D-4A8B-9F3E-2D6A1C9E7B40',
    };
    for (let i = 0; i < 3; i++) {
      expect(schema.validate(input, VALIDATION_OPTIONS)).toEqual({
        value: {
          stops: [{ code: 'AB', contact: { email: 'ada@example.com' } }, { code: 'CD' }],
          id: '5b0c7f8e-4c1d-4a8b-9f3e-2d6a1c9e7b40',
        },
      });
    }
  });

  it('still take JSON numbers only as numbers, and convert the URL’s', () => {
    const schema = Joi.object({
      n: Joi.number(),
      b: Joi.boolean(),
      limit: fromUrl(Joi.number().integer().default(50)),
      all: fromUrl(Joi.boolean()),
      list: Joi.array().items(Joi.number()),
    });
    for (let i = 0; i < 3; i++) {
      expect(schema.validate({ limit: '5', all: 'true' }, VALIDATION_OPTIONS)).toEqual({
        value: { limit: 5, all: true },
      });
      const { error } = schema.validate({ n: '5', b: 'true', list: ['1'] }, VALIDATION_OPTIONS);
      expect(error?.details.map((d) => d.message)).toEqual([
        'n must be a number',
        'b must be a boolean',
        'list[0] must be a number',
      ]);
    }
  });

  it("still apply a schema's own preferences under the constant ones", () => {
    const named_ = named('Pair', Joi.object({ a: Joi.string(), b: Joi.number() }));
    const schema = Joi.object({
      view: view('Shown', { a: Joi.string(), b: Joi.number().optional() }),
      named: named_,
      strict: Joi.string().trim().strict(),
      early: Joi.object({ x: Joi.number(), y: Joi.number() }).prefs({ abortEarly: true }),
      lenient: Joi.object({ n: Joi.number() }).prefs({ convert: true }),
    });
    for (let i = 0; i < 2; i++) {
      const { value, error } = schema.validate(
        {
          view: { b: 1 },
          named: {},
          strict: ' a ',
          early: { x: 'x', y: 'y' },
          lenient: { n: '5' },
        },
        VALIDATION_OPTIONS,
      );
      expect(error?.details.map((d) => `${d.type} ${d.message}`)).toEqual([
        'any.required view.a is required',
        'string.trim strict must not have leading or trailing whitespace',
        'number.base early.x must be a number',
      ]);
      expect(value.lenient).toEqual({ n: 5 });
    }
  });

  it('carry nothing from one set of options into another', () => {
    // A string's errors show the settings it ran with: how many, and how labels are written.
    const schema = Joi.object({
      n: Joi.number(),
      s: Joi.string().trim().min(3).pattern(/^\d+$/),
      m: Joi.number(),
    });
    const input = { n: '5', s: ' a ', m: 'x', extra: 1 };
    const converting = constantOptions({ ...VALIDATION_OPTIONS, convert: true });
    const loose = constantOptions({ allowUnknown: true, abortEarly: true });
    const messages = (options?: Joi.ValidationOptions) =>
      schema.validate(input, options).error?.details.map((d) => d.message);
    for (let i = 0; i < 2; i++) {
      const sFails = [
        's length must be at least 3 characters long',
        's with value a fails to match the required pattern: /^\\d+$/',
      ];
      expect(messages(VALIDATION_OPTIONS)).toEqual([
        'n must be a number',
        ...sFails,
        'm must be a number',
        'extra is not allowed',
      ]);
      expect(messages(converting)).toEqual([
        ...sFails,
        'm must be a number',
        'extra is not allowed',
      ]);
      expect(messages(loose)).toEqual(['"s" length must be at least 3 characters long']);
      expect(messages()).toEqual(['"s" length must be at least 3 characters long']);
      expect(messages({ abortEarly: false, convert: false })).toEqual([
        '"n" must be a number',
        '"s" length must be at least 3 characters long',
        '"s" with value "a" fails to match the required pattern: /^\\d+$/',
        '"m" must be a number',
        '"extra" is not allowed',
      ]);
    }
  });

  it('answer what joi’s own merges answer, on the params of geo.route (property)', () => {
    const text = fc.oneof(
      fc.string({ maxLength: 8 }),
      fc.constantFrom(' Lekki, Lagos ', 'ADA@EXAMPLE.COM', ' +2348031234567', '', '  ', '5'),
    );
    const scalar = fc.oneof(text, fc.double(), fc.integer(), fc.boolean(), fc.constant(null));
    const fields = [
      'id',
      'address',
      'addressLine1',
      'lat',
      'lon',
      'phrase',
      'floor',
      'contactName',
      'contactPhone',
      'contactEmail',
      'label',
      'zipCode',
      'country',
      'h3Index',
      'unknown',
    ];
    const address = fc.oneof(
      text,
      fc.dictionary(fc.constantFrom(...fields), scalar, { maxKeys: 6 }),
      fc.record({ lat: fc.double({ min: -100, max: 100 }), lon: fc.double() }),
    );
    const params = fc.record(
      {
        origin: address,
        destination: address,
        fleetTypeId: fc.oneof(
          fc.uuid().map((id) => id.toUpperCase()),
          text,
        ),
      },
      { requiredKeys: [] },
    );
    const plain = asJoiMerges(VALIDATION_OPTIONS);
    const list = Joi.array().items(addressInput());
    fc.assert(
      fc.property(params, (input) => {
        expect(outcome(routeParams, input, VALIDATION_OPTIONS)).toEqual(
          outcome(routeParams, input, plain),
        );
        const addresses = [input.origin, input.destination];
        expect(outcome(list, addresses, VALIDATION_OPTIONS)).toEqual(
          outcome(list, addresses, plain),
        );
      }),
      { numRuns: 300 },
    );
  });

  it('are kept only for options frozen through: constantOptions freezes them so', () => {
    const options = constantOptions({ abortEarly: false, errors: { wrap: { label: false } } });
    expect(Object.isFrozen(options)).toBe(true);
    expect(Object.isFrozen(options.errors)).toBe(true);
    expect(Object.isFrozen(options.errors?.wrap)).toBe(true);
    const withGetter = Object.defineProperty({}, 'convert', { get: () => true, enumerable: true });
    expect(() => constantOptions(withGetter)).toThrow('Constant options hold values');
  });
});

describe('values left out, answered without joi’s full validation', () => {
  const internals = (schema: Joi.Schema) =>
    schema as unknown as Parameters<typeof absentKeyIsNothing>[0];
  const outcome = (schema: Joi.Schema, value: unknown, options = VALIDATION_OPTIONS) => {
    const { value: validated, error } = schema.validate(value, options);
    return { value: validated, errors: error?.details };
  };
  /** The same validation with every value, left out or not, validated by joi itself. */
  const byJoi = <T>(run: () => T): T => {
    absentValues.answeredHere = false;
    try {
      return run();
    } finally {
      absentValues.answeredHere = true;
    }
  };

  it('only for schemas that do nothing with undefined', () => {
    for (const schema of [
      Joi.string().max(3),
      Joi.number().allow(null),
      Joi.object({ a: Joi.string().required() }),
      Joi.string().optional().empty(''),
      Joi.array().items(Joi.string()),
    ]) {
      expect(absentKeyIsNothing(internals(schema))).toBe(true);
    }
    for (const schema of [
      Joi.string().required(),
      Joi.string().forbidden(),
      Joi.string().default('x'),
      Joi.object().default(),
      Joi.string().strip(),
      Joi.string().failover('x'),
      Joi.string().prefs({ presence: 'required' }),
      Joi.string().when('b', { is: 1, then: Joi.required() }),
      Joi.string().external(() => undefined),
      Joi.string().cache(),
    ]) {
      expect(absentKeyIsNothing(internals(schema))).toBe(false);
    }
  });

  it('answer what joi answers for keys left out: required, defaults, conditions, stripped', () => {
    const schema = Joi.object({
      required: Joi.string().required(),
      defaulted: Joi.number().default(7),
      conditional: Joi.string().when('flag', { is: true, then: Joi.required() }),
      flag: Joi.boolean(),
      stripped: Joi.string().strip(),
      plain: Joi.string().trim(),
      nested: Joi.object({ inner: Joi.string().required(), other: Joi.number() }),
    });
    for (const input of [{}, { flag: true }, { nested: {} }, { required: 'x', plain: ' y ' }]) {
      const ours = outcome(schema, input);
      expect(ours).toEqual(byJoi(() => outcome(schema, input)));
    }
    expect(outcome(schema, { flag: true }).errors?.map((d) => d.path.join('.'))).toEqual([
      'required',
      'conditional',
    ]);
    expect(outcome(schema, { required: 'x' }).value).toEqual({ required: 'x', defaulted: 7 });
  });

  it("answer what joi answers on every action's params (property)", () => {
    const actions = backendDefinitions(loadConfig({})).flatMap((definition) =>
      Object.entries(definition.actions ?? {})
        .filter(([, action]) => Joi.isSchema(action.params))
        .map(([name, action]) => ({
          name: `${definition.name}.${name}`,
          schema: action.params as Joi.Schema,
        })),
    );
    expect(actions.length).toBeGreaterThan(50);
    const scalar = fc.oneof(
      fc.constantFrom('', ' x ', 'Lekki, Lagos', 'a@b.co', '+2348031234567', 'NG', null, true),
      fc.integer({ min: -5, max: 1000 }),
      fc.double({ min: -200, max: 200, noNaN: true }),
      fc.uuid(),
    );
    type Description = { keys?: Record<string, Description> };
    /** Inputs made of a schema's own keys, some left out, some nested, some wrong. */
    const inputOf = (description: Description, depth = 0): fc.Arbitrary<unknown> => {
      const keys = Object.entries(description.keys ?? {});
      if (keys.length === 0 || depth > 3) return scalar;
      return fc.oneof(
        {
          weight: 4,
          arbitrary: fc.record(
            Object.fromEntries(keys.map(([key, child]) => [key, inputOf(child, depth + 1)])),
            { requiredKeys: [] },
          ),
        },
        { weight: 1, arbitrary: scalar },
      );
    };
    for (const { name, schema } of actions) {
      const input = inputOf(schema.describe() as Description);
      fc.assert(
        fc.property(input, (value) => {
          expect({ name, ...outcome(schema, value) }).toEqual({
            name,
            ...byJoi(() => outcome(schema, value)),
          });
        }),
        { numRuns: 60 },
      );
    }
  });
});

describe('an address object', () => {
  const address = (extra: Record<string, unknown>) => ({ lat: 6.6018, lon: 3.3515, ...extra });

  it('takes the corners of its bounding box as coordinates only', () => {
    const schema = addressInput();
    expect(accepts(schema, address({ swLat: -90, swLon: -180, neLat: 90, neLon: 180 }))).toBe(true);
    for (const corner of [{ swLat: 1e300 }, { neLat: -90.5 }, { swLon: 180.01 }, { neLon: -999 }]) {
      expect({ corner, accepted: accepts(schema, address(corner)) }).toEqual({
        corner,
        accepted: false,
      });
    }
  });
});
