import { randomUUID } from 'node:crypto';
import { pagePath, postForm } from '../support/checkout';
import {
  callAs,
  cancelDelivery,
  credit,
  DESTINATION,
  getDelivery,
  type Party,
  requestDelivery,
  savePackage,
} from '../support/deliveries';
import { eventually } from '../support/eventually';
import { adminHeaders, expectErrorEnvelope, request } from '../support/http';
import { useMerchantStack } from '../support/merchant-stack';
import { FAST_WEBHOOKS, useWebhookReceiver, type Received } from '../support/webhook-receiver';

/**
 * `link3rdPartyByContactInfo` (the spec): a delivery whose recipient contact is another
 * account's is linked to that account through the gateway. The recipient reads it, lists it and
 * hears of it at their webhooks; only its creator changes it; nobody else sees it.
 */
const stack = useMerchantStack({ internal: [], env: { ...FAST_WEBHOOKS } });
const base = () => stack.node.url;
const receiver = useWebhookReceiver();

const api = (who: Party, method: string, path: string, json?: unknown) =>
  callAs(base(), who, method, path, json);

/** An account with its own e-mail and phone, a key and a webhook endpoint at `/<name>`. */
async function account(name: string, phone: string) {
  const email = `${name}-${randomUUID().slice(0, 8)}@example.com`;
  const user = await request(base(), 'POST', '/admin/users', {
    headers: adminHeaders,
    json: { name, email, phone },
  });
  expect(user.status).toBe(201);
  const key = await request(base(), 'POST', `/admin/users/${user.body.data.id}/api-keys`, {
    headers: adminHeaders,
    json: {},
  });
  expect(key.status).toBe(201);
  const party: Party = { userId: user.body.data.id, key: key.body.data.key };
  const endpoint = await api(party, 'POST', '/api/webhooks', { url: receiver.url(`/${name}`) });
  expect(endpoint.status).toBe(201);
  return { ...party, email, phone, path: `/${name}` };
}

/** A wallet-paid delivery of `creator`'s to `contact`. */
async function deliveryTo(
  creator: Party,
  contact: { email: string; phone: string },
  fields: Record<string, unknown> = { link3rdPartyByContactInfo: true },
) {
  const created = await requestDelivery(base(), creator, [await savePackage(base(), creator)], {
    destination: { ...DESTINATION, contactEmail: contact.email, contactPhone: contact.phone },
    ...fields,
  });
  expect(created.status).toBe(201);
  return created.body.data.deliveryId as string;
}

/** What the creator's view has and the recipient's has not (the creator pays here). */
const CREATORS_OWN = [
  'apiKeyId',
  'baseOrDistanceFee',
  'deliveryFee',
  'deliveryFeeTotal',
  'fleetFee',
  'hubCommission',
  'insuranceFee',
  'paymentMethodType',
  'serviceFee',
  'surchargeFee',
  'tariffVersion',
  'tierIds',
  'userId',
  'weightFee',
];

const idsOf = (reply: { body: { data: { id: string }[] } }) => reply.body.data.map((d) => d.id);
const eventsOf = (received: Received[], deliveryId: string) =>
  received
    .filter((r) => r.event.data.id === deliveryId && r.event.type !== 'courier.location')
    .map((r) => [r.event.type, r.event.role]);

