import Joi from '../../../libs/joi';
import { fromUrl } from '../../../libs/schemas';
import { ServiceBroker, type Context } from 'moleculer';
import { MAX_LISTED_PROBLEMS, WaybillError, toHttpError } from '../../../libs/errors';
import {
  JoiValidator,
  VALIDATION_OPTIONS,
  toFieldErrors,
  validate,
} from '../../../libs/validation';
import { rejectionOf, thrownBy } from '../helpers';

interface ValidationFailure {
  type: string;
  code: number;
  message: string;
  data: { errors: { field: string; message: string }[] };
  stack?: string;
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
  it('returns the trimmed value with defaults applied', () => {
    const value = validate(userSchema, { name: '  Ada ', age: 36 });
    expect(value).toEqual({ name: 'Ada', age: 36, limit: 50, active: true });
  });

  it('takes a number only as a number, a boolean only as a boolean, an object only as an object', () => {
    const err = failureOf(userSchema, {
      name: 'Ada',
      age: '36',
      active: 'false',
      address: '{"city":"Lagos"}',
      tags: '["a"]',
    });
    expect(err.data.errors).toEqual([
      { field: 'age', message: 'age must be a number' },
      { field: 'active', message: 'active must be a boolean' },
      { field: 'address', message: 'address must be of type object' },
      { field: 'tags', message: 'tags must be an array' },
    ]);
  });

  it('converts the numbers and booleans of a query string', () => {
    const query = Joi.object({
      limit: fromUrl(Joi.number().integer().default(50)),
      all: fromUrl(Joi.boolean().default(false)),
      search: Joi.string().trim(),
    });
    expect(validate(query, { limit: '5', all: 'true', search: ' lag ' })).toEqual({
      limit: 5,
      all: true,
      search: 'lag',
    });
    expect(failureOf(query, { limit: 'five' }).data.errors).toEqual([
      { field: 'limit', message: 'limit must be a number' },
    ]);
  });

  it('refuses more decimals than a precision, instead of rounding them away', () => {
    const money = Joi.object({ amount: Joi.number().precision(2) });
    expect(failureOf(money, { amount: 1.005 }).data.errors).toEqual([
      { field: 'amount', message: 'amount must have no more than 2 decimal places' },
    ]);
    expect(validate(money, { amount: 1.5 })).toEqual({ amount: 1.5 });
  });

  it('does not mutate its input', () => {
    const input = { name: ' Ada ', address: { city: ' Lagos ' } };
    validate(userSchema, input);
    expect(input).toEqual({ name: ' Ada ', address: { city: ' Lagos ' } });
  });

  it('keeps values given for defaulted keys', () => {
    expect(validate(userSchema, { name: 'Ada', limit: 5 })).toMatchObject({ limit: 5 });
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
    expect(err.data.errors).toEqual([
      { field: 'name', message: 'name is required' },
      { field: 'age', message: 'age must be a number' },
      { field: 'limit', message: 'limit must be an integer' },
      { field: 'tags.1', message: expect.stringMatching(/^tags\[1\] length must be/) },
    ]);
  });

  it('joins every field message into the error message', () => {
    const err = failureOf(userSchema, { age: -1 });
    expect(err.message).toBe(
      `Validation failed: ${err.data.errors.map((e) => e.message).join('; ')}`,
    );
    expect(err.message).toContain('name is required');
    expect(err.message).toContain('age must be greater than or equal to 0');
  });

