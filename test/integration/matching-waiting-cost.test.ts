import { randomUUID } from 'node:crypto';
import type { ServiceBroker } from 'moleculer';
import type mongoose from 'mongoose';
import { call } from '../../libs/contracts';
import { offerId } from '../../services/courier-matching/matching-rules';
import {
  cancelDelivery,
  credit,
  DESTINATION,
  ORIGIN,
  requestDelivery,
  savePackage,
  type Party,
} from '../support/deliveries';
import { eventually } from '../support/eventually';
import { adminHeaders, createUserWithKey, request } from '../support/http';
import { asCourier, courierAt, offerOf, type Courier, type Offer } from '../support/couriers';
import { count, samples } from '../support/metrics';
import {
  dropDatabases,
  isolation,
  openServiceDatabase,
  startClient,
  startNode,
  type NodeProcess,
} from '../support/stack';

/**
 * What a search costs while it waits for a courier (issue 15): the sweep steps every running
 * search every `MATCHING_SWEEP_INTERVAL_MS` (100 ms here). One that has made no offer and has
 * nobody in reach reads nothing from the database (its record as its last step read it is
 * enough: nothing of it changes until an offer is made), and waits twice as long after each
 * such step (here without a ceiling that matters: 10 minutes); a courier
 * reported, or set free, within its reach has it stepped at the next sweep. Counted by the
 * database commands the process sends (`DB_COMMAND_METRICS`), every service in one process on
 * the real FerretDB, NATS and Redis.
 */
const iso = isolation();
let node: NodeProcess;
let client: ServiceBroker;
let db: mongoose.Connection;

beforeAll(async () => {
  node = await startNode({
    services: 'all',
    iso,
    env: {
      DB_COMMAND_METRICS: 'true',
      MATCHING_SWEEP_INTERVAL_MS: '100',
      MATCHING_IDLE_STEP_MAX_MS: '600000',
    },
  });
  client = await startClient(iso, ['courier-matching']);
  db = await openServiceDatabase(iso, 'matching');
}, 120_000);

afterAll(async () => {
  await db?.close();
  await client?.stop();
  await node?.stop();
  await dropDatabases(iso);
});

/** Finds the matching database has been sent, by collection. */
async function matchingFinds(): Promise<Record<'searches' | 'ends' | 'offers' | 'notes', number>> {
  const all = await samples(node.opsUrl, 'waybill_db_commands_total');
  const finds = (collection: string) =>
    count(
      all.filter((s) => s.labels.database.endsWith('_matching')),
      { collection, command: 'find' },
    );
  return {
    searches: finds('searches'),
    ends: finds('search_ends'),
    offers: finds('offers'),
    notes: finds('search_notes'),
  };
}

/** The running searches in a state, as matching's last sweep saw them (`/metrics`). */
async function searchesIn(state: string): Promise<number> {
  return count(await samples(node.opsUrl, 'waybill_matching_searches'), { state });
}

const pause = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** What a test left near ORIGIN: its deliveries are cancelled and its couriers sent away after it. */
const made: { deliveries: { merchant: Party; deliveryId: string }[]; couriers: Courier[] } = {
  deliveries: [],
  couriers: [],
};

/** A paid delivery picked up at ORIGIN, its search under way. */
async function waitingDelivery(): Promise<string> {
  const merchant = await createUserWithKey(node.url);
  await credit(node.url, merchant, 100_000);
  const packageId = await savePackage(node.url, merchant);
  const created = await requestDelivery(node.url, merchant, [packageId]);
  expect(created.status).toBe(201);
  const deliveryId = created.body.data.deliveryId as string;
  made.deliveries.push({ merchant, deliveryId });
  return deliveryId;
}

afterEach(async () => {
  for (const courier of made.couriers.splice(0)) await reportAt(courier, FAR_FROM_ORIGIN);
  const deliveries = made.deliveries.splice(0);
  for (const { merchant, deliveryId } of deliveries) {
    expect((await cancelDelivery(node.url, merchant, deliveryId)).status).toBe(201);
  }
  // Each search over, so that none of them answers the next test's couriers.
  await eventually(async () => {
    for (const { deliveryId } of deliveries) {
      expect(
        await db.collection<{ _id: string }>('active_searches').findOne({ _id: deliveryId }),
      ).toBeNull();
    }
  });
});

