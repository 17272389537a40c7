import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import type mongoose from 'mongoose';
import { offerId } from '../../services/courier-matching/matching-rules';
import {
  BUSY_CHECK_MS,
  CourierPositions,
  UNMARKED_CHECK_MS,
} from '../../services/courier-matching/positions';
import { openServiceDatabase } from '../support/stack';
import { onAreaGrid } from '../../libs/geodesy';
import { call } from '../../libs/contracts';
import {
  DELIVERY_STATUS_CHANGED_EVENT,
  type DeliveryEventPayload,
} from '../../libs/contracts/order';
import {
  balanceOf,
  cancelDelivery,
  credit,
  DELIVERED_STEPS,
  DESTINATION,
  entriesOf,
  freePackages,
  getDelivery,
  ledgerIsClean,
  notificationsOf,
  ORIGIN,
  proofCodeSent,
  requestDelivery,
  savePackage,
  type Party,
} from '../support/deliveries';
import { eventually } from '../support/eventually';
import { adminHeaders, createUserWithKey, expectErrorEnvelope, request } from '../support/http';
import {
  asCourier as asCourierOf,
  courierAt as courierAtOf,
  offerOf as offerOfAt,
  type Courier,
} from '../support/couriers';
import { useMerchantStack } from '../support/merchant-stack';
import { operatorsReason } from '../../services/order/delivery-admin';

/**
 * Matching and the courier's side of a delivery (issue 13) through the gateway, every service
 * in one process on the real FerretDB, NATS and Redis: couriers report where they are, the
 * nearest free one is offered the delivery, accepts it and drives it to the door through the
 * courier API, and the merchant sees each step on GET /api/deliveries/:deliveryId.
 */
/** Every `order.deliveryStatusChanged` the platform broadcasts, as a webhook sender will see it. */
const statusEvents: DeliveryEventPayload[] = [];
const stack = useMerchantStack({
  internal: ['order', 'courier-matching', 'payment'],
  own: [
    {
      name: 'status-probe',
      events: {
        [DELIVERY_STATUS_CHANGED_EVENT]: {
          handler: (ctx: { params: DeliveryEventPayload }) => void statusEvents.push(ctx.params),
        },
      },
    },
  ],
  env: {
    MATCHING_OFFER_TIMEOUT_MS: '4000',
    MATCHING_SEARCH_TIMEOUT_MS: '20000',
    MATCHING_SWEEP_INTERVAL_MS: '200',
    MATCHING_WIDEN_EVERY_MS: '60000',
    ORDER_SWEEP_INTERVAL_MS: '500',
    PAYMENT_SWEEP_INTERVAL_MS: '200',
  },
});
const base = () => stack.node.url;

let db: mongoose.Connection;
let fleetTypes: { id: string; code: string }[];

beforeAll(async () => {
  db = await openServiceDatabase(stack.iso, 'matching');
  fleetTypes = (await admin('GET', '/admin/fleet-types')).body.data;
});

afterAll(() => db?.close());

const admin = (method: string, path: string, json?: unknown) =>
  request(base(), method, path, { headers: adminHeaders, json });

const courierAt = (at: { lat: number; lon: number }, fleetCode = 'bike') =>
  courierAtOf(base(), at, fleetCode);
const asCourier = (courier: Courier, method: string, path: string, json?: unknown) =>
  asCourierOf(base(), courier, method, path, json);
const report = (courier: Courier, at: { lat: number; lon: number }) =>
  asCourier(courier, 'POST', '/courier/location', at);
const offerOf = (courier: Courier, timeout?: number) => offerOfAt(base(), courier, timeout);

/** A delivery paid for `courier` alone, offered to them and accepted. */
async function acceptedBy(courier: Courier) {
  const paid = await paidDelivery({ courierSelection: 'SPECIFIC', courierId: courier.id });
  const offer = await offerOf(courier);
  expect((await asCourier(courier, 'POST', `/courier/offers/${offer.id}/accept`)).status).toBe(200);
  return { ...paid, offer };
}

async function noOffer(courier: Courier) {
  const reply = await asCourier(courier, 'GET', '/courier/offers');
  expect(reply.status).toBe(200);
  return reply.body.data.length === 0;
}

/** A merchant with a funded wallet and one wallet-paid delivery from ORIGIN. */
async function paidDelivery(fields: Record<string, unknown> = {}) {
  const merchant: Party = await createUserWithKey(base());
  await credit(base(), merchant, 100_000);
  const packageId = await savePackage(base(), merchant);
  const created = await requestDelivery(base(), merchant, [packageId], fields);
  expect(created.status).toBe(201);
  return { merchant, packageId, deliveryId: created.body.data.deliveryId as string };
}

/** The code a stop's contact was sent (staging shows the outbox's texts). */
const codeSent = (
  deliveryId: string,
  purpose: 'COLLECTION_CODE' | 'DELIVERY_CODE' | 'RETURN_CODE',
) => proofCodeSent(base(), deliveryId, purpose);

/** The merchant's new code for a proof (sent to the stop's contact, never answered). */
const issueCode = (who: Party, deliveryId: string, proofId: string) =>
  request(base(), 'POST', `/api/deliveries/${deliveryId}/proofs/${proofId}/code`, {
    headers: { 'api-key': who.key },
  });

/** A courier's cash account as operators read it. */
async function cashOf(courier: { id: string }, query = '') {
  const reply = await admin('GET', `/admin/couriers/${courier.id}/cash${query}`);
  expect(reply.status).toBe(200);
  return reply.body.data as {
    courierId: string;
    balance: string;
    owed: string;
    entries: {
      sequence: number;
      type: string;
      amount: string;
      balance: string;
      reference: string;
    }[];
  };
}

/** Somewhere a few hundred metres from the pickup, and farther out. */
const NEAR = { lat: ORIGIN.lat + 0.003, lon: ORIGIN.lon + 0.002 };
const FARTHER = { lat: ORIGIN.lat + 0.02, lon: ORIGIN.lon - 0.015 };
const FAR_FROM_ORIGIN = { lat: ORIGIN.lat + 1, lon: ORIGIN.lon };

