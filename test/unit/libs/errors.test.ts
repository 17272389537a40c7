import fc from 'fast-check';
import { Errors } from 'moleculer';
import ApiGateway from 'moleculer-web';
import {
  ERROR_STATUS,
  WaybillError,
  badRequest,
  bodyTimeout,
  conflict,
  forbidden,
  isWaybillError,
  methodNotAllowed,
  notFound,
  quotaExceeded,
  serviceBusy,
  serviceUnavailable,
  toHttpError,
  tooManyRequests,
  unauthorized,
  unprocessable,
  validationError,
  type ErrorType,
  type FieldError,
} from '../../../libs/errors';

const GENERIC_500 = 'Internal server error; the failure was logged, retry later';
const UNAVAILABLE =
  'The service that handles this request is temporarily unavailable; retry in a few seconds';
const TIMED_OUT = 'The request timed out; retry it';

const fieldErrors: FieldError[] = [
  { field: 'email', message: 'email must be a valid email' },
  { field: 'address.city', message: 'address.city is required' },
];

/** What an error looks like after crossing the transporter: a plain object, no prototype. */
function overTheWire(err: WaybillError): Record<string, unknown> {
  return JSON.parse(
    JSON.stringify({
      name: err.name,
      message: err.message,
      code: err.code,
      type: err.type,
      data: err.data,
    }),
  );
}

describe('WaybillError factories', () => {
  it.each<[string, WaybillError, ErrorType, number]>([
    ['badRequest', badRequest('bad'), 'BAD_REQUEST', 400],
    ['validationError', validationError(fieldErrors, 'invalid'), 'VALIDATION_ERROR', 400],
    ['unauthorized', unauthorized('who are you'), 'UNAUTHORIZED', 401],
    ['forbidden', forbidden('not you'), 'FORBIDDEN', 403],
    ['notFound', notFound('gone'), 'NOT_FOUND', 404],
    ['methodNotAllowed', methodNotAllowed('use GET'), 'METHOD_NOT_ALLOWED', 405],
    ['conflict', conflict('taken'), 'CONFLICT', 409],
    ['unprocessable', unprocessable('cannot'), 'UNPROCESSABLE', 422],
    ['quotaExceeded', quotaExceeded(), 'QUOTA_EXCEEDED', 429],
    ['serviceUnavailable', serviceUnavailable('down'), 'SERVICE_UNAVAILABLE', 503],
    ['serviceBusy', serviceBusy('busy', 5), 'SERVICE_UNAVAILABLE', 503],
    ['tooManyRequests', tooManyRequests('too many', 5), 'TOO_MANY_REQUESTS', 429],
    ['bodyTimeout', bodyTimeout('quiet'), 'BODY_TIMEOUT', 408],
  ])('%s builds a WaybillError of type %s and code %d', (_name, err, type, code) => {
    expect(err).toBeInstanceOf(WaybillError);
    expect(err).toBeInstanceOf(Errors.MoleculerError);
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('WaybillError');
    expect(err.type).toBe(type);
    expect(err.code).toBe(code);
    expect(ERROR_STATUS[type]).toBe(code);
  });

  it('keeps field errors in data.errors', () => {
    expect(validationError(fieldErrors, 'invalid').data).toEqual({ errors: fieldErrors });
    expect(badRequest('bad', fieldErrors).data).toEqual({ errors: fieldErrors });
  });

  it('lists at most 20 problems, whoever built the error, the spec’s message kept as it is', () => {
    const many = Array.from({ length: 50 }, (_, i) => ({
      field: `packagesId.${i}`,
      message: `package ${i} is not one of your packages available for delivery`,
    }));
    const refused = badRequest('Invalid packages selection', many);
    expect(refused.message).toBe('Invalid packages selection');
    expect(refused.data?.errors).toEqual(many.slice(0, 20));
    // An error from a node that listed them all: the envelope holds 20 all the same.
    const fromElsewhere = { type: 'BAD_REQUEST', code: 400, message: 'x', data: { errors: many } };
    expect(toHttpError(fromElsewhere).errors).toEqual(many.slice(0, 20));
  });

  it('badRequest without field errors carries no errors', () => {
    expect((badRequest('bad').data as { errors?: unknown } | undefined)?.errors).toBeUndefined();
  });

  it('serviceBusy and tooManyRequests carry the seconds to wait in data.retryAfter', () => {
    expect(serviceBusy('busy', 5).data).toEqual({ retryAfter: 5 });
    expect(tooManyRequests('too many', 7).data).toEqual({ retryAfter: 7 });
  });

  it('quotaExceeded has a fixed message', () => {
    expect(quotaExceeded().message).toBe('API quota exceeded');
  });
});