/** Within reach of ORIGIN at every radius: some 220 m away. */
const NEAR_ORIGIN = { lat: ORIGIN.lat + 0.002, lon: ORIGIN.lon };
/** Out of reach of ORIGIN at every radius: some 110 km away. */
const FAR_FROM_ORIGIN = { lat: ORIGIN.lat + 1, lon: ORIGIN.lon };

const decline = async (courier: Courier, offer: Offer) =>
  expect(
    (await asCourier(node.url, courier, 'POST', `/courier/offers/${offer.id}/decline`)).status,
  ).toBe(200);

const reportAt = async (courier: Courier, at: { lat: number; lon: number }) =>
  expect((await asCourier(node.url, courier, 'POST', '/courier/location', at)).status).toBe(200);

/**
 * With the first wait one sweep (100 ms) and each doubling, a search that finds nobody is
 * stepped some 0.1, 0.3, 0.7, 1.5, 3.1, 6.3 and 12.7 s after its start: between 6.5 and 12.7
 * s nothing but a wake steps it, and an offer made in that span was made by one.
 */
const INTO_A_LONG_WAIT_MS = 8_000;
/** Well within the 4 s left before the search's own next step, far more than a wake takes. */
const OFFERED_WITHIN_MS = 2_000;

it('steps a search with nobody in reach without reading it again, less and less often', async () => {
  await waitingDelivery();
  // Past the search's first steps (its start's, then the sweep's), which read it.
  await eventually(async () => expect(await searchesIn('waiting_for_courier')).toBe(1));
  await pause(500);
  const before = await matchingFinds();
  await pause(5_000);
  const after = await matchingFinds();
  // Steps near 1.5, 3.1 and 6.3 s of the search, each from its record as its first step read
  // it: nothing of it changes until an offer is made (the offer timeout, 30 s, bounds the
  // record's age).
  expect(after.searches - before.searches).toBe(0);
  expect(after.ends - before.ends).toBe(0);
  expect(after.offers - before.offers).toBe(0);
  // A search that has made no offer has noted nobody out of it, and reads no notes.
  expect(after.notes - before.notes).toBe(0);
  // Operators see it waiting.
  expect(await searchesIn('running')).toBe(1);
  expect(await searchesIn('waiting_for_courier')).toBe(1);
  expect(await searchesIn('awaiting_answer')).toBe(0);
}, 60_000);

it('offers a waiting search to a courier at once when one is reported within its reach', async () => {
  const courier = await courierAt(node.url, FAR_FROM_ORIGIN);
  made.couriers.push(courier);
  const deliveryId = await waitingDelivery();
  await pause(INTO_A_LONG_WAIT_MS);
  await reportAt(courier, NEAR_ORIGIN);
  expect((await offerOf(node.url, courier, OFFERED_WITHIN_MS)).deliveryId).toBe(deliveryId);
}, 60_000);

it('offers a waiting search to a courier at once when the courier is set free nearby', async () => {
  // Whichever search finds the courier first holds them; the other waits, nobody free in reach.
  const courier = await courierAt(node.url, NEAR_ORIGIN);
  made.couriers.push(courier);
  const deliveries = [await waitingDelivery(), await waitingDelivery()];
  const first = await offerOf(node.url, courier);
  await pause(INTO_A_LONG_WAIT_MS);
  await decline(courier, first);
  const next = await offerOf(node.url, courier, OFFERED_WITHIN_MS);
  expect(next.deliveryId).not.toBe(first.deliveryId);
  expect(deliveries).toContain(next.deliveryId);
}, 60_000);

it('reads nothing of a search whose offer is open until its courier answers, then less and less', async () => {
  const courier = await courierAt(node.url, NEAR_ORIGIN);
  made.couriers.push(courier);
  const deliveryId = await waitingDelivery();
  const offer = await offerOf(node.url, courier);
  expect(offer.deliveryId).toBe(deliveryId);
  // Past the sweep that found the offer open (the one that made it may not have).
  await pause(300);
  const before = await matchingFinds();
  // The offer is open for MATCHING_OFFER_TIMEOUT_MS (30 s): some 20 sweeps here.
  await pause(2_000);
  const open = await matchingFinds();
  expect(open.searches - before.searches).toBe(0);
  expect(await searchesIn('awaiting_answer')).toBe(1);
  expect(await searchesIn('waiting_for_courier')).toBe(0);
  // The answer steps it at once (only a step reads its end); declined, the courier is not
  // asked again and nobody else is near: it waits for a courier, longer after each step.
  await decline(courier, offer);
  await eventually(async () => expect((await matchingFinds()).ends).toBeGreaterThan(open.ends));
  await eventually(async () => expect(await searchesIn('waiting_for_courier')).toBe(1));
  const declined = await matchingFinds();
  await pause(3_000);
  const waited = await matchingFinds();
  // Steps some 0.1, 0.3, 0.7, 1.5 and 3.1 s after the decline; some 30 sweeps meanwhile.
  expect(waited.ends - declined.ends).toBeLessThanOrEqual(5);
}, 60_000);

