import type mongoose from 'mongoose';
import { zonedInstant } from '../../services/pricing/schedule';
import { OrderStore, defineOrderModels } from '../../services/order/store';
import { asCourier, courierAt, offerOf, type Courier } from '../support/couriers';
import {
  balanceOf,
  cancelDelivery,
  credit,
  freePackages,
  getDelivery,
  ledgerIsClean,
  ORIGIN,
  requestDelivery,
  savePackage,
} from '../support/deliveries';
import { eventually } from '../support/eventually';
import { useMerchantStack } from '../support/merchant-stack';
import { openServiceDatabase } from '../support/stack';

/**
 * A SCHEDULED delivery is paid when it is booked, but its courier is searched for on its date:
 * ORDER_SCHEDULED_SEARCH_LEAD_MS before it must leave to reach its slot's start (Lagos time,
 * the tariff's zone). The order sweep starts the searches that are due.
 */
const stack = useMerchantStack({ internal: [], env: { ORDER_SWEEP_INTERVAL_MS: '200' } });
const LEAD_MS = 2_700_000;
let db: mongoose.Connection;
let store: OrderStore;
let courier: Courier;

beforeAll(async () => {
  db = await openServiceDatabase(stack.iso, 'order');
  const models = defineOrderModels(db);
  store = new OrderStore(() => models);
  courier = await courierAt(stack.node.url, { lat: ORIGIN.lat, lon: ORIGIN.lon });
  await credit(stack.node.url, stack.alice, 100_000);
});
afterAll(() => db?.close());

/** Three days from now, in Lagos. */
const dateAhead = () =>
  new Date(Date.now() + 3 * 86_400_000 + 3_600_000).toISOString().slice(0, 10);

async function scheduled() {
  const packageId = await savePackage(stack.node.url, stack.alice);
  const deliveryDate = dateAhead();
  const created = await requestDelivery(stack.node.url, stack.alice, [packageId], {
    urgencyType: 'SCHEDULED',
    deliveryDate,
    deliverySlot: '09:00 - 12:00',
  });
  expect(created.status).toBe(201);
  return { deliveryId: created.body.data.deliveryId as string, deliveryDate, created, packageId };
}

const searchOf = (deliveryId: string) =>
  db.collection<{ _id: string; dueAt: Date }>('scheduled_searches').findOne({ _id: deliveryId });

/**
 * The date came: the search is due now, and listed in the bucket of now, which the sweep reads
 * (it finds searches through their buckets, never by `dueAt`).
 */
async function dueNow(deliveryId: string) {
  await db
    .collection<{ _id: string; dueAt: Date }>('scheduled_searches')
    .updateOne({ _id: deliveryId }, { $set: { dueAt: new Date() } });
  await store.relistSearch(deliveryId, new Date());
}

const offers = async () =>
  (await asCourier(stack.node.url, courier, 'GET', '/courier/offers')).body.data as unknown[];

describe('a SCHEDULED delivery paid from the wallet', () => {
  it('waits for its date before its courier is searched for, then is offered', async () => {
    const { deliveryId, deliveryDate, created } = await scheduled();
    expect(created.body.data.deliveryFee.creator.paid).toBe(true);
    const search = await searchOf(deliveryId);
    const stored = await getDelivery(stack.node.url, stack.alice, deliveryId);
    const record = await db
      .collection<{ _id: string; etaSeconds: number }>('deliveries')
      .findOne({ _id: deliveryId });
    const etaMs = (record?.etaSeconds as number) * 1000;
    expect(etaMs).toBeGreaterThan(0);
    const slotStart = zonedInstant(deliveryDate, 9 * 60, 'Africa/Lagos').getTime();
    expect(search?.dueAt.getTime()).toBe(slotStart - etaMs - LEAD_MS);
    // Sweeps go by every 200 ms: nobody is offered it before its date.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await offers()).toEqual([]);
    expect(stored.body.data.p2pDelivery.status).toBe('PENDING');

    await dueNow(deliveryId);
    const offer = await offerOf(stack.node.url, courier);
    expect(offer.deliveryId).toBe(deliveryId);
    await eventually(async () => expect(await searchOf(deliveryId)).toBeNull());
    const declined = await asCourier(
      stack.node.url,
      courier,
      'POST',
      `/courier/offers/${offer.id}/decline`,
    );
    expect(declined.status).toBe(200);
    expect((await cancelDelivery(stack.node.url, stack.alice, deliveryId)).status).toBe(201);
  });

  it('is closed for want of a courier and refunded, nobody sent, when its slot closed before its search could start', async () => {
    const before = await balanceOf(stack.node.url, stack.alice);
    const { deliveryId, deliveryDate, packageId } = await scheduled();
    const deliveries = db.collection<{ _id: string; slotEndsAt: Date; timeZone: string }>(
      'deliveries',
    );
    // The zone its slot was read in is kept too: the tracking page shows its times in it.
    expect(await deliveries.findOne({ _id: deliveryId })).toMatchObject({
      slotEndsAt: zonedInstant(deliveryDate, 12 * 60, 'Africa/Lagos'),
      timeZone: 'Africa/Lagos',
    });
    expect(Number(await balanceOf(stack.node.url, stack.alice))).toBeLessThan(Number(before));

    // The sweep was down through its date: the slot is over when its search is read.
    await deliveries.updateOne(
      { _id: deliveryId },
      { $set: { slotEndsAt: new Date(Date.now() - 60_000) } },
    );
    await dueNow(deliveryId);
    await eventually(async () => {
      const closed = (await getDelivery(stack.node.url, stack.alice, deliveryId)).body.data;
      expect(closed.status).toBe('NO_COURIER_FOUND');
      expect(closed.p2pDelivery.status).toBe('REFUNDED');
    });
    await eventually(async () => expect(await balanceOf(stack.node.url, stack.alice)).toBe(before));
    await eventually(async () =>
      expect(await freePackages(stack.node.url, stack.alice)).toContain(packageId),
    );
    expect(await searchOf(deliveryId)).toBeNull();
    expect(await offers()).toEqual([]);
    // Later sweeps change nothing: refunded once.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await balanceOf(stack.node.url, stack.alice)).toBe(before);
    expect(await ledgerIsClean(stack.node.url)).toBe(true);
  });

  it('is never searched for once cancelled before its date', async () => {
    const { deliveryId } = await scheduled();
    expect(await searchOf(deliveryId)).not.toBeNull();
    expect((await cancelDelivery(stack.node.url, stack.alice, deliveryId)).status).toBe(201);
    // The cancellation's END_MATCHING drops it, before its date.
    await eventually(async () => expect(await searchOf(deliveryId)).toBeNull());
    // Listed in the bucket the sweep reads now all the same: nothing is left to start.
    await dueNow(deliveryId);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await offers()).toEqual([]);
  });
});
