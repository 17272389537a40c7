import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import type mongoose from 'mongoose';
import { call } from '../../libs/contracts';
import { COURIER_TOKENS, virtualCourierId } from '../../libs/contracts/matching';
import { VIRTUAL_COURIER_TOKEN } from '../../services/courier-matching/courier-tokens';
import { CourierStore, defineMatchingModels } from '../../services/courier-matching/store';
import {
  balanceOf,
  credit,
  DELIVERED_STEPS,
  freePackages,
  getDelivery,
  requestDelivery,
  savePackage,
  type Party,
} from '../support/deliveries';
import { eventually } from '../support/eventually';
import { adminHeaders, createUserWithKey, expectErrorEnvelope, request } from '../support/http';
import { useMerchantStack } from '../support/merchant-stack';
import { openServiceDatabase } from '../support/stack';

/**
 * The sandbox simulator (issue 13) through the gateway: a staging request with
 * `Waybill-Simulate` is taken to the door by a virtual courier, or fails on the way, or finds
 * nobody, at SIMULATOR_TIME_SCALE times real speed, every step visible on
 * GET /api/deliveries/:deliveryId (live refuses the header: live.test.ts).
 */
const stack = useMerchantStack({
  internal: ['courier-matching'],
  env: {
    // A 25 km trip takes about 5 s, the 15 min search about 1.5 s.
    SIMULATOR_TIME_SCALE: '600',
    MATCHING_SWEEP_INTERVAL_MS: '200',
    ORDER_SWEEP_INTERVAL_MS: '500',
    // The virtual courier's positions are written to MongoDB on the way, as a courier's are.
    COURIER_LOCATION_FLUSH_MS: '300',
  },
});
const base = () => stack.node.url;

let db: mongoose.Connection;
let redis: Redis;
beforeAll(async () => {
  db = await openServiceDatabase(stack.iso, 'matching');
  redis = new Redis(process.env.REDIS_URL as string);
});
afterAll(async () => {
  await db?.close();
  redis?.disconnect();
});

/** Whether the virtual courier of a delivery has a position in Redis, and one stored. */
async function virtualCourierKept(deliveryId: string) {
  const courierId = virtualCourierId(deliveryId);
  const [inRedis, stored] = await Promise.all([
    redis.exists(`${stack.iso.namespace}:couriers:pos:${courierId}`),
    db.collection<{ _id: string }>('courier_locations').countDocuments({ _id: courierId }),
  ]);
  return { inRedis: inRedis === 1, stored: stored === 1 };
}

/** Once its delivery is over, the virtual courier is freed: nothing of its position is kept. */
async function expectVirtualCourierFreed(deliveryId: string) {
  await eventually(async () =>
    expect(await virtualCourierKept(deliveryId)).toEqual({ inRedis: false, stored: false }),
  );
  // Ended again (order's sweep repeats its effects): nothing to free, nothing put back.
  await call(stack.client, 'courier-matching.endMatching', { deliveryId });
  expect(await virtualCourierKept(deliveryId)).toEqual({ inRedis: false, stored: false });
}

async function simulated(mode: string) {
  const merchant: Party = await createUserWithKey(base());
  await credit(base(), merchant, 100_000);
  const packageId = await savePackage(base(), merchant);
  const created = await requestDelivery(
    base(),
    merchant,
    [packageId],
    {},
    {
      'Waybill-Simulate': mode,
    },
  );
  expect(created.status).toBe(201);
  return { merchant, packageId, deliveryId: created.body.data.deliveryId as string };
}

/** Polls the delivery until `done`, keeping every status and courier position seen. */
async function watch(merchant: Party, deliveryId: string, done: string) {
  const statuses: string[] = [];
  const positions = new Set<string>();
  let last: Record<string, any> = {}; // eslint-disable-line @typescript-eslint/no-explicit-any -- the answer as JSON
  await eventually(
    async () => {
      last = (await getDelivery(base(), merchant, deliveryId)).body.data;
      if (statuses.at(-1) !== last.status) statuses.push(last.status);
      const at = last.courier?.currentLocation;
      if (at) positions.add(`${at.lat},${at.lon}`);
      expect(last.status).toBe(done);
    },
    { timeout: 45_000, interval: 100 },
  );
  return { statuses, positions, last };
}

