import type mongoose from 'mongoose';
import { eventSequence } from '../../services/order/webhook-events';
import { credit, getDelivery, ORIGIN, proofCodeSent } from '../support/deliveries';
import { eventually } from '../support/eventually';
import { adminHeaders, createUserWithKey, request } from '../support/http';
import {
  acceptedDelivery,
  acceptOffer,
  asCourier,
  courierAt,
  offeredDelivery,
  type Courier,
} from '../support/couriers';
import { samples, type Sample } from '../support/metrics';
import { useWebhookReceiver } from '../support/webhook-receiver';
import {
  dropDatabases,
  isolation,
  openServiceDatabase,
  startNode,
  type NodeProcess,
} from '../support/stack';

/**
 * What a courier's step costs the order database (issue 15; `npm run bench:run` put the
 * transitions at most of a delivery's 303 commands): the writer of a transition reads the
 * delivery once (the courier's hold on it, which the change then starts from), hands over the
 * events with the delivery as the change left it, and records what it did of the transition's
 * work in one write, ending its mark without reading it first. Counted by the commands the
 * process sends (`DB_COMMAND_METRICS`), every service in one process on the real FerretDB,
 * NATS and Redis, the order sweep and the notification sender kept out of the way (but for the
 * end of the last test, which is the sweep's).
 */
const iso = isolation();
let node: NodeProcess;
let orderDb: mongoose.Connection;
let webhookDb: mongoose.Connection;

const nodeOptions = {
  services: 'all',
  iso,
  env: {
    DB_COMMAND_METRICS: 'true',
    ORDER_SWEEP_INTERVAL_MS: '3600000',
    // The notification sender too: it reads each message's delivery before sending it (is it
    // stale?), and a step measured while it ran counted those reads as its own. The codes the
    // steps need are read from the outbox, sent or not.
    NOTIFY_INTERVAL_MS: '3600000',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  },
};

/** Where the merchants' endpoints are: an event is recorded only when some endpoint takes it. */
const receiver = useWebhookReceiver();

/** A merchant with money and an endpoint taking every event, whose records the tests read. */
async function merchantWithEndpoint() {
  const merchant = await createUserWithKey(base());
  await credit(base(), merchant, 100_000);
  const endpoint = await request(base(), 'POST', '/api/webhooks', {
    headers: { 'api-key': merchant.key },
    json: { url: receiver.url('/steps') },
  });
  expect(endpoint.status).toBe(201);
  return merchant;
}

beforeAll(async () => {
  node = await startNode(nodeOptions);
  orderDb = await openServiceDatabase(iso, 'order');
  webhookDb = await openServiceDatabase(iso, 'webhook');
}, 120_000);

afterAll(async () => {
  await orderDb?.close();
  await webhookDb?.close();
  await node?.stop();
  await dropDatabases(iso);
});

const base = () => node.url;

/** A service database's commands so far, by `<collection> <command>`. */
async function commandsOf(service: string): Promise<Map<string, number>> {
  const all: Sample[] = await samples(node.opsUrl, 'waybill_db_commands_total');
  const counts = new Map<string, number>();
  for (const s of all) {
    if (!s.labels.database.endsWith(`_${service}`) || !s.labels.collection) continue;
    const key = `${s.labels.collection} ${s.labels.command}`;
    counts.set(key, (counts.get(key) ?? 0) + s.value);
  }
  return counts;
}

/** What `after` counts beyond `before`, the keys that moved only. */
function sent(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const moved: Record<string, number> = {};
  for (const [key, n] of after)
    if (n !== (before.get(key) ?? 0)) moved[key] = n - (before.get(key) ?? 0);
  return moved;
}

/** The delivery's webhook events as the webhook service recorded them, in their order. */
async function eventsOf(deliveryId: string) {
  const events = await webhookDb.collection('webhook_events').find({ deliveryId }).toArray();
  return events.sort((a, b) => a.sequence - b.sequence);
}

/** The code a stop's contact was sent (staging shows the texts). */
const codeSent = (deliveryId: string, purpose: 'COLLECTION_CODE' | 'DELIVERY_CODE') =>
  proofCodeSent(base(), deliveryId, purpose);

