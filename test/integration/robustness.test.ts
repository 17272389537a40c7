import { gzipSync } from 'node:zlib';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { MAX_JSON_DEPTH, PROTOTYPE_KEYS } from '../../services/gateway/json-body';
import { adminHeaders, expectErrorEnvelope, request, type Reply } from '../support/http';
import { newCourier } from '../support/couriers';
import { useMerchantStack } from '../support/merchant-stack';

/**
 * Generated bad input against the running stack: whatever the body, an endpoint answers a 2xx
 * or a 4xx in the error envelope, never a 5xx. Bodies are valid ones with fields replaced by
 * arbitrary JSON, fields added (prototype keys among them), or arbitrary JSON altogether;
 * some are nested deep, around the nesting limit and far beyond it; some carry an
 * Idempotency-Key, whose fingerprint reads the whole body.
 */
const CDN = 'https://cdn.waybill.test';
const stack = useMerchantStack({
  internal: [],
  env: { CDN_BASE_URL: CDN, QUOTA_LIMIT: '100000' },
});

/** A fleet type geo adds when it starts, for bodies that name one. */
let bikeId: string;
/** A courier of the directory, for the rules' bodies. */
let courierId: string;
let fuzzPlates = 0;
beforeAll(async () => {
  const types = await request(stack.node.url, 'GET', '/admin/fleet-types', {
    headers: adminHeaders,
  });
  bikeId = (types.body.data as { id: string; code: string }[]).find((t) => t.code === 'bike')
    ?.id as string;
  courierId = await newCourier(stack.node.url);
});

/** Cases per endpoint; raise FUZZ_RUNS for a longer hunt. */
const RUNS = Number(process.env.FUZZ_RUNS ?? 120);
const IKEJA = { lat: 6.6018, lon: 3.3515 };

interface Target {
  method: string;
  path: string;
  admin?: boolean;
  valid: () => Record<string, unknown>;
}

const TARGETS: Target[] = [
  {
    method: 'POST',
    path: '/api/pricing',
    valid: () => ({
      origin: IKEJA,
      destination: 'Lekki, Lagos',
      totalWeight: 3,
      totalValue: 20000,
      urgencyType: 'SCHEDULED',
      deliveryDate: new Date(Date.now() + 3 * 86_400_000).toISOString().slice(0, 10),
      deliverySlot: '09:00 - 12:00',
      deliveryFeePayer: 'SPLIT',
      courierSelection: 'SPECIFIC',
      courierId: '9c3e2d1f-4b5a-4c6d-8e7f-0a1b2c3d4e5f',
    }),
  },
  {
    method: 'POST',
    path: '/api/package',
    valid: () => ({
      packageType: 'Fashion',
      name: 'Shoes',
      description: 'Two pairs',
      quantity: 2,
      size: 'MEDIUM',
      value: 4500,
      image: `${CDN}/uploads/9b2d4f6a-1c3e-4a5b-8c7d-0e1f2a3b4c5d/3f1c2a9e-7a0b-4c1d-9e2f-0a1b2c3d4e5f.jpg`,
    }),
  },
  {
    method: 'POST',
    path: '/api/route',
    valid: () => ({ origin: 'Ikeja, Lagos', destination: { address: 'Wuse, Abuja' } }),
  },
  {
    method: 'POST',
    path: '/admin/users',
    admin: true,
    valid: () => ({ name: 'Ada Obi', email: 'ada@example.com', phone: '+2348031234567' }),
  },
  {
    method: 'POST',
    path: '/admin/fleet-types',
    admin: true,
    valid: () => ({ code: 'e-scooter', name: 'E-scooter', maxWeightKg: 20, averageSpeedKmh: 20 }),
  },
  {
    method: 'PUT',
    path: '/admin/pricing/tiers',
    admin: true,
    valid: () => ({
      countryCode: 'NG',
      state: 'Kano',
      note: 'generated',
      rates: { includedWeightKg: 2, routes: { INTER_CITY: { baseFeeKobo: 100, perKmFeeKobo: 1 } } },
    }),
  },
  {
    method: 'POST',
    path: '/admin/couriers',
    admin: true,
    valid: () => ({
      name: 'Tunde Bakare',
      phone: '+2348031234567',
      profilePhoto: `${CDN}/uploads/9b2d4f6a-1c3e-4a5b-8c7d-0e1f2a3b4c5d/3f1c2a9e-7a0b-4c1d-9e2f-0a1b2c3d4e5f.jpg`,
      // A new number each time: the base body must be accepted.
      fleet: {
        typeId: bikeId,
        regNo: `FUZ-${++fuzzPlates}`,
        make: 'Bajaj',
        model: 'Boxer',
        colour: 'Red',
      },
    }),
  },
  {
    method: 'POST',
    path: '/admin/pricing/courier-rules',
    admin: true,
    valid: () => ({
      courierId,
      from: 'Kano',
      to: 'Kano',
      withinKmRadius: 10,
      amountKobo: 1000,
    }),
  },
];

