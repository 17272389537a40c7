import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import {
  DELIVERY_CANCELLED_EVENT,
  DELIVERY_CREATED_EVENT,
  DELIVERY_PAID_EVENT,
  type DeliveryEventPayload,
} from '../../libs/contracts/order';
import { call } from '../../libs/contracts';
import { openServiceDatabase } from '../support/stack';
import { OwnerList } from '../../libs/owner-list';
import { defineOrderModels } from '../../services/order/store';
import { adminHeaders, createUserWithKey, expectErrorEnvelope, request } from '../support/http';
import { postForm, pagePath } from '../support/checkout';
import {
  balanceOf,
  cancelDelivery,
  credit,
  DESTINATION,
  entriesOf,
  freePackages,
  getDelivery,
  ledgerIsClean,
  notificationsOf,
  ORIGIN,
  requestDelivery,
  savePackage,
  type Party,
} from '../support/deliveries';
import { eventually } from '../support/eventually';
import { useMerchantStack } from '../support/merchant-stack';

/**
 * Delivery requests (issue 12) through the gateway, every service in one process on the real
 * FerretDB, NATS and Redis: creation paid by wallet or checkout, every field and default,
 * the errors, cancellation, and the races with exact counts.
 */
/** Every delivery event the order service broadcasts, by name, as a consumer hears them. */
const heard: { name: string; payload: DeliveryEventPayload }[] = [];
const listen = (name: string) => ({
  handler: (ctx: { params: DeliveryEventPayload }) =>
    void heard.push({ name, payload: ctx.params }),
});
const stack = useMerchantStack({
  internal: ['order', 'payment'],
  own: [
    {
      name: 'delivery-event-probe',
      events: {
        [DELIVERY_CREATED_EVENT]: listen(DELIVERY_CREATED_EVENT),
        [DELIVERY_PAID_EVENT]: listen(DELIVERY_PAID_EVENT),
        [DELIVERY_CANCELLED_EVENT]: listen(DELIVERY_CANCELLED_EVENT),
      },
    },
  ],
  env: {
    PAYMENT_SWEEP_INTERVAL_MS: '200',
    PAYMENT_EVENT_RETRY_MS: '500',
    ORDER_SWEEP_INTERVAL_MS: '500',
    // The races send 200 requests at once to one SQLite-backed FerretDB on a shared machine;
    // what they assert is counts, not speed (npm run bench:request measures that).
    REQUEST_TIMEOUT_MS: '180000',
    // Longer than that timeout, as the config requires: the sweep must not undo a request
    // that the races are still waiting for.
    ORDER_STALE_REQUEST_MS: '240000',
    STOP_GRACE_MS: '185000',
  },
});
const base = () => stack.node.url;

/** A new merchant with `amount` NGN in the wallet. */
async function merchant(amount = 100_000): Promise<Party & { keyId: string }> {
  const who = await createUserWithKey(base());
  if (amount > 0) await credit(base(), who, amount);
  return who;
}

/** POST /api/pricing Mode A for these packages, as the request prices them. */
async function modeA(who: Party, packagesId: string[], fields: Record<string, unknown> = {}) {
  const reply = await request(base(), 'POST', '/api/pricing', {
    headers: { 'api-key': who.key },
    json: { origin: ORIGIN, destination: DESTINATION, packagesId, ...fields },
  });
  expect(reply.status).toBe(200);
  return reply.body.data;
}