describe('toHttpError of WaybillErrors', () => {
  it.each<[WaybillError, number]>([
    [badRequest('Bad thing'), 400],
    [validationError(fieldErrors, 'Validation failed: x'), 400],
    [unauthorized('API key is required'), 401],
    [forbidden('Not for this key'), 403],
    [notFound('User 1 not found'), 404],
    [conflict('Already exists'), 409],
    [unprocessable('Cannot do that now'), 422],
    [quotaExceeded(), 429],
    [new WaybillError('PAYLOAD_TOO_LARGE', 'Too big'), 413],
    [new WaybillError('UNSUPPORTED_MEDIA_TYPE', 'Send JSON'), 415],
  ])('maps %s to %d, keeping its message, not internal', (err, status) => {
    const http = toHttpError(err);
    expect(http.status).toBe(status);
    expect(http.message).toBe(err.message);
    expect(http.internal).toBe(false);
  });

  it('maps serviceUnavailable to 503 with its own message', () => {
    const http = toHttpError(serviceUnavailable('Pricing is warming up; retry'));
    expect(http.status).toBe(503);
    expect(http.message).toBe('Pricing is warming up; retry');
  });

  it('keeps the field errors of a validation error', () => {
    const http = toHttpError(validationError(fieldErrors, 'Validation failed'));
    expect(http.errors).toEqual(fieldErrors);
  });

  it('keeps the field errors of a bad request', () => {
    expect(toHttpError(badRequest('bad', fieldErrors)).errors).toEqual(fieldErrors);
  });

  it('has no field errors when the error carries none', () => {
    expect(toHttpError(notFound('gone')).errors).toBeUndefined();
    expect(toHttpError(badRequest('bad')).errors).toBeUndefined();
  });

  it('keeps only well-formed field errors, and only their field and message', () => {
    const err = new WaybillError('VALIDATION_ERROR', 'invalid', {
      errors: [
        { field: 'a', message: 'a is bad', secret: 'internal detail' },
        { field: 1, message: 'not a string field' },
        { field: 'b' },
        null,
        'oops',
        { field: 'c', message: 'c is bad' },
      ] as unknown as FieldError[],
    });
    expect(toHttpError(err).errors).toEqual([
      { field: 'a', message: 'a is bad' },
      { field: 'c', message: 'c is bad' },
    ]);
  });
});

