import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import { call } from '../../libs/contracts';
import { SecretBox } from '../../libs/secret-box';
import type { PublishedEvent, WebhookEventType } from '../../libs/contracts/webhook';
import {
  callAs,
  cancelDelivery,
  credit,
  ORIGIN,
  type Party,
  requestDelivery,
  savePackage,
} from '../support/deliveries';
import { pagePath, postForm } from '../support/checkout';
import { acceptedDelivery, asCourier, courierAt } from '../support/couriers';
import { eventually } from '../support/eventually';
import { createUserWithKey, expectErrorEnvelope, request } from '../support/http';
import { useMerchantStack } from '../support/merchant-stack';
import { openServiceDatabase, startNode, type NodeProcess } from '../support/stack';
import {
  FAST_WEBHOOKS,
  signatureCount,
  signedWith,
  useWebhookReceiver,
  type Received,
} from '../support/webhook-receiver';

/**
 * Integrator webhooks (issue 14) through the gateway against a real HTTP receiver: endpoints
 * registered and refused, a delivery's events signed and in order, retries after 500s and
 * timeouts, replay, rotation, disabling, and two dispatchers that never send an event twice.
 */
const ENV = {
  SIMULATOR_TIME_SCALE: '600',
  MATCHING_SWEEP_INTERVAL_MS: '200',
  ORDER_SWEEP_INTERVAL_MS: '500',
  ...FAST_WEBHOOKS,
  WEBHOOK_DISABLE_AFTER_MS: '4000',
  COURIER_LOCATION_FLUSH_MS: '300',
  // Addresses the operator keeps out though they would be accepted (private ones are, here).
  WEBHOOK_DENY_CIDRS: '127.0.0.64/26',
};
const stack = useMerchantStack({ internal: ['webhook'], env: ENV });
const base = () => stack.node.url;
const receiver = useWebhookReceiver();

const api = (who: Party, method: string, path: string, json?: unknown) =>
  callAs(base(), who, method, path, json);

async function merchantWithEndpoint(path: string, fields: Record<string, unknown> = {}) {
  const merchant: Party = await createUserWithKey(base());
  await credit(base(), merchant, 100_000);
  const created = await api(merchant, 'POST', '/api/webhooks', {
    url: receiver.url(path),
    ...fields,
  });
  expect(created.status).toBe(201);
  return { merchant, webhook: created.body.data as { id: string; secret: string } };
}

/** The merchant's one endpoint once it is disabled (WEBHOOK_DISABLE_AFTER_MS of failures). */
function disabledSoon(merchant: Party) {
  return eventually(
    async () => {
      const [endpoint] = (await api(merchant, 'GET', '/api/webhooks')).body.data;
      expect(endpoint.status).toBe('DISABLED');
      return endpoint;
    },
    { timeout: 30_000, interval: 250 },
  );
}

async function simulated(merchant: Party, mode = 'delivered') {
  const packageId = await savePackage(base(), merchant);
  const created = await requestDelivery(
    base(),
    merchant,
    [packageId],
    {},
    { 'Waybill-Simulate': mode },
  );
  expect(created.status).toBe(201);
  return created.body.data.deliveryId as string;
}

const typesOf = (received: Received[]) => received.map((r) => r.event.type);
/** The delivery's changes, without its courier's positions. */
const changesOf = (received: Received[]) =>
  typesOf(received).filter((type) => type !== 'courier.location');

describe('courier.location', () => {
  // First in the file: no simulated search of another test can take this courier's offer.
  it('tells where the courier of a delivery under way is, at the rate positions are written', async () => {
    const courier = await courierAt(base(), { lat: ORIGIN.lat + 0.003, lon: ORIGIN.lon + 0.002 });
    const { merchant, webhook } = await merchantWithEndpoint('/location', {
      events: ['courier.location', 'courier.assigned'],
    });
    const deliveryId = await acceptedDelivery(base(), merchant, courier);
    await eventually(
      () => expect(typesOf(receiver.at('/location'))).toContain('courier.assigned'),
      {
        timeout: 10_000,
      },
    );

    const moved = { lat: ORIGIN.lat + 0.001, lon: ORIGIN.lon + 0.001 };
    expect((await asCourier(base(), courier, 'POST', '/courier/location', moved)).status).toBe(200);
    const located = await eventually(
      () => {
        const seen = receiver.at('/location').filter((r) => r.event.type === 'courier.location');
        const at = seen.at(-1)?.event.data.courier?.currentLocation;
        expect(at).toMatchObject(moved);
        return seen.at(-1) as Received;
      },
      { timeout: 10_000, interval: 100 },
    );
    expect(located.event.data.id).toBe(deliveryId);
    expect(signedWith(located, webhook.secret)).toBe(true);

    // Written once, told once: no new position, no new event.
    const count = receiver.at('/location').length;
    await new Promise((r) => setTimeout(r, 1000));
    expect(receiver.at('/location')).toHaveLength(count);

    // Once the delivery is over, its courier's positions are nobody's business.
    expect((await cancelDelivery(base(), merchant, deliveryId)).status).toBe(201);
    await new Promise((r) => setTimeout(r, 500));
    const after = receiver.at('/location').length;
    await asCourier(base(), courier, 'POST', '/courier/location', ORIGIN);
    await new Promise((r) => setTimeout(r, 1000));
    expect(receiver.at('/location')).toHaveLength(after);
  });
});