describe('Waybill-Simulate', () => {
  it('delivered: a virtual courier takes it to the door, each step visible, codes scanned', async () => {
    const { merchant, deliveryId } = await simulated('delivered');
    const { statuses, positions, last } = await watch(merchant, deliveryId, 'DELIVERED');
    // Seen along the way (polling may miss a short step, never the order).
    const order = DELIVERED_STEPS;
    expect(statuses.map((s) => order.indexOf(s))).toEqual(
      [...statuses.map((s) => order.indexOf(s))].sort((a, b) => a - b),
    );
    expect(statuses).toContain('IN_TRANSIT');
    expect(positions.size).toBeGreaterThan(2);
    expect(last.deliverySteps.map((s: { step: string }) => s.step)).toEqual(order);
    expect(last.p2pDelivery.status).toBe('COMPLETED');
    expect(last.courier).toMatchObject({
      name: 'Simulated courier',
      fleet: { make: 'Waybill', model: 'Simulator', typeId: last.fleetTypeId },
    });
    await expectVirtualCourierFreed(deliveryId);
    // Operators' list of couriers leaves the virtual ones out (one per simulation) unless asked.
    const listed = async (query: string) =>
      (
        (
          await request(base(), 'GET', `/admin/couriers?limit=500${query}`, {
            headers: adminHeaders,
          })
        ).body.data as { id: string }[]
      ).map((c) => c.id);
    expect(await listed('')).not.toContain(virtualCourierId(deliveryId));
    expect(await listed('&virtual=true')).toContain(virtualCourierId(deliveryId));
    // Nobody reports its steps beside the simulator.
    expectErrorEnvelope(
      await request(base(), 'POST', `/admin/couriers/${virtualCourierId(deliveryId)}/tokens`, {
        headers: adminHeaders,
      }),
      409,
      VIRTUAL_COURIER_TOKEN,
    );
    // One made before they were refused acts for nobody.
    const { token, hash } = COURIER_TOKENS.issue();
    await db.collection<{ _id: string; [field: string]: unknown }>('courier_tokens').insertOne({
      _id: hash,
      tokenId: randomUUID(),
      courierId: virtualCourierId(deliveryId),
      lastUsedAt: null,
      createdAt: new Date(),
    });
    const asVirtual = await request(base(), 'GET', '/courier/offers', {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(asVirtual.status).toBe(401);
    // The delivery still names its courier.
    expect((await getDelivery(base(), merchant, deliveryId)).body.data.courier).toMatchObject({
      name: 'Simulated courier',
    });
    for (const proof of last.proofs) {
      expect(proof).toMatchObject({
        code: expect.stringMatching(/^\d{6}$/),
        scannedAt: expect.any(String),
      });
    }
  });

  it('keeps its virtual courier out of real searches when Redis lost its position on the way', async () => {
    const { merchant, deliveryId } = await simulated('delivered');
    const hash = `${stack.iso.namespace}:couriers:pos:${virtualCourierId(deliveryId)}`;
    await eventually(async () => expect(await redis.hget(hash, 'lat')).not.toBeNull(), {
      timeout: 20_000,
      interval: 50,
    });
    // As a Redis restarted empty leaves it; the simulator places it again on its next drive.
    await redis.del(hash);
    await eventually(async () => expect(await redis.hget(hash, 'lat')).not.toBeNull(), {
      timeout: 20_000,
      interval: 50,
    });
    const [busy, fleet, c7, c9] = await redis.hmget(hash, 'busy', 'fleet', 'c7', 'c9');
    expect(busy).toBe('1');
    const avail = `${stack.iso.namespace}:couriers:avail:${fleet}`;
    expect(await redis.zscore(`${avail}:7:${c7}`, virtualCourierId(deliveryId))).toBeNull();
    expect(await redis.zscore(`${avail}:9:${c9}`, virtualCourierId(deliveryId))).toBeNull();
    await watch(merchant, deliveryId, 'DELIVERED');
    await expectVirtualCourierFreed(deliveryId);
  });

  it('failed: the courier gives up after collection and brings the packages back', async () => {
    const { merchant, deliveryId, packageId } = await simulated('failed');
    const { last } = await watch(merchant, deliveryId, 'RETURNED');
    expect(last.deliverySteps.map((s: { step: string }) => s.step)).toEqual([
      'REQUEST_CREATED',
      'COURIER_ASSIGNED',
      'ARRIVED_AT_PICKUP',
      'COLLECTED',
      'IN_TRANSIT',
      'RETURNING',
      'RETURNED',
    ]);
    // Given back with the code the sender was sent.
    expect(last.proofs.find((p: { type: string }) => p.type === 'RETURN')).toMatchObject({
      code: expect.stringMatching(/^\d{6}$/),
      scannedAt: expect.any(String),
    });
    // The trip was made: the fee is kept; the packages are free again.
    expect(last.p2pDelivery.status).toBe('COMPLETED');
    // Released by the transition's effects, a moment after its status shows.
    await eventually(async () => expect(await freePackages(base(), merchant)).toContain(packageId));
    await expectVirtualCourierFreed(deliveryId);
  });

  it('no-courier: nobody is found, the delivery is refunded and its packages released', async () => {
    const { merchant, deliveryId, packageId } = await simulated('no-courier');
    const { last } = await watch(merchant, deliveryId, 'NO_COURIER_FOUND');
    expect(last.p2pDelivery.status).toBe('REFUNDED');
    await eventually(async () => expect(await balanceOf(base(), merchant)).toBe('100000.00'));
    // Released by the transition's effects, a moment after its status shows.
    await eventually(async () => expect(await freePackages(base(), merchant)).toContain(packageId));
  });

  it('takes the header as part of the request an Idempotency-Key names', async () => {
    const merchant: Party = await createUserWithKey(base());
    await credit(base(), merchant, 100_000);
    const packageId = await savePackage(base(), merchant);
    const key = randomUUID();
    const send = (mode: string) =>
      requestDelivery(
        base(),
        merchant,
        [packageId],
        {},
        {
          'Idempotency-Key': key,
          'Waybill-Simulate': mode,
        },
      );
    const first = await send('no-courier');
    expect(first.status).toBe(201);
    expect((await send('no-courier')).headers.get('idempotent-replayed')).toBe('true');
    // Another simulation is another request: the key is not its to replay.
    expectErrorEnvelope(await send('delivered'), 422, /Idempotency-Key/);
  });

  it('lets no request name a virtual courier: not as its courier, not as the wallet of its cash', async () => {
    const { merchant, deliveryId } = await simulated('delivered');
    const virtual = virtualCourierId(deliveryId);
    await eventually(async () => {
      const got = (await getDelivery(base(), merchant, deliveryId)).body.data;
      expect(got.courier).toBeDefined();
    });
    const operators = await request(base(), 'GET', `/admin/couriers/${virtual}`, {
      headers: adminHeaders,
    });
    expect(operators.body.data).toMatchObject({ id: virtual, virtual: true });
    const packageId = await savePackage(base(), merchant);
    const before = await balanceOf(base(), merchant);
    const specific = await requestDelivery(base(), merchant, [packageId], {
      courierSelection: 'SPECIFIC',
      courierId: virtual,
    });
    expectErrorEnvelope(specific, 404);
    expect(specific.body.errors).toEqual([
      { field: 'courierId', message: `no active courier ${virtual}` },
    ]);
    const cash = await requestDelivery(base(), merchant, [packageId], {
      payOnDelivery: true,
      podRemitTo: 'COURIER_WALLET',
      podCourierProfileId: virtual,
    });
    expectErrorEnvelope(cash, 404);
    expect(cash.body.errors).toEqual([
      { field: 'podCourierProfileId', message: `no active courier ${virtual}` },
    ]);
    // Nothing was taken for either.
    expect(await balanceOf(base(), merchant)).toBe(before);
    // Nor may an operator put it on a merchant's own list.
    expectErrorEnvelope(
      await request(base(), 'PUT', `/admin/users/${merchant.userId}/couriers/${virtual}`, {
        headers: adminHeaders,
      }),
      404,
      'Courier not found',
    );
    // One put there before that was refused is no courier of the list's to ask.
    await new CourierStore(() => defineMatchingModels(db)).addToList(merchant.userId, virtual, 1);
    const listed = await requestDelivery(base(), merchant, [packageId], {
      courierSelection: 'MERCHANT_SPECIAL_COURIERS',
    });
    expectErrorEnvelope(listed, 404, 'No merchant-specific couriers found');
    expect(await balanceOf(base(), merchant)).toBe(before);
  });

  it('refuses a value it does not know, naming the ones it does', async () => {
    const merchant: Party = await createUserWithKey(base());
    const reply = await requestDelivery(
      base(),
      merchant,
      [randomUUID()],
      {},
      {
        'Waybill-Simulate': 'teleported',
      },
    );
    expectErrorEnvelope(
      reply,
      400,
      'Waybill-Simulate must be one of delivered, failed, no-courier',
    );
  });
});
