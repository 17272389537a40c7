import fc from 'fast-check';
import { Errors } from 'moleculer';
import {
  badRequest,
  conflict,
  forbidden,
  notFound,
  quotaExceeded,
  serviceUnavailable,
  unauthorized,
  unprocessable,
  validationError,
} from '../../../libs/errors';
import {
  canonicalJson,
  changedNothing,
  claimForRequest,
  type IdempotencyStore,
  idempotencyToken,
  readIdempotencyKey,
  requestFingerprint,
  takesIdempotencyKey,
} from '../../../services/gateway/idempotency';
import { fakeRequest } from './fake-http';

/** The same object with its keys in reverse order, at every depth. */
function reordered(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reordered);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .reverse()
        .map(([k, v]) => [k, reordered(v)]),
    );
  }
  return value;
}

describe('canonicalJson', () => {
  it('sorts keys at every depth and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: 0 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[2,{"y":0,"z":1}]},"b":1}',
    );
  });

  it('leaves out undefined fields, as JSON does', () => {
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
    expect(canonicalJson([undefined, 'x', { '': [] }])).toBe('[null,"x",{"":[]}]');
  });

  it('writes any nesting without overflowing the stack (a 256 KB body of arrays)', () => {
    const depth = 131_000;
    const deep = JSON.parse(`${'['.repeat(depth)}1${']'.repeat(depth)}`);
    expect(canonicalJson(deep)).toBe(`${'['.repeat(depth)}1${']'.repeat(depth)}`);
    expect(canonicalJson({ b: deep, a: 1 })).toBe(
      `{"a":1,"b":${'['.repeat(depth)}1${']'.repeat(depth)}}`,
    );
  });

  it('keeps __proto__ as the own key JSON.parse makes it', () => {
    expect(canonicalJson(JSON.parse('{"b":1,"__proto__":{"x":1}}'))).toBe(
      '{"__proto__":{"x":1},"b":1}',
    );
  });

  it('gives the same text whatever the key order, and parses back to the value (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalJson(value);
        expect(canonicalJson(reordered(value))).toBe(text);
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(value)));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('requestFingerprint', () => {
  const body = { origin: 'Ikeja, Lagos', totalWeight: 3 };

  it('is the same for the same request with its fields in another order', () => {
    expect(requestFingerprint('POST', '/api/pricing', body)).toBe(
      requestFingerprint('POST', '/api/pricing', { totalWeight: 3, origin: 'Ikeja, Lagos' }),
    );
  });

  it('differs for another body, path or method', () => {
    const base = requestFingerprint('POST', '/api/pricing', body);
    expect(requestFingerprint('POST', '/api/pricing', { ...body, totalWeight: 4 })).not.toBe(base);
    expect(requestFingerprint('POST', '/api/package', body)).not.toBe(base);
    expect(requestFingerprint('PUT', '/api/pricing', body)).not.toBe(base);
  });
});

describe('readIdempotencyKey', () => {
  it('is undefined without the header and the value itself when usable', () => {
    expect(readIdempotencyKey(undefined)).toBeUndefined();
    expect(readIdempotencyKey('order-7f3a:retry')).toBe('order-7f3a:retry');
    expect(readIdempotencyKey('x'.repeat(255))).toHaveLength(255);
  });

  it.each([[''], ['has space'], ['x'.repeat(256)], ['naïve'], [['a', 'b']]])(
    'refuses %j with a 400 naming the header',
    (value) => {
      expect(() => readIdempotencyKey(value)).toThrow(
        expect.objectContaining({ code: 400, message: expect.stringMatching(/Idempotency-Key/) }),
      );
    },
  );
});

describe('changedNothing: which failures free the key', () => {
  const called = 'package.save';
  const target = { action: called, nodeID: 'package-1' };
  const other = { action: 'geo.route', nodeID: 'geo-1' };
  /** How an error reaches the gateway from another node: a plain object. */
  const wire = (err: Errors.MoleculerError) => ({
    name: err.name,
    message: err.message,
    code: err.code,
    type: err.type,
    data: err.data,
  });

  it.each<[string, unknown]>([
    ['a validation error', validationError([], 'Validation failed')],
    ["moleculer's own ValidationError", new Errors.ValidationError('bad', 'VALIDATION_ERROR')],
    ['a bad request', badRequest('no')],
    ['401', unauthorized('no key')],
    ['403', forbidden('not yours')],
    ['404', notFound('no such package')],
    ['409 of a service', conflict('taken')],
    ['422', unprocessable('no')],
    ['429', quotaExceeded()],
    ['SERVICE_NOT_FOUND of the action called', new Errors.ServiceNotFoundError(target)],
    ['SERVICE_NOT_AVAILABLE of the action called', new Errors.ServiceNotAvailableError(target)],
    ['QUEUE_FULL of the action called', new Errors.QueueIsFullError(target)],
    ['the same, across NATS', wire(new Errors.ServiceNotAvailableError(target))],
  ])('frees it after %s', (_name, err) => {
    expect(changedNothing(err, called)).toBe(true);
  });

  it.each<[string, unknown]>([
    ['REQUEST_REJECTED (the node dropped)', new Errors.RequestRejectedError(target)],
    ['REQUEST_REJECTED, across NATS', wire(new Errors.RequestRejectedError(target))],
    ['a timeout', new Errors.RequestTimeoutError(target)],
    ['a skipped request', new Errors.RequestSkippedError(target)],
    ['a 503 of a dependency', serviceUnavailable('S3 is unavailable')],
    ['SERVICE_NOT_FOUND of another action', new Errors.ServiceNotFoundError(other)],
    ['SERVICE_NOT_AVAILABLE of another action', new Errors.ServiceNotAvailableError(other)],
    ['QUEUE_FULL of another action', new Errors.QueueIsFullError(other)],
    ['a bug', new Error('undefined is not a function')],
    ['a moleculer server error', new Errors.MoleculerServerError('boom', 500, 'X', {})],
    ['anything thrown', 'a string'],
    ['nothing at all', undefined],
  ])('keeps it after %s', (_name, err) => {
    expect(changedNothing(err, called)).toBe(false);
  });

  it.each<[string, unknown]>([
    ['SERVICE_NOT_FOUND', new Errors.ServiceNotFoundError(target)],
    ['SERVICE_NOT_AVAILABLE', new Errors.ServiceNotAvailableError(target)],
    ['QUEUE_FULL', new Errors.QueueIsFullError(target)],
  ])(
    'keeps it after %s of a call sent again: an attempt before it may have committed',
    (_name, err) => {
      expect(changedNothing(err, called, true)).toBe(false);
      // A refusal still frees it, retried or not.
      expect(changedNothing(badRequest('no'), called, true)).toBe(true);
    },
  );
});