describe('a courier’s position', () => {
  it('never reaches an endpoint after a later change of its delivery: it is skipped, and logged so', async () => {
    const { merchant, webhook } = await merchantWithEndpoint('/stale');
    const deliveryId = randomUUID();
    /** An event of version `sequence / 10`, as order publishes it (positions at index 9). */
    const event = (type: WebhookEventType, sequence: number, status: string): PublishedEvent => ({
      id: randomUUID(),
      type,
      userId: merchant.userId,
      deliveryId,
      sequence,
      createdAt: new Date().toISOString(),
      data: { id: deliveryId, status },
    });
    const publish = (...events: PublishedEvent[]) =>
      call(stack.client, 'webhook.publish', { events });
    const sent = () => receiver.at('/stale').map((r) => r.event.id);
    const logged = async () => {
      const log = await api(merchant, 'GET', `/api/webhooks/${webhook.id}/deliveries?limit=100`);
      expect(log.status).toBe(200);
      return new Map(
        (log.body.data as { eventId: string; status: string; attempts: { error: string }[] }[]).map(
          (m) => [m.eventId, m],
        ),
      );
    };

    const arrived = event('delivery.status_changed', 30, 'ARRIVED_AT_PICKUP');
    const collected = event('delivery.status_changed', 40, 'COLLECTED');
    await publish(arrived, collected);
    await eventually(() => expect(sent()).toEqual([arrived.id, collected.id]));
    // Sent and gone from the queue: only the lane's mark can tell what follows is stale.
    await eventually(async () =>
      expect((await logged()).get(collected.id)?.status).toBe('DELIVERED'),
    );
    // Read at version 3, published once version 4 went: the delivery as it was, too late.
    const late = event('courier.location', 39, 'ARRIVED_AT_PICKUP');
    await publish(late);
    await eventually(async () => expect((await logged()).get(late.id)?.status).toBe('SKIPPED'));
    const skipped = (await logged()).get(late.id);
    expect(skipped?.attempts).toHaveLength(1);
    expect(skipped?.attempts[0].error).toMatch(/^not sent: a later event of this delivery/);
    // Stale for good: not queued again on request.
    const skippedId = (skipped as unknown as { id: string }).id;
    expectErrorEnvelope(
      await api(merchant, 'POST', `/api/webhooks/${webhook.id}/deliveries/${skippedId}/replay`),
      409,
      /skipped as stale/,
    );
    expect((await logged()).get(late.id)?.status).toBe('SKIPPED');

    // A position with a later change queued behind it, while an earlier one is retried.
    const held = event('delivery.status_changed', 50, 'IN_TRANSIT');
    let holding = true;
    receiver.answer = (_path, e) =>
      e.id === held.id && holding ? { status: 503 } : { status: 200 };
    await publish(held);
    await eventually(() => expect(sent()).toContain(held.id));
    const behind = event('courier.location', 59, 'IN_TRANSIT');
    const newer = event('courier.location', 59, 'IN_TRANSIT');
    const next = event('delivery.status_changed', 60, 'ARRIVED_AT_DROPOFF');
    await publish(behind);
    await publish(newer, next);
    // Stale behind a change still retried: skipped while it waits, not piled up.
    await eventually(async () => {
      const statuses = await logged();
      expect([behind, newer].map((e) => statuses.get(e.id)?.status)).toEqual([
        'SKIPPED',
        'SKIPPED',
      ]);
    });
    expect(sent()).not.toContain(next.id);
    holding = false;
    await eventually(() => expect(sent().at(-1)).toBe(next.id), { timeout: 15_000 });
    expect((await logged()).get(behind.id)?.status).toBe('SKIPPED');

    // The latest position, nothing after it: sent, and after every change before it.
    const latest = event('courier.location', 69, 'ARRIVED_AT_DROPOFF');
    await publish(latest);
    await eventually(() => expect(sent().at(-1)).toBe(latest.id));
    const once = [...new Set(sent())];
    expect(once).toEqual([arrived.id, collected.id, held.id, next.id, latest.id]);
    // Recorded once the receiver's answer is back, a moment after it got the event.
    await eventually(async () => expect((await logged()).get(latest.id)?.status).toBe('DELIVERED'));
    const statuses = await logged();
    expect([late, behind, newer].map((e) => statuses.get(e.id)?.status)).toEqual([
      'SKIPPED',
      'SKIPPED',
      'SKIPPED',
    ]);
    receiver.answer = () => ({ status: 200 });
  });
});

