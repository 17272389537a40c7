import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import type mongoose from 'mongoose';
import { openServiceDatabase } from '../support/stack';
import { hashCourierToken, type CourierView } from '../../libs/contracts/matching';
import { COURIER_TOKEN_MESSAGES } from '../../services/gateway/courier-auth';
import { COURIER_RETIRED } from '../../services/courier-matching/locations';
import { CourierPositions, type NearestQuery } from '../../services/courier-matching/positions';
import { PLACE_PENDING_MS } from '../../libs/places';
import { COURIER_TOKENS_MAX } from '../../services/courier-matching/schemas';
import { eventually } from '../support/eventually';
import { adminHeaders, expectErrorEnvelope, request } from '../support/http';
import { useMerchantStack } from '../support/merchant-stack';

/**
 * The courier app's side (issue 13): courier tokens, courier-token authentication at the
 * gateway, location reports into the Redis index and MongoDB. Every service in one process on
 * the real infrastructure; the index is also read directly, as matching reads it. Gateways
 * keep token answers for COURIER_TOKEN_CACHE_SECONDS (60 s here, the default): a revocation
 * seen at once is the event's doing. Each test that fails authentications sends its own
 * X-Forwarded-For (one trusted proxy), so that the throttle counts it apart.
 */
const FLUSH_MS = 300;
const stack = useMerchantStack({
  internal: ['courier-matching'],
  env: {
    COURIER_LOCATION_FLUSH_MS: String(FLUSH_MS),
    TRUST_PROXY_HOPS: '1',
    AUTH_FAILURE_LIMIT: '5',
  },
});

let db: mongoose.Connection;
let redis: Redis;
let positions: CourierPositions;
let bike: string;
let car: string;

beforeAll(async () => {
  db = await openServiceDatabase(stack.iso, 'matching');
  redis = new Redis(process.env.REDIS_URL as string);
  positions = new CourierPositions(redis, {
    keyPrefix: `${stack.iso.namespace}:couriers:`,
    onlineMs: 120_000,
  });
  const types = await admin('GET', '/admin/fleet-types');
  const idOf = (code: string) =>
    (types.body.data as { id: string; code: string }[]).find((t) => t.code === code)?.id as string;
  [bike, car] = [idOf('bike'), idOf('car')];
});

afterAll(async () => {
  await db?.close();
  // Couriers' hashes never expire (their number is bounded by the directory's): removed here.
  const keys = (await redis?.keys(`${stack.iso.namespace}:couriers:*`)) ?? [];
  if (keys.length > 0) await redis.del(...keys);
  redis?.disconnect();
});

const admin = (method: string, path: string, json?: unknown) =>
  request(stack.node.url, method, path, { headers: adminHeaders, json });

let addresses = 0;
/** A client address of the test's own (TEST-NET-3), for the failed-authentication count. */
const newAddress = () => `203.0.113.${++addresses}`;

/** A `/courier` call with a token (or any Authorization), from an address. */
const asCourier = (
  method: string,
  path: string,
  options: { authorization?: string; json?: unknown; address?: string } = {},
) =>
  request(stack.node.url, method, path, {
    headers: {
      ...(options.authorization === undefined ? {} : { authorization: options.authorization }),
      'x-forwarded-for': options.address ?? newAddress(),
    },
    json: options.json,
  });

const report = (token: string, json: unknown) =>
  asCourier('POST', '/courier/location', { authorization: `Bearer ${token}`, json });

/** The courier's position as the flusher last wrote it to MongoDB. */
const storedLocation = (courierId: string) =>
  db.collection('courier_locations').findOne({ _id: courierId as never });

let plates = 0;
async function createCourier(fleetTypeId = bike): Promise<CourierView> {
  const created = await admin('POST', '/admin/couriers', {
    name: 'Amaka Nwosu',
    phone: '+2348031234567',
    fleet: {
      typeId: fleetTypeId,
      regNo: `API-${process.pid % 1000}-${++plates}`,
      make: 'Bajaj',
      model: 'Boxer',
      colour: 'Red',
    },
  });
  expect(created.status).toBe(201);
  return created.body.data as CourierView;
}

async function createToken(courierId: string): Promise<{ id: string; token: string }> {
  const created = await admin('POST', `/admin/couriers/${courierId}/tokens`);
  expect(created.status).toBe(201);
  return created.body.data as { id: string; token: string };
}

/** A courier with a token of its own. */
async function courierWithToken(fleetTypeId = bike) {
  const courier = await createCourier(fleetTypeId);
  return { courier, ...(await createToken(courier.id)) };
}

