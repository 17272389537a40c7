import { credit, getDelivery, requestDelivery, savePackage } from '../support/deliveries';
import { eventually } from '../support/eventually';
import { adminHeaders, createUserWithKey, request } from '../support/http';
import { useMerchantStack } from '../support/merchant-stack';

/**
 * The sandbox simulator drives its virtual courier at the delivery's fleet speed, read from geo
 * once and kept: an operator's change of the speed (geo's broadcast) is read again at the next
 * step, not at the next restart of order.
 */
const stack = useMerchantStack({
  internal: ['courier-matching'],
  env: {
    // At 200 km/h a 25 km trip takes about a second; at 1 km/h, over two minutes.
    SIMULATOR_TIME_SCALE: '600',
    MATCHING_SWEEP_INTERVAL_MS: '200',
    ORDER_SWEEP_INTERVAL_MS: '500',
  },
});
const base = () => stack.node.url;
const admin = (method: string, path: string, json?: unknown) =>
  request(base(), method, path, { headers: adminHeaders, json });

/** Every fleet type at `averageSpeedKmh`: whichever the delivery is priced on. */
async function everyFleetAt(averageSpeedKmh: number) {
  const types = (await admin('GET', '/admin/fleet-types')).body.data as { id: string }[];
  for (const { id } of types) {
    expect((await admin('PATCH', `/admin/fleet-types/${id}`, { averageSpeedKmh })).status).toBe(
      200,
    );
  }
}

it("drives a simulated delivery at its fleet's speed as changed since the run began", async () => {
  await everyFleetAt(1);
  const merchant = await createUserWithKey(base());
  await credit(base(), merchant, 100_000);
  const packageId = await savePackage(base(), merchant);
  const created = await requestDelivery(
    base(),
    merchant,
    [packageId],
    {},
    {
      'Waybill-Simulate': 'delivered',
    },
  );
  expect(created.status).toBe(201);
  const deliveryId = created.body.data.deliveryId as string;
  // The virtual courier under way at walking pace: its speed read and kept.
  await eventually(
    async () => {
      const got = (await getDelivery(base(), merchant, deliveryId)).body.data;
      expect(got.courier?.currentLocation).toBeTruthy();
    },
    { timeout: 20_000, interval: 200 },
  );
  await everyFleetAt(200);
  await eventually(
    async () => {
      const got = (await getDelivery(base(), merchant, deliveryId)).body.data;
      expect(got.status).toBe('DELIVERED');
    },
    { timeout: 40_000, interval: 250 },
  );
}, 90_000);
