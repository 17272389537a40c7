import { setTimeout as sleep } from 'node:timers/promises';
import type mongoose from 'mongoose';
import {
  balanceOf,
  cancelDelivery,
  credit,
  getDelivery,
  ORIGIN,
  requestDelivery,
  savePackage,
  type Party,
} from '../support/deliveries';
import { acceptOffer, asCourier, courierAt, offerOf, offeredDelivery } from '../support/couriers';
import { eventually } from '../support/eventually';
import { adminHeaders, createUserWithKey, expectErrorEnvelope, request } from '../support/http';
import { useMerchantStack } from '../support/merchant-stack';
import { openServiceDatabase, startNode, type NodeProcess } from '../support/stack';
import { FAST_WEBHOOKS, WebhookReceiver } from '../support/webhook-receiver';

/**
 * Couriers at work, with the webhook service in a process of its own. Operators cannot retire a
 * courier taking a delivery to the door. A courier's position never reaches an endpoint before
 * the change that put the courier on the delivery. The webhook service runs in a process of its own, stopped while the courier
 * accepts: `courier.assigned` then waits for the order sweep (15 s), and positions written
 * meanwhile, once the webhook service is back, must wait too.
 */
const ENV = {
  MATCHING_SWEEP_INTERVAL_MS: '200',
  ORDER_SWEEP_INTERVAL_MS: '500',
  ...FAST_WEBHOOKS,
  COURIER_LOCATION_FLUSH_MS: '300',
};
const stack = useMerchantStack({
  internal: [],
  env: ENV,
  services: 'gateway,account,geo,pricing,package,file,payment,order,courier-matching',
});
const base = () => stack.node.url;
const receiver = new WebhookReceiver();
let webhooks: NodeProcess | undefined;
const startWebhooks = async () => {
  webhooks = await startNode({ services: 'webhook', iso: stack.iso, env: ENV });
};

beforeAll(async () => {
  await receiver.start();
  await startWebhooks();
});
afterAll(async () => {
  await webhooks?.stop();
  await receiver.stop();
});

const typesAt = (path: string) => receiver.at(path).map((r) => r.event.type);

it('sends no position ahead of the courier.assigned its writer could not hand over', async () => {
  const merchant: Party = await createUserWithKey(base());
  await credit(base(), merchant, 100_000);
  // Once the gateway's process has seen the webhook service's.
  await eventually(async () => {
    const registered = await request(base(), 'POST', '/api/webhooks', {
      headers: { 'api-key': merchant.key },
      json: { url: receiver.url('/order'), events: ['courier.assigned', 'courier.location'] },
    });
    expect(registered.status).toBe(201);
  });
  const courier = await courierAt(base(), { lat: ORIGIN.lat + 0.003, lon: ORIGIN.lon + 0.002 });
  const { offer } = await offeredDelivery(base(), merchant, courier);

  await webhooks?.stop();
  webhooks = undefined;
  await acceptOffer(base(), courier, offer);
  await startWebhooks();
  // The webhook service answers the gateway again: order, in the same process, reaches it.
  await eventually(async () => {
    const listed = await request(base(), 'GET', '/api/webhooks', {
      headers: { 'api-key': merchant.key },
    });
    expect(listed.status).toBe(200);
  });

  // Well within the sweep's 15 s: courier.assigned is still waiting.
  const moved = { lat: ORIGIN.lat + 0.001, lon: ORIGIN.lon + 0.001 };
  expect((await asCourier(base(), courier, 'POST', '/courier/location', moved)).status).toBe(200);
  await sleep(2_000);
  expect(typesAt('/order')).not.toContain('courier.location');

  await eventually(() => expect(typesAt('/order')).toContain('courier.assigned'), {
    timeout: 30_000,
    interval: 200,
  });
  const later = { lat: ORIGIN.lat + 0.002, lon: ORIGIN.lon + 0.001 };
  expect((await asCourier(base(), courier, 'POST', '/courier/location', later)).status).toBe(200);
  await eventually(() => expect(typesAt('/order')).toContain('courier.location'), {
    timeout: 10_000,
  });
  const types = typesAt('/order');
  expect(types[0]).toBe('courier.assigned');
  expect(types.filter((t) => t === 'courier.assigned')).toHaveLength(1);
  const located = receiver.at('/order').filter((r) => r.event.type === 'courier.location');
  expect(located.at(-1)?.event.data.courier?.currentLocation).toMatchObject(later);
});

it('refuses to retire a courier taking a delivery to the door (409), and retires them once it is over', async () => {
  const merchant: Party = await createUserWithKey(base());
  await credit(base(), merchant, 100_000);
  const courier = await courierAt(base(), { lat: ORIGIN.lat + 0.001, lon: ORIGIN.lon + 0.001 });
  const { deliveryId, offer } = await offeredDelivery(base(), merchant, courier);
  await acceptOffer(base(), courier, offer);
  const retire = () =>
    request(base(), 'PATCH', `/admin/couriers/${courier.id}`, {
      headers: adminHeaders,
      json: { active: false },
    });
  expectErrorEnvelope(
    await retire(),
    409,
    `Courier ${courier.id} is taking delivery ${deliveryId} to the door; retire them once it has ended (delivered, returned, failed before collection or cancelled); if they cannot report, record it for them with POST /admin/deliveries/${deliveryId}/fail, then /returned`,
  );
  // Still at work: the courier's token works.
  const at = { lat: ORIGIN.lat + 0.001, lon: ORIGIN.lon + 0.002 };
  expect((await asCourier(base(), courier, 'POST', '/courier/location', at)).status).toBe(200);
  expect((await cancelDelivery(base(), merchant, deliveryId)).status).toBe(201);
  await eventually(async () => expect((await retire()).status).toBe(200));
});

