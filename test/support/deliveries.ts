import { randomUUID } from 'node:crypto';
import { latestProofCode } from '../../services/order/notifications';
import { adminHeaders, request } from './http';

/** Ikeja to Lekki: a Lagos trip every tariff in the seed prices. */
export const ORIGIN = { lat: 6.6018, lon: 3.3515, address: 'Allen Avenue, Ikeja, Lagos' };
export const DESTINATION = {
  address: 'Admiralty Way, Lekki, Lagos',
  lat: 6.4474,
  lon: 3.4723,
  contactName: 'Ada Obi',
  contactPhone: '+2348031234567',
  contactEmail: 'ada@example.com',
};

/** The steps of a delivery taken to the door, in order, as `deliverySteps` lists them. */
export const DELIVERED_STEPS = [
  'REQUEST_CREATED',
  'COURIER_ASSIGNED',
  'ARRIVED_AT_PICKUP',
  'COLLECTED',
  'IN_TRANSIT',
  'ARRIVED_AT_DROPOFF',
  'DELIVERED',
];

export interface Party {
  key: string;
  userId: string;
}

/** A call of the API with `who`'s key. */
export function callAs(base: string, who: Party, method: string, path: string, json?: unknown) {
  return request(base, method, path, { headers: { 'api-key': who.key }, json });
}

/** A saved package of `who`'s: its id. */
export async function savePackage(
  base: string,
  who: Party,
  fields: Record<string, unknown> = {},
): Promise<string> {
  const reply = await request(base, 'POST', '/api/package', {
    headers: { 'api-key': who.key },
    json: {
      packageType: 'Parcel',
      name: 'Box',
      quantity: 1,
      size: 'SMALL',
      value: 5000,
      ...fields,
    },
  });
  if (reply.status !== 201) throw new Error(`save package: ${reply.status} ${reply.text}`);
  return reply.body.data.id;
}

/** Credits `who`'s wallet through the admin API. */
export async function credit(base: string, who: Party, amount: number | string): Promise<void> {
  const reply = await request(base, 'POST', `/admin/users/${who.userId}/wallet/credit`, {
    headers: adminHeaders,
    json: { amount: Number(amount), reference: `test-${randomUUID()}` },
  });
  if (reply.status !== 200 && reply.status !== 201) {
    throw new Error(`credit: ${reply.status} ${reply.text}`);
  }
}

export async function balanceOf(base: string, who: Party): Promise<string> {
  const reply = await request(base, 'GET', '/api/wallet', { headers: { 'api-key': who.key } });
  return reply.body.data.balance;
}

/** A delivery request of `who`'s for these packages, with the body's other fields. */
export function requestDelivery(
  base: string,
  who: Party,
  packagesId: string[],
  fields: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) {
  // The answer's type is `request`'s default: tests read arbitrary JSON.
  return request(base, 'POST', '/api/request', {
    headers: { 'api-key': who.key, ...headers },
    json: {
      origin: ORIGIN,
      destination: DESTINATION,
      packagesId,
      type: 'DROP_OFF',
      courierSelection: 'ANYONE',
      ...fields,
    },
  });
}

export function getDelivery(base: string, who: Party, deliveryId: string) {
  return request(base, 'GET', `/api/deliveries/${deliveryId}`, {
    headers: { 'api-key': who.key },
  });
}

export function cancelDelivery(base: string, who: Party, deliveryId: string) {
  return request(base, 'POST', `/api/request/${deliveryId}/cancel`, {
    headers: { 'api-key': who.key },
  });
}

/** The ids of `who`'s packages that no delivery holds. */
export async function freePackages(base: string, who: Party): Promise<string[]> {
  const reply = await request(base, 'GET', '/api/packages', { headers: { 'api-key': who.key } });
  return (reply.body.data as { id: string }[]).map((p) => p.id);
}

export async function ledgerIsClean(base: string): Promise<boolean> {
  const reply = await request(base, 'GET', '/admin/ledger/verify', { headers: adminHeaders });
  return reply.body.data.clean === true;
}

/** The wallet's entries, newest first. */
export async function entriesOf(base: string, who: Party) {
  const reply = await request(base, 'GET', '/api/wallet/transactions?limit=100', {
    headers: { 'api-key': who.key },
  });
  return reply.body.data as {
    type: string;
    amount: string;
    reference: string;
    description: string | null;
  }[];
}

export async function notificationsOf(base: string, deliveryId: string) {
  const reply = await request(base, 'GET', `/admin/notifications?deliveryId=${deliveryId}`, {
    headers: adminHeaders,
  });
  return reply.body.data as {
    channel: string;
    purpose: string;
    recipient: string;
    text: string | null;
    status: string;
  }[];
}

/** The proof code last sent to a stop's contact by SMS (staging shows the texts). */
export async function proofCodeSent(
  base: string,
  deliveryId: string,
  purpose: 'COLLECTION_CODE' | 'DELIVERY_CODE' | 'RETURN_CODE',
): Promise<string> {
  const type = (
    { COLLECTION_CODE: 'COLLECTION', DELIVERY_CODE: 'DELIVERY', RETURN_CODE: 'RETURN' } as const
  )[purpose];
  return latestProofCode(await notificationsOf(base, deliveryId), type) as string;
}