describe('POST /api/request paid from the wallet', () => {
  it('creates the delivery with every field, priced exactly as Mode A, and debits the total once', async () => {
    const who = await merchant();
    const packagesId = [
      await savePackage(base(), who, { value: 12000.5, size: 'MEDIUM', quantity: 2 }),
      await savePackage(base(), who),
    ];
    const quote = await modeA(who, packagesId);
    const reply = await requestDelivery(base(), who, packagesId, { note: 'Fragile' });
    expect(reply.status).toBe(201);
    const data = reply.body.data;
    expect(reply.headers.get('location')).toBe(`/api/deliveries/${data.deliveryId}`);

    // The P2P record's fields, then the delivery, the fee block and the flags.
    expect(data).toMatchObject({
      id: expect.any(String),
      deliveryId: expect.any(String),
      userId: who.userId,
      profileId: expect.any(String),
      type: 'DROP_OFF',
      status: 'PENDING',
      totalWeight: quote.deliveryCost.totalWeight.toFixed(5),
      totalValue: '17000.50',
      deletedAt: null,
      matchingEligible: true,
    });
    expect(data.payOnDelivery).toBeUndefined();
    expect(data.deliveryFee).toEqual({
      ...quote.deliveryFee,
      creator: { ...quote.deliveryFee.creator, paid: true },
    });
    const { costs } = quote.deliveryCost;
    expect(data.delivery).toMatchObject({
      id: data.deliveryId,
      userId: who.userId,
      apiKeyId: who.keyId,
      type: 'P2P',
      status: 'REQUEST_CREATED',
      trackingId: expect.stringMatching(/^P2P-[0-9A-HJKMNP-TV-Z]{12}$/),
      routeType: quote.deliveryCost.routeType,
      fleetTypeId: quote.deliveryCost.fleetType.id,
      distanceKm: quote.deliveryCost.distance.distanceKm,
      etaSeconds: quote.deliveryCost.distance.etaSeconds,
      deliveryFee: costs.deliverySubtotal,
      deliveryFeeTotal: costs.total,
      serviceFee: costs.serviceFee,
      weightFee: costs.weight,
      fleetFee: costs.fleet,
      surchargeFee: costs.surcharge,
      insuranceFee: costs.insurance,
      baseOrDistanceFee: costs.base,
      tierIds: quote.deliveryCost.tierIds,
      tariffVersion: quote.deliveryCost.tariffVersion,
      deliveryFeePayer: 'CREATOR',
      courierMatching: 'ANYONE',
      requireCollectionProofCode: true,
      requireDeliveryProofCode: true,
      link3rdPartyByContactInfo: false,
      urgencyType: 'STANDARD',
      note: 'Fragile',
      fleetType: quote.deliveryCost.fleetType,
    });
    expect(data.delivery.courier).toBeUndefined();
    expect(data.delivery.origin).toMatchObject({
      id: expect.any(String),
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      // Present on addresses stored on deliveries (the spec), never set.
      deletedAt: null,
      lat: ORIGIN.lat,
      lon: ORIGIN.lon,
      country: 'Nigeria',
      contactName: 'Test Merchant',
      contactPhone: '+2348012345678',
    });
    expect(data.delivery.destination).toMatchObject({
      deletedAt: null,
      contactName: DESTINATION.contactName,
      contactPhone: DESTINATION.contactPhone,
      contactEmail: DESTINATION.contactEmail,
    });
    expect(data.delivery.proofs.map((p: { type: string }) => p.type).sort()).toEqual([
      'COLLECTION',
      'DELIVERY',
    ]);
    for (const proof of data.delivery.proofs) {
      expect(proof).toMatchObject({ code: null, isActive: true, scannedAt: null });
    }
    expect(data.delivery.deliverySteps).toEqual([
      {
        id: expect.any(String),
        step: 'REQUEST_CREATED',
        active: true,
        updatedAt: expect.any(String),
      },
    ]);

    // Charged once, the total; the packages are no longer free.
    const entries = await entriesOf(base(), who);
    expect(entries.filter((e) => e.reference === data.deliveryId)).toEqual([
      expect.objectContaining({ type: 'DEBIT', amount: `-${costs.total}` }),
    ]);
    expect(await freePackages(base(), who)).toEqual([]);

    // GET answers the same delivery with its P2P record; another user gets 404.
    const got = await getDelivery(base(), who, data.deliveryId);
    expect(got.status).toBe(200);
    expect(got.body.data).toMatchObject({ ...data.delivery, updatedAt: expect.any(String) });
    expect(got.body.data.p2pDelivery).toMatchObject({ id: data.id, status: 'PENDING' });
    expectErrorEnvelope(
      await getDelivery(base(), stack.bob, data.deliveryId),
      404,
      'Delivery request not found',
    );
    expectErrorEnvelope(await getDelivery(base(), who, randomUUID()), 404);
    // The saved origin resolves as an address input for its owner only, its place without
    // the contacts of the delivery it was saved from: contacts appear only where sent.
    const route = (key: string, sent: Record<string, string> = {}) =>
      request(base(), 'POST', '/api/route', {
        headers: { 'api-key': key },
        json: { origin: { id: data.delivery.origin.id, ...sent }, destination: 'Wuse 2, Abuja' },
      });
    expect(data.delivery.origin.contactName).toEqual(expect.any(String));
    const routed = (await route(who.key)).body.data.origin;
    expect(routed.lat).toBe(ORIGIN.lat);
    for (const field of ['contactName', 'contactPhone', 'contactEmail', 'note']) {
      expect(routed).not.toHaveProperty(field);
    }
    const withContact = await route(who.key, { contactName: 'Ngozi', additionalNote: 'Gate 2' });
    expect(withContact.body.data.origin).toMatchObject({ contactName: 'Ngozi', note: 'Gate 2' });
    expect(withContact.body.data.origin).not.toHaveProperty('contactPhone');
    expect((await route(stack.bob.key)).status).toBe(400);
  });

  it('takes a saved address of the caller’s as a stop, by its id', async () => {
    const who = await merchant();
    const first = (await requestDelivery(base(), who, [await savePackage(base(), who)])).body.data;
    const reply = await requestDelivery(base(), who, [await savePackage(base(), who)], {
      origin: { id: first.delivery.origin.id },
    });
    expect(reply.status).toBe(201);
    expect(reply.body.data.delivery.origin).toMatchObject({ lat: ORIGIN.lat, lon: ORIGIN.lon });
    expect(reply.body.data.delivery.origin.id).not.toBe(first.delivery.origin.id);
    // The stop as the delivery shows it, sent back whole: its note too.
    const noted = (
      await requestDelivery(base(), who, [await savePackage(base(), who)], {
        origin: { ...ORIGIN, additionalNote: 'Gate 2, ask for Musa' },
      })
    ).body.data.delivery.origin;
    expect(noted.note).toBe('Gate 2, ask for Musa');
    const again = await requestDelivery(base(), who, [await savePackage(base(), who)], {
      origin: noted,
    });
    expect(again.status).toBe(201);
    expect(again.body.data.delivery.origin).toMatchObject({
      lat: ORIGIN.lat,
      lon: ORIGIN.lon,
      note: 'Gate 2, ask for Musa',
    });
    // Another merchant cannot use it.
    const foreign = await requestDelivery(
      base(),
      stack.bob,
      [await savePackage(base(), stack.bob)],
      {
        origin: { id: first.delivery.origin.id },
      },
    );
    expectErrorEnvelope(foreign, 400);
  });

  it('sends proof codes through the outbox, shown to support in staging, and never stores them in the clear', async () => {
    const who = await merchant();
    const reply = await requestDelivery(base(), who, [await savePackage(base(), who)]);
    const deliveryId = reply.body.data.deliveryId;
    const messages = await notificationsOf(base(), deliveryId);
    expect(messages.map((m) => `${m.purpose}:${m.channel}:${m.recipient}`).sort()).toEqual([
      `COLLECTION_CODE:EMAIL:${(await request(base(), 'GET', `/admin/users/${who.userId}`, { headers: adminHeaders })).body.data.email}`,
      'COLLECTION_CODE:SMS:+2348012345678',
      `DELIVERY_CODE:EMAIL:${DESTINATION.contactEmail}`,
      `DELIVERY_CODE:SMS:${DESTINATION.contactPhone}`,
    ]);
    const codes = messages.map((m) => /code is (\d{6})/.exec(m.text ?? '')?.[1]);
    expect(codes.every(Boolean)).toBe(true);
    // The log sink sends them.
    await eventually(
      async () => {
        expect((await notificationsOf(base(), deliveryId)).every((m) => m.status === 'SENT')).toBe(
          true,
        );
      },
      { timeout: 20_000 },
    );
    // At rest the codes are only hashes: the delivery's document holds none of them.
    const db = await openServiceDatabase(stack.iso, 'order');
    const stored = await db.collection('deliveries').findOne({ _id: deliveryId as never });
    await db.close();
    expect(stored?.proofs).toHaveLength(2);
    for (const code of codes) expect(JSON.stringify(stored)).not.toContain(code);
  });

  it('lists none of another user’s deliveries, though a stale entry of their list names one', async () => {
    const who = await merchant();
    const reply = await requestDelivery(base(), who, [await savePackage(base(), who)]);
    expect(reply.status).toBe(201);
    const { deliveryId } = reply.body.data;
    const stranger = await createUserWithKey(base());
    const db = await openServiceDatabase(stack.iso, 'order');
    try {
      const models = defineOrderModels(db);
      await OwnerList.named(() => models, 'UserDelivery').addBeforeStoring(
        stranger.userId,
        deliveryId,
      );
    } finally {
      await db.close();
    }
    const listed = await request(base(), 'GET', '/api/deliveries', {
      headers: { 'api-key': stranger.key },
    });
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual([]);
    const own = await request(base(), 'GET', '/api/deliveries', {
      headers: { 'api-key': who.key },
    });
    expect(own.body.data.map((d: { id: string }) => d.id)).toEqual([deliveryId]);
  });

  it('applies defaults and aliases: notify3rdParty, slot (kept in its canonical spelling), contacts on the body, pay on delivery', async () => {
    const who = await merchant();
    const packageId = await savePackage(base(), who, { value: 7000 });
    const tomorrow = new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10);
    const reply = await requestDelivery(base(), who, [packageId], {
      destination: 'Admiralty Way, Lekki, Lagos',
      destinationContactName: 'Bola',
      destinationContactPhone: '+2348051234567',
      destinationContactEmail: 'bola@example.com',
      originContactName: 'Shop Desk',
      notify3rdParty: true,
      urgencyType: 'SCHEDULED',
      deliveryDate: tomorrow,
      slot: '09:00-12:00',
      requireCollectionProofCode: false,
      payOnDelivery: true,
      type: 'PICKUP',
    });
    expect(reply.status).toBe(201);
    const { data } = reply.body;
    expect(data.type).toBe('PICKUP');
    expect(data.payOnDelivery).toEqual({
      enabled: true,
      collectAmount: '7000.00',
      collectTarget: 'PACKAGE_VALUE',
      remitTo: 'MY_WALLET',
    });
    expect(data.delivery).toMatchObject({
      link3rdPartyByContactInfo: true,
      urgencyType: 'SCHEDULED',
      deliveryDate: `${tomorrow}T00:00:00.000Z`,
      deliverySlot: '09:00 - 12:00',
      requireCollectionProofCode: false,
      // Asked for by default, ignored with pay-on-delivery: the delivery requires none.
      requireDeliveryProofCode: false,
      payOnDelivery: true,
    });
    // No collection code asked for; the delivery code gives way to pay-on-delivery.
    expect(data.delivery.proofs).toEqual([]);
    expect(data.delivery.origin).toMatchObject({
      contactName: 'Shop Desk',
      contactPhone: '+2348012345678',
    });
    expect(data.delivery.destination).toMatchObject({
      contactName: 'Bola',
      contactEmail: 'bola@example.com',
    });
  });

  it.each([
    ['no recipient contact', { destination: 'Lekki, Lagos' }, 'destinationContactPhone'],
    ['a long note', { note: 'x'.repeat(129) }, 'note'],
    [
      'a phone outside E.164',
      { destinationContactPhone: '08031234567' },
      'destinationContactPhone',
    ],
    ['no courierSelection', { courierSelection: undefined }, 'courierSelection'],
    ['an unknown type', { type: 'COURIER' }, 'type'],
    ['SPECIFIC without a courier', { courierSelection: 'SPECIFIC' }, 'courierId'],
    ['a courier for ANYONE', { courierId: randomUUID() }, 'courierId'],
    [
      'SCHEDULED without a date',
      { urgencyType: 'SCHEDULED', deliverySlot: '09:00 - 12:00' },
      'deliveryDate',
    ],
    [
      'slot and deliverySlot disagreeing',
      {
        urgencyType: 'SCHEDULED',
        deliveryDate: '2030-01-02',
        slot: '09:00 - 12:00',
        deliverySlot: '13:00 - 15:00',
      },
      'slot',
    ],
    [
      'a courier wallet without its courier',
      { payOnDelivery: true, podRemitTo: 'COURIER_WALLET' },
      'podCourierProfileId',
    ],
    ['podRemitTo without pay on delivery', { podRemitTo: 'MY_WALLET' }, 'podRemitTo'],
    [
      'a pay-on-delivery courier when the money goes to my wallet',
      { payOnDelivery: true, podCourierProfileId: randomUUID() },
      'podCourierProfileId',
    ],
    ['a date without SCHEDULED', { deliveryDate: '2030-01-02' }, 'deliveryDate'],
    ['a slot without SCHEDULED', { urgencyType: 'PRIORITY', slot: '09:00 - 12:00' }, 'slot'],
    [
      'a date that is no calendar date',
      { urgencyType: 'SCHEDULED', deliveryDate: '2030-02-30', deliverySlot: '09:00 - 12:00' },
      'deliveryDate',
    ],
    [
      'a slot that ends before it starts',
      { urgencyType: 'SCHEDULED', deliveryDate: '2030-01-02', deliverySlot: '12:00 - 09:00' },
      'deliverySlot',
    ],
    ['an unknown payment method', { paymentMethodType: 'CASH' }, 'paymentMethodType'],
  ])('refuses %s with a 400 naming the field, and takes nothing', async (_, fields, field) => {
    const who = await merchant();
    const packageId = await savePackage(base(), who);
    const reply = await requestDelivery(base(), who, [packageId], fields);
    expectErrorEnvelope(reply, 400);
    expect((reply.body.errors as { field: string }[]).map((e) => e.field)).toContain(field);
    expect(await freePackages(base(), who)).toEqual([packageId]);
    expect(await balanceOf(base(), who)).toBe('100000.00');
  });
});

