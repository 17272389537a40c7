import Joi from 'joi';
import { ServiceBroker, type Context } from 'moleculer';
import { WaybillError, toHttpError } from '../../../libs/errors';
import { JoiValidator, VALIDATION_OPTIONS, toFieldErrors, validate } from '../../../libs/validation';
import { rejectionOf, thrownBy } from '../helpers';

interface ValidationFailure {
  type: string;
  code: number;
  message: string;
  data: { errors: { field: string; message: string }[] };
}

function failureOf(schema: Joi.Schema, input: unknown): ValidationFailure {
  const err = thrownBy(() => validate(schema, input));
  expect(err).toBeInstanceOf(WaybillError);
  return err as ValidationFailure;
}

const userSchema = Joi.object({
  name: Joi.string().trim().min(1).required(),
  age: Joi.number().integer().min(0),
  limit: Joi.number().integer().default(50),
  active: Joi.boolean().default(true),
  address: Joi.object({
    city: Joi.string().required(),
    zip: Joi.string().pattern(/^\d{6}$/),
  }),
  tags: Joi.array().items(Joi.string().max(5)),
});

describe('validate', () => {
  it('returns the converted value with defaults applied', () => {
    const value = validate(userSchema, { name: '  Ada ', age: '36', active: 'false' });
    expect(value).toEqual({ name: 'Ada', age: 36, limit: 50, active: false });
  });

  it('does not mutate its input', () => {
    const input = { name: ' Ada ', age: '36' };
    validate(userSchema, input);
    expect(input).toEqual({ name: ' Ada ', age: '36' });
  });

  it('keeps values given for defaulted keys', () => {
    expect(validate(userSchema, { name: 'Ada', limit: '5' })).toMatchObject({ limit: 5 });
  });

  it('throws a 400 VALIDATION_ERROR', () => {
    const err = failureOf(userSchema, {});
    expect(err.type).toBe('VALIDATION_ERROR');
    expect(err.code).toBe(400);
    expect(err.message.startsWith('Validation failed:')).toBe(true);
    expect(toHttpError(err).status).toBe(400);
  });

  it('lists every bad field, not just the first', () => {
    const err = failureOf(userSchema, { age: 'old', limit: 1.5, tags: ['ok', 'too long'] });
    expect(err.data.errors.map((e) => e.field)).toEqual(['name', 'age', 'limit', 'tags.1']);
    for (const e of err.data.errors) {
      expect(typeof e.message).toBe('string');
      expect(e.message.startsWith(e.field)).toBe(true);
    }
  });

  it('joins every field message into the error message', () => {
    const err = failureOf(userSchema, { age: -1 });
    expect(err.message).toBe(
      `Validation failed: ${err.data.errors.map((e) => e.message).join('; ')}`,
    );
    expect(err.message).toContain('name is required');
    expect(err.message).toContain('age must be greater than or equal to 0');
  });

  it('names nested fields by their dotted path, without quotes', () => {
    const err = failureOf(userSchema, { name: 'Ada', address: { zip: '12' } });
    expect(err.data.errors).toEqual([
      { field: 'address.city', message: 'address.city is required' },
      {
        field: 'address.zip',
        message: expect.stringMatching(/^address\.zip fails to match/),
      },
    ]);
    expect(err.message).not.toContain('"');
  });

  it('rejects unknown keys, at every depth', () => {
    const err = failureOf(userSchema, { name: 'Ada', admin: true, address: { city: 'Lagos', x: 1 } });
    expect(err.data.errors).toEqual([
      { field: 'admin', message: 'admin is not allowed' },
      { field: 'address.x', message: 'address.x is not allowed' },
    ]);
  });

  it('names a top-level failure `body`', () => {
    const err = failureOf(Joi.object({ a: Joi.string() }).required(), undefined);
    expect(err.data.errors).toEqual([{ field: 'body', message: expect.any(String) }]);
  });

  it('names a failure of a non-object value `body`', () => {
    const err = failureOf(userSchema, 'not an object');
    expect(err.data.errors).toHaveLength(1);
    expect(err.data.errors[0].field).toBe('body');
  });

  it('uses the options: all errors, conversion, no unknown keys', () => {
    expect(VALIDATION_OPTIONS).toMatchObject({
      abortEarly: false,
      convert: true,
      allowUnknown: false,
    });
  });
});