describe('webhook endpoints', () => {
  it('are created with a secret shown once, listed without it, and deleted', async () => {
    const merchant: Party = await createUserWithKey(base());
    const created = await api(merchant, 'POST', '/api/webhooks', {
      url: receiver.url('/crud'),
      events: ['delivery.delivered', 'delivery.cancelled'],
      description: 'orders system',
    });
    expect(created.status).toBe(201);
    const webhook = created.body.data;
    expect(webhook).toMatchObject({
      url: receiver.url('/crud'),
      events: ['delivery.delivered', 'delivery.cancelled'],
      description: 'orders system',
      status: 'ACTIVE',
      previousSecretExpiresAt: null,
    });
    expect(webhook.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);

    const listed = await api(merchant, 'GET', '/api/webhooks');
    expect(listed.status).toBe(200);
    expect(listed.body.data).toHaveLength(1);
    expect(listed.body.data[0].id).toBe(webhook.id);
    expect(JSON.stringify(listed.body)).not.toContain(webhook.secret);

    // Another user sees nothing of it and cannot touch it.
    const other: Party = await createUserWithKey(base());
    expect((await api(other, 'GET', '/api/webhooks')).body.data).toEqual([]);
    for (const [method, path] of [
      ['DELETE', `/api/webhooks/${webhook.id}`],
      ['POST', `/api/webhooks/${webhook.id}/rotate-secret`],
      ['GET', `/api/webhooks/${webhook.id}/deliveries`],
    ]) {
      expectErrorEnvelope(await api(other, method, path), 404);
    }

    expect((await api(merchant, 'DELETE', `/api/webhooks/${webhook.id}`)).status).toBe(204);
    expect((await api(merchant, 'GET', '/api/webhooks')).body.data).toEqual([]);
    expectErrorEnvelope(await api(merchant, 'DELETE', `/api/webhooks/${webhook.id}`), 404);
  });

  it('registered with an Idempotency-Key the gateway forgot, are found again, never registered twice', async () => {
    const merchant: Party = await createUserWithKey(base());
    const key = randomUUID();
    const register = () =>
      request(base(), 'POST', '/api/webhooks', {
        headers: { 'api-key': merchant.key, 'Idempotency-Key': key },
        json: { url: receiver.url('/keyed') },
      });
    /** Redis loses the gateway's record of the key, as a restart without persistence does. */
    const forgetKeys = async () => {
      const redis = new Redis(process.env.REDIS_URL as string);
      try {
        const keys = await redis.keys(`${stack.iso.namespace}:idempotency:*`);
        if (keys.length > 0) await redis.del(...keys);
      } finally {
        redis.disconnect();
      }
    };
    const first = await register();
    expect(first.status).toBe(201);
    await forgetKeys();
    const again = await register();
    expect(again.status).toBe(201);
    // Run again, not replayed by the gateway: the same endpoint, signing with the same secret.
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(again.body.data).toEqual(first.body.data);
    const listed = await api(merchant, 'GET', '/api/webhooks');
    expect(listed.body.data.map((w: { id: string }) => w.id)).toEqual([first.body.data.id]);

    // Changed since: not answered as it was made.
    const id = first.body.data.id as string;
    expect((await api(merchant, 'POST', `/api/webhooks/${id}/rotate-secret`)).status).toBe(201);
    await forgetKeys();
    expectErrorEnvelope(
      await register(),
      409,
      new RegExp(
        `registered webhook ${id}, its secret rotated since; find it in GET /api/webhooks,`,
      ),
    );
    // Deleted since: the same.
    const deletedKey = randomUUID();
    const registerAs = (k: string) =>
      request(base(), 'POST', '/api/webhooks', {
        headers: { 'api-key': merchant.key, 'Idempotency-Key': k },
        json: { url: receiver.url('/keyed-deleted') },
      });
    const made = await registerAs(deletedKey);
    expect(made.status).toBe(201);
    expect((await api(merchant, 'DELETE', `/api/webhooks/${made.body.data.id}`)).status).toBe(204);
    await forgetKeys();
    expectErrorEnvelope(await registerAs(deletedKey), 409, /deleted since/);
    // And once retention forgot the deleted endpoint (its deletion mark and secret stay): the
    // same, not a 201 with an endpoint every dispatcher takes for deleted.
    const forgetting = await openServiceDatabase(stack.iso, 'webhook');
    try {
      await forgetting.collection('webhook_endpoints').deleteOne({ _id: made.body.data.id });
    } finally {
      await forgetting.close();
    }
    await forgetKeys();
    expectErrorEnvelope(await registerAs(deletedKey), 409, /deleted since/);
    const after = await api(merchant, 'GET', '/api/webhooks');
    expect(after.body.data.map((w: { id: string }) => w.id)).not.toContain(made.body.data.id);
    // Its first secret lost (an older version's registration cut short) or sealed under an
    // earlier key: a 409 that says how to get a new one, not a 500.
    const lostKey = randomUUID();
    const lost = await registerAs(lostKey);
    expect(lost.status).toBe(201);
    const db = await openServiceDatabase(stack.iso, 'webhook');
    try {
      await db.collection('webhook_secrets').deleteMany({ webhookId: lost.body.data.id });
    } finally {
      await db.close();
    }
    await forgetKeys();
    expectErrorEnvelope(
      await registerAs(lostKey),
      409,
      `This Idempotency-Key registered webhook ${lost.body.data.id}, whose secret cannot be read again; rotate it with POST /api/webhooks/${lost.body.data.id}/rotate-secret for a new one, or send a new key to register another`,
    );
    // A registration that stopped after its secret, before its endpoint, under an earlier
    // WEBHOOK_SECRET_KEY: nothing to rotate, a new key registers one.
    const cutKey = randomUUID();
    const cut = await registerAs(cutKey);
    expect(cut.status).toBe(201);
    const cutDb = await openServiceDatabase(stack.iso, 'webhook');
    try {
      await cutDb.collection('webhook_endpoints').deleteOne({ _id: cut.body.data.id });
      await cutDb
        .collection('webhook_secrets')
        .updateMany(
          { webhookId: cut.body.data.id },
          { $set: { sealed: 'sealed-under-a-lost-key' } },
        );
    } finally {
      await cutDb.close();
    }
    await forgetKeys();
    expectErrorEnvelope(
      await registerAs(cutKey),
      409,
      `This Idempotency-Key registered webhook ${cut.body.data.id}, whose secret cannot be read again; send a new key to register another`,
    );
    // Another user's same key registers their own.
    const other: Party = await createUserWithKey(base());
    const theirs = await request(base(), 'POST', '/api/webhooks', {
      headers: { 'api-key': other.key, 'Idempotency-Key': key },
      json: { url: receiver.url('/keyed') },
    });
    expect(theirs.status).toBe(201);
    expect(theirs.body.data.id).not.toBe(id);
  });

  it.each([
    ['not a URL', 'not a url'],
    ['another scheme', 'ftp://example.com/hook'],
    ['the cloud metadata address', 'http://169.254.169.254/latest/meta-data'],
    ['a link-local address', 'http://169.254.10.1/hook'],
    ['an IPv6 link-local address', 'http://[fe80::1]/hook'],
    ['the unspecified address', 'http://0.0.0.0/hook'],
    ['credentials in the URL', 'http://user:pass@127.0.0.1/hook'],
  ])('refuses %s with 400', async (_what, url) => {
    const merchant: Party = await createUserWithKey(base());
    const reply = await api(merchant, 'POST', '/api/webhooks', { url });
    expectErrorEnvelope(reply, 400);
  });

  it('refuses an address the operator keeps out (WEBHOOK_DENY_CIDRS), named or literal', async () => {
    const merchant: Party = await createUserWithKey(base());
    const literal = await api(merchant, 'POST', '/api/webhooks', {
      url: 'http://127.0.0.65:8080/hook',
    });
    expectErrorEnvelope(
      literal,
      400,
      'url points to 127.0.0.65, an address this platform does not call; use another',
    );
    // Beside the range, the same receiver host is accepted.
    const beside = await api(merchant, 'POST', '/api/webhooks', { url: receiver.url('/beside') });
    expect(beside.status).toBe(201);
  });

  it('refuses a URL too long in the form it is stored and sent, however short as typed', async () => {
    const merchant: Party = await createUserWithKey(base());
    // 1,000 characters of path as typed; each is `%C3%A9` once stored, 6,000 of them.
    const url = receiver.url(`/long/${'é'.repeat(1000)}`);
    const reply = await api(merchant, 'POST', '/api/webhooks', { url });
    expectErrorEnvelope(reply, 400, /characters long once written as it is sent.*at most 2048/);
    expect((await api(merchant, 'GET', '/api/webhooks')).body.data).toEqual([]);
  });

  it('refuses unknown events and too many endpoints', async () => {
    const merchant: Party = await createUserWithKey(base());
    expectErrorEnvelope(
      await api(merchant, 'POST', '/api/webhooks', {
        url: receiver.url('/x'),
        events: ['delivery.exploded'],
      }),
      400,
    );
    for (let i = 0; i < 10; i++) {
      expect(
        (await api(merchant, 'POST', '/api/webhooks', { url: receiver.url(`/many/${i}`) })).status,
      ).toBe(201);
    }
    const eleventh = await api(merchant, 'POST', '/api/webhooks', {
      url: receiver.url('/many/10'),
    });
    expectErrorEnvelope(eleventh, 409);
    expect(eleventh.body.message).toMatch(/at most 10/);
    // Refused before its host is looked up (a name whose servers never answer holds a thread).
    const unresolved = await api(merchant, 'POST', '/api/webhooks', {
      url: 'https://never-resolves.invalid/hook',
    });
    expectErrorEnvelope(unresolved, 409, /^You already have 10 webhook endpoints \(at most 10\)/);
  });

  it('are held to the cap exactly when registered at once, and a delete frees one place', async () => {
    const merchant: Party = await createUserWithKey(base());
    const register = (path: string) =>
      api(merchant, 'POST', '/api/webhooks', { url: receiver.url(path) });
    const statuses = (replies: { status: number }[]) => replies.map((r) => r.status).sort();
    const first = await Promise.all(
      Array.from({ length: 16 }, (_, i) => register(`/at-once/${i}`)),
    );
    expect(statuses(first)).toEqual([...Array(10).fill(201), ...Array(6).fill(409)]);
    for (const refused of first.filter((r) => r.status === 409)) {
      // Ten listed, or some of the ten still being registered.
      expect(refused.body.message).toMatch(
        /^You (already )?have \d+ webhook endpoints (and registrations under way hold the other places )?\(at most 10\)/,
      );
    }
    const listed = (await api(merchant, 'GET', '/api/webhooks')).body.data as { id: string }[];
    expect(listed).toHaveLength(10);

    // Each endpoint holds one place; a delete gives its place back at once.
    const db = await openServiceDatabase(stack.iso, 'webhook');
    try {
      const places = () =>
        db
          .collection<{ _id: string }>('webhook_endpoint_places')
          .countDocuments({ _id: { $regex: `^${merchant.userId}:` } });
      expect(await places()).toBe(10);
      expect((await api(merchant, 'DELETE', `/api/webhooks/${listed[4].id}`)).status).toBe(204);
      expect(await places()).toBe(9);
    } finally {
      await db.close();
    }
    const second = await Promise.all(
      Array.from({ length: 5 }, (_, i) => register(`/at-once/again/${i}`)),
    );
    expect(statuses(second)).toEqual([201, 409, 409, 409, 409]);
    expect((await api(merchant, 'GET', '/api/webhooks')).body.data).toHaveLength(10);
  });

  it('deleted, free a place under the cap and get no more events', async () => {
    const merchant: Party = await createUserWithKey(base());
    await credit(base(), merchant, 100_000);
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const created = await api(merchant, 'POST', '/api/webhooks', {
        url: receiver.url(`/turnover/${i}`),
      });
      expect(created.status).toBe(201);
      ids.push(created.body.data.id);
    }
    for (const id of ids.slice(0, 3)) {
      expect((await api(merchant, 'DELETE', `/api/webhooks/${id}`)).status).toBe(204);
    }
    for (let i = 10; i < 13; i++) {
      const created = await api(merchant, 'POST', '/api/webhooks', {
        url: receiver.url(`/turnover/${i}`),
      });
      expect(created.status).toBe(201);
      ids.push(created.body.data.id);
    }
    expectErrorEnvelope(
      await api(merchant, 'POST', '/api/webhooks', { url: receiver.url('/turnover/13') }),
      409,
    );
    const listed = (await api(merchant, 'GET', '/api/webhooks')).body.data;
    // Newest first.
    expect(listed.map((w: { id: string }) => w.id)).toEqual(ids.slice(3).reverse());

    const deliveryId = await simulated(merchant, 'no-courier');
    expect((await cancelDelivery(base(), merchant, deliveryId)).status).toBe(201);
    await eventually(
      () => {
        for (let i = 3; i < 13; i++) {
          expect(typesOf(receiver.at(`/turnover/${i}`))).toContain('delivery.cancelled');
        }
      },
      { timeout: 20_000 },
    );
    for (let i = 0; i < 3; i++) expect(receiver.at(`/turnover/${i}`)).toEqual([]);
  });
});