describe('toHttpError of errors that crossed the transporter', () => {
  it('maps a plain object by its type', () => {
    expect(toHttpError({ type: 'NOT_FOUND', code: 404, message: 'x' })).toEqual({
      status: 404,
      message: 'x',
      errors: undefined,
      internal: false,
    });
  });

  it.each<[ErrorType, number]>(
    Object.entries(ERROR_STATUS) as [ErrorType, (typeof ERROR_STATUS)[ErrorType]][],
  )('maps type %s to %d', (type, status) => {
    const http = toHttpError({ type, message: 'from another node' });
    expect(http.status).toBe(status);
    expect(http.message).toBe('from another node');
  });

  it('keeps when to retry (a positive whole number of seconds), and nothing else', () => {
    const held = overTheWire(conflict('held', { retryAfter: 42 }));
    expect(toHttpError(held)).toMatchObject({ status: 409, retryAfter: 42 });
    for (const retryAfter of [0, -1, 1.5, '42', null]) {
      const odd = { type: 'CONFLICT', message: 'x', data: { retryAfter } };
      expect(toHttpError(odd)).not.toHaveProperty('retryAfter');
    }
  });

  it('passes on Retry-After seconds, and takes a refusal for load as nothing to look into', () => {
    expect(toHttpError(overTheWire(serviceBusy('busy; retry in 5 seconds', 5)))).toEqual({
      status: 503,
      message: 'busy; retry in 5 seconds',
      errors: undefined,
      retryAfter: 5,
      internal: false,
    });
    expect(toHttpError(tooManyRequests('too many', 5))).toMatchObject({
      status: 429,
      retryAfter: 5,
    });
    expect(toHttpError(serviceUnavailable('down'))).toMatchObject({ status: 503, internal: true });
    expect(toHttpError(serviceUnavailable('down')).retryAfter).toBeUndefined();
    for (const odd of [0, -1, 1.5, '5', Number.NaN]) {
      const err = { type: 'SERVICE_UNAVAILABLE', message: 'x', data: { retryAfter: odd } };
      expect(toHttpError(err).retryAfter).toBeUndefined();
      expect(toHttpError(err).internal).toBe(true);
    }
  });

  it('isWaybillError knows ours by type, here or from another node', () => {
    expect(isWaybillError(bodyTimeout('quiet'))).toBe(true);
    expect(isWaybillError(overTheWire(badRequest('bad')))).toBe(true);
    expect(isWaybillError(new Error('plain'))).toBe(false);
    expect(isWaybillError({ type: 'REQUEST_TIMEOUT' })).toBe(false);
    expect(isWaybillError({ type: 'toString' })).toBe(false);
    expect(isWaybillError(null)).toBe(false);
  });

  it('trusts the type over the code', () => {
    expect(toHttpError({ type: 'CONFLICT', code: 500, message: 'dup' }).status).toBe(409);
  });

  it('maps a serialised WaybillError like the original, field errors included', () => {
    const original = validationError(fieldErrors, 'Validation failed: email');
    const wire = overTheWire(original);
    expect(wire).not.toBeInstanceOf(Error);
    expect(toHttpError(wire)).toEqual(toHttpError(original));
    expect(toHttpError(wire).errors).toEqual(fieldErrors);
  });
});

describe('toHttpError of moleculer framework errors', () => {
  const target = { action: 'pricing.quote', nodeID: 'node-2' };

  it("maps moleculer-web's untyped ServiceUnavailableError to 503, not 500", () => {
    const err = new ApiGateway.Errors.ServiceUnavailableError(
      undefined as unknown as string,
      undefined,
    );
    expect(toHttpError(err)).toEqual({ status: 503, message: UNAVAILABLE, internal: true });
  });

  it.each<[string, Error, number, string]>([
    ['ServiceNotFoundError', new Errors.ServiceNotFoundError(target), 503, UNAVAILABLE],
    ['ServiceNotAvailableError', new Errors.ServiceNotAvailableError(target), 503, UNAVAILABLE],
    ['RequestRejectedError', new Errors.RequestRejectedError(target), 503, UNAVAILABLE],
    ['QueueIsFullError', new Errors.QueueIsFullError(target), 503, UNAVAILABLE],
    // Raised when this node's NATS connection is down (libs/nats-transporter).
    ['BrokerDisconnectedError', new Errors.BrokerDisconnectedError(''), 503, UNAVAILABLE],
    ['RequestTimeoutError', new Errors.RequestTimeoutError(target), 504, TIMED_OUT],
    ['RequestSkippedError', new Errors.RequestSkippedError(target), 504, TIMED_OUT],
  ])('maps %s to %d with a client-facing message', (_name, err, status, message) => {
    const http = toHttpError(err);
    expect(http.status).toBe(status);
    expect(http.message).toBe(message);
    expect(http.internal).toBe(true);
    // The framework message names actions and nodes: internals the client must not see.
    expect(http.message).not.toContain('pricing.quote');
    expect(http.message).not.toContain('node-2');
  });

  it('maps moleculer ValidationError (code 422) by its type to 400', () => {
    const err = new Errors.ValidationError('Parameters validation error!', 'VALIDATION_ERROR', []);
    const http = toHttpError(err);
    expect(http.status).toBe(400);
    expect(http.internal).toBe(false);
    expect(http.errors).toBeUndefined();
  });

  it('hides a moleculer server error behind the generic 500', () => {
    const err = new Errors.MoleculerServerError('connection pool exhausted', 500, 'DB_ERROR');
    expect(toHttpError(err)).toEqual({ status: 500, message: GENERIC_500, internal: true });
  });

  it('passes a 4xx MoleculerClientError with an unknown type through', () => {
    const err = new Errors.MoleculerClientError('Token expired', 401, 'INVALID_TOKEN');
    expect(toHttpError(err)).toEqual({ status: 401, message: 'Token expired', internal: false });
  });
});