describe('takesIdempotencyKey', () => {
  it('is true for JSON POSTs of /api only: not for uploads, downloads, reads or /admin', () => {
    expect(takesIdempotencyKey({ group: 'api', method: 'POST' })).toBe(true);
    expect(takesIdempotencyKey({ group: 'api', method: 'POST', body: 'json' })).toBe(true);
    for (const http of [
      { group: 'api', method: 'POST', binary: true },
      { group: 'api', method: 'POST', body: 'stream' },
      { group: 'api', method: 'GET' },
      { group: 'api', method: 'PUT' },
      { group: 'file', method: 'POST', binary: true },
      { group: 'file', method: 'POST', body: 'stream' },
      { group: 'admin', method: 'POST' },
    ] as const) {
      expect(takesIdempotencyKey(http)).toBe(false);
    }
    expect(takesIdempotencyKey(undefined)).toBe(false);
  });
});

describe('idempotencyToken', () => {
  it('is the same for one key and request, and differs for another key or request', () => {
    // Fixed: tokens outlive a deploy in Redis, so a new release must derive the same one.
    expect(idempotencyToken('k', 'fp')).toBe('hkUyvDTU65FvZcpeu517YDIRlhDgKlQwjFmAXnnnjC4');
    expect(idempotencyToken('k', 'fp')).not.toBe(idempotencyToken('k2', 'fp'));
    expect(idempotencyToken('k', 'fp')).not.toBe(idempotencyToken('k', 'fp2'));
  });
});

describe('claimForRequest: what makes a retry the same request', () => {
  const http = { group: 'api', method: 'POST' } as const;
  /** The fingerprint a request is claimed under, and the token services are handed. */
  async function claimed(url: string, fullPath: string, params: Record<string, unknown>) {
    const fingerprints: string[] = [];
    const store = {
      claim: async (_user: string, _key: string, fingerprint: string) => {
        fingerprints.push(fingerprint);
        return { kind: 'first', complete: async () => true, fail: async () => undefined };
      },
    } as unknown as IdempotencyStore;
    const req = fakeRequest({
      method: 'POST',
      url,
      headers: { 'idempotency-key': 'key-1' },
      alias: { action: 'order.request', fullPath },
    });
    const meta: Record<string, unknown> = { user: { id: 'user-1' } };
    await claimForRequest(store, req, http, meta, params);
    return { fingerprint: fingerprints[0], token: meta.idempotencyToken };
  }

  it('is the route matched, whatever the case or trailing slash of the path sent', async () => {
    const declared = await claimed('/api/request', '/api/request', { a: 1 });
    // As before: a request sent as declared keeps its fingerprint and token across a deploy.
    expect(declared.fingerprint).toBe(requestFingerprint('POST', '/api/request', { a: 1 }));
    for (const url of ['/api/request/', '/API/Request', '/API/request/?x=1']) {
      expect(await claimed(url, '/api/request', { a: 1 })).toEqual(declared);
    }
    expect((await claimed('/api/request', '/api/request', { a: 2 })).fingerprint).not.toBe(
      declared.fingerprint,
    );
  });

  it("takes the path params' values as matched: another resource is another request", async () => {
    const template = '/api/webhooks/:webhookId/enable';
    const one = await claimed('/api/webhooks/w-1/enable', template, { webhookId: 'w-1' });
    expect(one.fingerprint).toBe(
      requestFingerprint('POST', '/api/webhooks/w-1/enable', { webhookId: 'w-1' }),
    );
    expect(await claimed('/API/webhooks/w-1/Enable/', template, { webhookId: 'w-1' })).toEqual(one);
    const other = await claimed('/api/webhooks/W-1/enable', template, { webhookId: 'W-1' });
    expect(other.fingerprint).not.toBe(one.fingerprint);
  });
});