describe('refusals leave the packages free and the wallet untouched', () => {
  it('422 Insufficient balance', async () => {
    const who = await merchant(1);
    const packageId = await savePackage(base(), who);
    expectErrorEnvelope(
      await requestDelivery(base(), who, [packageId]),
      422,
      'Insufficient balance',
    );
    expect(await freePackages(base(), who)).toEqual([packageId]);
    expect(await balanceOf(base(), who)).toBe('1.00');
  });

  it('400 invalid packages selection', async () => {
    const who = await merchant();
    const reply = await requestDelivery(base(), who, [randomUUID()]);
    expectErrorEnvelope(reply, 400, 'Invalid packages selection');
    const foreign = await savePackage(base(), stack.bob);
    expectErrorEnvelope(
      await requestDelivery(base(), who, [foreign]),
      400,
      'Invalid packages selection',
    );
    expect(await freePackages(base(), stack.bob)).toContain(foreign);
  });

  it('400 origin and destination the same', async () => {
    const who = await merchant();
    const packageId = await savePackage(base(), who);
    const reply = await requestDelivery(base(), who, [packageId], {
      destination: { ...DESTINATION, lat: ORIGIN.lat, lon: ORIGIN.lon },
    });
    expectErrorEnvelope(reply, 400, /^Origin and destination (are|cannot be) the same$/);
    expect(await freePackages(base(), who)).toEqual([packageId]);
  });

  it('404 Fleet type not found', async () => {
    const who = await merchant();
    const packageId = await savePackage(base(), who);
    const reply = await requestDelivery(base(), who, [packageId], { fleetTypeId: randomUUID() });
    expectErrorEnvelope(reply, 404, 'Fleet type not found');
    expect(await freePackages(base(), who)).toEqual([packageId]);
    expect(await balanceOf(base(), who)).toBe('100000.00');
  });

  it('404 for a SPECIFIC courier that does not exist, and for no merchant couriers', async () => {
    const who = await merchant();
    const packageId = await savePackage(base(), who);
    expectErrorEnvelope(
      await requestDelivery(base(), who, [packageId], {
        courierSelection: 'SPECIFIC',
        courierId: randomUUID(),
      }),
      404,
      'Courier not found',
    );
    expectErrorEnvelope(
      await requestDelivery(base(), who, [packageId], {
        courierSelection: 'MERCHANT_SPECIAL_COURIERS',
      }),
      404,
      'No merchant-specific couriers found',
    );
    expect(await freePackages(base(), who)).toEqual([packageId]);
  });
});

