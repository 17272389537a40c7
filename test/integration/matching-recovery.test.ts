import {
  balanceOf,
  cancelDelivery,
  credit,
  getDelivery,
  ORIGIN,
  requestDelivery,
  savePackage,
} from '../support/deliveries';
import { eventually } from '../support/eventually';
import { adminHeaders, createUserWithKey, expectErrorEnvelope, request } from '../support/http';
import {
  asCourier as asCourierOf,
  courierAt as courierAtOf,
  offerOf as offerOfAt,
  type Courier,
} from '../support/couriers';
import { dropDatabases, isolation, startNode, type NodeProcess } from '../support/stack';

/**
 * Matching survives restarts (issue 13): courier-matching runs in its own process. A delivery
 * paid while no matching process runs is searched for once one is back (order keeps asking),
 * and a search whose matching process is killed with SIGKILL goes on in the next one: its
 * silent courier's offer expires and the next courier is asked.
 */
const iso = isolation();
let rest: NodeProcess;
let matching: NodeProcess | undefined;

/** Starts a matching process and waits until the gateway reaches it. */
async function startMatching(): Promise<NodeProcess> {
  const node = await startNode({
    services: 'courier-matching',
    iso,
    env: { MATCHING_OFFER_TIMEOUT_MS: '3000', MATCHING_SWEEP_INTERVAL_MS: '200' },
  });
  await eventually(
    async () => expect((await admin('GET', '/admin/couriers?limit=1')).status).toBe(200),
    { timeout: 30_000, interval: 250 },
  );
  return node;
}

beforeAll(async () => {
  rest = await startNode({
    services: 'gateway,account,geo,pricing,package,payment,order,webhook',
    iso,
    env: {
      ORDER_SWEEP_INTERVAL_MS: '250',
      // The sweep takes a request over only once it can no longer be under way.
      REQUEST_TIMEOUT_MS: '5000',
      ORDER_STALE_REQUEST_MS: '6000',
    },
  });
  matching = await startMatching();
}, 120_000);

afterAll(async () => {
  await matching?.stop();
  await rest?.stop();
  await dropDatabases(iso);
});

const admin = (method: string, path: string, json?: unknown) =>
  request(rest.url, method, path, { headers: adminHeaders, json });

const courierAt = (at: { lat: number; lon: number }) => courierAtOf(rest.url, at);
const asCourier = (courier: Courier, method: string, path: string, json?: unknown) =>
  asCourierOf(rest.url, courier, method, path, json);
const offerOf = (courier: Courier) => offerOfAt(rest.url, courier, 40_000);

/** Waits until the gateway no longer reaches any matching process. */
async function matchingGone(): Promise<void> {
  await eventually(
    async () => expect((await admin('GET', '/admin/couriers?limit=1')).status).toBe(503),
    { timeout: 30_000, interval: 250 },
  );
}

it('searches for a delivery paid while matching was down, once it is back', async () => {
  const courier = await courierAt({ lat: ORIGIN.lat + 0.002, lon: ORIGIN.lon });
  await matching?.stop();
  matching = undefined;
  await matchingGone();

  const merchant = await createUserWithKey(rest.url);
  await credit(rest.url, merchant, 100_000);
  const created = await requestDelivery(rest.url, merchant, [
    await savePackage(rest.url, merchant),
  ]);
  expect(created.status).toBe(201);

  matching = await startMatching();
  const offer = await offerOf(courier);
  expect(offer.deliveryId).toBe(created.body.data.deliveryId);
  expect((await asCourier(courier, 'POST', `/courier/offers/${offer.id}/accept`)).status).toBe(200);
}, 120_000);

it('goes on with a search whose matching process was killed', async () => {
  const silent = await courierAt({ lat: ORIGIN.lat - 0.001, lon: ORIGIN.lon - 0.001 });
  const next = await courierAt({ lat: ORIGIN.lat - 0.006, lon: ORIGIN.lon - 0.006 });
  const merchant = await createUserWithKey(rest.url);
  await credit(rest.url, merchant, 100_000);
  const created = await requestDelivery(rest.url, merchant, [
    await savePackage(rest.url, merchant),
  ]);
  expect(created.status).toBe(201);
  const deliveryId = created.body.data.deliveryId as string;
  expect((await offerOf(silent)).deliveryId).toBe(deliveryId);

  await matching?.stop('SIGKILL');
  matching = undefined;
  await matchingGone();
  matching = await startMatching();

  // The silent courier's offer expires in the new process; the next courier is asked.
  const offer = await offerOf(next);
  expect(offer.deliveryId).toBe(deliveryId);
  expect((await asCourier(next, 'POST', `/courier/offers/${offer.id}/accept`)).status).toBe(200);
  const got = (await getDelivery(rest.url, merchant, deliveryId)).body.data;
  expect(got.status).toBe('COURIER_ASSIGNED');
  expect(got.courier.name).toBe('Tunde Bakare');
}, 120_000);