describe('a delivery’s events', () => {
  it('arrive signed, in order, once each, with the delivery as GET answers it', async () => {
    const { merchant, webhook } = await merchantWithEndpoint('/run');
    const deliveryId = await simulated(merchant);
    await eventually(() => expect(typesOf(receiver.at('/run'))).toContain('delivery.delivered'), {
      timeout: 60_000,
      interval: 200,
    });
    const received = receiver.at('/run');
    // The virtual courier moves too: its positions come as it goes.
    expect(typesOf(received)).toContain('courier.location');
    expect(changesOf(received)).toEqual([
      'delivery.created',
      'delivery.paid',
      'courier.assigned',
      'delivery.status_changed', // ARRIVED_AT_PICKUP
      'delivery.status_changed', // COLLECTED
      'delivery.status_changed', // IN_TRANSIT
      'delivery.status_changed', // ARRIVED_AT_DROPOFF
      'delivery.delivered',
    ]);
    expect(new Set(received.map((r) => r.event.id)).size).toBe(received.length);
    for (const r of received) {
      expect(signedWith(r, webhook.secret)).toBe(true);
      expect(signedWith(r, `${webhook.secret}x`)).toBe(false);
      expect(r.headers['waybill-event-id']).toBe(r.event.id);
      expect(r.headers['waybill-event-type']).toBe(r.event.type);
      expect(Object.keys(r.event).sort()).toEqual(['createdAt', 'data', 'id', 'role', 'type']);
      expect(r.event.role).toBe('CREATOR');
      expect(r.event.data.id).toBe(deliveryId);
    }
    const statuses = received.map((r) => r.event.data.status);
    expect(statuses.at(-1)).toBe('DELIVERED');
    expect(received[2].event.data.courier).toMatchObject({ fleet: expect.any(Object) });

    // Each message and its attempt are logged, newest first, paged by offset and limit; the
    // last one's outcome a moment after the receiver got it (recorded once its answer is back).
    const log = await eventually(async () => {
      const read = await api(merchant, 'GET', `/api/webhooks/${webhook.id}/deliveries?limit=100`);
      expect(read.status).toBe(200);
      expect(read.body.data.filter((m: { status: string }) => m.status === 'PENDING')).toEqual([]);
      return read;
    });
    const logged = log.body.data as { id: string; eventId: string; type: string; status: string }[];
    // What was not sent is a position a later change overtook (skipped, never received).
    const skipped = logged.filter((m) => m.status === 'SKIPPED');
    expect(skipped.every((m) => m.type === 'courier.location')).toBe(true);
    const receivedIds = new Set(received.map((r) => r.event.id));
    expect(skipped.filter((m) => receivedIds.has(m.eventId))).toEqual([]);
    expect(logged).toHaveLength(received.length + skipped.length);
    const changes = logged.map((m) => m.type).filter((type) => type !== 'courier.location');
    expect(changes[0]).toBe('delivery.delivered');
    // Published together, so stored at one instant and listed by message id, as ever.
    expect(changes.slice(-2).sort()).toEqual(['delivery.created', 'delivery.paid']);
    const page = await api(
      merchant,
      'GET',
      `/api/webhooks/${webhook.id}/deliveries?limit=3&offset=2`,
    );
    expect(page.body.data.map((m: { id: string }) => m.id)).toEqual(
      logged.slice(2, 5).map((m) => m.id),
    );
    const past = `/api/webhooks/${webhook.id}/deliveries?limit=5&offset=${logged.length}`;
    expect((await api(merchant, 'GET', past)).body.data).toEqual([]);
    for (const m of log.body.data) {
      if (m.status === 'SKIPPED') continue;
      expect(m.status).toBe('DELIVERED');
      expect(m.attempts).toHaveLength(1);
      expect(m.attempts[0]).toMatchObject({
        n: 1,
        statusCode: 200,
        error: null,
        responseExcerpt: 'ok',
        replay: false,
      });
    }
  });

  it('subscribed to some events, receives only those; a cancel is one delivery.cancelled', async () => {
    const { merchant } = await merchantWithEndpoint('/cancel', {
      events: ['delivery.cancelled', 'delivery.status_changed'],
    });
    const everything = await api(merchant, 'POST', '/api/webhooks', {
      url: receiver.url('/cancel-all'),
    });
    expect(everything.status).toBe(201);
    const deliveryId = await simulated(merchant, 'no-courier');
    // Cancelled at once, before the simulated search gives up.
    expect((await cancelDelivery(base(), merchant, deliveryId)).status).toBe(201);
    await eventually(
      () => expect(typesOf(receiver.at('/cancel-all'))).toContain('delivery.cancelled'),
      {
        timeout: 20_000,
      },
    );
    await new Promise((r) => setTimeout(r, 1000));
    expect(typesOf(receiver.at('/cancel'))).toEqual(['delivery.cancelled']);
    expect(typesOf(receiver.at('/cancel-all'))).toEqual([
      'delivery.created',
      'delivery.paid',
      'delivery.cancelled',
    ]);
  });
});