describe('a COURIER_WALLET pay-on-delivery', () => {
  it('409 for a courier stored with a user’s id: the money would be credited to that user', async () => {
    // A courier a version before decision 109's refusal stored with Bob's id.
    const types = await request(base(), 'GET', '/admin/fleet-types', { headers: adminHeaders });
    const bike = (types.body.data as { id: string; code: string }[]).find((t) => t.code === 'bike');
    const created = await request(base(), 'POST', '/admin/couriers', {
      headers: adminHeaders,
      json: {
        name: 'Tunde Bakare',
        phone: '+2348031234567',
        fleet: {
          typeId: bike?.id,
          regNo: `UID-${process.pid % 1000}`,
          make: 'Bajaj',
          model: 'Boxer',
          colour: 'Red',
        },
      },
    });
    expect(created.status).toBe(201);
    const db = await openServiceDatabase(stack.iso, 'matching');
    const couriers = db.collection('couriers');
    const stored = await couriers.findOne({ _id: created.body.data.id as never });
    const shared = stack.bob.userId;
    await couriers.insertOne({ ...stored, _id: shared as never });
    try {
      const who = await merchant();
      const packageId = await savePackage(base(), who);
      const reply = await requestDelivery(base(), who, [packageId], {
        payOnDelivery: true,
        podRemitTo: 'COURIER_WALLET',
        podCourierProfileId: shared,
      });
      expectErrorEnvelope(
        reply,
        409,
        `Courier ${shared} has a user's id, so its wallet is that user's: a COURIER_WALLET pay-on-delivery cannot be credited to it. Choose another courier, or podRemitTo MY_WALLET`,
      );
      expect(reply.body.errors).toEqual([{ field: 'podCourierProfileId', message: "a user's id" }]);
      expect(await freePackages(base(), who)).toEqual([packageId]);
      expect(await balanceOf(base(), who)).toBe('100000.00');
      // The courier with an id of its own is taken.
      const own = await requestDelivery(base(), who, [packageId], {
        payOnDelivery: true,
        podRemitTo: 'COURIER_WALLET',
        podCourierProfileId: created.body.data.id,
      });
      expect(own.status).toBe(201);
    } finally {
      await couriers.deleteOne({ _id: shared as never });
      await db.close();
    }
  });
});