describe('a delivery driven to the door through the courier API', () => {
  it('is offered to the nearest courier, accepted, and shows every step to the merchant', async () => {
    const near = await courierAt(NEAR);
    const far = await courierAt(FARTHER);
    const { merchant, deliveryId, packageId } = await paidDelivery();

    const offer = await offerOf(near);
    expect(offer.deliveryId).toBe(deliveryId);
    // The pickup's point; the drop-off's area (its 0.01° cell), not its door.
    expect(offer.pickup).toEqual({ lat: ORIGIN.lat, lon: ORIGIN.lon });
    expect(offer.dropoff).toEqual({ lat: 6.45, lon: 3.47 });
    expect(await noOffer(far)).toBe(true);
    expect((await getDelivery(base(), merchant, deliveryId)).body.data.courierId).toBeNull();
    // Someone else's offer is not found.
    expectErrorEnvelope(await asCourier(far, 'POST', `/courier/offers/${offer.id}/accept`), 404);
    const accepted = await asCourier(near, 'POST', `/courier/offers/${offer.id}/accept`);
    expect(accepted.status).toBe(200);

    const assigned = (await getDelivery(base(), merchant, deliveryId)).body.data;
    expect(assigned.status).toBe('COURIER_ASSIGNED');
    expect(assigned.courierId).toBe(near.id);
    expect(assigned.courier).toMatchObject({
      name: 'Tunde Bakare',
      phone: '+2348031234567',
      currentLocation: { country: 'Nigeria', lat: NEAR.lat, lon: NEAR.lon },
      fleet: { make: 'Bajaj', model: 'Boxer', colour: 'Red', typeId: expect.any(String) },
      eta: { from: expect.any(String), to: expect.any(String) },
    });
    expect(assigned.courier.currentLocation.state).toMatch(/Lagos/);
    expect(Date.parse(assigned.courier.eta.to)).toBeGreaterThan(Date.now());

    const current = await asCourier(near, 'GET', '/courier/deliveries/current');
    expect(current.body.data).toMatchObject({ id: deliveryId, status: 'COURIER_ASSIGNED' });
    // Where, and whom to ask for; not the contacts' e-mail (the pickup's is the merchant's login).
    const { pickup, dropoff } = current.body.data;
    expect(dropoff).toMatchObject({
      contactName: DESTINATION.contactName,
      contactPhone: DESTINATION.contactPhone,
      lat: DESTINATION.lat,
    });
    expect(pickup).toMatchObject({ lat: ORIGIN.lat, lon: ORIGIN.lon });
    expect(Object.keys(pickup)).not.toContain('contactEmail');
    expect(Object.keys(dropoff)).not.toContain('contactEmail');
    // The offer's weight, as every weight of the API: kg with five decimals.
    expect(offer.totalWeight).toMatch(/^\d+\.\d{5}$/);
    expect(offer.totalWeight).toBe(current.body.data.packages.totalWeight);
    // The merchant's own view keeps it.
    expect(assigned.destination.contactEmail).toBe(DESTINATION.contactEmail);

    const step = (courier: Courier, name: string, json?: unknown) =>
      asCourier(courier, 'POST', `/courier/deliveries/${deliveryId}/${name}`, json);
    // Out of order: 409 naming the status; a delivery the courier does not hold: 404.
    expectErrorEnvelope(await step(near, 'in-transit'), 409, /it is COURIER_ASSIGNED/);
    expectErrorEnvelope(await step(far, 'arrived-at-pickup'), 404);
    expect((await step(near, 'arrived-at-pickup')).status).toBe(200);

    // Collection needs the sender's code: missing 400, wrong 422 counting down, right 200.
    expectErrorEnvelope(await step(near, 'collected', {}), 400, /code is required/);
    expectErrorEnvelope(await step(near, 'collected', { code: '000000' }), 422, /4 tries left/);
    // Tries taken by other calls count, whatever their numbers: here the third (a wrong code
    // that came while a right one held the second, since given back).
    const collectionProof = (await getDelivery(base(), merchant, deliveryId)).body.data.proofs.find(
      (p: { type: string }) => p.type === 'COLLECTION',
    );
    const orders = await openServiceDatabase(stack.iso, 'order');
    try {
      await orders
        .collection('proof_attempts')
        .insertOne({ _id: `${collectionProof.id}:1:3` as never, at: new Date() });
    } finally {
      await orders.close();
    }
    expectErrorEnvelope(await step(near, 'collected', { code: '000000' }), 422, /2 tries left/);
    const collectionCode = await codeSent(deliveryId, 'COLLECTION_CODE');
    expect((await step(near, 'collected', { code: collectionCode })).status).toBe(200);
    const collected = (await getDelivery(base(), merchant, deliveryId)).body.data;
    const proof = collected.proofs.find((p: { type: string }) => p.type === 'COLLECTION');
    expect(proof).toMatchObject({ code: collectionCode, scannedAt: expect.any(String) });

    expect((await step(near, 'in-transit')).status).toBe(200);
    expect((await report(near, { lat: 6.5, lon: 3.42 })).status).toBe(200);
    expect((await step(near, 'arrived-at-dropoff')).status).toBe(200);
    const deliveryCode = await codeSent(deliveryId, 'DELIVERY_CODE');
    expect((await step(near, 'delivered', { code: deliveryCode })).status).toBe(200);

    const done = (await getDelivery(base(), merchant, deliveryId)).body.data;
    expect(done.status).toBe('DELIVERED');
    expect(done.p2pDelivery.status).toBe('COMPLETED');
    // Over: the merchant no longer follows the courier.
    expect(done.courier.eta).toBeNull();
    expect(done.courier.currentLocation).toBeNull();
    expect(done.courier.name).toBe('Tunde Bakare');
    expect(done.deliverySteps.map((s: { step: string }) => s.step)).toEqual(DELIVERED_STEPS);
    expect(done.deliverySteps.filter((s: { active: boolean }) => s.active)).toHaveLength(1);
    // The courier is free, the packages stay with the delivered delivery.
    await eventually(async () => {
      const free = await asCourier(near, 'GET', '/courier/deliveries/current');
      expect(free.body.data).toBeNull();
    });
    expect(await freePackages(base(), merchant)).not.toContain(packageId);
    // Every status change was broadcast with the key that created the delivery.
    await eventually(() => {
      const seen = statusEvents.filter((e) => e.deliveryId === deliveryId);
      expect(seen.map((e) => e.status)).toEqual(DELIVERED_STEPS.slice(1));
      for (const e of seen) {
        expect(e).toMatchObject({
          apiKeyId: (merchant as unknown as { keyId: string }).keyId,
          courierId: near.id,
        });
      }
    });
    // A repeat (an answer lost on the way) is told what happened.
    expectErrorEnvelope(
      await step(near, 'delivered', { code: deliveryCode }),
      409,
      /it is DELIVERED/,
    );
  });
});