describe('a checkout', () => {
  it('declined: payment.failed, then delivery.cancelled; paid: delivery.paid', async () => {
    const { merchant } = await merchantWithEndpoint('/checkout');
    const checkout = async () => {
      const reply = await requestDelivery(base(), merchant, [await savePackage(base(), merchant)], {
        paymentMethodType: 'CHECKOUT',
      });
      expect(reply.status).toBe(201);
      return {
        deliveryId: (reply.headers.get('location') as string).split('/').pop() as string,
        page: pagePath(reply.body.data.data.authorization_url),
      };
    };
    const declined = await checkout();
    expect((await postForm(base(), `${declined.page}/decline`)).status).toBe(303);
    const paid = await checkout();
    expect((await postForm(base(), `${paid.page}/pay`)).status).toBe(303);
    const of = (deliveryId: string) =>
      changesOf(receiver.at('/checkout').filter((r) => r.event.data.id === deliveryId));
    await eventually(
      () => {
        expect(of(declined.deliveryId)).toEqual([
          'delivery.created',
          'payment.failed',
          'delivery.cancelled',
        ]);
        expect(of(paid.deliveryId).slice(0, 2)).toEqual(['delivery.created', 'delivery.paid']);
      },
      { timeout: 20_000, interval: 200 },
    );
  });
});