  it('lists the first problems of a body of thousands, each clipped, and says how many more', () => {
    const input: Record<string, unknown> = { name: 'Ada' };
    for (let i = 0; i < 5000; i++) input[`unknown${i}`] = 0;
    input['k'.repeat(200_000)] = 0;
    const err = failureOf(userSchema, input);
    expect(err.data.errors).toHaveLength(MAX_LISTED_PROBLEMS);
    expect(err.data.errors[0]).toEqual({ field: 'unknown0', message: 'unknown0 is not allowed' });
    expect(err.message).toMatch(/; and 4981 more problems: fix these and send it again$/);
    // What crosses NATS: the error, its data and its stack.
    expect(JSON.stringify({ ...err, stack: err.stack }).length).toBeLessThan(32_000);

    const long = failureOf(userSchema, { name: 'Ada', ['k'.repeat(200_000)]: 0 });
    expect(long.data.errors[0].field).toMatch(/^k+…$/);
    expect(Buffer.byteLength(long.data.errors[0].field)).toBeLessThanOrEqual(300);
    expect(long.message.length).toBeLessThan(400);
  });

  it('names nested fields by their dotted path, without quotes', () => {
    const err = failureOf(userSchema, { name: 'Ada', address: { zip: '12' } });
    expect(err.data.errors).toEqual([
      { field: 'address.city', message: 'address.city is required' },
      {
        field: 'address.zip',
        message: expect.stringMatching(/^address\.zip with value 12 fails to match/),
      },
    ]);
    expect(err.message).not.toContain('"');
  });