it('a courier step reads its delivery and its transitions no more than it must, and leaves no work', async () => {
  const merchant = await merchantWithEndpoint();
  const courier: Courier = await courierAt(base(), { lat: ORIGIN.lat + 0.002, lon: ORIGIN.lon });
  const { deliveryId, offer } = await offeredDelivery(base(), merchant, courier);
  const beforeAccept = await commandsOf('matching');
  const accepted = await acceptOffer(base(), courier, offer);
  expect(accepted.body.data).toMatchObject({ deliveryId, status: 'ACCEPTED' });
  // The outcome the accept claimed is what it answers, not read back; and no sweep confirms
  // the offer beside it (the search is swept at once only should the confirmation fail).
  const acceptCost = sent(beforeAccept, await commandsOf('matching'));
  expect(acceptCost['offer_outcomes find']).toBeUndefined();
  expect(acceptCost['offer_outcomes insert']).toBe(1);
  expect(acceptCost['search_ends insert']).toBe(1);
  // The hold is never rewritten (FerretDB's update by `{ _id, offerId }` could bring back a hold
  // let go meanwhile): the accepted outcome makes it the delivery's.
  expect(acceptCost['courier_holds update']).toBeUndefined();

  const steps = ['arrived-at-pickup', 'collected', 'in-transit', 'arrived-at-dropoff', 'delivered'];
  const costs: Record<string, number>[] = [];
  const matchingBefore = await commandsOf('matching');
  let lastStepMatching: Record<string, number> = {};
  for (const step of steps) {
    const code =
      step === 'collected'
        ? await codeSent(deliveryId, 'COLLECTION_CODE')
        : step === 'delivered'
          ? await codeSent(deliveryId, 'DELIVERY_CODE')
          : undefined;
    const before = await commandsOf('order');
    const matchingBeforeStep = await commandsOf('matching');
    const path = `/courier/deliveries/${deliveryId}/${step}`;
    const answer = await asCourier(base(), courier, 'POST', path, code ? { code } : undefined);
    expect(answer.status).toBe(200);
    costs.push(sent(before, await commandsOf('order')));
    lastStepMatching = sent(matchingBeforeStep, await commandsOf('matching'));
    // Its event went with the delivery as this step left it.
    const latest = (await eventsOf(deliveryId)).at(-1);
    expect(latest?.data).toMatchObject({ status: answer.body.data.status });
  }
  // Each step's events show the courier (order asks matching for the view): the profile is
  // read once in the run, not again with every change.
  const matching = sent(matchingBefore, await commandsOf('matching'));
  expect(matching['couriers find'] ?? 0).toBeLessThanOrEqual(1);
  // The delivered step ends the search: its courier let go by the offer its end names (the
  // hold read once, its release claimed, the hold deleted), without reading the search or its
  // offers.
  expect(lastStepMatching).toMatchObject({
    'search_ends insert': 1,
    'search_ends find': 1,
    'courier_holds find': 1,
    'courier_hold_releases insert': 1,
    'courier_holds delete': 1,
  });
  for (const unread of ['searches find', 'offers find', 'offer_outcomes insert']) {
    expect(lastStepMatching[unread]).toBeUndefined();
  }
  const current = await asCourier(base(), courier, 'GET', '/courier/deliveries/current');
  expect(current.status).toBe(200);
  expect(current.body.data).toBeNull();
  // A change to the courier shows at once all the same (the change drops the cached profile).
  const renamed = await request(base(), 'PATCH', `/admin/couriers/${courier.id}`, {
    headers: adminHeaders,
    json: { name: 'Renamed Courier' },
  });
  expect(renamed.status).toBe(200);
  const read = await getDelivery(base(), merchant, deliveryId);
  expect(read.body.data.courier).toMatchObject({ name: 'Renamed Courier' });
  for (const cost of costs) {
    // The courier's hold on the delivery, which the change starts from, and the projection's
    // check that it only moves forward.
    expect(cost['deliveries find']).toBe(2);
    // The hold's look for a later transition and the mark's last look after its end; not the
    // one before this, whose events this process handed over (so no request is pending: its
    // creation's went first).
    expect(cost['delivery_transitions find']).toBe(2);
    expect(cost['pending_requests find']).toBeUndefined();
    // What the writer did of the transition's work, in one write.
    expect(cost['delivery_transitions update']).toBe(1);
    expect(cost['transition_work delete']).toBe(1);
  }
  // Every transition's work was done by its writer, recorded, and its mark ended.
  const transitions = await orderDb
    .collection('delivery_transitions')
    .find({ deliveryId })
    .toArray();
  expect(transitions.length).toBeGreaterThanOrEqual(steps.length + 1);
  for (const t of transitions) {
    expect(t.unsettled).toBeUndefined();
    expect(t.unannounced).toBeUndefined();
  }
  const marks = await orderDb.collection('transition_work').find({}).toArray();
  expect(marks.filter((m) => String(m._id).startsWith(deliveryId))).toEqual([]);
});