describe('failures', () => {
  it('are retried with backoff, the delivery’s later events waiting their turn', async () => {
    receiver.answer = (path, event, nth) =>
      path === '/flaky' && event.type === 'delivery.created' && nth <= 2
        ? { status: 500, body: 'try later' }
        : { status: 200 };
    const { merchant, webhook } = await merchantWithEndpoint('/flaky');
    await simulated(merchant);
    await eventually(() => expect(typesOf(receiver.at('/flaky'))).toContain('delivery.delivered'), {
      timeout: 60_000,
      interval: 200,
    });
    const received = receiver.at('/flaky');
    expect(changesOf(received).slice(0, 4)).toEqual([
      'delivery.created',
      'delivery.created',
      'delivery.created',
      'delivery.paid',
    ]);
    const log = (await api(merchant, 'GET', `/api/webhooks/${webhook.id}/deliveries?limit=100`))
      .body.data;
    const created = log.find((m: { type: string }) => m.type === 'delivery.created');
    expect(created.status).toBe('DELIVERED');
    expect(created.attempts.map((a: { statusCode: number }) => a.statusCode)).toEqual([
      500, 500, 200,
    ]);
    expect(created.attempts[0].responseExcerpt).toBe('try later');
    receiver.answer = () => ({ status: 200 });
  });

  it('include an endpoint that does not answer in time', async () => {
    receiver.answer = (path, _event, nth) =>
      path === '/slow' && nth === 1 ? 'hang' : { status: 200 };
    const { merchant, webhook } = await merchantWithEndpoint('/slow', {
      events: ['delivery.created'],
    });
    await simulated(merchant);
    await eventually(
      async () => {
        const log = (await api(merchant, 'GET', `/api/webhooks/${webhook.id}/deliveries`)).body
          .data;
        expect(log[0].status).toBe('DELIVERED');
        expect(log[0].attempts[0]).toMatchObject({
          statusCode: null,
          error: 'no answer within 1000 ms',
        });
        expect(log[0].attempts[1]).toMatchObject({ statusCode: 200 });
      },
      { timeout: 20_000, interval: 200 },
    );
    receiver.answer = () => ({ status: 200 });
  });

  it('disable an endpoint failing for WEBHOOK_DISABLE_AFTER_MS; enabled again, it gets what waited', async () => {
    let down = true;
    receiver.answer = (path) => (path === '/down' && down ? { status: 503 } : { status: 200 });
    const { merchant, webhook } = await merchantWithEndpoint('/down', {
      events: ['delivery.created'],
    });
    await simulated(merchant);
    const disabled = await disabledSoon(merchant);
    expect(disabled.disabledReason).toMatch(/enable it with POST \/api\/webhooks\/.+\/enable/);
    const triesWhileDisabled = receiver.at('/down').length;
    await new Promise((r) => setTimeout(r, 1500));
    expect(receiver.at('/down')).toHaveLength(triesWhileDisabled);

    down = false;
    const enabled = await api(merchant, 'POST', `/api/webhooks/${webhook.id}/enable`);
    expect(enabled.status).toBe(200);
    expect(enabled.body.data.status).toBe('ACTIVE');
    await eventually(
      async () => {
        const log = (await api(merchant, 'GET', `/api/webhooks/${webhook.id}/deliveries`)).body
          .data;
        expect(log[0].status).toBe('DELIVERED');
      },
      { timeout: 20_000, interval: 200 },
    );
    receiver.answer = () => ({ status: 200 });
  });
});