type Json = unknown;

/** Every path into a JSON value's objects and arrays, the value's own root excluded. */
function pathsOf(value: Json, prefix: (string | number)[] = []): (string | number)[][] {
  if (value === null || typeof value !== 'object') return [];
  const entries = Array.isArray(value)
    ? value.map((v, i) => [i, v] as const)
    : Object.entries(value);
  return entries.flatMap(([key, child]) => [[...prefix, key], ...pathsOf(child, [...prefix, key])]);
}

function replaced(value: Json, path: (string | number)[], by: Json): Json {
  if (path.length === 0) return by;
  const [head, ...rest] = path;
  const copy = (Array.isArray(value) ? [...value] : { ...(value as object) }) as Record<
    string | number,
    Json
  >;
  copy[head] = replaced(copy[head], rest, by);
  return copy;
}

/** The value at `path`. */
const valueAt = (value: Json, path: (string | number)[]): Json =>
  path.reduce<Json>((v, key) => (v as Record<string | number, Json>)[key], value);

/**
 * `value` with an own property `key` added to the object at `path`. Defined, not assigned:
 * assigning `__proto__` would set the prototype instead, and JSON would never show it.
 */
function withOwnKey(value: Json, path: (string | number)[], key: string, by: Json): Json {
  const copy = { ...(valueAt(value, path) as object) };
  Object.defineProperty(copy, key, {
    value: by,
    enumerable: true,
    writable: true,
    configurable: true,
  });
  return replaced(value, path, copy);
}

/** Paths of the plain objects in a value, its root included. */
const objectPaths = (value: Json) =>
  [[], ...pathsOf(value)].filter((path) => {
    const v = valueAt(value, path);
    return v !== null && typeof v === 'object' && !Array.isArray(v);
  });

/** A valid body with prototype keys added to any of its objects, holding arbitrary JSON. */
function withPrototypeKeys(valid: Record<string, unknown>) {
  return fc
    .array(
      fc.tuple(
        fc.constantFrom(...objectPaths(valid)),
        fc.constantFrom(...PROTOTYPE_KEYS),
        fc.jsonValue({ maxDepth: 2 }),
      ),
      { minLength: 1, maxLength: 3 },
    )
    .map((additions) =>
      additions.reduce<Json>((acc, [path, key, by]) => withOwnKey(acc, path, key, by), valid),
    );
}

/** A valid body with some fields, at any depth, replaced by arbitrary JSON; maybe a stray one. */
function mutated(valid: Record<string, unknown>) {
  const paths = pathsOf(valid);
  return fc
    .tuple(
      fc.array(fc.tuple(fc.constantFrom(...paths), fc.jsonValue({ maxDepth: 3 })), {
        minLength: 1,
        maxLength: 4,
      }),
      fc.option(
        fc.tuple(
          fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom(...PROTOTYPE_KEYS)),
          fc.jsonValue({ maxDepth: 2 }),
        ),
      ),
    )
    .map(([changes, stray]) => {
      let body = changes.reduce<Json>((acc, [path, by]) => replaced(acc, path, by), valid);
      if (stray) body = withOwnKey(body, [], stray[0], stray[1]);
      return body;
    });
}