describe('matching', () => {
  it('moves on when the courier declines or lets the offer expire, never asking them again', async () => {
    const first = await courierAt({ lat: ORIGIN.lat + 0.001, lon: ORIGIN.lon });
    const second = await courierAt({ lat: ORIGIN.lat + 0.004, lon: ORIGIN.lon });
    const third = await courierAt({ lat: ORIGIN.lat + 0.008, lon: ORIGIN.lon });
    const { deliveryId } = await paidDelivery();
    const offered = await offerOf(first);
    expect(offered.deliveryId).toBe(deliveryId);
    expect((await asCourier(first, 'POST', `/courier/offers/${offered.id}/decline`)).status).toBe(
      200,
    );
    // Declined: to the next nearest. Then that one stays silent past the offer's time.
    const next = await offerOf(second);
    expect(next.deliveryId).toBe(deliveryId);
    const last = await offerOf(third, 20_000);
    expect(last.deliveryId).toBe(deliveryId);
    // The third offer: the silent courier was not asked again when theirs expired.
    expect(last.id).toBe(offerId(deliveryId, 3));
    expect(await noOffer(first)).toBe(true);
    // The silent courier's late accept is refused.
    expectErrorEnvelope(
      await asCourier(second, 'POST', `/courier/offers/${next.id}/accept`),
      409,
      /expired/,
    );
    expect((await asCourier(third, 'POST', `/courier/offers/${last.id}/accept`)).status).toBe(200);
  });

  it('skips a courier whose vehicle cannot carry the load', async () => {
    // The bike is nearer, but 60 kg needs a car.
    const bike = await courierAt({ lat: ORIGIN.lat + 0.001, lon: ORIGIN.lon + 0.001 }, 'bike');
    const car = await courierAt({ lat: ORIGIN.lat + 0.005, lon: ORIGIN.lon + 0.005 }, 'car');
    const merchant: Party = await createUserWithKey(base());
    await credit(base(), merchant, 200_000);
    const heavy = await Promise.all(
      [1, 2, 3, 4].map(() => savePackage(base(), merchant, { size: 'LARGE', quantity: 1 })),
    );
    const created = await requestDelivery(base(), merchant, heavy, {
      fleetTypeId: fleetTypes.find((t) => t.code === 'car')?.id,
    });
    expect(created.status).toBe(201);
    const offer = await offerOf(car);
    expect(offer.deliveryId).toBe(created.body.data.deliveryId);
    expect(await noOffer(bike)).toBe(true);
  });

  it('offers a SPECIFIC delivery to that courier only', async () => {
    const nearer = await courierAt({ lat: ORIGIN.lat + 0.0005, lon: ORIGIN.lon });
    const chosen = await courierAt({ lat: ORIGIN.lat + 0.01, lon: ORIGIN.lon });
    const { deliveryId } = await paidDelivery({
      courierSelection: 'SPECIFIC',
      courierId: chosen.id,
    });
    expect((await offerOf(chosen)).deliveryId).toBe(deliveryId);
    expect(await noOffer(nearer)).toBe(true);
  });

  it('offers a MERCHANT_SPECIAL_COURIERS delivery to the nearest courier on the merchant’s list only', async () => {
    const stranger = await courierAt({ lat: ORIGIN.lat + 0.0003, lon: ORIGIN.lon + 0.0003 });
    const own = await courierAt({ lat: ORIGIN.lat + 0.006, lon: ORIGIN.lon + 0.006 });
    const merchant: Party = await createUserWithKey(base());
    await credit(base(), merchant, 100_000);
    expect((await admin('PUT', `/admin/users/${merchant.userId}/couriers/${own.id}`)).status).toBe(
      204,
    );
    const created = await requestDelivery(base(), merchant, [await savePackage(base(), merchant)], {
      courierSelection: 'MERCHANT_SPECIAL_COURIERS',
    });
    expect(created.status).toBe(201);
    expect((await offerOf(own)).deliveryId).toBe(created.body.data.deliveryId);
    expect(await noOffer(stranger)).toBe(true);
  });

  it('ends a SPECIFIC delivery NO_COURIER_FOUND once its courier, out of reach, is retired, not at the search’s time', async () => {
    const courier = await courierAt(FAR_FROM_ORIGIN);
    const { merchant, deliveryId } = await paidDelivery({
      courierSelection: 'SPECIFIC',
      courierId: courier.id,
    });
    expect(await noOffer(courier)).toBe(true);
    expect((await admin('PATCH', `/admin/couriers/${courier.id}`, { active: false })).status).toBe(
      200,
    );
    // Well within MATCHING_SEARCH_TIMEOUT_MS (20 s here): the steps find their only courier gone.
    await eventually(
      async () => {
        const got = (await getDelivery(base(), merchant, deliveryId)).body.data;
        expect(got.status).toBe('NO_COURIER_FOUND');
      },
      { timeout: 10_000, interval: 250 },
    );
  });

  it('leaves a SPECIFIC search going while its courier, written inactive, still holds something: the retirement’s to settle', async () => {
    const courier = await courierAt(FAR_FROM_ORIGIN);
    const { merchant, deliveryId } = await paidDelivery({
      courierSelection: 'SPECIFIC',
      courierId: courier.id,
    });
    // A retirement in its window: written inactive, the courier's hold (another trip) not yet
    // looked at, and put back at work if it is one.
    const holds = db.collection('courier_holds');
    await holds.insertOne({
      _id: courier.id as never,
      deliveryId: randomUUID(),
      offerId: `${randomUUID()}:1`,
      kind: 'DELIVERY',
      at: new Date(),
    });
    const couriers = db.collection('couriers');
    await couriers.updateOne({ _id: courier.id as never }, { $set: { active: false } });
    try {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect((await getDelivery(base(), merchant, deliveryId)).body.data.status).toBe(
        'REQUEST_CREATED',
      );
    } finally {
      await holds.deleteOne({ _id: courier.id as never });
    }
    // Holding nothing any more, and still inactive: retired for the search, which ends.
    await eventually(
      async () => {
        const got = (await getDelivery(base(), merchant, deliveryId)).body.data;
        expect(got.status).toBe('NO_COURIER_FOUND');
      },
      { timeout: 10_000, interval: 250 },
    );
  });

  it('ends NO_COURIER_FOUND when nobody is in reach: refunded, packages released', async () => {
    // A pickup far from every courier of the suite.
    const merchant: Party = await createUserWithKey(base());
    await credit(base(), merchant, 100_000);
    const packageId = await savePackage(base(), merchant);
    const created = await request(base(), 'POST', '/api/request', {
      headers: { 'api-key': merchant.key },
      json: {
        origin: { lat: 9.0765, lon: 7.3986, address: 'Wuse II, Abuja' },
        destination: {
          lat: 9.0579,
          lon: 7.4951,
          address: 'Garki, Abuja',
          contactName: 'Ada Obi',
          contactPhone: '+2348031234567',
          contactEmail: 'ada@example.com',
        },
        packagesId: [packageId],
        type: 'DROP_OFF',
        courierSelection: 'ANYONE',
      },
    });
    expect(created.status).toBe(201);
    const deliveryId = created.body.data.deliveryId as string;
    await eventually(
      async () => {
        const got = (await getDelivery(base(), merchant, deliveryId)).body.data;
        expect(got.status).toBe('NO_COURIER_FOUND');
        expect(got.p2pDelivery.status).toBe('REFUNDED');
      },
      { timeout: 40_000, interval: 500 },
    );
    await eventually(async () => expect(await balanceOf(base(), merchant)).toBe('100000.00'));
    // Released by the transition's effects, a moment after its status shows.
    await eventually(async () => expect(await freePackages(base(), merchant)).toContain(packageId));
    expect(await ledgerIsClean(base())).toBe(true);
  }, 60_000);

  it('50 deliveries and 20 couriers at once: no courier holds two, every delivery assigned or waiting', async () => {
    const spot = { lat: 6.45, lon: 3.39 };
    const couriers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        courierAt({ lat: spot.lat + (i % 5) * 0.001, lon: spot.lon + Math.floor(i / 5) * 0.001 }),
      ),
    );
    const merchant: Party = await createUserWithKey(base());
    await credit(base(), merchant, 1_000_000);
    const packages = await Promise.all(
      Array.from({ length: 50 }, () => savePackage(base(), merchant)),
    );
    const created = await Promise.all(
      packages.map((p) =>
        request(base(), 'POST', '/api/request', {
          headers: { 'api-key': merchant.key },
          json: {
            origin: { ...spot, address: 'Marina, Lagos Island' },
            destination: {
              lat: 6.4474,
              lon: 3.4723,
              address: 'Admiralty Way, Lekki, Lagos',
              contactName: 'Ada Obi',
              contactPhone: '+2348031234567',
              contactEmail: 'ada@example.com',
            },
            packagesId: [p],
            type: 'DROP_OFF',
            courierSelection: 'ANYONE',
          },
        }),
      ),
    );
    expect(created.map((c) => c.status)).toEqual(Array(50).fill(201));
    const ids = new Set(created.map((c) => c.body.data.deliveryId as string));
    // Every courier accepts whatever they are offered, all at once, until each holds one.
    const held = new Map<string, string>();
    await eventually(
      async () => {
        await Promise.all(
          couriers.map(async (c) => {
            if (held.has(c.id)) return;
            const offers = await asCourier(c, 'GET', '/courier/offers');
            for (const offer of offers.body.data as { id: string; deliveryId: string }[]) {
              const ok = await asCourier(c, 'POST', `/courier/offers/${offer.id}/accept`);
              if (ok.status === 200) held.set(c.id, offer.deliveryId);
            }
          }),
        );
        expect(held.size).toBe(20);
      },
      { timeout: 60_000, interval: 300 },
    );
    // Twenty deliveries, one courier each, and no courier twice.
    expect(new Set(held.values()).size).toBe(20);
    for (const deliveryId of held.values()) expect(ids.has(deliveryId)).toBe(true);
    // A hold is the delivery's once its offer was accepted (search-store.ts `holding`).
    const holds = await db.collection('courier_holds').find().toArray();
    const outcomes = db.collection<{ _id: string; outcome: string }>('offer_outcomes');
    const accepted = await Promise.all(
      holds.map(async (h) => (await outcomes.findOne({ _id: h.offerId }))?.outcome === 'ACCEPTED'),
    );
    const ours = holds.filter((h, i) => ids.has(h.deliveryId) && accepted[i]);
    expect(ours).toHaveLength(20);
    expect(new Set(ours.map((h) => String(h._id))).size).toBe(20);
    const statuses = await Promise.all(
      [...ids].map(async (id) => (await getDelivery(base(), merchant, id)).body.data.status),
    );
    expect(statuses.filter((s) => s === 'COURIER_ASSIGNED')).toHaveLength(20);
    // The others still search, or ended for want of a courier: nothing else.
    expect(
      statuses.filter((s) => s === 'REQUEST_CREATED' || s === 'NO_COURIER_FOUND'),
    ).toHaveLength(30);
  }, 120_000);
});

describe('proof codes', () => {
  it('lock after 5 wrong codes, exactly, under concurrency; a new code from the merchant works', async () => {
    const courier = await courierAt({ lat: ORIGIN.lat - 0.002, lon: ORIGIN.lon + 0.001 });
    const { merchant, deliveryId } = await acceptedBy(courier);
    const step = (name: string, json?: unknown) =>
      asCourier(courier, 'POST', `/courier/deliveries/${deliveryId}/${name}`, json);
    expect((await step('arrived-at-pickup')).status).toBe(200);
    const wrong = await Promise.all(
      Array.from({ length: 10 }, () => step('collected', { code: '999999' })),
    );
    // Five compared, whatever the order: each wrong one says the tries left as it reads them,
    // the others' taken at once included, and none left reads the proof locked (409), as it is.
    expect(wrong.filter((r) => r.status === 422).length).toBeLessThanOrEqual(4);
    expect(wrong.filter((r) => r.status === 409).length).toBeGreaterThanOrEqual(6);
    expect(wrong.every((r) => r.status === 422 || r.status === 409)).toBe(true);
    const proofId = (await getDelivery(base(), merchant, deliveryId)).body.data.proofs.find(
      (p: { type: string }) => p.type === 'COLLECTION',
    ).id;
    const orders = await openServiceDatabase(stack.iso, 'order');
    try {
      const tries = await orders
        .collection('proof_attempts')
        .countDocuments({ _id: { $regex: `^${proofId}:` } as never });
      expect(tries).toBe(5);
    } finally {
      await orders.close();
    }
    // Locked: even the right code is refused now.
    const code = await codeSent(deliveryId, 'COLLECTION_CODE');
    expectErrorEnvelope(await step('collected', { code }), 409, /locked/);

    const issued = await issueCode(merchant, deliveryId, proofId);
    expect(issued.status).toBe(201);
    expect(issued.body.data.code).toBeNull();
    const fresh = await codeSent(deliveryId, 'COLLECTION_CODE');
    expect(fresh).toMatch(/^\d{6}$/);
    // The old code no longer works (unless the draw repeated it: one chance in a million).
    if (fresh !== code) expectErrorEnvelope(await step('collected', { code }), 422, /4 tries left/);
    expect((await step('collected', { code: fresh })).status).toBe(200);
    // Another user cannot issue codes on it.
    const other = await createUserWithKey(base());
    expectErrorEnvelope(await issueCode(other, deliveryId, proofId), 404);
  });
});