describe('checkout payment', () => {
  it('answers the checkout payload, then marks the delivery paid when the checkout is paid', async () => {
    const who = await merchant(0);
    const reply = await requestDelivery(base(), who, [await savePackage(base(), who)], {
      paymentMethodType: 'CHECKOUT',
    });
    expect(reply.status).toBe(201);
    expect(Object.keys(reply.body.data).sort()).toEqual(
      ['data', 'deliveryFee', 'matchingEligible', 'message', 'status'].sort(),
    );
    expect(reply.body.data).toMatchObject({
      status: true,
      message: expect.any(String),
      data: {
        authorization_url: expect.stringContaining('/checkout/'),
        access_code: expect.any(String),
        reference: expect.any(String),
      },
      matchingEligible: false,
    });
    expect(reply.body.data.deliveryFee.creator.paid).toBe(false);
    const deliveryId = (reply.headers.get('location') as string).split('/').pop() as string;
    const waiting = (await getDelivery(base(), who, deliveryId)).body.data;
    expect(waiting.p2pDelivery.status).toBe('PENDING_PAYMENT');
    // A creator who lost the answer finds the link to pay in the delivery.
    expect(waiting.payment).toEqual({
      creator: {
        amount: reply.body.data.deliveryFee.creator.amount,
        paymentRequired: true,
        paid: false,
        checkoutUrl: reply.body.data.data.authorization_url,
      },
      recipient: { amount: '0.00', paymentRequired: false, paid: false, checkoutUrl: null },
    });

    const paid = await postForm(base(), `${pagePath(reply.body.data.data.authorization_url)}/pay`);
    expect(paid.status).toBe(303);
    await eventually(
      async () => {
        const got = await getDelivery(base(), who, deliveryId);
        expect(got.body.data.p2pDelivery.status).toBe('PENDING');
        expect(got.body.data.payment.creator).toMatchObject({ paid: true, checkoutUrl: null });
      },
      { timeout: 20_000 },
    );
    // No money moved through the wallet for it.
    expect(await balanceOf(base(), who)).toBe('0.00');
  });

  it('cancels the delivery and frees its packages when the checkout is declined', async () => {
    const who = await merchant(0);
    const packageId = await savePackage(base(), who);
    const reply = await requestDelivery(base(), who, [packageId], {
      paymentMethodType: 'CHECKOUT',
    });
    const deliveryId = (reply.headers.get('location') as string).split('/').pop() as string;
    await postForm(base(), `${pagePath(reply.body.data.data.authorization_url)}/decline`);
    await eventually(
      async () => {
        const got = (await getDelivery(base(), who, deliveryId)).body.data;
        expect(got.status).toBe('CANCELLED');
        expect(got.p2pDelivery.status).toBe('CANCELLED');
        expect(await freePackages(base(), who)).toEqual([packageId]);
      },
      { timeout: 20_000 },
    );
  });

  it('SPLIT paid by checkout: the creator’s checkout declined closes the recipient’s link', async () => {
    const who = await merchant(0);
    const reply = await requestDelivery(base(), who, [await savePackage(base(), who)], {
      deliveryFeePayer: 'SPLIT',
      paymentMethodType: 'CHECKOUT',
    });
    expect(reply.status).toBe(201);
    const deliveryId = (reply.headers.get('location') as string).split('/').pop() as string;
    const { payment } = (await getDelivery(base(), who, deliveryId)).body.data;
    const recipientLink = payment.recipient.checkoutUrl as string;
    const reference = pagePath(recipientLink).split('/').pop() as string;
    await postForm(base(), `${pagePath(reply.body.data.data.authorization_url)}/decline`);
    await eventually(
      async () => {
        expect((await getDelivery(base(), who, deliveryId)).body.data.status).toBe('CANCELLED');
        expect(await call(stack.client, 'payment.checkout', { reference })).toMatchObject({
          status: 'EXPIRED',
        });
      },
      { timeout: 20_000 },
    );
  });

  it('a cancel racing the checkout’s payment, ten times: cancelled, the money paid back to the wallet exactly once', async () => {
    const merchants: Party[] = [];
    for (let round = 0; round < 10; round++) {
      const who = await merchant(0);
      merchants.push(who);
      const packageId = await savePackage(base(), who);
      const reply = await requestDelivery(base(), who, [packageId], {
        paymentMethodType: 'CHECKOUT',
      });
      expect(reply.status).toBe(201);
      const deliveryId = (reply.headers.get('location') as string).split('/').pop() as string;
      const { deliveryFee } = reply.body.data;
      const { authorization_url: url, reference } = reply.body.data.data;
      // Paid first, the cancel refunds it; cancelled first, the payment is refused and order
      // credits it back all the same: under one reference, so never both.
      const [cancelled, paid] = await Promise.all([
        cancelDelivery(base(), who, deliveryId),
        postForm(base(), `${pagePath(url)}/pay`),
      ]);
      expect([cancelled.status, paid.status]).toEqual([201, 303]);
      await eventually(
        async () => {
          const entries = await entriesOf(base(), who);
          expect(entries).toEqual([
            expect.objectContaining({
              amount: deliveryFee.creator.amount,
              reference: `refund:${reference}`,
            }),
          ]);
        },
        { timeout: 20_000 },
      );
      const got = (await getDelivery(base(), who, deliveryId)).body.data;
      expect(got.status).toBe('CANCELLED');
      expect(await freePackages(base(), who)).toEqual([packageId]);
    }
    // Sweeps of payment and order later, still once each.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    for (const who of merchants) expect(await entriesOf(base(), who)).toHaveLength(1);
    expect(await ledgerIsClean(base())).toBe(true);
  });

  it('RECIPIENT: the recipient gets a payment link; paying it makes the delivery eligible', async () => {
    const who = await merchant(0);
    const reply = await requestDelivery(base(), who, [await savePackage(base(), who)], {
      deliveryFeePayer: 'RECIPIENT',
      paymentMethodType: 'CHECKOUT',
    });
    expect(reply.status).toBe(201);
    const { data } = reply.body;
    // As asked, though the creator owes nothing.
    expect(data.delivery.paymentMethodType).toBe('CHECKOUT');
    expect(data.matchingEligible).toBe(false);
    expect(data.status).toBe('PENDING_PAYMENT');
    expect(data.deliveryFee.creator).toMatchObject({ amount: '0.00', paymentRequired: false });
    expect(data.deliveryFee.recipient).toMatchObject({ paymentRequired: true, paid: false });
    const link = data.deliveryFee.recipient.checkoutUrl as string;
    expect(link).toContain('/checkout/');
    const messages = await notificationsOf(base(), data.deliveryId);
    expect(
      messages
        .filter((m) => m.purpose === 'RECIPIENT_PAYMENT_LINK')
        .map((m) => m.recipient)
        .sort(),
    ).toEqual([DESTINATION.contactEmail, DESTINATION.contactPhone].sort());
    await postForm(base(), `${pagePath(link)}/pay`);
    await eventually(
      async () => {
        const got = (await getDelivery(base(), who, data.deliveryId)).body.data;
        expect(got.p2pDelivery.status).toBe('PENDING');
        expect(got.paymentMethodType).toBe('CHECKOUT');
      },
      { timeout: 20_000 },
    );
    // Cancelled: what the recipient paid goes back to them (the sandbox took no money), never
    // to the merchant's wallet.
    const balance = await balanceOf(base(), who);
    expect((await cancelDelivery(base(), who, data.deliveryId)).status).toBe(201);
    const reference = pagePath(link).split('/').pop() as string;
    expect(await call(stack.client, 'payment.giveBack', { reference })).toEqual({ to: 'PAYER' });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await balanceOf(base(), who)).toBe(balance);
    expect((await entriesOf(base(), who)).map((e) => e.reference)).not.toContain(
      `refund:${reference}`,
    );
  });

  it('SPLIT: the creator pays its part from the wallet, the recipient the rest by link', async () => {
    const who = await merchant();
    const packagesId = [await savePackage(base(), who)];
    const quote = await modeA(who, packagesId, { deliveryFeePayer: 'SPLIT' });
    const reply = await requestDelivery(base(), who, packagesId, { deliveryFeePayer: 'SPLIT' });
    expect(reply.status).toBe(201);
    const { data } = reply.body;
    expect(data.deliveryFee.creator).toMatchObject({
      amount: quote.deliveryFee.creator.amount,
      paid: true,
    });
    expect(data.deliveryFee.recipient).toMatchObject({
      amount: quote.deliveryFee.recipient.amount,
      paid: false,
    });
    expect(data.matchingEligible).toBe(false);
    const { payment } = (await getDelivery(base(), who, data.deliveryId)).body.data;
    expect(payment.creator).toEqual({
      amount: quote.deliveryFee.creator.amount,
      paymentRequired: true,
      paid: true,
      checkoutUrl: null,
    });
    expect(payment.recipient).toEqual({
      amount: quote.deliveryFee.recipient.amount,
      paymentRequired: true,
      paid: false,
      checkoutUrl: data.deliveryFee.recipient.checkoutUrl,
    });
    expect(payment.recipient.checkoutUrl).toContain('/checkout/');
    const entries = await entriesOf(base(), who);
    expect(entries[0]).toMatchObject({
      reference: data.deliveryId,
      amount: `-${quote.deliveryFee.creator.amount}`,
    });
    // Cancelled before the recipient pays: the creator's part comes back, once, and the
    // recipient's link is closed: paying it now takes nothing and pays no share.
    expect((await cancelDelivery(base(), who, data.deliveryId)).status).toBe(201);
    expect(await balanceOf(base(), who)).toBe('100000.00');
    const link = payment.recipient.checkoutUrl as string;
    const reference = pagePath(link).split('/').pop() as string;
    await eventually(
      async () =>
        expect(await call(stack.client, 'payment.checkout', { reference })).toMatchObject({
          status: 'EXPIRED',
        }),
      { timeout: 20_000 },
    );
    await postForm(base(), `${pagePath(link)}/pay`);
    expect(await call(stack.client, 'payment.checkout', { reference })).toMatchObject({
      status: 'EXPIRED',
    });
    const got = (await getDelivery(base(), who, data.deliveryId)).body.data;
    expect(got.payment.recipient.paid).toBe(false);
    expect(await balanceOf(base(), who)).toBe('100000.00');
  });
});

