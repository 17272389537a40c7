import { randomUUID } from 'node:crypto';
import type mongoose from 'mongoose';
import type { PublishedEvent } from '../../libs/contracts/webhook';
import { fanOut } from '../../services/webhook/fan-out';
import {
  defineWebhookModels,
  WebhookStore,
  type EndpointRecord,
  type MessageRecord,
} from '../../services/webhook/store';
import { isolation, openServiceDatabase } from '../support/stack';
import { endpointRecord, publishedEvent } from '../support/webhook-records';

/**
 * The webhook service's reads by `_id` (decision 71) on the real server: an endpoint's
 * messages page as the former `find({webhookId})` sorted by `createdAt` and `_id` did, each
 * once however often published; an owner's endpoints are the live ones, newest first, and only
 * they get events; what was stored before the lists existed is listed once, in the same order.
 */
const iso = isolation();
let conn: mongoose.Connection;
let models: ReturnType<typeof defineWebhookModels>;
let store: WebhookStore;
const ENV = 'staging';

async function open(name: string) {
  const db = await openServiceDatabase(iso, name);
  const m = defineWebhookModels(db);
  await Promise.all(Object.values(m).map((model) => model.createIndexes()));
  return { db, m, store: new WebhookStore(() => m) };
}

beforeAll(async () => {
  ({ db: conn, m: models, store } = await open('webhook_lists'));
});

afterAll(async () => {
  await conn?.dropDatabase();
  await conn?.close();
});

/** What the route answered before the lists: a scan sorted by `createdAt`, then `_id`. */
async function formerPage(webhookId: string, limit: number, offset: number) {
  const found = await models.Message.find({ webhookId })
    .sort({ createdAt: -1, _id: -1 })
    .skip(offset)
    .limit(limit)
    .lean();
  return found.map((m) => m._id);
}

const ids = (records: { _id: unknown }[]) => records.map((r) => String(r._id));

describe("an endpoint's messages", () => {
  it('page newest first as the former sort did, each once however often published', async () => {
    const userId = randomUUID();
    const [a, b] = [endpointRecord(userId), endpointRecord(userId)];
    for (const e of [a, b]) await store.insertEndpoint(e);
    // Publications of one event and of several at once (those share a `createdAt`).
    const published: PublishedEvent[][] = [];
    for (let i = 0; i < 6; i++) {
      const events = Array.from({ length: 1 + (i % 3) }, (_, j) => publishedEvent(userId, j));
      published.push(events);
      // The last one twice at once, as a retry racing its first try: each message made once.
      const tries = i === 5 ? [new Date(), new Date(Date.now() + 1)] : [new Date()];
      const made = await Promise.all(tries.map((at) => fanOut(store, events, ENV, at)));
      expect(made.reduce((sum, n) => sum + n, 0)).toBe(2 * events.length);
    }
    // Published again later: nothing new, nothing listed twice.
    await Promise.all(published.slice(2).map((events) => fanOut(store, events, ENV, new Date())));
    expect(await fanOut(store, published[0], ENV, new Date())).toBe(0);

    for (const e of [a, b]) {
      const total = await models.Message.countDocuments({ webhookId: e._id });
      expect(total).toBe(12);
      // Each listed before it was stored, whichever way it was stored: a pass after a
      // rollout reads none of them (libs/backfills).
      expect(await models.Message.countDocuments({ webhookId: e._id, recordedFirst: true })).toBe(
        12,
      );
      expect(await models.Endpoint.findById(e._id).lean()).toMatchObject({ recordedFirst: true });
      expect(ids(await store.messagesOf(e._id, 100, 0))).toEqual(await formerPage(e._id, 100, 0));
      for (const [limit, offset] of [
        [5, 0],
        [5, 5],
        [5, 10],
        [3, 11],
        [5, 12],
      ]) {
        expect(ids(await store.messagesOf(e._id, limit, offset))).toEqual(
          await formerPage(e._id, limit, offset),
        );
      }
    }
  });

  it('skip a message listed whose publication stopped before storing it', async () => {
    const userId = randomUUID();
    const endpoint = endpointRecord(userId);
    await store.insertEndpoint(endpoint);
    await fanOut(store, [publishedEvent(userId, 0)], ENV, new Date());
    await models.EndpointMessageEntry.create({
      _id: `${endpoint._id}:2`,
      ownerId: endpoint._id,
      n: 2,
      itemId: randomUUID(),
      at: new Date(),
    });
    await fanOut(store, [publishedEvent(userId, 1)], ENV, new Date());
    const page = await store.messagesOf(endpoint._id, 20, 0);
    expect(ids(page)).toEqual(await formerPage(endpoint._id, 20, 0));
    expect(page.map((m) => m.sequence)).toEqual([1, 0]);
  });
});