it('reads a long search’s latest offer from its hint, not every offer it made', async () => {
  const couriers = await Promise.all(
    Array.from({ length: 8 }, () => courierAt(node.url, NEAR_ORIGIN)),
  );
  made.couriers.push(...couriers);
  const deliveryId = await waitingDelivery();
  /** The courier the search's open offer is with, and the offer. */
  const offered = async (among: Courier[]) => {
    let found: { courier: Courier; offer: Offer } | undefined;
    await eventually(async () => {
      for (const courier of among) {
        const reply = await asCourier(node.url, courier, 'GET', '/courier/offers');
        const [offer] = reply.body.data as Offer[];
        if (offer?.deliveryId === deliveryId) found = { courier, offer };
      }
      expect(found).toBeDefined();
    });
    return found as { courier: Courier; offer: Offer };
  };
  let left = couriers;
  for (let declined = 0; declined < 6; declined++) {
    const { courier, offer } = await offered(left);
    await decline(courier, offer);
    left = left.filter((c) => c !== courier);
  }
  // The seventh offer is open; its decline and the step that makes the eighth are counted.
  const seventh = await offered(left);
  await pause(300);
  // The hint as stored: only the steps write the search now. A decline noted its courier on
  // it (`$addToSet`) until session 58, and FerretDB writes a document whole, so one written
  // from a copy read before a step's `noteOffer` took the noted number back (seen in CI: the
  // hint at 4 after seven offers).
  const hint = (
    await db.collection<{ _id: string; offers?: number }>('searches').findOne({ _id: deliveryId })
  )?.offers;
  // A step of an earlier round stalled past the next one's `noteOffer` could still write its
  // own number after it (FerretDB's `$max` too reads, then writes): one behind at most here.
  expect(hint).toBeGreaterThanOrEqual(6);
  const before = await matchingFinds();
  await decline(seventh.courier, seventh.offer);
  // Looked for in the database over the test's own connection: a courier's GET of their offers
  // reads offers too, and would be counted with the step's.
  await eventually(async () =>
    expect(
      await db.collection<{ _id: string }>('offers').findOne({ _id: offerId(deliveryId, 8) }),
    ).not.toBeNull(),
  );
  const after = await matchingFinds();
  // The decline reads its offer; the step the latest (from the hint: the seventh, then the
  // eighth, missing), and the new one's claim reads none: three, and up to three more should
  // the sweep or the search's timer step it in between (five seen in CI, and six in session
  // 70's), and one more for the hint one behind. Reading every offer from the first, the
  // decline and the step alone read nine.
  expect(after.offers - before.offers).toBeLessThanOrEqual(6 + (7 - (hint ?? 0)));
  // The notes past the seven this process has read: the decline's note looks for the seventh
  // place, the step for the eighth as it reads the search and again before it offers (three),
  // and two for each step in between. Read from the first each time, they would be 24 and more.
  expect(after.notes - before.notes).toBeLessThanOrEqual(7);
}, 90_000);

it('stops a search started after its delivery was over before the start answers, with nobody in reach', async () => {
  const fleetTypes = (
    await request(node.url, 'GET', '/admin/fleet-types', { headers: adminHeaders })
  ).body.data as { id: string }[];
  const deliveryId = randomUUID();
  // Order ends the search of a delivery cancelled before its start was heard (or retried after).
  await call(client, 'courier-matching.endMatching', { deliveryId });
  await call(client, 'courier-matching.startSearch', {
    deliveryId,
    userId: randomUUID(),
    pickup: { lat: ORIGIN.lat + 1, lon: ORIGIN.lon },
    dropoff: { lat: DESTINATION.lat + 1, lon: DESTINATION.lon },
    fleetTypeId: fleetTypes[0].id,
    weightGrams: 1_000,
    courierSelection: 'ANYONE',
    courierId: null,
  });
  await eventually(async () =>
    expect(
      await db.collection<{ _id: string }>('active_searches').findOne({ _id: deliveryId }),
    ).toBeNull(),
  );
});