describe('courier tokens', () => {
  it('are shown once, at creation, and stored only as their SHA-256', async () => {
    const courier = await createCourier();
    const reply = await admin('POST', `/admin/couriers/${courier.id}/tokens`);
    expect(reply.status).toBe(201);
    expect(reply.body.message).toMatch(/not shown again/);
    const created = reply.body.data;
    expect(created).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      courierId: courier.id,
      token: expect.stringMatching(/^wbc_[A-Za-z0-9_-]{43}$/),
      createdAt: expect.any(String),
      createdBy: 'admin-token',
      createdByOperatorTokenId: null,
    });
    const stored = await db.collection('courier_tokens').find({ courierId: courier.id }).toArray();
    expect(stored).toEqual([
      {
        _id: hashCourierToken(created.token),
        tokenId: created.id,
        courierId: courier.id,
        lastUsedAt: null,
        createdAt: expect.any(Date),
        place: 0,
        createdBy: 'admin-token',
      },
    ]);
    expect(JSON.stringify(stored)).not.toContain(created.token.slice(4));

    const listed = await admin('GET', `/admin/couriers/${courier.id}/tokens`);
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual([
      {
        id: created.id,
        courierId: courier.id,
        createdAt: created.createdAt,
        createdBy: 'admin-token',
        createdByOperatorTokenId: null,
        lastUsedAt: null,
      },
    ]);
    expect(listed.text).not.toContain(created.token);
    expect(listed.text).not.toContain(hashCourierToken(created.token));
  });

  it('note when they were last used', async () => {
    const { courier, token } = await courierWithToken();
    expect((await report(token, { lat: 6.5, lon: 3.4 })).status).toBe(200);
    // Noted beside the sign-in, not before it is answered.
    await eventually(async () => {
      const listed = await admin('GET', `/admin/couriers/${courier.id}/tokens`);
      expect(listed.body.data[0].lastUsedAt).toEqual(expect.any(String));
    });
  });

  it('answer 404 Courier not found for a courier that does not exist, 400 for an id that is no UUID', async () => {
    for (const method of ['POST', 'GET']) {
      expectErrorEnvelope(
        await admin(method, `/admin/couriers/${randomUUID()}/tokens`),
        404,
        'Courier not found',
      );
      expectErrorEnvelope(await admin(method, '/admin/couriers/nope/tokens'), 400);
    }
  });

  it(`are at most ${COURIER_TOKENS_MAX} per courier`, async () => {
    const courier = await createCourier();
    for (let i = 0; i < COURIER_TOKENS_MAX; i++) await createToken(courier.id);
    expectErrorEnvelope(
      await admin('POST', `/admin/couriers/${courier.id}/tokens`),
      409,
      `Courier ${courier.id} already has ${COURIER_TOKENS_MAX} tokens (at most ${COURIER_TOKENS_MAX}); revoke one with DELETE /admin/courier-tokens/:tokenId first`,
    );
  });

  it(`are held to ${COURIER_TOKENS_MAX} exactly when created at once, each listed, and a revocation frees one place`, async () => {
    const courier = await createCourier();
    const create = () => admin('POST', `/admin/couriers/${courier.id}/tokens`);
    const statuses = (replies: { status: number }[]) => replies.map((r) => r.status).sort();
    const first = await Promise.all(Array.from({ length: 16 }, create));
    expect(statuses(first)).toEqual([
      ...Array(COURIER_TOKENS_MAX).fill(201),
      ...Array(16 - COURIER_TOKENS_MAX).fill(409),
    ]);
    for (const refused of first.filter((r) => r.status === 409)) {
      expect(refused.body.message).toMatch(
        new RegExp(
          `^Courier ${courier.id} (already )?has \\d+ tokens (and creations under way hold the other places )?\\(at most ${COURIER_TOKENS_MAX}\\)`,
        ),
      );
    }
    // Every token that works is listed: none beyond the cap for operators not to see.
    const created = first.filter((r) => r.status === 201).map((r) => r.body.data.id as string);
    const listed = await admin('GET', `/admin/couriers/${courier.id}/tokens`);
    expect(listed.body.data.map((t: { id: string }) => t.id).sort()).toEqual(created.sort());

    const places = () =>
      db
        .collection('courier_token_places')
        .countDocuments({ _id: { $regex: `^${courier.id}:` } } as object);
    expect(await places()).toBe(COURIER_TOKENS_MAX);
    expect((await admin('DELETE', `/admin/courier-tokens/${created[3]}`)).status).toBe(204);
    expect(await places()).toBe(COURIER_TOKENS_MAX - 1);
    const second = await Promise.all(Array.from({ length: 5 }, create));
    expect(statuses(second)).toEqual([201, 409, 409, 409, 409]);
  });

  it('count those made before places against the cap, and free a place a revocation left held once it is old', async () => {
    const courier = await createCourier();
    const tokens = db.collection('courier_tokens');
    // Three tokens stored before places existed: they hold none and count all the same.
    await tokens.insertMany(
      Array.from({ length: 3 }, () => ({
        _id: randomUUID() as never,
        tokenId: randomUUID(),
        courierId: courier.id,
        lastUsedAt: null,
        createdAt: new Date(),
      })),
    );
    const create = () => admin('POST', `/admin/couriers/${courier.id}/tokens`);
    const statuses = (replies: { status: number }[]) => replies.map((r) => r.status).sort();
    const first = await Promise.all(Array.from({ length: COURIER_TOKENS_MAX }, create));
    expect(statuses(first)).toEqual([
      ...Array(COURIER_TOKENS_MAX - 3).fill(201),
      ...Array(3).fill(409),
    ]);
    const listed = await admin('GET', `/admin/couriers/${courier.id}/tokens`);
    expect(listed.body.data).toHaveLength(COURIER_TOKENS_MAX);

    // A revocation that removed its token and stopped before giving the place back.
    const placed = first.find((r) => r.status === 201)?.body.data.id as string;
    expect((await tokens.deleteOne({ tokenId: placed })).deletedCount).toBe(1);
    const busy = await create();
    expectErrorEnvelope(busy, 409);
    expect(busy.body.message).toMatch(/creations under way hold the other places/);
    // Past PLACE_PENDING_MS the place is taken for the next token.
    const places = db.collection('courier_token_places');
    await places.updateOne({ holder: placed } as object, {
      $set: { at: new Date(Date.now() - PLACE_PENDING_MS) },
    });
    expect((await create()).status).toBe(201);
    // The place is held no more (its release's claim, kept, names the token too).
    const held = { _id: { $regex: `^${courier.id}:` }, holder: placed };
    expect(await places.countDocuments(held as object)).toBe(0);
    expectErrorEnvelope(await create(), 409);
  });

  it('stop working at once when revoked (204), and a second revocation is 404', async () => {
    const { courier, id, token } = await courierWithToken();
    const other = await createToken(courier.id);
    expect((await report(token, { lat: 6.5, lon: 3.4 })).status).toBe(200);
    const revoked = await admin('DELETE', `/admin/courier-tokens/${id}`);
    expect(revoked.status).toBe(204);
    expect(revoked.text).toBe('');
    // The gateway had accepted it a moment ago and keeps answers for 60 s: the event dropped it.
    await eventually(async () =>
      expectErrorEnvelope(
        await report(token, { lat: 6.5, lon: 3.4 }),
        401,
        COURIER_TOKEN_MESSAGES.refused,
      ),
    );
    expect((await report(other.token, { lat: 6.5, lon: 3.4 })).status).toBe(200);
    expectErrorEnvelope(
      await admin('DELETE', `/admin/courier-tokens/${id}`),
      404,
      `Courier token ${id} not found; GET /admin/couriers/:courierId/tokens lists a courier's tokens`,
    );
    expectErrorEnvelope(await admin('DELETE', '/admin/courier-tokens/nope'), 400);
    const listed = await admin('GET', `/admin/couriers/${courier.id}/tokens`);
    expect(listed.body.data.map((t: { id: string }) => t.id)).toEqual([other.id]);

    // Revoked by several operators at once: one 204, the others' 404, as a repeat's.
    for (let round = 0; round < 3; round++) {
      const { id: raced } = await createToken(courier.id);
      const answers = await Promise.all(
        Array.from({ length: 4 }, () => admin('DELETE', `/admin/courier-tokens/${raced}`)),
      );
      expect(answers.map((a) => a.status).sort()).toEqual([204, 404, 404, 404]);
    }
  });

  it('stop working at once when their courier is retired, and work again when it is active', async () => {
    const { courier, token } = await courierWithToken();
    expect((await report(token, { lat: 6.5, lon: 3.4 })).status).toBe(200);
    expect((await admin('PATCH', `/admin/couriers/${courier.id}`, { active: false })).status).toBe(
      200,
    );
    await eventually(async () =>
      expectErrorEnvelope(
        await report(token, { lat: 6.5, lon: 3.4 }),
        401,
        COURIER_TOKEN_MESSAGES.refused,
      ),
    );
    expect((await admin('PATCH', `/admin/couriers/${courier.id}`, { active: true })).status).toBe(
      200,
    );
    await eventually(async () =>
      expect((await report(token, { lat: 6.5, lon: 3.4 })).status).toBe(200),
    );
  });
});