describe('a delivery linked to its recipient’s account', () => {
  let creator: Awaited<ReturnType<typeof account>>;
  let recipient: Awaited<ReturnType<typeof account>>;

  beforeAll(async () => {
    creator = await account('creator', '+2348035550001');
    recipient = await account('recipient', '+2348035550002');
    await credit(base(), creator, 100_000);
  });

  it('is read, listed and told to the recipient; changed only by its creator', async () => {
    // The e-mail in another case is the same e-mail.
    const deliveryId = await deliveryTo(creator, {
      email: recipient.email.toUpperCase(),
      phone: '+2348035550099',
    });
    const read = await getDelivery(base(), recipient, deliveryId);
    expect(read.status).toBe(200);
    expect(read.body.data).toMatchObject({ id: deliveryId, status: 'REQUEST_CREATED' });
    expect(read.body.data.destination.contactEmail).toBe(recipient.email);
    // The creator's account, key, tariff and prices are the creator's.
    const own = await getDelivery(base(), creator, deliveryId);
    expect(own.body.data).toMatchObject({ userId: creator.userId, tierIds: expect.any(Object) });
    const hidden = Object.keys(own.body.data).filter((field) => !(field in read.body.data));
    expect(hidden.sort()).toEqual(CREATORS_OWN);
    expect(read.body.data.p2pDelivery).not.toHaveProperty('userId');
    expect(read.body.data.p2pDelivery).not.toHaveProperty('profileId');
    // Of who pays, their own share only.
    expect(own.body.data.payment.creator).toMatchObject({ paymentRequired: true, paid: true });
    expect(read.body.data.payment).toEqual({ recipient: own.body.data.payment.recipient });

    expect(idsOf(await api(recipient, 'GET', '/api/deliveries?role=RECIPIENT'))).toEqual([
      deliveryId,
    ]);
    const open = await api(
      recipient,
      'GET',
      '/api/deliveries?role=RECIPIENT&status=REQUEST_CREATED',
    );
    expect(idsOf(open)).toEqual([deliveryId]);
    // Not the recipient's own, nor linked to its creator.
    expect(idsOf(await api(recipient, 'GET', '/api/deliveries'))).toEqual([]);
    expect(idsOf(await api(creator, 'GET', '/api/deliveries?role=RECIPIENT'))).toEqual([]);

    const refused = await cancelDelivery(base(), recipient, deliveryId);
    expectErrorEnvelope(refused, 403, /^Only the creator of this delivery can change it/);
    expect((await cancelDelivery(base(), creator, deliveryId)).status).toBe(201);

    const listed = (status: string) =>
      api(recipient, 'GET', `/api/deliveries?role=RECIPIENT&status=${status}`).then(idsOf);
    expect(await listed('CANCELLED')).toEqual([deliveryId]);
    expect(await listed('REQUEST_CREATED')).toEqual([]);

    const told = [
      ['delivery.created', 'RECIPIENT'],
      ['delivery.paid', 'RECIPIENT'],
      ['delivery.cancelled', 'RECIPIENT'],
    ];
    await eventually(
      () => {
        expect(eventsOf(receiver.at(recipient.path), deliveryId)).toEqual(told);
        expect(eventsOf(receiver.at(creator.path), deliveryId)).toEqual(
          told.map(([type]) => [type, 'CREATOR']),
        );
      },
      { timeout: 15_000, interval: 100 },
    );
    const [toRecipient] = receiver.at(recipient.path).filter((r) => r.event.data.id === deliveryId);
    const [toCreator] = receiver.at(creator.path).filter((r) => r.event.data.id === deliveryId);
    expect(toCreator.event.data).toMatchObject({
      userId: creator.userId,
      apiKeyId: expect.any(String),
    });
    for (const field of CREATORS_OWN) expect(toRecipient.event.data).not.toHaveProperty(field);
  });

  it('is not the business of anyone else, nor of the recipient without the flag', async () => {
    const linked = await deliveryTo(creator, recipient);
    const unlinked = await deliveryTo(creator, recipient, {});
    expect((await getDelivery(base(), stack.bob, linked)).status).toBe(404);
    expectErrorEnvelope(
      await getDelivery(base(), recipient, unlinked),
      404,
      'Delivery request not found',
    );
    const mine = await api(recipient, 'GET', '/api/deliveries?role=RECIPIENT&limit=100');
    expect(idsOf(mine)).toContain(linked);
    expect(idsOf(mine)).not.toContain(unlinked);
  });

  it('links by a phone only one account has, never by one accounts share, never to its creator', async () => {
    const byPhone = await deliveryTo(creator, {
      email: 'not-an-account@example.com',
      phone: recipient.phone,
    });
    expect((await getDelivery(base(), recipient, byPhone)).status).toBe(200);

    // Every account the stack made for its merchants has the same phone.
    const shared = await deliveryTo(creator, {
      email: 'not-an-account@example.com',
      phone: '+2348012345678',
    });
    expect((await getDelivery(base(), stack.alice, shared)).status).toBe(404);
    expect((await getDelivery(base(), stack.bob, shared)).status).toBe(404);

    const toSelf = await deliveryTo(creator, creator);
    expect(
      idsOf(await api(creator, 'GET', '/api/deliveries?role=RECIPIENT&limit=100')),
    ).not.toContain(toSelf);
  });

  it('is linked once however often its request is sent at once under one Idempotency-Key', async () => {
    const packageId = await savePackage(base(), creator);
    const key = `link-${randomUUID()}`;
    const replies = await Promise.all(
      Array.from({ length: 6 }, () =>
        requestDelivery(
          base(),
          creator,
          [packageId],
          {
            destination: { ...DESTINATION, contactEmail: recipient.email },
            link3rdPartyByContactInfo: true,
          },
          { 'Idempotency-Key': key },
        ),
      ),
    );
    const created = replies.filter((r) => r.status === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    // The others were told the first is still under way (409), never a second delivery.
    for (const reply of replies.filter((r) => r.status !== 201)) expect(reply.status).toBe(409);
    const deliveryIds = new Set(created.map((r) => r.body.data.deliveryId as string));
    expect(deliveryIds.size).toBe(1);
    const [deliveryId] = [...deliveryIds];
    const linked = await api(recipient, 'GET', '/api/deliveries?role=RECIPIENT&limit=100');
    expect(idsOf(linked).filter((id) => id === deliveryId)).toHaveLength(1);
    const open = await api(
      recipient,
      'GET',
      '/api/deliveries?role=RECIPIENT&status=REQUEST_CREATED&limit=100',
    );
    expect(idsOf(open).filter((id) => id === deliveryId)).toHaveLength(1);
  });

  it('tells the recipient of the delivery, not of the creator’s payment', async () => {
    const created = await requestDelivery(base(), creator, [await savePackage(base(), creator)], {
      destination: { ...DESTINATION, contactEmail: recipient.email },
      link3rdPartyByContactInfo: true,
      paymentMethodType: 'CHECKOUT',
    });
    expect(created.status).toBe(201);
    const deliveryId = (created.headers.get('location') as string).split('/').pop() as string;
    const page = pagePath(created.body.data.data.authorization_url);
    expect((await postForm(base(), `${page}/decline`)).status).toBe(303);
    await eventually(
      () => {
        expect(eventsOf(receiver.at(creator.path), deliveryId)).toEqual([
          ['delivery.created', 'CREATOR'],
          ['payment.failed', 'CREATOR'],
          ['delivery.cancelled', 'CREATOR'],
        ]);
        expect(eventsOf(receiver.at(recipient.path), deliveryId)).toEqual([
          ['delivery.created', 'RECIPIENT'],
          ['delivery.cancelled', 'RECIPIENT'],
        ]);
      },
      { timeout: 20_000, interval: 200 },
    );
    // The creator's link to pay goes to the creator's endpoint, never to the recipient's.
    const createdFor = (path: string) =>
      receiver
        .at(path)
        .find((r) => r.event.data.id === deliveryId && r.event.type === 'delivery.created')?.event
        .data as { payment: Record<string, unknown> };
    expect(createdFor(creator.path).payment.creator).toMatchObject({
      checkoutUrl: created.body.data.data.authorization_url,
    });
    expect(Object.keys(createdFor(recipient.path).payment)).toEqual(['recipient']);
  });
});
