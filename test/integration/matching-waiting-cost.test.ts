import { randomUUID } from 'node:crypto';
import type { ServiceBroker } from 'moleculer';
import type mongoose from 'mongoose';
import { call } from '../../libs/contracts';
import { credit, DESTINATION, ORIGIN, requestDelivery, savePackage } from '../support/deliveries';
import { eventually } from '../support/eventually';
import { adminHeaders, createUserWithKey, request } from '../support/http';
import { courierAt, offerOf } from '../support/couriers';
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
 * search every `MATCHING_SWEEP_INTERVAL_MS`. One that has made no offer and has nobody in
 * reach reads only its own record, not its end and its offers, and is still offered to the
 * first courier who comes in reach. Counted by the database commands the process sends
 * (`DB_COMMAND_METRICS`), every service in one process on the real FerretDB, NATS and Redis.
 */
const iso = isolation();
let node: NodeProcess;
let client: ServiceBroker;
let db: mongoose.Connection;

beforeAll(async () => {
  node = await startNode({
    services: 'all',
    iso,
    env: { DB_COMMAND_METRICS: 'true', MATCHING_SWEEP_INTERVAL_MS: '100' },
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
async function matchingFinds(): Promise<Record<'searches' | 'ends' | 'offers', number>> {
  const all = await samples(node.opsUrl, 'waybill_db_commands_total');
  const finds = (collection: string) =>
    count(
      all.filter((s) => s.labels.database.endsWith('_matching')),
      { collection, command: 'find' },
    );
  return { searches: finds('searches'), ends: finds('search_ends'), offers: finds('offers') };
}

const pause = (ms: number) => new Promise((done) => setTimeout(done, ms));

it('steps a search with nobody in reach by reading only its record, and offers it once a courier comes', async () => {
  const merchant = await createUserWithKey(node.url);
  await credit(node.url, merchant, 100_000);
  const packageId = await savePackage(node.url, merchant);
  const created = await requestDelivery(node.url, merchant, [packageId]);
  expect(created.status).toBe(201);
  const deliveryId = created.body.data.deliveryId as string;

  // The search's first steps (its start's, then the sweep's) are under way by now.
  await pause(1_000);
  const before = await matchingFinds();
  await pause(1_500);
  const after = await matchingFinds();
  // Some 15 sweeps at 100 ms; a slow machine makes fewer, never none.
  expect(after.searches - before.searches).toBeGreaterThanOrEqual(3);
  expect(after.ends - before.ends).toBe(0);
  expect(after.offers - before.offers).toBe(0);

  const courier = await courierAt(node.url, { lat: ORIGIN.lat + 0.002, lon: ORIGIN.lon });
  expect((await offerOf(node.url, courier)).deliveryId).toBe(deliveryId);
}, 60_000);

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