describe('packages coming back', () => {
  /** A delivery carried to the drop-off, then given up there by its courier. */
  async function broughtBack(fields: Record<string, unknown> = {}) {
    const courier = await courierAt({ lat: ORIGIN.lat - 0.001, lon: ORIGIN.lon - 0.003 });
    const { merchant, packageId, deliveryId } = await paidDelivery({
      courierSelection: 'SPECIFIC',
      courierId: courier.id,
      ...fields,
    });
    const step = await carryToDropoff(courier, deliveryId);
    const failed = await step('failed', { reason: 'Nobody at the door' });
    expect(failed.status).toBe(200);
    expect(failed.body.data.status).toBe('RETURNING');
    const current = await asCourier(courier, 'GET', '/courier/deliveries/current');
    return { courier, merchant, packageId, deliveryId, step, current: current.body.data };
  }

  it('are proven back by the code sent to the sender: none, wrong or old codes refused, the merchant may issue another', async () => {
    const { merchant, packageId, deliveryId, step, current } = await broughtBack();
    expect(current).toMatchObject({ status: 'RETURNING', returnCodeRequired: true });
    const proofOf = async () =>
      (await getDelivery(base(), merchant, deliveryId)).body.data.proofs.find(
        (p: { type: string }) => p.type === 'RETURN',
      );
    expect(await proofOf()).toMatchObject({
      type: 'RETURN',
      code: null,
      isActive: true,
      scannedAt: null,
    });
    // Sent to the sender, who was sent the collection code, by SMS and e-mail.
    const messages = await notificationsOf(base(), deliveryId);
    const to = (purpose: string) =>
      messages
        .filter((m) => m.purpose === purpose)
        .map((m) => `${m.channel} ${m.recipient}`)
        .sort();
    expect(to('RETURN_CODE')).toHaveLength(2);
    expect(to('RETURN_CODE')).toEqual(to('COLLECTION_CODE'));
    const sent = messages.filter((m) => m.purpose === 'RETURN_CODE');
    expect(sent[0].text).toMatch(/is coming back to you: your return code is \d{6}/);
    const code = await codeSent(deliveryId, 'RETURN_CODE');

    expectErrorEnvelope(await step('returned'), 400, /return code/);
    const wrong = code === '000000' ? '000001' : '000000';
    expectErrorEnvelope(
      await step('returned', { code: wrong }),
      422,
      'Wrong return code; 4 tries left before it locks',
    );
    // The sender lost the message: the merchant has another sent, and the first stops working.
    const proofId = (await proofOf()).id;
    const issued = await issueCode(merchant, deliveryId, proofId);
    expect(issued.status).toBe(201);
    const fresh = await codeSent(deliveryId, 'RETURN_CODE');
    const texts = (await notificationsOf(base(), deliveryId)).map((m) => m.text ?? '');
    expect(texts.filter((t) => /your new return code is/.test(t))).toHaveLength(2);
    if (fresh !== code) expectErrorEnvelope(await step('returned', { code }), 422);
    const returned = await step('returned', { code: fresh });
    expect(returned.status).toBe(200);
    expect(returned.body.data.status).toBe('RETURNED');
    expect(await proofOf()).toMatchObject({ code: fresh, scannedAt: expect.any(String) });
    // Proven back: the fee is kept, the packages are free again.
    expect((await entriesOf(base(), merchant)).filter((e) => e.type === 'REFUND')).toEqual([]);
    await eventually(async () => expect(await freePackages(base(), merchant)).toContain(packageId));
    // Given, the code can no longer be reissued.
    const late = await issueCode(merchant, deliveryId, proofId);
    expectErrorEnvelope(late, 409, /can no longer be issued: the delivery is RETURNED/);
  });

  it('ask no code of a delivery that takes none from the sender, and an operator records a return without one', async () => {
    const untaken = await broughtBack({ requireCollectionProofCode: false });
    expect(untaken.current).toMatchObject({ returnCodeRequired: false });
    const { proofs } = (await getDelivery(base(), untaken.merchant, untaken.deliveryId)).body.data;
    expect(proofs.filter((p: { type: string }) => p.type === 'RETURN')).toEqual([]);
    expect((await untaken.step('returned')).status).toBe(200);

    // Paid on delivery, the return is proven by the sender's code all the same: no code proved
    // the drop-off, and a courier who took the cash and left the packages could say otherwise.
    const cashBack = await broughtBack({ requireCollectionProofCode: false, payOnDelivery: true });
    expect(cashBack.current).toMatchObject({ status: 'RETURNING', returnCodeRequired: true });
    expectErrorEnvelope(await cashBack.step('returned'), 400, /return code/);
    const returnCode = await codeSent(cashBack.deliveryId, 'RETURN_CODE');
    expect((await cashBack.step('returned', { code: returnCode })).status).toBe(200);

    // The courier cannot report it: an operator who has checked with the sender records it.
    const { deliveryId, step } = await broughtBack();
    expectErrorEnvelope(await step('returned'), 400);
    const returned = await admin('POST', `/admin/deliveries/${deliveryId}/returned`);
    expect(returned.status).toBe(200);
    expect(returned.body.data.status).toBe('RETURNED');
  });
});

/**
 * The courier takes the offered delivery and carries it to the drop-off (the sender's code
 * given at collection): each step 200. Answers the courier's step call for what follows.
 */
async function carryToDropoff(
  courier: Courier,
  deliveryId: string,
  { onTheWayToPickup }: { onTheWayToPickup?: () => Promise<void> } = {},
) {
  const offer = await offerOf(courier);
  await asCourier(courier, 'POST', `/courier/offers/${offer.id}/accept`);
  await onTheWayToPickup?.();
  const step = (name: string, json?: unknown) =>
    asCourier(courier, 'POST', `/courier/deliveries/${deliveryId}/${name}`, json);
  expect((await step('arrived-at-pickup')).status).toBe(200);
  const code = await codeSent(deliveryId, 'COLLECTION_CODE');
  expect((await step('collected', { code })).status).toBe(200);
  expect((await step('in-transit')).status).toBe(200);
  expect((await step('arrived-at-dropoff')).status).toBe(200);
  return step;
}

