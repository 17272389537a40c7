import fc from 'fast-check';
import { adminHeaders, expectErrorEnvelope, request, type Reply } from '../support/http';
import { useMerchantStack } from '../support/merchant-stack';

/**
 * Generated bad input against the running stack: whatever the body, an endpoint answers a 2xx
 * or a 4xx in the error envelope, never a 5xx. Bodies are valid ones with fields replaced by
 * arbitrary JSON, fields added, or arbitrary JSON altogether.
 */
const CDN = 'https://cdn.waybill.test';
const stack = useMerchantStack({
  internal: [],
  env: { CDN_BASE_URL: CDN, QUOTA_LIMIT: '100000' },
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
    path: '/admin/pricing/courier-rules',
    admin: true,
    valid: () => ({
      courierId: '1c3e2d1f-4b5a-4c6d-8e7f-0a1b2c3d4e5f',
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

/** A valid body with some fields, at any depth, replaced by arbitrary JSON; maybe a stray one. */
function mutated(valid: Record<string, unknown>) {
  const paths = pathsOf(valid);
  return fc
    .tuple(
      fc.array(fc.tuple(fc.constantFrom(...paths), fc.jsonValue({ maxDepth: 3 })), {
        minLength: 1,
        maxLength: 4,
      }),
      fc.option(fc.tuple(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 2 }))),
    )
    .map(([changes, stray]) => {
      let body = changes.reduce<Json>((acc, [path, by]) => replaced(acc, path, by), valid);
      if (stray) body = { ...(body as object), [stray[0]]: stray[1] };
      return body;
    });
}

const anyBody = (valid: Record<string, unknown>) =>
  fc.oneof(
    { weight: 4, arbitrary: mutated(valid) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  );

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
    await fc.assert(
      fc.asyncProperty(anyBody(target.valid()), async (body) => {
        const reply = await request(stack.node.url, target.method, target.path, {
          headers,
          json: body,
        });
        expectNoServerError(reply, body);
      }),
      { numRuns: RUNS },
    );
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