describe('courier authentication at the gateway', () => {
  it('counts each courier’s requests against COURIER_QUOTA_LIMIT, whichever of its tokens, with the rate-limit headers', async () => {
    const { courier, token } = await courierWithToken();
    const second = await createToken(courier.id);
    const other = await courierWithToken();
    const first = await report(token, { lat: 6.5, lon: 3.4 });
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit-limit')).toBe('300');
    expect(first.headers.get('ratelimit-remaining')).toBe('299');
    // The window's count brought to its last request, as 299 earlier calls would have.
    const key = `${stack.iso.namespace}:quota:courier:${courier.id}:60`;
    await redis.set(key, '299', 'KEEPTTL');
    const last = await report(second.token, { lat: 6.5, lon: 3.4 });
    expect(last.status).toBe(200);
    expect(last.headers.get('ratelimit-remaining')).toBe('0');
    for (const t of [token, second.token]) {
      const refused = await report(t, { lat: 6.5, lon: 3.4 });
      expectErrorEnvelope(
        refused,
        429,
        /^Too many requests from this courier; retry in \d+ seconds/,
      );
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    // Another courier's count is its own.
    expect((await report(other.token, { lat: 6.5, lon: 3.4 })).status).toBe(200);
  });

  it('asks for a courier token, saying what to send, when there is none', async () => {
    const none: Record<string, string> = {};
    for (const headers of [none, { 'api-key': stack.alice.key }]) {
      const reply = await request(stack.node.url, 'POST', '/courier/location', {
        headers: { ...headers, 'x-forwarded-for': newAddress() },
        json: { lat: 6.5, lon: 3.4 },
      });
      expectErrorEnvelope(reply, 401, COURIER_TOKEN_MESSAGES.required);
    }
    expect(COURIER_TOKEN_MESSAGES.required).toMatch(
      /^Courier token is required: send Authorization: Bearer <courier token>/,
    );
  });

  it('refuses what is not a courier token, and a token that is not known', async () => {
    const { token } = await courierWithToken();
    for (const authorization of [
      token,
      `Basic ${token}`,
      adminHeaders.authorization,
      `Bearer ${stack.alice.key}`,
      `Bearer ${token}x`,
    ]) {
      expectErrorEnvelope(
        await asCourier('POST', '/courier/location', { authorization, json: { lat: 1, lon: 1 } }),
        401,
        COURIER_TOKEN_MESSAGES.format,
      );
    }
    const unknown = `wbc_${'A'.repeat(43)}`;
    expectErrorEnvelope(
      await report(unknown, { lat: 1, lon: 1 }),
      401,
      COURIER_TOKEN_MESSAGES.refused,
    );
  });

  it('is the courier token’s alone: it opens neither /api nor /admin', async () => {
    const { courier, token } = await courierWithToken();
    const asApiKey = await request(stack.node.url, 'GET', '/api/me', {
      headers: { 'api-key': token, authorization: `Bearer ${token}` },
    });
    expectErrorEnvelope(asApiKey, 401, 'Invalid API key format');
    const asAdmin = await request(stack.node.url, 'GET', `/admin/couriers/${courier.id}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expectErrorEnvelope(asAdmin, 401, 'Invalid admin token');
  });

  it('throttles failures per client address, as for API keys', async () => {
    const { token } = await courierWithToken();
    const address = newAddress();
    const unknown = (n: number) => `Bearer wbc_${String(n).padStart(43, 'B')}`;
    for (let n = 0; n < 5; n++) {
      const reply = await asCourier('POST', '/courier/location', {
        authorization: unknown(n),
        json: { lat: 1, lon: 1 },
        address,
      });
      expectErrorEnvelope(reply, 401);
    }
    const throttled = await asCourier('POST', '/courier/location', {
      authorization: unknown(99),
      json: { lat: 1, lon: 1 },
      address,
    });
    expectErrorEnvelope(
      throttled,
      429,
      /^Too many failed authentications from your address; retry in \d+ seconds with a valid courier token$/,
    );
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another address is not held back.
    expect((await report(token, { lat: 6.5, lon: 3.4 })).status).toBe(200);
  });

  it('refuses browsers: /courier is for the courier app', async () => {
    const reply = await request(stack.node.url, 'OPTIONS', '/courier/location', {
      headers: {
        origin: 'https://example.com',
        'access-control-request-method': 'POST',
        'x-forwarded-for': newAddress(),
      },
    });
    expectErrorEnvelope(reply, 403, /courier app/);
  });
});

describe('POST /courier/location', () => {
  it('answers what it took, in the success envelope', async () => {
    const { token } = await courierWithToken();
    const before = Date.now();
    const reply = await report(token, { lat: 6.4551, lon: 3.3942 });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      success: true,
      message: 'Location recorded',
      data: { lat: 6.4551, lon: 3.3942, at: expect.any(String) },
    });
    const at = Date.parse(reply.body.data.at);
    expect(at).toBeGreaterThanOrEqual(before - 1000);
    expect(at).toBeLessThanOrEqual(Date.now() + 1000);
  });

  it('refuses bad positions with 400, naming each field', async () => {
    const { token } = await courierWithToken();
    const cases: [unknown, string[]][] = [
      [{}, ['lat', 'lon']],
      [{ lat: 6.5 }, ['lon']],
      [{ lat: 90.0001, lon: 3 }, ['lat']],
      [{ lat: -91, lon: 181 }, ['lat', 'lon']],
      [{ lat: 6.5, lon: -180.5 }, ['lon']],
      [{ lat: '6.5', lon: '3.4' }, ['lat', 'lon']],
      [{ lat: null, lon: true }, ['lat', 'lon']],
      [{ lat: 6.5, lon: 3.4, courierId: randomUUID() }, ['courierId']],
    ];
    for (const [json, fields] of cases) {
      const reply = await report(token, json);
      expectErrorEnvelope(reply, 400);
      expect(reply.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(fields);
    }
    expect((await report(token, { lat: 90, lon: -180 })).status).toBe(200);
    expect((await report(token, { lat: -90, lon: 180 })).status).toBe(200);
  });

  it('shows in the admin views at once, and reaches MongoDB after the flush', async () => {
    const { courier, token } = await courierWithToken();
    const reply = await report(token, { lat: 6.6018, lon: 3.3515 });
    const taken = reply.body.data;
    const shown = await admin('GET', `/admin/couriers/${courier.id}`);
    expect(shown.body.data.lastLocation).toEqual(taken);
    expect(shown.body.data.updatedAt).toBe(courier.updatedAt);
    const listed = await admin('GET', `/admin/couriers?fleetTypeId=${bike}&limit=500`);
    expect(listed.body.data.find((c: CourierView) => c.id === courier.id).lastLocation).toEqual(
      taken,
    );

    await eventually(async () => {
      expect(await storedLocation(courier.id)).toEqual({
        _id: courier.id,
        lat: 6.6018,
        lon: 3.3515,
        at: new Date(taken.at),
      });
    });
    // A position is no change of the directory: the courier's document is the operators' only.
    const stored = await db.collection('couriers').findOne({ _id: courier.id as never });
    expect((stored?.updatedAt as Date).toISOString()).toBe(courier.updatedAt);
    expect(stored?.lastLocation).toBeNull();
  });

  it('writes to MongoDB only the couriers that moved since the last flush', async () => {
    const { courier, token } = await courierWithToken();
    await report(token, { lat: 6.51, lon: 3.31 });
    const moved = `${stack.iso.namespace}:couriers:moved`;
    await eventually(async () => {
      expect((await storedLocation(courier.id))?.lat).toBe(6.51);
      expect(await redis.sismember(moved, courier.id)).toBe(0);
    });
    await report(token, { lat: 6.51, lon: 3.31 });
    expect(await redis.sismember(moved, courier.id)).toBe(0);
    await report(token, { lat: 6.52, lon: 3.31 });
    await eventually(async () => expect((await storedLocation(courier.id))?.lat).toBe(6.52));
  });

  it('shows the later of the position in Redis and the one in MongoDB', async () => {
    const { courier, token } = await courierWithToken();
    const taken = (await report(token, { lat: 6.45, lon: 3.45 })).body.data;
    await eventually(async () => expect((await storedLocation(courier.id))?.lat).toBe(6.45));
    const older = { lat: 1, lon: 1, at: new Date(Date.parse(taken.at) - 60_000) };
    await db
      .collection('courier_locations')
      .updateOne({ _id: courier.id as never }, { $set: older });
    expect((await admin('GET', `/admin/couriers/${courier.id}`)).body.data.lastLocation).toEqual(
      taken,
    );
    await positions.forget(courier.id);
    expect((await admin('GET', `/admin/couriers/${courier.id}`)).body.data.lastLocation).toEqual({
      ...older,
      at: older.at.toISOString(),
    });
  });

  it('acts only as the token’s courier', async () => {
    const a = await courierWithToken();
    const b = await courierWithToken();
    await report(b.token, { lat: 6.43, lon: 3.43 });
    const bBefore = (await admin('GET', `/admin/couriers/${b.courier.id}`)).body.data.lastLocation;
    await report(a.token, { lat: 6.61, lon: 3.31 });
    expectErrorEnvelope(
      await report(a.token, { lat: 6.62, lon: 3.32, courierId: b.courier.id }),
      400,
    );
    const aNow = (await admin('GET', `/admin/couriers/${a.courier.id}`)).body.data.lastLocation;
    const bNow = (await admin('GET', `/admin/couriers/${b.courier.id}`)).body.data.lastLocation;
    expect(aNow).toMatchObject({ lat: 6.61, lon: 3.31 });
    expect(bNow).toEqual(bBefore);
  });

  it('of a retired courier is refused 403 by matching, which leaves it out of the index', async () => {
    const { courier, id, token } = await courierWithToken();
    await report(token, { lat: 6.47, lon: 3.47 });
    const near = { lat: 6.47, lon: 3.47, fleetTypeIds: [bike], maxDistanceKm: 1, limit: 50 };
    const ids = async (q: NearestQuery) => (await positions.nearest(q)).map((c) => c.courierId);
    expect(await ids(near)).toContain(courier.id);
    await admin('PATCH', `/admin/couriers/${courier.id}`, { active: false });
    expect(await ids(near)).not.toContain(courier.id);
    // The gateway refuses the token at once (above); a report it had let through before it
    // heard of the retirement reaches matching, which refuses it.
    const refused = await stack.client
      .call(
        'courier-matching.reportLocation',
        { lat: 6.47, lon: 3.47 },
        { meta: { courier: { id: courier.id, tokenId: id } } },
      )
      .then(
        () => null,
        (err: unknown) => err,
      );
    expect(refused).toMatchObject({ type: 'FORBIDDEN', code: 403, message: COURIER_RETIRED });
    expect(await ids(near)).not.toContain(courier.id);
  });
});

describe('the index matching reads (Redis), fed through the courier API', () => {
  it('finds the nearest available couriers of a fleet type, after PATCHed fleet changes and retirements', async () => {
    const centre = { lat: 6.58, lon: 3.58 };
    const [near, mid, far] = await Promise.all([
      courierWithToken(bike),
      courierWithToken(bike),
      courierWithToken(bike),
    ]);
    await report(near.token, { lat: centre.lat, lon: centre.lon + 0.001 });
    await report(mid.token, { lat: centre.lat, lon: centre.lon + 0.01 });
    await report(far.token, { lat: centre.lat, lon: centre.lon + 0.05 });
    const q = (overrides: Partial<NearestQuery> = {}) => ({
      ...centre,
      fleetTypeIds: [bike],
      maxDistanceKm: 10,
      limit: 10,
      ...overrides,
    });
    const ids = async (query: NearestQuery) =>
      (await positions.nearest(query)).map((c) => c.courierId);
    expect(await ids(q())).toEqual([near.courier.id, mid.courier.id, far.courier.id]);
    expect(await ids(q({ maxDistanceKm: 2 }))).toEqual([near.courier.id, mid.courier.id]);

    await positions.setBusy(near.courier.id, true);
    expect(await ids(q({ limit: 1 }))).toEqual([mid.courier.id]);
    await positions.setBusy(near.courier.id, false);

    const patched = await admin('PATCH', `/admin/couriers/${mid.courier.id}`, {
      fleet: { typeId: car },
    });
    expect(patched.status).toBe(200);
    expect(await ids(q())).toEqual([near.courier.id, far.courier.id]);
    expect(await ids(q({ fleetTypeIds: [car] }))).toEqual([mid.courier.id]);

    await admin('PATCH', `/admin/couriers/${far.courier.id}`, { active: false });
    expect(await ids(q())).toEqual([near.courier.id]);
    await admin('PATCH', `/admin/couriers/${far.courier.id}`, { active: true });
    expect(await ids(q())).toEqual([near.courier.id, far.courier.id]);
  });
});