describe('an operator, for a courier who cannot report', () => {
  it('fails a delivery past collection and records it returned: the fee kept, the packages and the courier free', async () => {
    const courier = await courierAt({ lat: ORIGIN.lat - 0.003, lon: ORIGIN.lon + 0.003 });
    const { merchant, packageId, deliveryId } = await paidDelivery({
      courierSelection: 'SPECIFIC',
      courierId: courier.id,
    });
    // The courier reaches the drop-off, then is heard of no more.
    await carryToDropoff(courier, deliveryId);
    const retire = () => admin('PATCH', `/admin/couriers/${courier.id}`, { active: false });
    expectErrorEnvelope(await retire(), 409);
    expectErrorEnvelope(await cancelDelivery(base(), merchant, deliveryId), 400);
    const seen = await admin('GET', `/admin/deliveries/${deliveryId}`);
    expect(seen.status).toBe(200);
    expect(seen.body.data).toMatchObject({
      id: deliveryId,
      userId: merchant.userId,
      status: 'ARRIVED_AT_DROPOFF',
      courier: { name: expect.any(String) },
    });

    const fail = (json: unknown) => admin('POST', `/admin/deliveries/${deliveryId}/fail`, json);
    const reason = 'Courier unreachable since noon';
    expectErrorEnvelope(await fail({ expectedStatus: 'ARRIVED_AT_DROPOFF' }), 400);
    expectErrorEnvelope(await fail({ reason: '', expectedStatus: 'ARRIVED_AT_DROPOFF' }), 400);
    expectErrorEnvelope(await fail({ reason }), 400);
    // Decided on a status the delivery has left (the courier moved it on): refused, not redirected.
    expectErrorEnvelope(
      await fail({ reason, expectedStatus: 'ARRIVED_AT_PICKUP' }),
      409,
      'This delivery is ARRIVED_AT_DROPOFF, no longer ARRIVED_AT_PICKUP: read it again and decide on what it is now',
    );
    const failed = await fail({ reason, expectedStatus: 'ARRIVED_AT_DROPOFF' });
    expect(failed.status).toBe(200);
    expect(failed.body.data.status).toBe('RETURNING');
    // Once: a repeat is refused, naming where the first one left it.
    expectErrorEnvelope(
      await fail({ reason: 'again', expectedStatus: 'RETURNING' }),
      409,
      /RETURNING/,
    );
    // The merchant reads why, and that an operator recorded it.
    const mine = await getDelivery(base(), merchant, deliveryId);
    expect(mine.body.data).toMatchObject({
      status: 'RETURNING',
      failure: { reason: operatorsReason(reason), at: expect.any(String) },
    });

    const returned = await admin('POST', `/admin/deliveries/${deliveryId}/returned`);
    expect(returned.status).toBe(200);
    expect(returned.body.data.status).toBe('RETURNED');
    expectErrorEnvelope(await admin('POST', `/admin/deliveries/${deliveryId}/returned`), 409);
    // The trip was made: the fee is kept, nothing refunded; the packages are free again, and
    // the courier, no longer holding it, may be retired.
    const entries = await entriesOf(base(), merchant);
    expect(entries.filter((e) => e.type === 'REFUND')).toEqual([]);
    await eventually(async () => expect(await freePackages(base(), merchant)).toContain(packageId));
    await eventually(async () => expect((await retire()).status).toBe(200));
    expect(statusEvents.filter((e) => e.deliveryId === deliveryId).map((e) => e.status)).toEqual(
      expect.arrayContaining(['RETURNING', 'RETURNED']),
    );
    expect(await ledgerIsClean(base())).toBe(true);
  });

  it('shows a linked recipient where the courier is on the way to them: its area before the pickup, not once it goes back', async () => {
    const at = { lat: ORIGIN.lat - 0.002, lon: ORIGIN.lon + 0.004 };
    const courier = await courierAt(at);
    const recipient = await createUserWithKey(base());
    const email = (await admin('GET', `/admin/users/${recipient.userId}`)).body.data.email;
    const { merchant, deliveryId } = await paidDelivery({
      courierSelection: 'SPECIFIC',
      courierId: courier.id,
      destination: { ...DESTINATION, contactEmail: email },
      link3rdPartyByContactInfo: true,
    });
    const courierOf = async (who: Party) =>
      (await getDelivery(base(), who, deliveryId)).body.data.courier;
    await carryToDropoff(courier, deliveryId, {
      // Not yet carrying the recipient's parcel: its 0.01° cell, as the tracking page shows it;
      // the creator sees the point. Nor is the pickup's contact e-mail (the creator's login)
      // the recipient's to read.
      onTheWayToPickup: async () => {
        expect((await courierOf(recipient)).currentLocation).toMatchObject(onAreaGrid(at));
        expect(onAreaGrid(at)).not.toEqual(at);
        expect((await courierOf(merchant)).currentLocation).toMatchObject(at);
        const read = await getDelivery(base(), recipient, deliveryId);
        expect(read.body.data.origin).not.toHaveProperty('contactEmail');
        const own = await getDelivery(base(), merchant, deliveryId);
        expect(own.body.data.origin.contactEmail).toEqual(expect.any(String));
      },
    });
    const located = { currentLocation: expect.objectContaining({ lat: expect.any(Number) }) };
    // Carrying it: where it is.
    expect((await courierOf(recipient)).currentLocation).toMatchObject(at);
    expect(await courierOf(recipient)).toMatchObject(located);

    const reason = 'Nobody at the door';
    const failed = await admin('POST', `/admin/deliveries/${deliveryId}/fail`, {
      reason,
      expectedStatus: 'ARRIVED_AT_DROPOFF',
    });
    expect(failed.body.data.status).toBe('RETURNING');
    // The creator still follows it back; the recipient sees who has it, not where.
    expect(await courierOf(merchant)).toMatchObject(located);
    expect(await courierOf(recipient)).toMatchObject({
      name: 'Tunde Bakare',
      currentLocation: null,
      eta: null,
    });
    expect((await admin('POST', `/admin/deliveries/${deliveryId}/returned`)).status).toBe(200);
  });

  it('ends a delivery failed before collection with everything given back, and knows only real deliveries', async () => {
    const courier = await courierAt({ lat: ORIGIN.lat - 0.004, lon: ORIGIN.lon + 0.002 });
    const { merchant, packageId, deliveryId } = await paidDelivery({
      courierSelection: 'SPECIFIC',
      courierId: courier.id,
    });
    const before = await balanceOf(base(), merchant);
    const offer = await offerOf(courier);
    await asCourier(courier, 'POST', `/courier/offers/${offer.id}/accept`);
    const failed = await admin('POST', `/admin/deliveries/${deliveryId}/fail`, {
      reason: 'Courier’s bike broke down',
      expectedStatus: 'COURIER_ASSIGNED',
    });
    expect(failed.status).toBe(200);
    expect(failed.body.data.status).toBe('FAILED');
    await eventually(async () => {
      const refunds = (await entriesOf(base(), merchant)).filter((e) => e.type === 'REFUND');
      expect(refunds).toHaveLength(1);
    });
    expect(Number(await balanceOf(base(), merchant))).toBeGreaterThan(Number(before));
    await eventually(async () => expect(await freePackages(base(), merchant)).toContain(packageId));
    await eventually(async () => {
      const free = await asCourier(courier, 'GET', '/courier/deliveries/current');
      expect(free.body.data).toBeNull();
    });

    const unknown = randomUUID();
    expectErrorEnvelope(await admin('GET', `/admin/deliveries/${unknown}`), 404);
    expectErrorEnvelope(
      await admin('POST', `/admin/deliveries/${unknown}/fail`, {
        reason: 'x',
        expectedStatus: 'IN_TRANSIT',
      }),
      404,
    );
    expectErrorEnvelope(await admin('GET', '/admin/deliveries/not-an-id'), 400);
    // Operators only.
    const asMerchant = await request(base(), 'POST', `/admin/deliveries/${deliveryId}/returned`, {
      headers: { 'api-key': merchant.key },
    });
    expectErrorEnvelope(asMerchant, 401);
  });
});