  it('rejects unknown keys, at every depth', () => {
    const err = failureOf(userSchema, {
      name: 'Ada',
      admin: true,
      address: { city: 'Lagos', x: 1 },
    });
    expect(err.data.errors).toHaveLength(2);
    expect(err.data.errors).toEqual(
      expect.arrayContaining([
        { field: 'admin', message: 'admin is not allowed' },
        { field: 'address.x', message: 'address.x is not allowed' },
      ]),
    );
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

  it('uses the options: all errors, no conversion but of strings, no unknown keys', () => {
    expect(VALIDATION_OPTIONS).toMatchObject({
      abortEarly: false,
      convert: false,
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
  const handled: Error[] = [];
  const broker = new ServiceBroker({
    logger: false,
    nodeID: 'unit-validation',
    validator: new JoiValidator({}),
    errorHandler(err: Error) {
      handled.push(err);
      throw err;
    },
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
    handled.length = 0;
  });

  it('hands the validated params, trimmed and defaults applied, to the handler', async () => {
    const result = await broker.call('probe.echo', { name: '  Ada  ', count: 7 });
    expect(seen).toEqual([{ name: 'Ada', limit: 50, count: 7 }]);
    expect(result).toEqual({ name: 'Ada', limit: 50, count: 7 });
  });

  it('refuses a numeric string where a number is due', async () => {
    const err = (await rejectionOf(() =>
      broker.call('probe.echo', { name: 'Ada', limit: '10' }),
    )) as ValidationFailure;
    expect(err.data.errors).toEqual([{ field: 'limit', message: 'limit must be a number' }]);
    expect(seen).toEqual([]);
  });

  it('fails a bad call with the 400 validation error, without calling the handler', async () => {
    const err = (await rejectionOf(() =>
      broker.call('probe.echo', { limit: 1000, extra: true }),
    )) as ValidationFailure;
    expect(err).toBeInstanceOf(WaybillError);
    expect(err.type).toBe('VALIDATION_ERROR');
    expect(err.code).toBe(400);
    expect(err.message).toMatch(/^Validation failed:/);
    expect(err.data.errors.map((e) => e.field)).toEqual(['name', 'limit', 'extra']);
    expect(seen).toEqual([]);
  });

  it('validates a call without params as an empty object', async () => {
    const err = (await rejectionOf(() => broker.call('probe.echo'))) as ValidationFailure;
    expect(err.data.errors).toEqual([{ field: 'name', message: 'name is required' }]);
  });

  // A local broker.call with bad params must reject, never throw out of call() itself.
  it('reports bad params as a rejected promise, not a synchronous throw', async () => {
    let promise: Promise<unknown> | undefined;
    expect(() => {
      promise = broker.call('probe.echo', {});
    }).not.toThrow();
    await expect(promise).rejects.toMatchObject({ type: 'VALIDATION_ERROR', code: 400 });
  });

  it("passes validation errors through the broker's errorHandler", async () => {
    await rejectionOf(() => broker.call('probe.echo', {}));
    expect(handled).toHaveLength(1);
    expect(handled[0]).toMatchObject({ type: 'VALIDATION_ERROR' });
  });

  it('passes handler errors through the errorHandler (control for the test above)', async () => {
    await rejectionOf(() => broker.call('probe.missing'));
    expect(handled).toHaveLength(1);
  });

  it('leaves actions without params alone', async () => {
    await expect(broker.call('probe.open', { anything: 1 })).resolves.toEqual({ anything: 1 });
  });

  it('keeps the joi schema of a registered action off the wire', () => {
    // moleculer registers a deep clone of the action schema; the validator marks that clone,
    // which is what the node describes to its peers.
    const endpoint = broker.registry.getActionEndpoints('probe.echo') as unknown as {
      endpoints: { action: { params: unknown } }[];
    };
    expect(JSON.stringify(endpoint.endpoints[0].action.params)).toBe('{"validator":"joi"}');

    const info = JSON.stringify(broker.registry.getLocalNodeInfo());
    expect(info).toContain('"params":{"validator":"joi"}');
    expect(info).not.toContain('$_root');
    expect(info).not.toContain('_rules');
  });

  it('still validates with a marked schema', () => {
    const marked = Joi.object({ name: Joi.string().required() });
    new JoiValidator({}).compile(marked);
    expect(JSON.stringify(marked)).toBe('{"validator":"joi"}');
    expect(validate(marked, { name: 'x' })).toEqual({ name: 'x' });
    expect(() => validate(marked, {})).toThrow(WaybillError);
  });
});

describe('JoiValidator across a transporter', () => {
  const schema = Joi.object({ name: Joi.string().required(), limit: Joi.number().default(5) });
  const serving = new ServiceBroker({
    logger: false,
    nodeID: 'unit-serving',
    namespace: 'unit-validation-remote',
    transporter: 'Fake',
    validator: new JoiValidator({}),
  });
  const calling = new ServiceBroker({
    logger: false,
    nodeID: 'unit-calling',
    namespace: 'unit-validation-remote',
    transporter: 'Fake',
    validator: new JoiValidator({}),
  });

  beforeAll(async () => {
    serving.createService({
      name: 'remote',
      actions: {
        echo: {
          params: schema as unknown as Record<string, never>,
          handler: (ctx: Context<Record<string, unknown>>) => ctx.params,
        },
      },
    });
    await Promise.all([serving.start(), calling.start()]);
    await calling.waitForServices('remote');
  });

  afterAll(async () => {
    await Promise.all([calling.stop(), serving.stop()]);
  });

  it('validates and converts on the serving node', async () => {
    await expect(calling.call('remote.echo', { name: 'Ada' })).resolves.toEqual({
      name: 'Ada',
      limit: 5,
    });
  });

  it('returns a 400 with field errors that toHttpError maps like a local one', async () => {
    const err = await rejectionOf(() => calling.call('remote.echo', { limit: 'x' }));
    expect(err).toMatchObject({ type: 'VALIDATION_ERROR', code: 400 });
    expect(toHttpError(err)).toEqual({
      status: 400,
      message: 'Validation failed: name is required; limit must be a number',
      errors: [
        { field: 'name', message: 'name is required' },
        { field: 'limit', message: 'limit must be a number' },
      ],
      internal: false,
    });
  });

  it('announces the action to the other node without the joi schema', () => {
    const endpoint = calling.registry.getActionEndpoints('remote.echo') as unknown as {
      endpoints: { action: { params: unknown } }[];
    };
    expect(endpoint.endpoints[0].action.params).toEqual({ validator: 'joi' });
  });
});

describe('JoiValidator methods', () => {
  const validator = new JoiValidator({});
  const schema = Joi.object({ n: Joi.number().required() });

  it('compile returns a checker that passes good params and throws on bad ones', () => {
    const check = validator.compile(schema) as (params: unknown) => boolean;
    expect(check({ n: 1 })).toBe(true);
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