describe('toHttpError of body-parser and moleculer-web errors', () => {
  it('maps a JSON parse failure to 400 with a fixed message', () => {
    const err = Object.assign(new SyntaxError('Unexpected token } in JSON at position 7'), {
      type: 'entity.parse.failed',
      status: 400,
    });
    const http = toHttpError(err);
    expect(http.status).toBe(400);
    expect(http.message).toMatch(/^Malformed JSON/);
    expect(http.message).not.toContain('position 7');
    expect(http.internal).toBe(false);
  });

  it('maps an oversized body to 413', () => {
    const http = toHttpError({
      type: 'entity.too.large',
      status: 413,
      message: 'request entity too large',
    });
    expect(http).toEqual({ status: 413, message: 'Request body is too large', internal: false });
  });

  it.each([
    ['encoding.unsupported', 'Unsupported content encoding'],
    ['charset.unsupported', 'Unsupported charset; send UTF-8 JSON'],
    ['INVALID_REQUEST_TYPE', 'Unsupported content type'],
  ])('maps %s to 415', (type, message) => {
    expect(toHttpError({ type, status: 415, message: 'raw' })).toEqual({
      status: 415,
      message,
      internal: false,
    });
  });

  it('keeps the message of an UNSUPPORTED_MEDIA_TYPE error', () => {
    const http = toHttpError({ type: 'UNSUPPORTED_MEDIA_TYPE', message: 'Send multipart' });
    expect(http.status).toBe(415);
    expect(http.message).toBe('Send multipart');
  });
});