it('gives the fee back and frees the packages of a delivery cancelled while matching is down', async () => {
  await matching?.stop();
  matching = undefined;
  await matchingGone();
  try {
    // Its own 503 says when to come back, as every 503 does.
    const away = await admin('GET', '/admin/couriers?limit=1');
    expectErrorEnvelope(away, 503);
    expect(away.headers.get('retry-after')).toBe('5');
    const merchant = await createUserWithKey(rest.url);
    await credit(rest.url, merchant, 100_000);
    const packageId = await savePackage(rest.url, merchant);
    const created = await requestDelivery(rest.url, merchant, [packageId]);
    expect(created.status).toBe(201);
    const deliveryId = created.body.data.deliveryId as string;
    const wallet = () => balanceOf(rest.url, merchant);
    expect(await wallet()).not.toBe('100000.00');
    expect((await cancelDelivery(rest.url, merchant, deliveryId)).status).toBe(201);
    // Ending its search fails while matching is away; the refund and the release do not wait.
    await eventually(async () => expect(await wallet()).toBe('100000.00'), { timeout: 10_000 });
    await eventually(async () => {
      const saved = await request(rest.url, 'GET', '/api/packages', {
        headers: { 'api-key': merchant.key },
      });
      const ours = (saved.body.data as { id: string; p2pDeliveryId: string | null }[]).find(
        (p) => p.id === packageId,
      );
      expect(ours).toMatchObject({ p2pDeliveryId: null });
    });
  } finally {
    matching ??= await startMatching();
  }
}, 120_000);

it('shows an assigned delivery’s tracking page and its merchant’s reads while matching is down, without its courier', async () => {
  const courier = await courierAt({ lat: ORIGIN.lat + 0.001, lon: ORIGIN.lon + 0.002 });
  const merchant = await createUserWithKey(rest.url);
  await credit(rest.url, merchant, 100_000);
  const created = await requestDelivery(rest.url, merchant, [
    await savePackage(rest.url, merchant),
  ]);
  expect(created.status).toBe(201);
  const trackingId = created.body.data.delivery.trackingId as string;
  // Another test's delivery may still be offered around: this courier passes it.
  let offer = await offerOf(courier);
  while (offer.deliveryId !== created.body.data.deliveryId) {
    await asCourier(courier, 'POST', `/courier/offers/${offer.id}/decline`);
    offer = await offerOf(courier);
  }
  expect((await asCourier(courier, 'POST', `/courier/offers/${offer.id}/accept`)).status).toBe(200);
  const page = () => request(rest.url, 'GET', `/track/${trackingId}`);
  expect((await page()).text).toContain('Tunde');

  await matching?.stop();
  matching = undefined;
  await matchingGone();
  try {
    const shown = await page();
    expect(shown.status).toBe(200);
    expect(shown.text).toContain('A courier is on the way to collect your delivery.');
    expect(shown.text).not.toContain('Tunde');
    // The merchant's read and list answer too: assigned, its courier shown once it is back.
    const deliveryId = created.body.data.deliveryId as string;
    const read = await getDelivery(rest.url, merchant, deliveryId);
    expect(read.status).toBe(200);
    expect(read.body.data).toMatchObject({ id: deliveryId, status: 'COURIER_ASSIGNED' });
    expect(read.body.data.courier).toBeUndefined();
    const list = await request(rest.url, 'GET', '/api/deliveries', {
      headers: { 'api-key': merchant.key },
    });
    expect(list.status).toBe(200);
    expect(list.body.data.map((d: { id: string }) => d.id)).toContain(deliveryId);
  } finally {
    matching ??= await startMatching();
  }
}, 120_000);

it('answers 413 for a body within the limit that grows past a message between services once read', async () => {
  // 50,000 × `1e20,`: 250 KB as sent, over 1 MB as moleculer writes it for the matching node.
  const body = `{"name":"Tunde","junk":[${Array.from({ length: 50_000 }, () => '1e20').join(',')}]}`;
  expect(Buffer.byteLength(body)).toBeLessThan(256 * 1024);
  const reply = await request(rest.url, 'POST', '/admin/couriers', {
    headers: { ...adminHeaders, 'content-type': 'application/json' },
    raw: body,
  });
  expectErrorEnvelope(reply, 413);
  expect(reply.body.message).toMatch(/too large once read/);
}, 60_000);
