import { requestDelivery, savePackage, type Party } from './deliveries';
import { eventually } from './eventually';
import { adminHeaders, request } from './http';

/** A courier of the directory with a token of the courier app. */
export interface Courier {
  id: string;
  token: string;
}

export interface Offer {
  id: string;
  deliveryId: string;
  pickup: { lat: number; lon: number };
  dropoff: { lat: number; lon: number };
  totalWeight: string;
}

let plates = 0;

const adminOf = (base: string) => (method: string, path: string, json?: unknown) =>
  request(base, method, path, { headers: adminHeaders, json });

/** A new courier of the directory, of that fleet type (by code): its id. */
export async function newCourier(base: string, fleetCode = 'bike'): Promise<string> {
  const admin = adminOf(base);
  const types = (await admin('GET', '/admin/fleet-types')).body.data as {
    id: string;
    code: string;
  }[];
  const created = await admin('POST', '/admin/couriers', {
    name: 'Tunde Bakare',
    phone: '+2348031234567',
    fleet: {
      typeId: types.find((t) => t.code === fleetCode)?.id,
      regNo: `RUN-${process.pid % 1000}-${++plates}`,
      make: 'Bajaj',
      model: 'Boxer',
      colour: 'Red',
    },
  });
  if (created.status !== 201) throw new Error(`courier: ${created.status} ${created.text}`);
  return created.body.data.id as string;
}

/** A new courier of that fleet type (by code) with a token, through the admin API at `base`. */
export async function courierWithToken(base: string, fleetCode = 'bike'): Promise<Courier> {
  const id = await newCourier(base, fleetCode);
  const token = await adminOf(base)('POST', `/admin/couriers/${id}/tokens`);
  if (token.status !== 201) throw new Error(`token: ${token.status} ${token.text}`);
  return { id, token: token.body.data.token as string };
}

/**
 * A new courier of that fleet type (by code) with a token, reporting from `at`: through the
 * admin API and the courier API of the gateway at `base`.
 */
export async function courierAt(
  base: string,
  at: { lat: number; lon: number },
  fleetCode = 'bike',
): Promise<Courier> {
  const courier = await courierWithToken(base, fleetCode);
  const reported = await asCourier(base, courier, 'POST', '/courier/location', at);
  if (reported.status !== 200) throw new Error(`location: ${reported.status} ${reported.text}`);
  return courier;
}

/** A call of the courier app, with the courier's token. */
export const asCourier = (
  base: string,
  courier: Courier,
  method: string,
  path: string,
  json?: unknown,
) => request(base, method, path, { headers: { authorization: `Bearer ${courier.token}` }, json });

/** The courier's open offer, once it comes. */
export async function offerOf(base: string, courier: Courier, timeout = 15_000): Promise<Offer> {
  let offer: Offer | undefined;
  await eventually(
    async () => {
      const reply = await asCourier(base, courier, 'GET', '/courier/offers');
      expect(reply.status).toBe(200);
      expect(reply.body.data).toHaveLength(1);
      offer = reply.body.data[0];
    },
    { timeout, interval: 250 },
  );
  return offer as Offer;
}

/**
 * A delivery of one new package of the merchant's, requested and offered to `courier` (who
 * must be its nearest free courier): its id and the offer.
 */
export async function offeredDelivery(
  base: string,
  merchant: Party,
  courier: Courier,
): Promise<{ deliveryId: string; offer: Offer }> {
  const packageId = await savePackage(base, merchant);
  const created = await requestDelivery(base, merchant, [packageId]);
  expect(created.status).toBe(201);
  const deliveryId = created.body.data.deliveryId as string;
  const offer = await offerOf(base, courier);
  expect(offer.deliveryId).toBe(deliveryId);
  return { deliveryId, offer };
}

/** The courier accepts the offer: the answer, 200 expected. */
export async function acceptOffer(base: string, courier: Courier, offer: Offer) {
  const accepted = await asCourier(base, courier, 'POST', `/courier/offers/${offer.id}/accept`);
  expect(accepted.status).toBe(200);
  return accepted;
}

/** A delivery offered to `courier` (`offeredDelivery`) and accepted: its id. */
export async function acceptedDelivery(
  base: string,
  merchant: Party,
  courier: Courier,
): Promise<string> {
  const { deliveryId, offer } = await offeredDelivery(base, merchant, courier);
  await acceptOffer(base, courier, offer);
  return deliveryId;
}
