import { createUserWithKey, expectErrorEnvelope, request } from '../support/http';
import { credit, DESTINATION, ORIGIN, requestDelivery, savePackage } from '../support/deliveries';
import { eventually } from '../support/eventually';
import { largestAddressInput, LARGEST_REQUEST_TEXTS } from '../support/largest-address';
import { dropDatabases, isolation, startNode, type NodeProcess } from '../support/stack';
import { DELIVERIES_ALWAYS_FIT } from '../../services/order/schemas';
import { ADDRESS_TEXT_LIMITS } from '../../libs/contracts/geo';
import { widest } from '../support/message-size';

/**
 * The order service in its own process, so its answers cross NATS (1 MB per message): a page
 * of deliveries whose every text is at its limit (some 40 KB each) is answered up to the limit
 * that fits, and a larger page is a 400 naming that limit, not a reply that never arrives.
 */
const iso = isolation();
const env = { QUOTA_LIMIT: '100000' };
const CREATED = 30;
let gateway: NodeProcess;
let order: NodeProcess;

beforeAll(async () => {
  [gateway, order] = await Promise.all([
    startNode({
      services: 'gateway,account,geo,pricing,package,file,payment,courier-matching,webhook',
      iso,
      env,
    }),
    startNode({ services: 'order', iso, env }),
  ]);
});

afterAll(async () => {
  await Promise.all([gateway?.stop(), order?.stop()]);
  await dropDatabases(iso);
});

it('answers the largest deliveries a page at a time, and names the limit that fits', async () => {
  const merchant = await createUserWithKey(gateway.url);
  await credit(gateway.url, merchant, 1_000_000);
  const largest = {
    ...LARGEST_REQUEST_TEXTS,
    origin: largestAddressInput(ORIGIN.lat, ORIGIN.lon),
    destination: largestAddressInput(DESTINATION.lat, DESTINATION.lon),
  };
  const send = async () => {
    const packageId = await savePackage(gateway.url, merchant);
    return requestDelivery(gateway.url, merchant, [packageId], largest);
  };
  // The gateway learns of the other process's services within moments.
  await eventually(async () => expect((await send()).status).toBe(201), {
    timeout: 15_000,
    interval: 200,
  });
  for (let sent = 1; sent < CREATED; sent += 5) {
    const replies = await Promise.all(Array.from({ length: Math.min(5, CREATED - sent) }, send));
    for (const reply of replies) expect(reply.status).toBe(201);
  }

  const list = (query: string) =>
    request(gateway.url, 'GET', `/api/deliveries?${query}`, {
      headers: { 'api-key': merchant.key },
    });
  const refused = await list(`limit=${CREATED}`);
  expectErrorEnvelope(refused, 400, /too large to answer at once; ask for them with limit=\d+/);
  const fit = Number(/limit=(\d+) or less/.exec(refused.body.message)?.[1]);
  expect(fit).toBeGreaterThanOrEqual(DELIVERIES_ALWAYS_FIT);
  expect(fit).toBeLessThan(CREATED);
  expect(refused.body.errors).toEqual([
    { field: 'limit', message: expect.stringMatching(/limit=/) },
  ]);

  // Page by page at that limit, every delivery once.
  const first = await list(`limit=${fit}`);
  expect(first.status).toBe(200);
  expect(first.body.data).toHaveLength(fit);
  expect(first.body.data[0].destination.addressLine1).toBe(
    widest(ADDRESS_TEXT_LIMITS.addressLine1),
  );
  expect(first.body.data[0].note).toBe(largest.note);
  const rest = await list(`limit=${fit}&offset=${fit}`);
  expect(rest.status).toBe(200);
  const ids = [...first.body.data, ...rest.body.data].map((d: { id: string }) => d.id);
  expect(new Set(ids).size).toBe(CREATED);

  const always = await list(`limit=${DELIVERIES_ALWAYS_FIT}`);
  expect(always.status).toBe(200);
  expect(always.body.data).toHaveLength(DELIVERIES_ALWAYS_FIT);
}, 120_000);
