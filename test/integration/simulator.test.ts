import { randomUUID } from 'node:crypto';
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
import { createUserWithKey, expectErrorEnvelope } from '../support/http';
import { useMerchantStack } from '../support/merchant-stack';

/**
 * The sandbox simulator (issue 13) through the gateway: a staging request with
 * `Waybill-Simulate` is taken to the door by a virtual courier, or fails on the way, or finds
 * nobody, at SIMULATOR_TIME_SCALE times real speed, every step visible on
 * GET /api/deliveries/:deliveryId (live refuses the header: live.test.ts).
 */
const stack = useMerchantStack({
  internal: [],
  env: {
    // A 25 km trip takes about 5 s, the 15 min search about 1.5 s.
    SIMULATOR_TIME_SCALE: '600',
    MATCHING_SWEEP_INTERVAL_MS: '200',
    ORDER_SWEEP_INTERVAL_MS: '500',
  },
});
const base = () => stack.node.url;

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
    for (const proof of last.proofs) {
      expect(proof).toMatchObject({
        code: expect.stringMatching(/^\d{6}$/),
        scannedAt: expect.any(String),
      });
    }
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
    // The trip was made: the fee is kept; the packages are free again.
    expect(last.p2pDelivery.status).toBe('COMPLETED');
    // Released by the transition's effects, a moment after its status shows.
    await eventually(async () => expect(await freePackages(base(), merchant)).toContain(packageId));
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