describe('POST /api/request/:deliveryId/cancel', () => {
  it('cancels, refunds once, frees the packages and records the step; then refuses', async () => {
    const who = await merchant();
    const packageId = await savePackage(base(), who);
    const created = (await requestDelivery(base(), who, [packageId])).body.data;
    expectErrorEnvelope(
      await cancelDelivery(base(), stack.bob, created.deliveryId),
      404,
      'Delivery request not found',
    );
    expectErrorEnvelope(
      await cancelDelivery(base(), who, randomUUID()),
      404,
      'Delivery request not found',
    );

    const reply = await cancelDelivery(base(), who, created.deliveryId);
    expect(reply.status).toBe(201);
    expect(reply.body.data).toEqual({ delivery: { id: created.deliveryId } });
    expect(await balanceOf(base(), who)).toBe('100000.00');
    expect(await freePackages(base(), who)).toEqual([packageId]);
    const got = (await getDelivery(base(), who, created.deliveryId)).body.data;
    expect(got.status).toBe('CANCELLED');
    expect(got.p2pDelivery.status).toBe('REFUNDED');
    expect(
      got.deliverySteps.map((s: { step: string; active: boolean }) => [s.step, s.active]),
    ).toEqual([
      ['REQUEST_CREATED', false],
      ['CANCELLED', true],
    ]);
    const again = await cancelDelivery(base(), who, created.deliveryId);
    expectErrorEnvelope(again, 400, /cannot be cancelled/);
    const refunds = (await entriesOf(base(), who)).filter((e) => e.type === 'REFUND');
    expect(refunds).toHaveLength(1);
    expect(await ledgerIsClean(base())).toBe(true);
  });

  it('20 concurrent cancels by one user across 20 deliveries: exactly 2 succeed', async () => {
    const who = await merchant(1_000_000);
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      ids.push(
        (await requestDelivery(base(), who, [await savePackage(base(), who)])).body.data.deliveryId,
      );
    }
    const replies = await Promise.all(ids.map((id) => cancelDelivery(base(), who, id)));
    expect(replies.filter((r) => r.status === 201)).toHaveLength(2);
    const refused = replies.filter((r) => r.status !== 201);
    expect(refused).toHaveLength(18);
    for (const r of refused) expectErrorEnvelope(r, 400, /only twice every 3 hours/);
    // A refused cancel used no slot, and the window survives in Redis: still refused.
    expectErrorEnvelope(await cancelDelivery(base(), who, ids[0] as string), 400);
    expect((await entriesOf(base(), who)).filter((e) => e.type === 'REFUND')).toHaveLength(2);
  });

  it('gives back, when the window is full, the slots of cancels that stopped midway, and only those', async () => {
    const who = await merchant();
    const [done, lost, next] = await Promise.all(
      [1, 2, 3].map(async () => {
        const packageId = await savePackage(base(), who);
        return (await requestDelivery(base(), who, [packageId])).body.data.deliveryId as string;
      }),
    );
    expect((await cancelDelivery(base(), who, done)).status).toBe(201);
    // As if cancelled 20 minutes ago, on a retry of an attempt whose process stopped 40
    // minutes ago before its change; and an attempt on another delivery that stopped 20
    // minutes ago (both past LOST_SLOT_AGE_MS), its delivery never cancelled.
    const redis = new Redis(process.env.REDIS_URL as string);
    const key = `${stack.iso.namespace}:cancels:${who.userId}`;
    try {
      const [happened] = await redis.zrange(key, 0, -1);
      const minutesAgo = (minutes: number) => Date.now() - minutes * 60_000;
      await redis.zadd(key, minutesAgo(20), happened);
      await redis.zadd(key, minutesAgo(40), `${done}:${randomUUID()}`);
      await redis.zadd(key, minutesAgo(20), `${lost}:${randomUUID()}`);

      expect((await cancelDelivery(base(), who, next)).status).toBe(201);
      const held = await redis.zrange(key, 0, -1);
      expect(held).toHaveLength(2);
      expect(held[0]).toBe(happened);
      expect(held[1].startsWith(`${next}:`)).toBe(true);
      // Both held by cancels that happened: the third is refused.
      expectErrorEnvelope(await cancelDelivery(base(), who, lost), 400, /only twice every 3 hours/);
      expect((await getDelivery(base(), who, lost)).body.data.status).toBe('REQUEST_CREATED');
    } finally {
      redis.disconnect();
    }
  });
});