describe('events', () => {
  it('are recorded only when some endpoint takes them, and once one does when published again', async () => {
    const recorded = async (events: PublishedEvent[]) =>
      (await models.Event.find({ _id: { $in: events.map((e) => e.id) } }).lean()).map((e) =>
        String(e._id),
      );
    // Nobody has an endpoint: a courier's position every flush is kept nowhere.
    const nobody = randomUUID();
    const unseen = [publishedEvent(nobody, 1), publishedEvent(nobody, 2)];
    unseen[1] = { ...unseen[1], type: 'courier.location' };
    expect(await fanOut(store, unseen, ENV, new Date())).toBe(0);
    expect(await recorded(unseen)).toEqual([]);

    // An endpoint that takes one type, and a disabled one that would take every type.
    const userId = randomUUID();
    const changes = endpointRecord(userId, { events: ['delivery.status_changed'] });
    await store.insertEndpoint(changes);
    await store.insertEndpoint(endpointRecord(userId, { status: 'DISABLED' }));
    const change = publishedEvent(userId, 3);
    const position = { ...publishedEvent(userId, 4), type: 'courier.location' as const };
    expect(await fanOut(store, [change, position], ENV, new Date())).toBe(1);
    expect(await recorded([change, position])).toEqual([change.id]);
    const [message] = await store.messagesOf(changes._id, 1, 0);
    expect(await store.event(message.eventId)).toMatchObject({ _id: change.id });

    // Published again once an endpoint takes it (order's sweep): recorded then, and sent.
    const later = endpointRecord(nobody);
    await store.insertEndpoint(later);
    expect(await fanOut(store, unseen, ENV, new Date())).toBe(2);
    expect((await recorded(unseen)).sort()).toEqual(unseen.map((e) => e.id).sort());
    // Again: nothing new.
    expect(await fanOut(store, [change, position, ...unseen], ENV, new Date())).toBe(0);
  });
});

describe("an owner's endpoints", () => {
  it('are the live ones, newest first; a deleted one gets no events', async () => {
    const userId = randomUUID();
    const created: EndpointRecord[] = [];
    for (let i = 0; i < 5; i++) {
      const endpoint = endpointRecord(userId, { createdAt: new Date(Date.now() + i) });
      await store.insertEndpoint(endpoint);
      created.push(endpoint);
    }
    // Another environment's and another user's are not theirs.
    await store.insertEndpoint(endpointRecord(userId, { environment: 'live' }));
    await store.insertEndpoint(endpointRecord(randomUUID()));
    for (const e of [created[0], created[3]]) {
      await store.deleteEndpoint(e._id);
    }
    const live = [created[4], created[2], created[1]];
    expect(ids(await store.endpointsOf(userId, ENV))).toEqual(ids(live));
    // Twice: the second read starts from the floor the first one raised.
    expect(ids(await store.endpointsOf(userId, ENV))).toEqual(ids(live));

    await fanOut(store, [publishedEvent(userId, 0)], ENV, new Date());
    for (const e of created) {
      const messages = await store.messagesOf(e._id, 20, 0);
      expect(messages).toHaveLength(live.includes(e) ? 1 : 0);
    }
  });

  it('stay listed when created while others are deleted and read', async () => {
    const userId = randomUUID();
    const first = Array.from({ length: 60 }, (_, i) =>
      endpointRecord(userId, { createdAt: new Date(Date.now() + i) }),
    );
    for (const e of first) await store.insertEndpoint(e);
    const kept = first[0];
    await Promise.all(first.slice(1).map((e) => store.deleteEndpoint(e._id)));
    // Reads lift the one live endpoint past the deleted ones while more are created.
    const more = Array.from({ length: 8 }, (_, i) =>
      endpointRecord(userId, { createdAt: new Date(Date.now() + 100 + i) }),
    );
    await Promise.all([
      ...more.map((e) => store.insertEndpoint(e)),
      ...more.map(() => store.endpointsOf(userId, ENV)),
    ]);
    const expected = [...more].reverse().concat(kept);
    expect(ids(await store.endpointsOf(userId, ENV))).toEqual(ids(expected));
    expect(ids(await store.endpointsOf(userId, ENV))).toEqual(ids(expected));
  });
});