const anyBody = (valid: Record<string, unknown>) =>
  fc.oneof(
    { weight: 4, arbitrary: mutated(valid) },
    { weight: 1, arbitrary: withPrototypeKeys(valid) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  );

/** JSON text of arrays nested `depth` deep around `inner`. */
const nestedArrays = (depth: number, inner = '0') =>
  `${'['.repeat(depth)}${inner}${']'.repeat(depth)}`;

/** The JSON text of a valid body whose field at `path` is replaced by `depth` nested arrays. */
function deeplyNested(valid: Record<string, unknown>, path: (string | number)[], depth: number) {
  const marker = '"@@nested@@"';
  return JSON.stringify(replaced(valid, path, '@@nested@@')).replace(marker, nestedArrays(depth));
}

/** How deep the deepest array or object of a JSON text is nested (the body itself is 1). */
function depthOf(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '[' || c === '{') deepest = Math.max(deepest, ++depth);
    else if (c === ']' || c === '}') depth--;
  }
  return deepest;
}

const DEPTH_MESSAGE = `nested more than ${MAX_JSON_DEPTH} levels deep`;

function expectNoServerError(reply: Reply, body: unknown): void {
  if (reply.status >= 500) {
    throw new Error(`${reply.status} for ${JSON.stringify(body)}: ${reply.text}`);
  }
  if (reply.status >= 400) expectErrorEnvelope(reply, reply.status);
}