describe('events', () => {
  /** The events heard for a delivery, by name, once each of `names` has come. */
  async function eventsOf(deliveryId: string, names: string[]) {
    let mine: typeof heard = [];
    await eventually(() => {
      mine = heard.filter((e) => e.payload.deliveryId === deliveryId);
      expect(new Set(mine.map((e) => e.name))).toEqual(new Set(names));
    });
    return mine;
  }

  it('created, paid and cancelled are broadcast with the key that created the delivery', async () => {
    const who = await merchant();
    const reply = await requestDelivery(base(), who, [await savePackage(base(), who)]);
    expect(reply.status).toBe(201);
    const deliveryId = reply.body.data.deliveryId as string;
    expect((await cancelDelivery(base(), who, deliveryId)).status).toBe(201);
    const events = await eventsOf(deliveryId, [
      DELIVERY_CREATED_EVENT,
      DELIVERY_PAID_EVENT,
      DELIVERY_CANCELLED_EVENT,
    ]);
    for (const event of events) {
      expect(event.payload).toMatchObject({ deliveryId, userId: who.userId, apiKeyId: who.keyId });
    }
    expect(events.find((e) => e.name === DELIVERY_CANCELLED_EVENT)?.payload.status).toBe(
      'CANCELLED',
    );
  });

  it('a checkout delivery is announced paid only once its checkout is paid', async () => {
    const who = await merchant(0);
    const reply = await requestDelivery(base(), who, [await savePackage(base(), who)], {
      paymentMethodType: 'CHECKOUT',
    });
    const deliveryId = (reply.headers.get('location') as string).split('/').pop() as string;
    await eventsOf(deliveryId, [DELIVERY_CREATED_EVENT]);
    expect(
      await postForm(base(), `${pagePath(reply.body.data.data.authorization_url)}/pay`),
    ).toMatchObject({
      status: 303,
    });
    const events = await eventsOf(deliveryId, [DELIVERY_CREATED_EVENT, DELIVERY_PAID_EVENT]);
    expect(events.find((e) => e.name === DELIVERY_PAID_EVENT)?.payload).toMatchObject({
      apiKeyId: who.keyId,
      matchingEligible: true,
    });
  });
});