describe("an endpoint's deletion", () => {
  it('stands against the changes written as it is made', async () => {
    // A change written from a copy read before the deletion wrote the endpoint back live in
    // most such rounds (FerretDB writes the whole document from the copy it read).
    const userId = randomUUID();
    for (let round = 0; round < 12; round++) {
      const endpoint = endpointRecord(userId);
      await store.insertEndpoint(endpoint);
      await Promise.all([
        store.updateEndpoint(endpoint._id, { failingSince: new Date() }),
        store.deleteEndpoint(endpoint._id),
        store.updateEndpoint(endpoint._id, { secretVersion: 2 }),
      ]);
      expect((await store.endpoint(endpoint._id))?.deleted).toBe(true);
    }
    expect(await store.endpointsOf(userId, ENV)).toEqual([]);
  });
});

describe('documents stored before the lists', () => {
  it('are listed once, when the service starts, in the order the scans gave', async () => {
    const before = await open('webhook_lists_backfill');
    try {
      const userId = randomUUID();
      const endpoints = [0, 1, 2].map((i) =>
        endpointRecord(userId, { createdAt: new Date(Date.now() - 10_000 + i) }),
      );
      endpoints[1].deleted = true;
      await before.m.Endpoint.insertMany(endpoints);
      const at = new Date(Date.now() - 5_000);
      const messages: MessageRecord[] = Array.from({ length: 7 }, (_, i) => ({
        _id: randomUUID(),
        webhookId: endpoints[0]._id,
        eventId: randomUUID(),
        type: 'delivery.status_changed',
        deliveryId: randomUUID(),
        sequence: i,
        status: 'DELIVERED',
        attempts: 1,
        lastAttemptAt: null,
        lastStatusCode: 200,
        lastError: null,
        deliveredAt: null,
        // Some share a `createdAt`, as a publication's messages do.
        createdAt: new Date(at.getTime() + Math.floor(i / 2)),
      }));
      await before.m.Message.insertMany(messages);

      expect(await before.store.endpointsOf(userId, ENV)).toEqual([]);
      await before.store.listStoredEndpoints('start');
      await before.store.listStoredMessages('start');
      // Once per deployment: a second start adds nothing.
      await before.store.listStoredEndpoints('start');
      await before.store.listStoredMessages('start');

      expect(ids(await before.store.endpointsOf(userId, ENV))).toEqual(
        ids([endpoints[2], endpoints[0]]),
      );
      const webhookId = endpoints[0]._id;
      const former = await before.m.Message.find({ webhookId })
        .sort({ createdAt: -1, _id: -1 })
        .lean();
      expect(ids(await before.store.messagesOf(webhookId, 20, 0))).toEqual(ids(former));
      expect(ids(await before.store.messagesOf(webhookId, 3, 2))).toEqual(ids(former.slice(2, 5)));
    } finally {
      await before.db.dropDatabase();
      await before.db.close();
    }
  });
});