describe('generated bad input never makes a 5xx', () => {
  it.each(TARGETS.map((t) => [`${t.method} ${t.path}`, t] as const))('%s', async (_, target) => {
    const headers = target.admin ? adminHeaders : { 'api-key': stack.alice.key };
    const valid = await request(stack.node.url, target.method, target.path, {
      headers,
      json: target.valid(),
    });
    // The base body is a real, accepted request.
    expect({ status: valid.status, body: valid.body }).toMatchObject({
      status: expect.any(Number),
    });
    expect(valid.status < 300 ? 'accepted' : valid.text).toBe('accepted');
    // Some requests carry an Idempotency-Key: the gateway fingerprints their bodies first.
    await fc.assert(
      fc.asyncProperty(anyBody(target.valid()), fc.option(fc.uuid()), async (body, key) => {
        const reply = await request(stack.node.url, target.method, target.path, {
          headers: key ? { ...headers, 'idempotency-key': key } : headers,
          json: body,
        });
        expectNoServerError(reply, body);
      }),
      { numRuns: RUNS },
    );
  });

  it.each(TARGETS.map((t) => [`${t.method} ${t.path}`, t] as const))(
    '%s: nesting up to the limit is read, deeper is a 400 that says the limit',
    async (_, target) => {
      const headers = target.admin ? adminHeaders : { 'api-key': stack.alice.key };
      const valid = target.valid();
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...pathsOf(valid)),
          fc.oneof(
            fc.integer({ min: 1, max: 2 * MAX_JSON_DEPTH }),
            fc.integer({ min: MAX_JSON_DEPTH - 3, max: MAX_JSON_DEPTH + 3 }),
            fc.constant(100_000),
          ),
          fc.option(fc.uuid()),
          async (path, depth, key) => {
            const raw = deeplyNested(valid, path, depth);
            const reply = await request(stack.node.url, target.method, target.path, {
              headers: {
                ...headers,
                'content-type': 'application/json',
                ...(key ? { 'idempotency-key': key } : {}),
              },
              raw,
            });
            expectNoServerError(reply, `${depth} levels at ${path.join('.')}`);
            if (depthOf(raw) > MAX_JSON_DEPTH) {
              expectErrorEnvelope(reply, 400, new RegExp(DEPTH_MESSAGE));
            } else {
              expect(reply.body?.message ?? '').not.toMatch(DEPTH_MESSAGE);
            }
          },
        ),
        { numRuns: Math.ceil(RUNS / 4) },
      );
    },
  );

  it.each(['/api/pricing', '/api/route', '/api/package'])(
    '%s: prototype keys anywhere in a valid body are dropped, the body is served as it is',
    async (path) => {
      const target = TARGETS.find((t) => t.path === path) as Target;
      const headers = { 'api-key': stack.alice.key };
      await fc.assert(
        fc.asyncProperty(withPrototypeKeys(target.valid()), async (body) => {
          const reply = await request(stack.node.url, 'POST', path, { headers, json: body });
          expect({ status: reply.status, body: JSON.stringify(body) }).toMatchObject({
            status: path === '/api/package' ? 201 : 200,
          });
        }),
        { numRuns: Math.ceil(RUNS / 4) },
      );
    },
  );

  it.each(['/api/pricing', '/api/route', '/api/package'])(
    '%s: a top-level __proto__ never stands in for the body',
    async (path) => {
      // The fields a valid body needs, sent only as its __proto__: nothing was sent.
      const target = TARGETS.find((t) => t.path === path) as Target;
      const raw = `{"__proto__":${JSON.stringify(target.valid())}}`;
      const reply = await request(stack.node.url, 'POST', path, {
        headers: { 'api-key': stack.alice.key, 'content-type': 'application/json' },
        raw,
      });
      expectErrorEnvelope(reply, 400);
    },
  );

  it('a 256 KB body of nested arrays is a 400 naming the limit, with an Idempotency-Key too', async () => {
    const depth = 128 * 1024 - 10;
    for (const key of [randomUUID(), undefined]) {
      const reply = await request(stack.node.url, 'POST', '/api/package', {
        headers: {
          'api-key': stack.alice.key,
          'content-type': 'application/json',
          ...(key ? { 'idempotency-key': key } : {}),
        },
        raw: `{"name":${nestedArrays(depth)}}`,
      });
      expectErrorEnvelope(
        reply,
        400,
        `The JSON body is nested more than ${MAX_JSON_DEPTH} levels deep; send at most ${MAX_JSON_DEPTH} levels of objects and arrays`,
      );
    }
  });

  it('nor does a body its Content-Encoding does not describe, with a key or without (401 before it is read)', async () => {
    const undecodable = [
      ['gzip', Buffer.from('xx')],
      ['gzip', gzipSync(Buffer.from('{"a":1}')).subarray(0, 12)],
      ['deflate', Buffer.from([0x78, 0x9c, 0xff, 0xff])],
      ['br', Buffer.from('not brotli at all')],
    ] as const;
    for (const [encoding, body] of undecodable) {
      const keys: Record<string, string>[] = [{}, { 'api-key': stack.alice.key }];
      for (const headers of keys) {
        const reply = await request(stack.node.url, 'POST', '/api/package', {
          headers: { ...headers, 'content-type': 'application/json', 'content-encoding': encoding },
          raw: body,
        });
        expectErrorEnvelope(
          reply,
          headers['api-key'] ? 400 : 401,
          headers['api-key']
            ? 'The body could not be decompressed; send it as its Content-Encoding says (gzip, deflate or br), or without one'
            : 'API key is required',
        );
      }
    }
    // An encoding the document does not state is a 415, whatever this Node could inflate.
    for (const encoding of ['zstd', 'compress', 'gzip, br']) {
      const refused = await request(stack.node.url, 'POST', '/api/package', {
        headers: {
          'api-key': stack.alice.key,
          'content-type': 'application/json',
          'content-encoding': encoding,
        },
        raw: Buffer.from('{}'),
      });
      expectErrorEnvelope(
        refused,
        415,
        'Unsupported content encoding; send the body in gzip, deflate or br, or without one',
      );
    }
    // A body that does decompress is read as usual.
    const reply = await request(stack.node.url, 'POST', '/api/route', {
      headers: {
        'api-key': stack.alice.key,
        'content-type': 'application/json',
        'content-encoding': 'gzip',
      },
      raw: gzipSync(Buffer.from('{}')),
    });
    expectErrorEnvelope(reply, 400);
    expect(reply.body.message).not.toMatch(/decompress/);
  });

  it('nor do malformed JSON, wrong content types and odd query strings', async () => {
    const headers = { 'api-key': stack.alice.key };
    await fc.assert(
      fc.asyncProperty(
        fc.string({ maxLength: 40 }),
        fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded'),
        fc.constantFrom('/api/pricing', '/api/package', '/api/route'),
        async (raw, type, path) => {
          const reply = await request(stack.node.url, 'POST', path, {
            headers: { ...headers, 'content-type': type },
            raw,
          });
          expectNoServerError(reply, raw);
        },
      ),
      { numRuns: RUNS },
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('/api/cities', '/api/states', '/api/countries', '/api/packages'),
        fc.string({ maxLength: 30 }),
        async (path, search) => {
          const query = `?search=${encodeURIComponent(search)}&countryCode=${encodeURIComponent(search)}&state=${encodeURIComponent(search)}`;
          const reply = await request(stack.node.url, 'GET', `${path}${query}`, { headers });
          expectNoServerError(reply, query);
        },
      ),
      { numRuns: RUNS },
    );
  });
});