describe('pay-on-delivery and cancel', () => {
  it('remits what was collected to the merchant’s wallet once, on delivery', async () => {
    const courier = await courierAt({ lat: ORIGIN.lat + 0.002, lon: ORIGIN.lon - 0.002 });
    const { merchant, deliveryId } = await paidDelivery({
      courierSelection: 'SPECIFIC',
      courierId: courier.id,
      payOnDelivery: true,
    });
    const before = Number(await balanceOf(base(), merchant));
    const step = await carryToDropoff(courier, deliveryId);
    // Pay-on-delivery has no delivery code: the courier collects the money instead.
    const delivered = await Promise.all([step('delivered'), step('delivered')]);
    expect(delivered.map((d) => d.status).sort()).toEqual([200, 409]);
    await eventually(async () => {
      const credits = (await entriesOf(base(), merchant)).filter((e) =>
        e.reference.startsWith('pod:'),
      );
      expect(credits).toHaveLength(1);
      expect(credits[0].amount).toBe('5000.00');
    });
    expect(Number(await balanceOf(base(), merchant))).toBe(before + 5000);
    // The cash is in the courier's hands: they owe exactly what the merchant was credited.
    const cash = await cashOf(courier);
    expect(cash).toMatchObject({ courierId: courier.id, balance: '-5000.00', owed: '5000.00' });
    expect(cash.entries).toEqual([
      expect.objectContaining({
        type: 'DEBIT',
        amount: '-5000.00',
        reference: `collected:${deliveryId}`,
      }),
    ]);
    expect(await ledgerIsClean(base())).toBe(true);
  });

  it('a cancel racing the collection: one wins, ten times; refunded once when it is the cancel, never when it is the collection', async () => {
    // Which of them wins is the race's (both do, over ten rounds); each round has one winner.
    const couriers: Courier[] = [];
    for (let round = 0; round < 10; round++) {
      const courier = await courierAt({
        lat: ORIGIN.lat + 0.005 + round * 0.0005,
        lon: ORIGIN.lon + 0.006,
      });
      couriers.push(courier);
      const { merchant, packageId, deliveryId } = await paidDelivery({
        courierSelection: 'SPECIFIC',
        courierId: courier.id,
      });
      const offer = await offerOf(courier);
      await asCourier(courier, 'POST', `/courier/offers/${offer.id}/accept`);
      const path = `/courier/deliveries/${deliveryId}`;
      expect((await asCourier(courier, 'POST', `${path}/arrived-at-pickup`)).status).toBe(200);
      const code = await codeSent(deliveryId, 'COLLECTION_CODE');
      const debited = Number(await balanceOf(base(), merchant));
      const [cancelled, collected] = await Promise.all([
        cancelDelivery(base(), merchant, deliveryId),
        asCourier(courier, 'POST', `${path}/collected`, { code }),
      ]);
      const won = cancelled.status === 201 ? 'CANCELLED' : 'COLLECTED';
      // Exactly one of them, the other refused with the status the winner left.
      expect([cancelled.status, collected.status]).toEqual(
        won === 'CANCELLED' ? [201, 409] : [400, 200],
      );
      const loser = won === 'CANCELLED' ? collected : cancelled;
      expectErrorEnvelope(loser, loser.status);
      expect((await getDelivery(base(), merchant, deliveryId)).body.data.status).toBe(won);
      const refundsOf = async () =>
        (await entriesOf(base(), merchant)).filter((e) => e.type === 'REFUND');
      if (won === 'CANCELLED') {
        await eventually(async () => expect(await refundsOf()).toHaveLength(1));
        await eventually(async () =>
          expect(await freePackages(base(), merchant)).toContain(packageId),
        );
        expect(Number(await balanceOf(base(), merchant))).toBe(100_000);
      } else {
        // Nothing given back: no refund, the packages still held.
        await eventually(async () => {
          const current = await asCourier(courier, 'GET', '/courier/deliveries/current');
          expect(current.body.data).toMatchObject({ id: deliveryId, status: 'COLLECTED' });
        });
        expect(await refundsOf()).toEqual([]);
        expect(Number(await balanceOf(base(), merchant))).toBe(debited);
        expect(await freePackages(base(), merchant)).not.toContain(packageId);
      }
    }
    // Nobody near ORIGIN for the tests after this one.
    for (const courier of couriers) await report(courier, FAR_FROM_ORIGIN);
    expect(await ledgerIsClean(base())).toBe(true);
  });

  it('remits to the courier’s wallet when the merchant says COURIER_WALLET', async () => {
    const courier = await courierAt({ lat: ORIGIN.lat + 0.004, lon: ORIGIN.lon - 0.003 });
    const { deliveryId } = await paidDelivery({
      courierSelection: 'SPECIFIC',
      courierId: courier.id,
      payOnDelivery: true,
      podRemitTo: 'COURIER_WALLET',
      podCourierProfileId: courier.id,
    });
    const step = await carryToDropoff(courier, deliveryId);
    expect((await step('delivered')).status).toBe(200);
    await eventually(async () => {
      const wallet = await call(stack.client, 'payment.balance', { userId: courier.id });
      expect(wallet.balanceKobo).toBe(500_000);
    });
    // Owed the credit and owing the cash: both are on the ledger, apart, and both are shown,
    // to operators and to the courier.
    const credit = expect.objectContaining({
      type: 'CREDIT',
      amount: '5000.00',
      reference: `pod:${deliveryId}`,
    });
    const wallet = await admin('GET', `/admin/couriers/${courier.id}/wallet`);
    expect(wallet.status).toBe(200);
    expect(wallet.body.data).toMatchObject({
      courierId: courier.id,
      balance: '5000.00',
      entries: [credit],
    });
    const own = await asCourier(courier, 'GET', '/courier/wallet');
    expect(own.body.data).toEqual(wallet.body.data);
    expect(await cashOf(courier)).toMatchObject({ balance: '-5000.00', owed: '5000.00' });
    const ownCash = await asCourier(courier, 'GET', '/courier/cash?limit=1');
    expect(ownCash.body.data).toMatchObject({ courierId: courier.id, owed: '5000.00' });
    expect(ownCash.body.data.entries).toHaveLength(1);
    expect(await ledgerIsClean(base())).toBe(true);
    // Without a courier's token, nobody's.
    expectErrorEnvelope(await request(base(), 'GET', '/courier/wallet'), 401);
    expectErrorEnvelope(await admin('GET', `/admin/couriers/${randomUUID()}/wallet`), 404);
  });

  it('settled again by the sweep, or collected ten times at once, posts the debt and the credit once each', async () => {
    const courier = await courierAt({ lat: ORIGIN.lat + 0.001, lon: ORIGIN.lon + 0.004 });
    const { merchant, deliveryId } = await paidDelivery({
      courierSelection: 'SPECIFIC',
      courierId: courier.id,
      payOnDelivery: true,
    });
    const step = await carryToDropoff(courier, deliveryId);
    expect((await step('delivered')).status).toBe(200);
    await eventually(async () => expect((await cashOf(courier)).owed).toBe('5000.00'));
    // The DELIVERED transition's effects are done again, as by a sweep that read it unsettled.
    const orders = await openServiceDatabase(stack.iso, 'order');
    try {
      const transitions = orders.collection<{ _id: string }>('delivery_transitions');
      const delivered = { deliveryId, 'lifecycle.status': 'DELIVERED' };
      expect(
        (await transitions.updateOne(delivered, { $set: { unsettled: true } })).modifiedCount,
      ).toBe(1);
      // Marked as its writer marks it (transition_work): the sweep reads the marks.
      const { _id } = (await transitions.findOne(delivered)) as { _id: string };
      await orders
        .collection<{ _id: string; at: Date }>('transition_work')
        .insertOne({ _id, at: new Date(0) });
      await eventually(
        async () => expect(await transitions.findOne({ ...delivered, unsettled: true })).toBeNull(),
        { timeout: 40_000 },
      );
    } finally {
      await orders.close();
    }
    const collect = () =>
      call(stack.client, 'payment.collectOnDelivery', {
        deliveryId,
        courierId: courier.id,
        remitToUserId: merchant.userId,
        amountKobo: 500_000,
      });
    const answers = await Promise.all(Array.from({ length: 10 }, collect));
    expect(answers.every((a) => a.collected.replayed && a.credited.replayed)).toBe(true);
    expect((await cashOf(courier)).entries).toHaveLength(1);
    const credits = (await entriesOf(base(), merchant)).filter((e) =>
      e.reference.startsWith('pod:'),
    );
    expect(credits).toHaveLength(1);
    expect(await ledgerIsClean(base())).toBe(true);
    // The sweep waits for a transition to be 15 s old before it settles it again.
  }, 120_000);

  it('refuses up front a pay-on-delivery only the merchant’s couriers over the cash limit may carry, taking nothing', async () => {
    const FAR = { lat: ORIGIN.lat + 0.4, lon: ORIGIN.lon - 0.4 };
    /** A courier who owes `naira` of cash collected on delivery. */
    const owing = async (naira: number) => {
      const courier = await courierAt(FAR);
      await call(stack.client, 'payment.collectOnDelivery', {
        deliveryId: randomUUID(),
        courierId: courier.id,
        remitToUserId: randomUUID(),
        amountKobo: naira * 100,
      });
      return courier;
    };
    // The limit is ₦200,000 and each package is worth ₦5,000.
    const [over, nearlyAtIt, under, stranger] = await Promise.all(
      [196_000, 199_999, 195_000, 196_000].map(owing),
    );
    const merchant: Party = await createUserWithKey(base());
    await credit(base(), merchant, 100_000);
    for (const courier of [over, nearlyAtIt, under]) {
      const added = await admin('PUT', `/admin/users/${merchant.userId}/couriers/${courier.id}`);
      expect(added.status).toBe(204);
    }
    const packageId = await savePackage(base(), merchant);
    const ask = (fields: Record<string, unknown>, headers?: Record<string, string>) =>
      requestDelivery(base(), merchant, [packageId], { payOnDelivery: true, ...fields }, headers);
    const nothingTaken = async () => {
      expect(await entriesOf(base(), merchant)).toHaveLength(1);
      expect(await freePackages(base(), merchant)).toEqual([packageId]);
    };
    const key = { 'idempotency-key': randomUUID() };
    const toOver = { courierSelection: 'SPECIFIC', courierId: over.id };

    const refusal =
      'This courier cannot collect NGN 5000.00 on delivery now: it would take the cash they hold past the cash limit until they hand it in. Choose another courier, or courierSelection ANYONE';
    expectErrorEnvelope(await ask(toOver, key), 422, refusal);
    await nothingTaken();

    // The merchant's whole list, while `under` is retired: every active one is over it.
    const retire = (active: boolean) => admin('PATCH', `/admin/couriers/${under.id}`, { active });
    expect((await retire(false)).status).toBe(200);
    expectErrorEnvelope(
      await ask({ courierSelection: 'MERCHANT_SPECIAL_COURIERS' }),
      422,
      /^None of your couriers can collect NGN 5000\.00 on delivery now/,
    );
    await nothingTaken();
    expect((await retire(true)).status).toBe(200);

    // Taken: without collecting; by someone else's courier (matching holds the limit at its
    // offers, and the answer tells nobody about a stranger's cash); on a date ahead (the cash
    // may be handed in by then); by a courier within the limit.
    const taken = [
      { courierSelection: 'SPECIFIC', courierId: over.id, payOnDelivery: false },
      { courierSelection: 'SPECIFIC', courierId: stranger.id },
      {
        ...toOver,
        urgencyType: 'SCHEDULED',
        deliveryDate: new Date(Date.now() + 3 * 86_400_000).toISOString().slice(0, 10),
        deliverySlot: '09:00 - 12:00',
      },
      { courierSelection: 'SPECIFIC', courierId: under.id },
      { courierSelection: 'MERCHANT_SPECIAL_COURIERS' },
    ];
    for (const fields of taken) {
      const packages = [await savePackage(base(), merchant)];
      const created = await requestDelivery(base(), merchant, packages, {
        payOnDelivery: true,
        ...fields,
      });
      expect([JSON.stringify(fields), created.status]).toEqual([JSON.stringify(fields), 201]);
    }

    // Once the courier hands cash in, the refused request is taken, under the same key too.
    const handedIn = await admin('POST', `/admin/couriers/${over.id}/cash-remittances`, {
      amount: 10_000,
      reference: randomUUID(),
    });
    expect(handedIn.status).toBe(201);
    expect((await ask(toOver, key)).status).toBe(201);
  });

  it('refuses up front a delivery only couriers whose vehicles cannot take its load may carry, taking nothing', async () => {
    const FAR = { lat: ORIGIN.lat + 0.4, lon: ORIGIN.lon - 0.4 };
    const [bike, car] = await Promise.all([courierAt(FAR), courierAt(FAR, 'car')]);
    const merchant: Party = await createUserWithKey(base());
    await credit(base(), merchant, 100_000);
    expect((await admin('PUT', `/admin/users/${merchant.userId}/couriers/${bike.id}`)).status).toBe(
      204,
    );
    // Two large items: 30 kg, over a bike's 20.
    const heavy = await savePackage(base(), merchant, { size: 'LARGE', quantity: 2 });
    const ask = (packageId: string, fields: Record<string, unknown>) =>
      requestDelivery(base(), merchant, [packageId], fields, { 'idempotency-key': randomUUID() });
    expectErrorEnvelope(
      await ask(heavy, { courierSelection: 'SPECIFIC', courierId: bike.id }),
      422,
      "This courier's vehicle cannot carry 30.00000 kg: the delivery would wait for them and end with no courier found. Choose another courier, or courierSelection ANYONE, with a new Idempotency-Key",
    );
    expectErrorEnvelope(
      await ask(heavy, { courierSelection: 'MERCHANT_SPECIAL_COURIERS' }),
      422,
      /^None of your couriers' vehicles can carry 30\.00000 kg/,
    );
    // Nothing paid, the package free again.
    expect(await entriesOf(base(), merchant)).toHaveLength(1);
    expect(await freePackages(base(), merchant)).toEqual([heavy]);

    // Taken: on a date ahead (the couriers are read then); by a car; a light load by the bike.
    const scheduled = await ask(heavy, {
      courierSelection: 'SPECIFIC',
      courierId: bike.id,
      urgencyType: 'SCHEDULED',
      deliveryDate: new Date(Date.now() + 3 * 86_400_000).toISOString().slice(0, 10),
      deliverySlot: '09:00 - 12:00',
    });
    expect(scheduled.status).toBe(201);
    const scheduledId = scheduled.body.data.delivery.id as string;
    expect((await cancelDelivery(base(), merchant, scheduledId)).status).toBe(201);
    await eventually(async () => expect(await freePackages(base(), merchant)).toEqual([heavy]));
    expect((await ask(heavy, { courierSelection: 'SPECIFIC', courierId: car.id })).status).toBe(
      201,
    );
    const light = await savePackage(base(), merchant);
    expect((await ask(light, { courierSelection: 'SPECIFIC', courierId: bike.id })).status).toBe(
      201,
    );
  });

  /** A courier at `at` who accepted a SPECIFIC delivery then cancelled, free again: both. */
  async function cancelledUnderCourier(at: { lat: number; lon: number }) {
    const courier = await courierAt(at);
    const first = await paidDelivery({ courierSelection: 'SPECIFIC', courierId: courier.id });
    const offer = await offerOf(courier);
    await asCourier(courier, 'POST', `/courier/offers/${offer.id}/accept`);
    expect((await cancelDelivery(base(), first.merchant, first.deliveryId)).status).toBe(201);
    await eventually(async () => {
      const free = await asCourier(courier, 'GET', '/courier/deliveries/current');
      expect(free.body.data).toBeNull();
    });
    return { courier, first, offer };
  }

  /** The stack's courier index, its clock `sinceMs` back. */
  async function withPositions(sinceMs: number, use: (p: CourierPositions) => Promise<unknown>) {
    const redis = new Redis(process.env.REDIS_URL as string);
    try {
      const positions = new CourierPositions(redis, {
        keyPrefix: `${stack.iso.namespace}:couriers:`,
        onlineMs: 60_000,
        now: () => Date.now() - sinceMs,
      });
      await use(positions);
    } finally {
      redis.disconnect();
    }
  }

  it('a delivery cancelled after assignment frees its courier for the next one', async () => {
    const { courier } = await cancelledUnderCourier({
      lat: ORIGIN.lat - 0.003,
      lon: ORIGIN.lon - 0.001,
    });
    const second = await paidDelivery({ courierSelection: 'SPECIFIC', courierId: courier.id });
    expect((await offerOf(courier)).deliveryId).toBe(second.deliveryId);
  });

  it('answers an accept sent again after the cancel 409, and leaves the courier’s next offer alone', async () => {
    const { courier, offer } = await cancelledUnderCourier({
      lat: ORIGIN.lat - 0.004,
      lon: ORIGIN.lon + 0.001,
    });
    const second = await paidDelivery({ courierSelection: 'SPECIFIC', courierId: courier.id });
    const next = await offerOf(courier);
    expect(next.deliveryId).toBe(second.deliveryId);
    // The app retries its accept of the cancelled delivery's offer (its answer was lost).
    const again = await asCourier(courier, 'POST', `/courier/offers/${offer.id}/accept`);
    expectErrorEnvelope(again, 409, 'The delivery no longer needs a courier: it is CANCELLED');
    const accepted = await asCourier(courier, 'POST', `/courier/offers/${next.id}/accept`);
    expect(accepted.status).toBe(200);
  });

  it('frees a courier whose release was cut short before they were marked free, when the end is asked again', async () => {
    const { courier, first } = await cancelledUnderCourier({
      lat: ORIGIN.lat - 0.006,
      lon: ORIGIN.lon - 0.002,
    });
    // The hold was given back, and the mark that they are free lost (Redis away a moment).
    await withPositions(0, (positions) => positions.setBusy(courier.id, true));
    // Order asks for the end again (its call failed with that write).
    await call(stack.client, 'courier-matching.endMatching', { deliveryId: first.deliveryId });
    const second = await paidDelivery({ courierSelection: 'SPECIFIC', courierId: courier.id });
    expect((await offerOf(courier)).deliveryId).toBe(second.deliveryId);
  });

  it('shows a courier held by a delivery that ended (its release not through yet) none of it', async () => {
    const { courier, first, offer } = await cancelledUnderCourier({
      lat: ORIGIN.lat - 0.007,
      lon: ORIGIN.lon + 0.004,
    });
    // The hold as it stood before the end let it go (matching away when the end was asked).
    await db.collection('courier_holds').insertOne({
      _id: courier.id as never,
      deliveryId: first.deliveryId,
      offerId: offer.id,
      kind: 'OFFER',
      at: new Date(),
    });
    try {
      const held = await call(stack.client, 'courier-matching.heldDelivery', {
        courierId: courier.id,
      });
      expect(held.deliveryId).toBe(first.deliveryId);
      const current = await asCourier(courier, 'GET', '/courier/deliveries/current');
      expect(current.status).toBe(200);
      expect(current.body.data).toBeNull();
    } finally {
      await db.collection('courier_holds').deleteOne({ _id: courier.id as never });
    }
  });

  it('marks a courier on a delivery whose mark was lost, at their first report after Redis lost it and a while after a failed mark', async () => {
    const at = { lat: ORIGIN.lat - 0.011, lon: ORIGIN.lon + 0.006 };
    const courier = await courierAt(at);
    const { merchant, deliveryId, offer } = await acceptedBy(courier);
    const redis = new Redis(process.env.REDIS_URL as string);
    const key = `${stack.iso.namespace}:couriers:pos:${courier.id}`;
    const mark = async () => {
      const [busy, busyFor] = await redis.hmget(key, 'busy', 'busyFor');
      return { busy, busyFor };
    };
    try {
      expect(await mark()).toEqual({ busy: '1', busyFor: offer.id });
      // Redis restarted empty: the courier's first report finds no mark, and their hold.
      await withPositions(0, (positions) => positions.forget(courier.id));
      expect((await report(courier, at)).status).toBe(200);
      expect(await mark()).toEqual({ busy: '1', busyFor: offer.id });

      // The mark lost again (a failed call), their holds read a moment ago: not read again yet.
      await withPositions(0, (positions) => positions.setBusy(courier.id, false, offer.id));
      expect((await report(courier, at)).status).toBe(200);
      expect(await mark()).toEqual({ busy: null, busyFor: null });
      // Once UNMARKED_CHECK_MS has passed since, a report reads them again.
      await redis.hset(key, 'unmarkedChecked', String(Date.now() - UNMARKED_CHECK_MS));
      expect((await report(courier, at)).status).toBe(200);
      expect(await mark()).toEqual({ busy: '1', busyFor: offer.id });
    } finally {
      redis.disconnect();
    }
    expect((await cancelDelivery(base(), merchant, deliveryId)).status).toBe(201);
  });

  it('frees a courier left marked busy for a delivery gone, at a report of theirs a while later', async () => {
    const at = { lat: ORIGIN.lat - 0.009, lon: ORIGIN.lon - 0.003 };
    const { courier, offer } = await cancelledUnderCourier(at);
    // The mark that they are free lost, and no call left to come again: marked a while ago.
    await withPositions(BUSY_CHECK_MS, (positions) =>
      positions.setBusy(courier.id, true, offer.id),
    );
    expect((await report(courier, at)).status).toBe(200);
    const second = await paidDelivery({ courierSelection: 'SPECIFIC', courierId: courier.id });
    expect((await offerOf(courier)).deliveryId).toBe(second.deliveryId);
  });
});