describe('toHttpError of anything else', () => {
  it('hides the message of a plain Error behind a generic 500', () => {
    const http = toHttpError(new Error('secret db detail'));
    expect(http.status).toBe(500);
    expect(http.message).not.toContain('secret');
    expect(http.message).toBe(GENERIC_500);
    expect(http.internal).toBe(true);
    expect(http.errors).toBeUndefined();
  });

  it.each([undefined, null, 'a string', 42, {}, [], true])('maps %p to a generic 500', (value) => {
    expect(toHttpError(value)).toEqual({ status: 500, message: GENERIC_500, internal: true });
  });

  it.each([
    ['status', { status: 404, message: 'No such route' }, 404],
    ['statusCode', { statusCode: 405, message: 'Method not allowed' }, 405],
    ['code', { code: 418, message: 'Teapot' }, 418],
  ])('passes a 4xx %s with a message through', (_key, err, status) => {
    expect(toHttpError(err)).toEqual({ status, message: err.message, internal: false });
  });

  it.each([
    ['a 5xx status', { status: 502, message: 'upstream secret' }],
    ['a 3xx status', { status: 302, message: 'moved secret' }],
    ['a string code', { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED secret:27017' }],
    ['a mongo duplicate key code', { code: 11000, message: 'E11000 duplicate key secret' }],
    ['a 4xx status but no message', { status: 404 }],
    ['an unknown type', { type: 'SOMETHING_ODD', message: 'odd secret' }],
    ['a non-string type', { type: 404, message: 'odd secret' }],
  ])('maps an error with %s to a generic 500', (_what, err) => {
    const http = toHttpError(err);
    expect(http).toEqual({ status: 500, message: GENERIC_500, internal: true });
    expect(http.message).not.toContain('secret');
  });

  // Prototype member names must not be taken for known error types.
  it.each(['constructor', 'toString', 'hasOwnProperty', '__proto__'])(
    'maps the prototype member name %s as a type to a generic 500',
    (type) => {
      expect(toHttpError({ type, message: 'odd' })).toEqual({
        status: 500,
        message: GENERIC_500,
        internal: true,
      });
    },
  );
});

describe('toHttpError properties', () => {
  const knownTypes = [
    ...Object.keys(ERROR_STATUS),
    'SERVICE_NOT_FOUND',
    'REQUEST_TIMEOUT',
    'entity.parse.failed',
    'entity.too.large',
  ];
  const notAPrototypeMember = (s: string) => !(s in Object.prototype);
  const errorLike = fc.record(
    {
      type: fc.oneof(fc.constantFrom(...knownTypes), fc.string().filter(notAPrototypeMember)),
      message: fc.oneof(fc.string(), fc.constant(undefined), fc.integer()),
      code: fc.oneof(fc.integer({ min: -1, max: 1000 }), fc.string()),
      status: fc.integer({ min: 0, max: 999 }),
      statusCode: fc.integer({ min: 0, max: 999 }),
      data: fc.anything(),
    },
    { requiredKeys: [] },
  );
  const anyError = fc.oneof(errorLike, fc.anything());

  it('always answers an HTTP error status with a string message', () => {
    fc.assert(
      fc.property(anyError, (err) => {
        const http = toHttpError(err);
        expect(Number.isInteger(http.status)).toBe(true);
        expect(http.status).toBeGreaterThanOrEqual(400);
        expect(http.status).toBeLessThan(600);
        expect(typeof http.message).toBe('string');
      }),
    );
  });

  it('flags as internal only 5xx errors, and every 4xx as not internal', () => {
    fc.assert(
      fc.property(anyError, (err) => {
        const http = toHttpError(err);
        if (http.internal) expect(http.status).toBeGreaterThanOrEqual(500);
        if (http.status < 500) expect(http.internal).toBe(false);
      }),
    );
  });

  it('never reveals the message of an error it answers with a 500', () => {
    fc.assert(
      fc.property(errorLike, (err) => {
        const http = toHttpError(err);
        if (http.status === 500) expect(http.message).toBe(GENERIC_500);
      }),
    );
  });

  it('returns field errors only as {field, message} pairs of strings', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...Object.keys(ERROR_STATUS)),
        fc.array(
          fc.oneof(
            fc.record({ field: fc.string(), message: fc.string(), extra: fc.anything() }),
            fc.anything(),
          ),
        ),
        (type, errors) => {
          const http = toHttpError({ type, message: 'm', data: { errors } });
          for (const e of http.errors ?? []) {
            expect(Object.keys(e).sort()).toEqual(['field', 'message']);
            expect(typeof e.field).toBe('string');
            expect(typeof e.message).toBe('string');
          }
        },
      ),
    );
  });
});

describe('our own 5xx', () => {
  it('is logged as internal', () => {
    expect(toHttpError(serviceUnavailable('Redis down'))).toMatchObject({
      status: 503,
      message: 'Redis down',
      internal: true,
    });
  });
});