it('hands over the events of an earlier change its writer could not, with the next change’s', async () => {
  const merchant = await merchantWithEndpoint();
  // Nearer the pickup than the first test's courier, who is free again.
  const courier: Courier = await courierAt(base(), { lat: ORIGIN.lat + 0.0005, lon: ORIGIN.lon });
  const deliveryId = await acceptedDelivery(base(), merchant, courier);
  const step = (name: string) =>
    asCourier(base(), courier, 'POST', `/courier/deliveries/${deliveryId}/${name}`);
  expect((await step('arrived-at-pickup')).status).toBe(200);
  // As if its writer had stopped before the webhook service took its event.
  const [arrived] = await orderDb
    .collection('delivery_transitions')
    .find({ deliveryId, 'event.kind': 'ARRIVED_AT_PICKUP' })
    .toArray();
  await orderDb
    .collection('delivery_transitions')
    .updateOne({ _id: arrived._id }, { $set: { unannounced: true } });
  const sequence = eventSequence(arrived.version, 0);
  await webhookDb.collection('webhook_events').deleteMany({ deliveryId, sequence });
  // A writer that stopped took with it what it knew of the events it handed over. (The order
  // sweep of the process started in its place runs often: the end of this test needs it.)
  await node.stop();
  node = await startNode({
    ...nodeOptions,
    env: { ...nodeOptions.env, ORDER_SWEEP_INTERVAL_MS: '500' },
  });

  expect((await step('in-transit')).status).toBe(409);
  // The next change's writer (the collection needs its code first) hands both over, in order.
  const code = await codeSent(deliveryId, 'COLLECTION_CODE');
  const collected = await asCourier(
    base(),
    courier,
    'POST',
    `/courier/deliveries/${deliveryId}/collected`,
    { code },
  );
  expect(collected.status).toBe(200);
  const events = await eventsOf(deliveryId);
  const arrivedAgain = events.find((e) => e.sequence === sequence);
  expect(arrivedAgain?.data).toMatchObject({ status: 'COLLECTED' });
  expect(events.at(-1)?.sequence).toBeGreaterThan(sequence);
  const stored = await orderDb.collection('delivery_transitions').findOne({ _id: arrived._id });
  expect(stored?.unannounced).toBeUndefined();

  // Handed over by this process, but its record not cleared (the write failed, or another's
  // rewrite undid it), the mark kept: the sweep of this same process reads the record, not what
  // the process remembers publishing, and hands the events over again.
  const transitions = orderDb.collection<{ _id: string; version: number }>('delivery_transitions');
  const [collectedChange] = await transitions
    .find({ deliveryId, 'event.kind': 'COLLECTED' })
    .toArray();
  const collectedSequence = eventSequence(collectedChange.version, 0);
  await webhookDb
    .collection('webhook_events')
    .deleteMany({ deliveryId, sequence: collectedSequence });
  await transitions.updateOne({ _id: collectedChange._id }, { $set: { unannounced: true } });
  // The mark last: it is what the sweep goes by.
  await orderDb
    .collection<{ _id: string; at: Date }>('transition_work')
    .insertOne({ _id: collectedChange._id, at: new Date(Date.now() - 60_000) });
  await eventually(
    async () => {
      const swept = await transitions.findOne({ _id: collectedChange._id });
      expect(swept).not.toHaveProperty('unannounced');
      const again = (await eventsOf(deliveryId)).find((e) => e.sequence === collectedSequence);
      expect(again?.data).toMatchObject({ status: 'COLLECTED' });
      const mark = await orderDb
        .collection<{ _id: string }>('transition_work')
        .findOne({ _id: collectedChange._id });
      expect(mark).toBeNull();
    },
    { timeout: 20_000 },
  );
}, 180_000);