describe('races', () => {
  it('200 concurrent requests on a wallet funded for exactly 50: 50 created, 150 × 422, balance 0.00', async () => {
    const who = await merchant(0);
    const packages: string[] = [];
    for (let i = 0; i < 200; i++) packages.push(await savePackage(base(), who));
    const total = (await modeA(who, [packages[0] as string])).deliveryCost.costs.total as string;
    await credit(base(), who, (Number(total) * 50).toFixed(2));
    const replies = await Promise.all(packages.map((id) => requestDelivery(base(), who, [id])));
    const statuses = replies.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(50);
    expect(statuses.filter((s) => s === 422)).toHaveLength(150);
    expect(await balanceOf(base(), who)).toBe('0.00');
    expect(await freePackages(base(), who)).toHaveLength(150);
    expect(await ledgerIsClean(base())).toBe(true);
  }, 300_000);

  it('one package in 10 concurrent requests: one wins', async () => {
    const who = await merchant();
    const packageId = await savePackage(base(), who);
    const replies = await Promise.all(
      Array.from({ length: 10 }, () => requestDelivery(base(), who, [packageId])),
    );
    expect(replies.filter((r) => r.status === 201)).toHaveLength(1);
    for (const r of replies.filter((x) => x.status !== 201)) {
      expectErrorEnvelope(r, 400, 'Invalid packages selection');
    }
    expect((await entriesOf(base(), who)).filter((e) => e.type === 'DEBIT')).toHaveLength(1);
  });

  it('20 concurrent retries with one Idempotency-Key: one delivery, one debit', async () => {
    const who = await merchant();
    const packageId = await savePackage(base(), who);
    const key = randomUUID();
    const replies = await Promise.all(
      Array.from({ length: 20 }, () =>
        requestDelivery(base(), who, [packageId], {}, { 'Idempotency-Key': key }),
      ),
    );
    const created = replies.filter((r) => r.status === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    expect(new Set(created.map((r) => r.body.data.deliveryId)).size).toBe(1);
    for (const r of replies.filter((x) => x.status !== 201)) expectErrorEnvelope(r, 409);
    const later = await requestDelivery(base(), who, [packageId], {}, { 'Idempotency-Key': key });
    expect(later.status).toBe(201);
    expect(later.body.data.deliveryId).toBe(created[0]?.body.data.deliveryId);
    expect((await entriesOf(base(), who)).filter((e) => e.type === 'DEBIT')).toHaveLength(1);
  });
});

describe('GET /api/deliveries', () => {
  it('lists the caller’s deliveries newest first, or those in a status the latest to enter it first, paged', async () => {
    const who = await merchant();
    const first = (await requestDelivery(base(), who, [await savePackage(base(), who)])).body.data
      .deliveryId;
    const second = (await requestDelivery(base(), who, [await savePackage(base(), who)])).body.data
      .deliveryId;
    await cancelDelivery(base(), who, first);
    const list = (query: string) =>
      request(base(), 'GET', `/api/deliveries${query}`, { headers: { 'api-key': who.key } });
    expect((await list('')).body.data.map((d: { id: string }) => d.id)).toEqual([second, first]);
    expect((await list('?status=CANCELLED')).body.data.map((d: { id: string }) => d.id)).toEqual([
      first,
    ]);
    expect((await list('?limit=1&offset=1')).body.data.map((d: { id: string }) => d.id)).toEqual([
      first,
    ]);
    // A status lists the latest to enter it first: cancelled second, `second` heads the list.
    await cancelDelivery(base(), who, second);
    expect((await list('?status=CANCELLED')).body.data.map((d: { id: string }) => d.id)).toEqual([
      second,
      first,
    ]);
    expect((await list('?status=CANCELLED&limit=1&offset=1')).body.data).toMatchObject([
      { id: first, status: 'CANCELLED' },
    ]);
    expect((await list('?status=REQUEST_CREATED')).body.data).toEqual([]);
    expect(
      (await request(base(), 'GET', '/api/deliveries', { headers: { 'api-key': stack.bob.key } }))
        .body.data,
    ).toEqual([]);
    expectErrorEnvelope(await list('?status=LOST'), 400);
  });
});