describe('enabling an endpoint that is not disabled', () => {
  it('answers it as it is: its failing streak counts on, and it is disabled all the same', async () => {
    receiver.answer = (path) => (path === '/still-down' ? { status: 503 } : { status: 200 });
    const { merchant, webhook } = await merchantWithEndpoint('/still-down', {
      events: ['delivery.created'],
    });
    await simulated(merchant);
    const failing = await eventually(
      async () => {
        const [endpoint] = (await api(merchant, 'GET', '/api/webhooks')).body.data;
        expect(endpoint).toMatchObject({ status: 'ACTIVE', failingSince: expect.any(String) });
        return endpoint;
      },
      { timeout: 20_000, interval: 100 },
    );
    const enabled = await api(merchant, 'POST', `/api/webhooks/${webhook.id}/enable`);
    expect(enabled.status).toBe(200);
    // Read within a poll of its first failure, some 4 s (WEBHOOK_DISABLE_AFTER_MS) before its
    // disable: enabled while ACTIVE.
    expect(enabled.body.data).toMatchObject({
      status: 'ACTIVE',
      failingSince: failing.failingSince,
    });
    const [after] = (await api(merchant, 'GET', '/api/webhooks')).body.data;
    expect(after.failingSince).toBe(failing.failingSince);
    await disabledSoon(merchant);
    receiver.answer = () => ({ status: 200 });
  });
});