describe('toFieldErrors', () => {
  it('maps each joi detail to {field, message}', () => {
    const { error } = Joi.object({ a: Joi.number(), b: Joi.object({ c: Joi.string() }) }).validate(
      { a: 'x', b: { c: 1 } },
      VALIDATION_OPTIONS,
    );
    expect(error).toBeDefined();
    expect(toFieldErrors(error!)).toEqual([
      { field: 'a', message: 'a must be a number' },
      { field: 'b.c', message: 'b.c must be a string' },
    ]);
  });
});

describe('JoiValidator in a broker', () => {
  const schema = Joi.object({
    name: Joi.string().trim().required(),
    limit: Joi.number().integer().min(1).max(100).default(50),
    count: Joi.number().integer(),
  });
  const seen: unknown[] = [];
  const broker = new ServiceBroker({
    logger: false,
    nodeID: 'unit-validation',
    validator: new JoiValidator({}),
  });

  beforeAll(async () => {
    broker.createService({
      name: 'probe',
      actions: {
        echo: {
          params: schema as unknown as Record<string, never>,
          handler(ctx: Context<Record<string, unknown>>) {
            seen.push(ctx.params);
            return ctx.params;
          },
        },
        open: {
          handler(ctx: Context<Record<string, unknown>>) {
            return ctx.params;
          },
        },
      },
    });
    await broker.start();
  });

  afterAll(async () => {
    await broker.stop();
  });

  beforeEach(() => {
    seen.length = 0;
  });

  it('hands the converted params, defaults applied, to the handler', async () => {
    const result = await broker.call('probe.echo', { name: '  Ada  ', count: '7' });
    expect(seen).toEqual([{ name: 'Ada', limit: 50, count: 7 }]);
    expect(result).toEqual({ name: 'Ada', limit: 50, count: 7 });
  });

  it('converts a given numeric string', async () => {
    await broker.call('probe.echo', { name: 'Ada', limit: '10' });
    expect(seen).toEqual([{ name: 'Ada', limit: 10 }]);
  });

  it('rejects bad params with the 400 validation error, without calling the handler', async () => {
    const err = (await rejectionOf(
      broker.call('probe.echo', { limit: '1000', extra: true }),
    )) as ValidationFailure;
    expect(err.type).toBe('VALIDATION_ERROR');
    expect(err.code).toBe(400);
    expect(err.message).toMatch(/^Validation failed:/);
    expect(err.data.errors.map((e) => e.field)).toEqual(['name', 'limit', 'extra']);
    expect(seen).toEqual([]);
  });

  it('validates a call without params as an empty object', async () => {
    const err = (await rejectionOf(broker.call('probe.echo'))) as ValidationFailure;
    expect(err.data.errors).toEqual([{ field: 'name', message: 'name is required' }]);
  });

  it('leaves actions without params alone', async () => {
    await expect(broker.call('probe.open', { anything: 1 })).resolves.toEqual({ anything: 1 });
  });

  it('keeps the schema off the wire: it serialises to a marker', () => {
    expect(JSON.stringify(schema)).toBe('{"validator":"joi"}');
  });

  it('still validates with a schema that serialises to the marker', () => {
    expect(validate(schema, { name: 'x' })).toEqual({ name: 'x', limit: 50 });
  });
});

describe('JoiValidator methods', () => {
  const validator = new JoiValidator({});
  const schema = Joi.object({ n: Joi.number().required() });

  it('compile returns a checker that passes good params and throws on bad ones', () => {
    const check = validator.compile(schema) as (params: unknown) => boolean;
    expect(check({ n: '1' })).toBe(true);
    expect(() => check({})).toThrow(WaybillError);
  });

  it('validate returns true for good params and throws the 400 for bad ones', () => {
    expect(validator.validate({ n: 1 }, schema)).toBe(true);
    const err = thrownBy(() => validator.validate({ n: 'x' }, schema)) as ValidationFailure;
    expect(err.code).toBe(400);
    expect(err.data.errors).toEqual([{ field: 'n', message: 'n must be a number' }]);
  });

  it('refuses schemas that are not joi', () => {
    expect(() => validator.compile({ n: 'number' })).toThrow(TypeError);
    expect(() => validator.validate({}, { n: 'number' })).toThrow(TypeError);
  });

  it('compile marks the schema to stay off the wire', () => {
    const fresh = Joi.object({ a: Joi.string() });
    expect(JSON.stringify(fresh)).not.toBe('{"validator":"joi"}');
    validator.compile(fresh);
    expect(JSON.stringify(fresh)).toBe('{"validator":"joi"}');
  });

  it('gives moleculer no fastest-validator schema', () => {
    expect(validator.convertSchemaToMoleculer()).toEqual({});
  });
});