describe('a courier’s cash account', () => {
  const remit = (courier: { id: string }, json: unknown) =>
    admin('POST', `/admin/couriers/${courier.id}/cash-remittances`, json);
  const collect = (courier: { id: string }, amountKobo: number) =>
    call(stack.client, 'payment.collectOnDelivery', {
      deliveryId: randomUUID(),
      courierId: courier.id,
      remitToUserId: randomUUID(),
      amountKobo,
    });
  const FAR_AWAY = { lat: ORIGIN.lat + 0.5, lon: ORIGIN.lon + 0.5 };

  it('records a remittance once per reference, ten at once, and refuses the reference for another amount or courier', async () => {
    const courier = await courierAt(FAR_AWAY);
    await collect(courier, 200_000);
    const json = { amount: 1500.5, reference: 'receipt-1', note: 'Handed in at the Yaba hub' };
    const answers = await Promise.all(Array.from({ length: 10 }, () => remit(courier, json)));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(201));
    expect(new Set(answers.map((a) => JSON.stringify(a.body.data))).size).toBe(1);
    expect(answers[0].body.data).toMatchObject({
      sequence: 2,
      type: 'CREDIT',
      amount: '1500.50',
      balance: '-499.50',
      reference: 'remittance:receipt-1',
      description: 'Handed in at the Yaba hub',
    });
    expectErrorEnvelope(await remit(courier, { ...json, amount: 1500 }), 409, /another posting/);
    const other = await courierAt(FAR_AWAY);
    expectErrorEnvelope(await remit(other, json), 409, /use a new reference/);
    const cash = await cashOf(courier);
    expect(cash).toMatchObject({ balance: '-499.50', owed: '499.50' });
    expect(cash.entries.map((e) => e.sequence)).toEqual([2, 1]);
    expect(await ledgerIsClean(base())).toBe(true);
  });

  it('takes back a remittance recorded too high once per reference, ten at once, saying why to the courier', async () => {
    const courier = await courierAt(FAR_AWAY);
    await collect(courier, 250_000);
    expect(
      (await remit(courier, { amount: 25_000, reference: 'receipt-9' })).body.data.balance,
    ).toBe('22500.00');
    const fix = { amount: 22_500, reference: 'receipt-9-fix', note: 'Receipt 9 was NGN 2,500' };
    const correct = () => admin('POST', `/admin/couriers/${courier.id}/cash-corrections`, fix);
    const answers = await Promise.all(Array.from({ length: 10 }, correct));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(201));
    expect(answers[0].body.data).toMatchObject({
      type: 'DEBIT',
      amount: '-22500.00',
      balance: '0.00',
      reference: 'cash-correction:receipt-9-fix',
      description: 'Receipt 9 was NGN 2,500',
    });
    const own = await asCourier(courier, 'GET', '/courier/cash');
    expect(own.body.data.entries[0]).toMatchObject({ description: 'Receipt 9 was NGN 2,500' });
    expect((await cashOf(courier)).entries).toHaveLength(3);
    const again = (json: unknown) =>
      admin('POST', `/admin/couriers/${courier.id}/cash-corrections`, json);
    expectErrorEnvelope(await again({ ...fix, amount: 1 }), 409);
    expectErrorEnvelope(await again({ amount: 1, reference: 'no-why' }), 400);
    expectErrorEnvelope(
      await admin('POST', `/admin/couriers/${randomUUID()}/cash-corrections`, fix),
      404,
    );
    // Past zero: the courier owes it.
    expect((await again({ ...fix, reference: 'r-2', amount: 100 })).body.data.balance).toBe(
      '-100.00',
    );
    expect(await ledgerIsClean(base())).toBe(true);
  });

  it('takes more than the courier owes, as a credit against what they collect next', async () => {
    const courier = await courierAt(FAR_AWAY);
    expect((await remit(courier, { amount: 300, reference: randomUUID() })).status).toBe(201);
    expect(await cashOf(courier)).toMatchObject({ balance: '300.00', owed: '0.00' });
    await collect(courier, 50_000);
    expect(await cashOf(courier)).toMatchObject({ balance: '-200.00', owed: '200.00' });
    expect(await ledgerIsClean(base())).toBe(true);
  });

  it('pages the entries newest first, by sequence', async () => {
    const courier = await courierAt(FAR_AWAY);
    for (const kobo of [100, 200, 300]) await collect(courier, kobo);
    const first = await cashOf(courier, '?limit=2');
    expect(first.owed).toBe('6.00');
    expect(first.entries.map((e) => [e.sequence, e.amount, e.balance])).toEqual([
      [3, '-3.00', '-6.00'],
      [2, '-2.00', '-3.00'],
    ]);
    const next = await cashOf(courier, '?limit=2&before=2');
    expect(next.entries.map((e) => e.sequence)).toEqual([1]);
  });

  it('answers 404 for a courier the directory does not know, 400 for a bad amount, reference or page', async () => {
    const courier = await courierAt(FAR_AWAY);
    const unknown = randomUUID();
    expectErrorEnvelope(
      await admin('GET', `/admin/couriers/${unknown}/cash`),
      404,
      /Courier not found/,
    );
    expectErrorEnvelope(await remit({ id: unknown }, { amount: 1, reference: 'r-1' }), 404);
    expectErrorEnvelope(await admin('GET', '/admin/couriers/nope/cash'), 400);
    for (const amount of [0, -5, 1.234, '10', 100_000_001]) {
      expectErrorEnvelope(
        await remit(courier, { amount, reference: `bad-${String(amount)}` }),
        400,
      );
    }
    expectErrorEnvelope(await remit(courier, { amount: 10 }), 400);
    expectErrorEnvelope(await remit(courier, { amount: 10, reference: 'a b' }), 400);
    expectErrorEnvelope(await remit(courier, { amount: 10, reference: 'r-2', note: '' }), 400);
    expectErrorEnvelope(await admin('GET', `/admin/couriers/${courier.id}/cash?limit=0`), 400);
    expect((await cashOf(courier)).entries).toEqual([]);
  });
});