describe('a retirement meeting an offer', () => {
  let db: mongoose.Connection;
  beforeAll(async () => {
    db = await openServiceDatabase(stack.iso, 'matching');
  });
  afterAll(() => db?.close());

  const retire = (courierId: string) =>
    request(base(), 'PATCH', `/admin/couriers/${courierId}`, {
      headers: adminHeaders,
      json: { active: false },
    });
  const outcomeOf = (offerId: string) =>
    db.collection<{ _id: string; outcome: string }>('offer_outcomes').findOne({ _id: offerId });

  it('gives way to an accept claimed first (409): the courier stays at work', async () => {
    const merchant: Party = await createUserWithKey(base());
    await credit(base(), merchant, 100_000);
    const courier = await courierAt(base(), { lat: ORIGIN.lat - 0.004, lon: ORIGIN.lon + 0.003 });
    const { deliveryId, offer } = await offeredDelivery(base(), merchant, courier);
    // The accept's claim, its hold not yet the delivery's (the confirmation under way).
    await db
      .collection('offer_outcomes')
      .insertOne({ _id: offer.id as never, outcome: 'ACCEPTED', at: new Date() });
    expectErrorEnvelope(await retire(courier.id), 409, new RegExp(`taking delivery ${deliveryId}`));
    // Still at work, the accept standing: the search's next step confirms it.
    const at = { lat: ORIGIN.lat - 0.004, lon: ORIGIN.lon + 0.004 };
    expect((await asCourier(base(), courier, 'POST', '/courier/location', at)).status).toBe(200);
    expect(await outcomeOf(offer.id)).toMatchObject({ outcome: 'ACCEPTED' });
  });

  it('changes nothing of a change that retires, when the retirement gives way to an accept (409)', async () => {
    const merchant: Party = await createUserWithKey(base());
    await credit(base(), merchant, 100_000);
    const courier = await courierAt(base(), { lat: ORIGIN.lat - 0.005, lon: ORIGIN.lon - 0.004 });
    const admin = (method: string, path: string, json?: unknown) =>
      request(base(), method, path, { headers: adminHeaders, json });
    const before = (await admin('GET', `/admin/couriers/${courier.id}`)).body.data;
    const types = (await admin('GET', '/admin/fleet-types')).body.data as {
      id: string;
      code: string;
    }[];
    const car = types.find((t) => t.code === 'car')?.id;
    const { deliveryId, offer } = await offeredDelivery(base(), merchant, courier);
    await db
      .collection('offer_outcomes')
      .insertOne({ _id: offer.id as never, outcome: 'ACCEPTED', at: new Date() });
    const regNo = `RET-${process.pid % 1000}-${Date.now() % 100_000}`;
    const change = { active: false, name: 'Renamed', fleet: { typeId: car, regNo } };
    expectErrorEnvelope(
      await admin('PATCH', `/admin/couriers/${courier.id}`, change),
      409,
      new RegExp(`taking delivery ${deliveryId}`),
    );

    const after = (await admin('GET', `/admin/couriers/${courier.id}`)).body.data;
    expect(after).toMatchObject({ name: before.name, active: true, fleet: before.fleet });
    // The number it would have taken is free for another courier; the one it has is not.
    const another = (number: string) =>
      admin('POST', '/admin/couriers', {
        name: 'Ade Ojo',
        phone: '+2348031234568',
        fleet: { typeId: car, regNo: number, make: 'Toyota', model: 'Corolla', colour: 'Blue' },
      });
    expect((await another(regNo)).status).toBe(201);
    expect((await another(before.fleet.regNo)).status).toBe(409);
  });

  it('ends at once a search that may go to the retired courier alone, refunded', async () => {
    const merchant: Party = await createUserWithKey(base());
    await credit(base(), merchant, 100_000);
    const courier = await courierAt(base(), { lat: ORIGIN.lat - 0.007, lon: ORIGIN.lon + 0.006 });
    const packageId = await savePackage(base(), merchant);
    const created = await requestDelivery(base(), merchant, [packageId], {
      courierSelection: 'SPECIFIC',
      courierId: courier.id,
    });
    expect(created.status).toBe(201);
    const { deliveryId } = created.body.data;
    const offer = await offerOf(base(), courier);
    expect(offer.deliveryId).toBe(deliveryId);
    expect((await retire(courier.id)).status).toBe(200);
    // Not after MATCHING_SEARCH_TIMEOUT_MS (15 min): nobody is left to ask.
    await eventually(
      async () => {
        const delivery = await getDelivery(base(), merchant, deliveryId);
        expect(delivery.body.data.status).toBe('NO_COURIER_FOUND');
      },
      { timeout: 15_000 },
    );
    await eventually(async () => expect(await balanceOf(base(), merchant)).toBe('100000.00'));
  });

  it('withdraws an offer the courier had not accepted, so the search moves on', async () => {
    const merchant: Party = await createUserWithKey(base());
    await credit(base(), merchant, 100_000);
    const courier = await courierAt(base(), { lat: ORIGIN.lat - 0.006, lon: ORIGIN.lon + 0.005 });
    const { offer } = await offeredDelivery(base(), merchant, courier);
    expect((await retire(courier.id)).status).toBe(200);
    expect(await outcomeOf(offer.id)).toMatchObject({ outcome: 'WITHDRAWN' });
  });
});