describe('replay and rotation', () => {
  it('replays a message with the same event id; an unknown one is 404', async () => {
    const { merchant, webhook } = await merchantWithEndpoint('/replay', {
      events: ['delivery.created'],
    });
    await simulated(merchant);
    await eventually(() => expect(receiver.at('/replay')).toHaveLength(1), { timeout: 20_000 });
    const [message] = (await api(merchant, 'GET', `/api/webhooks/${webhook.id}/deliveries`)).body
      .data;
    const replayed = await api(
      merchant,
      'POST',
      `/api/webhooks/${webhook.id}/deliveries/${message.id}/replay`,
    );
    expect(replayed.status).toBe(202);
    await eventually(() => expect(receiver.at('/replay')).toHaveLength(2), { timeout: 20_000 });
    const [first, second] = receiver.at('/replay');
    expect(second.event.id).toBe(first.event.id);
    expect(signedWith(second, webhook.secret)).toBe(true);
    await eventually(async () => {
      const [after] = (await api(merchant, 'GET', `/api/webhooks/${webhook.id}/deliveries`)).body
        .data;
      expect(after.attempts.map((a: { replay: boolean }) => a.replay)).toEqual([false, true]);
    });
    expectErrorEnvelope(
      await api(merchant, 'POST', `/api/webhooks/${webhook.id}/deliveries/${randomUUID()}/replay`),
      404,
    );
  });

  it('fails, not throws, an endpoint left without a secret by an older version, and says how to mend it', async () => {
    const { merchant, webhook } = await merchantWithEndpoint('/no-secret', {
      events: ['delivery.created'],
    });
    const db = await openServiceDatabase(stack.iso, 'webhook');
    try {
      await db.collection('webhook_secrets').deleteMany({ webhookId: webhook.id });
    } finally {
      await db.close();
    }
    // A dispatcher reads an endpoint's secrets again after a second.
    await new Promise((r) => setTimeout(r, 1_100));
    await simulated(merchant);
    const attempted = await eventually(
      async () => {
        const log = await api(merchant, 'GET', `/api/webhooks/${webhook.id}/deliveries`);
        const attempts = (log.body.data[0]?.attempts ?? []) as { error: string | null }[];
        expect(attempts.length).toBeGreaterThan(0);
        return attempts;
      },
      { timeout: 20_000 },
    );
    expect(attempted[0].error).toBe(
      `the endpoint has no signing secret; rotate it with POST /api/webhooks/${webhook.id}/rotate-secret`,
    );
    expect(receiver.at('/no-secret')).toHaveLength(0);
    // Rotating mends it.
    expect((await api(merchant, 'POST', `/api/webhooks/${webhook.id}/rotate-secret`)).status).toBe(
      201,
    );
  });

  it('signs without the secrets sealed under an earlier WEBHOOK_SECRET_KEY, and fails, not throws, when the latest is one', async () => {
    const { merchant, webhook } = await merchantWithEndpoint('/old-key', {
      events: ['delivery.created'],
    });
    const rotated = await api(merchant, 'POST', `/api/webhooks/${webhook.id}/rotate-secret`);
    expect(rotated.status).toBe(201);
    const earlierKey = new SecretBox('an-earlier-webhook-secret-key-of-this-deployment');
    const db = await openServiceDatabase(stack.iso, 'webhook');
    const resealed = (n: number) =>
      db
        .collection<{ _id: string; sealed: string }>('webhook_secrets')
        .updateOne({ _id: `${webhook.id}:${n}` }, { $set: { sealed: earlierKey.seal('old') } });
    try {
      // The first secret, sealed before the key changed: left out, the latest signs.
      expect((await resealed(1)).modifiedCount).toBe(1);
      await new Promise((r) => setTimeout(r, 1_100));
      await simulated(merchant);
      await eventually(() => expect(receiver.at('/old-key')).toHaveLength(1), { timeout: 20_000 });
      const [message] = receiver.at('/old-key');
      expect(signatureCount(message)).toBe(1);
      expect(signedWith(message, rotated.body.data.secret)).toBe(true);

      // The latest too: nothing signs, and the attempt says why and what to do.
      expect((await resealed(2)).modifiedCount).toBe(1);
      await new Promise((r) => setTimeout(r, 1_100));
      const failing = await simulated(merchant);
      const attempts = await eventually(
        async () => {
          const log = await api(merchant, 'GET', `/api/webhooks/${webhook.id}/deliveries`);
          const latest = (log.body.data as { deliveryId: string; attempts: unknown[] }[]).find(
            (m) => m.deliveryId === failing,
          );
          expect(latest?.attempts.length).toBeGreaterThan(0);
          return latest?.attempts as { error: string | null }[];
        },
        { timeout: 20_000 },
      );
      expect(attempts[0].error).toBe(
        `the endpoint's signing secret cannot be read with this deployment's WEBHOOK_SECRET_KEY (changed since it was sealed); rotate it with POST /api/webhooks/${webhook.id}/rotate-secret`,
      );
      expect(receiver.at('/old-key')).toHaveLength(1);
    } finally {
      await db.close();
    }
  });

  it('after a rotation, signs with both secrets for a day', async () => {
    const { merchant, webhook } = await merchantWithEndpoint('/rotate', {
      events: ['delivery.created'],
    });
    const rotated = await api(merchant, 'POST', `/api/webhooks/${webhook.id}/rotate-secret`);
    expect(rotated.status).toBe(201);
    const next = rotated.body.data;
    expect(next.secret).not.toBe(webhook.secret);
    const overlap = new Date(next.previousSecretExpiresAt).getTime() - Date.now();
    expect(overlap).toBeGreaterThan(23 * 3600_000);
    await simulated(merchant);
    await eventually(() => expect(receiver.at('/rotate')).toHaveLength(1), { timeout: 20_000 });
    const [message] = receiver.at('/rotate');
    expect(signatureCount(message)).toBe(2);
    expect(signedWith(message, webhook.secret)).toBe(true);
    expect(signedWith(message, next.secret)).toBe(true);

    // Rotated again within the day (a retry whose first answer was lost, say): the first
    // secret still signs until the time the first rotation promised.
    const again = await api(merchant, 'POST', `/api/webhooks/${webhook.id}/rotate-secret`);
    expect(again.status).toBe(201);
    // A dispatcher reads an endpoint's secrets again after a second (ENDPOINT_CACHE_MS).
    await new Promise((r) => setTimeout(r, 1_100));
    await simulated(merchant);
    await eventually(() => expect(receiver.at('/rotate')).toHaveLength(2), { timeout: 20_000 });
    const later = receiver.at('/rotate')[1];
    expect(signatureCount(later)).toBe(3);
    for (const secret of [webhook.secret, next.secret, again.body.data.secret]) {
      expect(signedWith(later, secret)).toBe(true);
    }

    // Two more: the fifth version pushes the first past the four that sign, and deletes it.
    for (let i = 0; i < 2; i++) {
      expect(
        (await api(merchant, 'POST', `/api/webhooks/${webhook.id}/rotate-secret`)).status,
      ).toBe(201);
    }
    const db = await openServiceDatabase(stack.iso, 'webhook');
    try {
      const kept = await db
        .collection<{ _id: string; n: number }>('webhook_secrets')
        .find({ webhookId: webhook.id })
        .toArray();
      expect(kept.map((v) => v.n).sort()).toEqual([2, 3, 4, 5]);
    } finally {
      await db.close();
    }
    await new Promise((r) => setTimeout(r, 1_100));
    await simulated(merchant);
    await eventually(() => expect(receiver.at('/rotate')).toHaveLength(3), { timeout: 20_000 });
    const last = receiver.at('/rotate')[2];
    expect(signatureCount(last)).toBe(4);
    expect(signedWith(last, webhook.secret)).toBe(false);
    expect(signedWith(last, next.secret)).toBe(true);
  });
});

describe('two dispatchers', () => {
  let second: NodeProcess;
  afterAll(() => second?.stop());

  it('share the queue and send each event once', async () => {
    second = await startNode({ services: 'webhook', iso: stack.iso, env: ENV });
    const merchants = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        merchantWithEndpoint(`/pair/${i}`, { events: ['delivery.created', 'delivery.paid'] }),
      ),
    );
    await Promise.all(merchants.map(({ merchant }) => simulated(merchant, 'no-courier')));
    await eventually(
      () => {
        for (let i = 0; i < merchants.length; i++) {
          expect(typesOf(receiver.at(`/pair/${i}`)).sort()).toEqual([
            'delivery.created',
            'delivery.paid',
          ]);
        }
      },
      { timeout: 30_000, interval: 200 },
    );
    await new Promise((r) => setTimeout(r, 1000));
    for (let i = 0; i < merchants.length; i++) expect(receiver.at(`/pair/${i}`)).toHaveLength(2);
  });
});
