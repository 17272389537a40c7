import { randomUUID } from 'node:crypto';
import type { Logger } from 'moleculer';
import { loadConfig } from '../../libs/config';
import type { PublishedEvent } from '../../libs/contracts/webhook';
import { attemptId } from '../../libs/messaging/outbox-records';
import { SecretBox } from '../../libs/secret-box';
import type { WaybillContext } from '../../libs/service';
import { laneOf, queueEntryOf } from '../../services/webhook/dispatch-rules';
import { createEndpointActions } from '../../services/webhook/endpoints';
import { fanOut } from '../../services/webhook/fan-out';
import { RETENTION_BATCH, RetentionSweep } from '../../services/webhook/retention';
import type { ReplayParams } from '../../services/webhook/schemas';
import {
  defineWebhookModels,
  messageIdOf,
  secretId,
  WebhookStore,
  type MessageRecord,
  type MessageStatus,
} from '../../services/webhook/store';
import { useStoreDatabase } from '../support/store-database';
import { endpointRecord } from '../support/webhook-records';

/**
 * Retention on the real server, with an injected clock: what finished longer ago than the
 * retention goes (message, attempts, lane mark, list entry, and the event once no message of
 * it is left), what is still to send stays, and sweeps of several replicas at once delete each
 * document once.
 */
const db = useStoreDatabase('webhook_retention', defineWebhookModels);
const store = new WebhookStore(() => db.models);
const DAY = 86_400_000;
const RETENTION_MS = 30 * DAY;
const quiet = { info: () => undefined, warn: () => undefined } as unknown as Logger;

/** A replica's sweep, over the store or a stand-in for it. */
const sweeper = (over: WebhookStore = store) =>
  new RetentionSweep({
    store: over,
    retentionMs: RETENTION_MS,
    intervalMs: 60_000,
    environment: 'staging',
    logger: () => quiet,
  });

const T0 = new Date('2030-03-01T00:00:00Z');
const later = (ms: number) => new Date(T0.getTime() + ms);

/** `count` events of one delivery of the user's, published at T0 to the user's endpoints. */
async function publish(
  userId: string,
  count: number,
  type: PublishedEvent['type'] = 'delivery.status_changed',
): Promise<PublishedEvent[]> {
  const deliveryId = randomUUID();
  const events = Array.from({ length: count }, (_, i): PublishedEvent => ({
    id: randomUUID(),
    type,
    userId,
    deliveryId,
    sequence: (i + 1) * 10,
    createdAt: T0.toISOString(),
    data: {},
  }));
  await fanOut(store, events, 'staging', T0);
  return events;
}

/** What a dispatcher writes as a message ends after `attempts` attempts, the last at `at`. */
async function finish(
  messageId: string,
  at: Date,
  { status = 'DELIVERED', attempts = 1 }: { status?: MessageStatus; attempts?: number } = {},
) {
  const message = await store.message(messageId);
  if (!message) throw new Error(`no message ${messageId}`);
  for (let n = 1; n <= attempts; n++) {
    await store.claimAttempt({
      _id: attemptId(messageId, n),
      messageId,
      webhookId: message.webhookId,
      n,
      startedAt: at,
      finishedAt: at,
      statusCode: status === 'DELIVERED' ? 200 : 500,
      error: null,
      durationMs: 1,
      responseExcerpt: null,
      replay: false,
    });
  }
  await store.markLane(laneOf(message.webhookId, message.deliveryId), message.sequence);
  await store.updateMessage(messageId, {
    status,
    attempts,
    lastAttemptAt: at,
    deliveredAt: status === 'DELIVERED' ? at : null,
  });
  await store.dequeue(messageId);
}

const ids = (webhookId: string, events: PublishedEvent[]) =>
  events.map((e) => messageIdOf(webhookId, e.id));

/** The endpoint's messages in the order its list holds them, oldest first. */
const listed = async (webhookId: string) =>
  (await store.oldestMessages(webhookId, 1_000)).map((e) => e.itemId);

async function remaining(webhookId: string) {
  return (await store.messagesOf(webhookId, 100, 0)).map((m) => m._id).sort();
}

/** How many of these documents exist, each read by `_id`. */
async function present(model: 'Attempt' | 'Event' | 'Message', docIds: string[]): Promise<number> {
  const found = await Promise.all(
    docIds.map((id) => db.models[model].collection.findOne({ _id: id as never })),
  );
  return found.filter((doc) => doc !== null).length;
}

function replay(userId: string, params: ReplayParams, now: Date) {
  const config = loadConfig({ ...process.env, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
  const actions = createEndpointActions({
    store,
    config: config.webhook,
    appEnv: 'staging',
    box: new SecretBox('retention-test'),
    now: () => now,
  });
  const handler = (actions.replayWebhookDelivery as { handler: (ctx: unknown) => unknown }).handler;
  const ctx = { params, meta: { user: { id: userId } } };
  return Promise.resolve(handler(ctx as WaybillContext<ReplayParams>));
}

it('deletes what finished longer ago than the retention, never what is still to send', async () => {
  const userId = randomUUID();
  const sent = endpointRecord(userId);
  const failing = endpointRecord(userId);
  await store.insertEndpoint(sent);
  await store.insertEndpoint(failing);
  const events = await publish(userId, 3);
  const [first, second, third] = await listed(sent._id);
  await finish(first, later(1_000));
  await finish(second, later(2_000), { status: 'FAILED', attempts: 3 });
  await finish(third, later(DAY));
  // The failing endpoint's messages of the same events are still being retried.

  // A second short of the retention of the first: nothing goes.
  const early = await sweeper().sweep(later(RETENTION_MS + 999));
  expect(early.message).toBe(0);
  expect(await remaining(sent._id)).toHaveLength(3);

  // Past the first two's: they go with their attempts, their entries (and claims) of the list,
  // and the lane's mark; their events stay, the failing endpoint's messages need them.
  const swept = await sweeper().sweep(later(RETENTION_MS + 2_001));
  expect(swept).toEqual({
    message: 2,
    attempt: 4,
    event: 0,
    lane: 1,
    list: 4,
    endpoint: 0,
    secret: 0,
  });
  expect(await remaining(sent._id)).toEqual([third]);
  expect(
    await present(
      'Attempt',
      [1, 2, 3].map((n) => attemptId(second, n)),
    ),
  ).toBe(0);
  expect(
    await present(
      'Event',
      events.map((e) => e.id),
    ),
  ).toBe(3);
  expect(await remaining(failing._id)).toEqual(ids(failing._id, events).sort());
  // A page of what is left is full: the list's floor is past what went.
  expect(await store.oldestMessages(sent._id, 10)).toEqual([
    expect.objectContaining({ itemId: third }),
  ]);

  // Long after, the failing endpoint's messages still to send are kept, and their events.
  const much = await sweeper().sweep(later(10 * RETENTION_MS));
  expect(much).toMatchObject({ message: 1, event: 0 });
  expect(await remaining(failing._id)).toHaveLength(3);

  // Given up at last: they go too, and the events with the last message of each.
  for (const id of ids(failing._id, events)) {
    await finish(id, later(11 * RETENTION_MS), { status: 'FAILED', attempts: 2 });
  }
  const last = await sweeper().sweep(later(12 * RETENTION_MS + 1));
  expect(last).toEqual({
    message: 3,
    attempt: 6,
    event: 3,
    lane: 1,
    list: 6,
    endpoint: 0,
    secret: 0,
  });
  expect(
    await present(
      'Event',
      events.map((e) => e.id),
    ),
  ).toBe(0);
  expect(await remaining(failing._id)).toEqual([]);
});

it('forgets a deleted endpoint once its messages are gone and its deletion a retention old, once', async () => {
  const userId = randomUUID();
  const deleted = endpointRecord(userId);
  const live = endpointRecord(userId);
  await store.insertEndpoint(deleted);
  await store.insertEndpoint(live);
  const events = await publish(userId, 2);
  for (const id of [...ids(deleted._id, events), ...ids(live._id, events)]) {
    await finish(id, later(1_000));
  }
  // Its signing secrets, rotated twice (the hint names the first): all three go with it.
  const versions = [1, 2, 3];
  for (const n of versions) {
    await store.claimSecret({
      _id: secretId(deleted._id, n),
      webhookId: deleted._id,
      n,
      sealed: `sealed-${n}`,
      createdAt: later(0),
    });
  }
  await store.deleteEndpoint(deleted._id, later(2_000));
  const scanned = async () => (await store.endpointIds()).filter((id) => id === deleted._id);

  // Its messages go after the retention; the endpoint stays a retention after its deletion.
  const messagesGone = await sweeper().sweep(later(RETENTION_MS + 1_001));
  expect(messagesGone).toMatchObject({ message: 4, endpoint: 0 });
  expect(await sweeper().sweep(later(RETENTION_MS + 1_999))).toMatchObject({ endpoint: 0 });
  expect(await scanned()).toEqual([deleted._id]);

  // Replicas sweeping at once forget it once; the live endpoint, its list empty too, stays.
  const now = later(RETENTION_MS + 2_000);
  const rounds = await Promise.all([sweeper(), sweeper(), sweeper()].map((s) => s.sweep(now)));
  expect(rounds.reduce((sum, r) => sum + r.endpoint, 0)).toBe(1);
  expect(rounds.reduce((sum, r) => sum + r.secret, 0)).toBe(versions.length);
  for (const n of versions) expect(await store.secret(deleted._id, n)).toBeNull();
  expect(await scanned()).toEqual([]);
  expect(await store.endpoint(deleted._id)).toBeNull();
  expect(await store.endpoint(live._id)).toMatchObject({ deleted: false });
  expect(await sweeper().sweep(later(2 * RETENTION_MS))).toMatchObject({ endpoint: 0 });
  // A change that arrives late still finds its deletion, and writes nothing.
  expect(await store.updateEndpoint(deleted._id, { description: 'late' })).toBe(false);
  expect(await store.endpoint(deleted._id)).toBeNull();
  expect((await store.endpointsOf(userId, 'staging')).map((e) => e._id)).toEqual([live._id]);
});

it('queues again the first message still to send that nothing would send, once, and only once its publication is over', async () => {
  const userId = randomUUID();
  const endpoint = endpointRecord(userId);
  await store.insertEndpoint(endpoint);
  await publish(userId, 2);
  const [first, lost] = await listed(endpoint._id);
  await finish(first, later(1_000));
  // Its publication stopped between storing the message and queueing it.
  await store.dequeue(lost);

  // The first goes; the lost one, the endpoint's oldest now, is queued to be sent after all.
  const at = later(RETENTION_MS + 2_001);
  expect((await sweeper().sweep(at)).message).toBe(1);
  const message = await store.message(lost);
  expect(message).toMatchObject({ status: 'PENDING' });
  expect(await store.queued(lost)).toEqual(
    expect.objectContaining({
      _id: lost,
      webhookId: endpoint._id,
      userId,
      lane: laneOf(endpoint._id, message?.deliveryId as string),
      sequence: message?.sequence,
      attempts: 0,
      nextAttemptAt: at,
      ephemeral: false,
    }),
  );
  // Swept again, by replicas at once: still one entry, as queued.
  await Promise.all([sweeper(), sweeper()].map((s) => s.sweep(later(3 * RETENTION_MS))));
  expect(await store.queued(lost)).toMatchObject({ nextAttemptAt: at });

  // One whose publication may still be queueing it is left alone.
  const fresh = endpointRecord(userId);
  await store.insertEndpoint(fresh);
  const [young] = ids(fresh._id, await publish(userId, 1));
  await store.dequeue(young);
  await sweeper().sweep(later(60_000));
  expect(await store.queued(young)).toBeNull();
});

it('concludes unsent, never queues, a lost position or a lost message of a deleted endpoint, and passes it once retained its time', async () => {
  const userId = randomUUID();
  const endpoint = endpointRecord(userId);
  const deleted = endpointRecord(userId);
  await store.insertEndpoint(endpoint);
  await store.insertEndpoint(deleted);
  // Each endpoint: one change that went, then a message whose publication stopped before
  // queueing it (a position for the first; a change for the one deleted since).
  const [change] = await publish(userId, 1);
  const [position] = await publish(userId, 1, 'courier.location');
  const [change2] = await publish(userId, 1);
  const lostPosition = messageIdOf(endpoint._id, position.id);
  const lostChange = messageIdOf(deleted._id, change2.id);
  await finish(messageIdOf(endpoint._id, change.id), later(1_000));
  await finish(messageIdOf(deleted._id, change.id), later(1_000));
  await finish(messageIdOf(deleted._id, position.id), later(1_000));
  await finish(messageIdOf(endpoint._id, change2.id), later(1_000));
  await store.dequeue(lostPosition);
  await store.dequeue(lostChange);
  await store.deleteEndpoint(deleted._id, later(2_000));

  const at = later(RETENTION_MS + 2_001);
  await sweeper().sweep(at);
  expect(await store.queued(lostPosition)).toBeNull();
  expect(await store.queued(lostChange)).toBeNull();
  expect(await store.message(lostPosition)).toMatchObject({
    status: 'SKIPPED',
    lastError: expect.stringMatching(/^not sent: its publication stopped before queueing it/),
    lastAttemptAt: at,
  });
  expect(await store.message(lostChange)).toMatchObject({
    status: 'FAILED',
    lastError: 'the endpoint was deleted',
    lastAttemptAt: at,
  });

  // Retained their time from then, they go, and the walk goes on past them.
  await sweeper().sweep(later(2 * RETENTION_MS + 3_000));
  await sweeper().sweep(later(2 * RETENTION_MS + 4_000));
  expect(await store.message(lostPosition)).toBeNull();
  expect(await store.message(lostChange)).toBeNull();
  expect(await remaining(endpoint._id)).toEqual([]);
});

it('concludes nothing of a lost position a replay queued between the sweep’s reads', async () => {
  const userId = randomUUID();
  const endpoint = endpointRecord(userId);
  await store.insertEndpoint(endpoint);
  const [change] = await publish(userId, 1);
  const [position] = await publish(userId, 1, 'courier.location');
  const lost = messageIdOf(endpoint._id, position.id);
  await finish(messageIdOf(endpoint._id, change.id), later(1_000));
  await store.dequeue(lost);
  // The sweep reads no entry; its owner's replay queues it just after.
  const racing = Object.create(store) as WebhookStore;
  racing.queued = async (messageId) => {
    const found = await store.queued(messageId);
    if (messageId === lost && !found) {
      const message = await store.message(lost);
      await store.requeue({
        ...queueEntryOf(message as MessageRecord, userId, later(RETENTION_MS)),
        replay: true,
      });
    }
    return found;
  };
  await sweeper(racing).sweep(later(RETENTION_MS + 2_001));
  expect(await store.message(lost)).toMatchObject({ status: 'PENDING', lastError: null });
  expect(await store.queued(lost)).toMatchObject({ replay: true });
});

it('leaves alone a message its dispatcher gave up between the sweep’s reads', async () => {
  const userId = randomUUID();
  const endpoint = endpointRecord(userId);
  await store.insertEndpoint(endpoint);
  await publish(userId, 2);
  const [first, retried] = await listed(endpoint._id);
  await finish(first, later(1_000));
  // The sweep reads `retried` PENDING; its dispatcher then gives it up and takes its entry off
  // the queue before the sweep looks for that entry.
  const racing = Object.create(store) as WebhookStore;
  racing.queued = async (messageId) => {
    // Given up far ahead of the other tests' clocks: none of their sweeps takes it.
    if (messageId === retried) {
      await finish(retried, later(1_000 * RETENTION_MS), { status: 'FAILED', attempts: 4 });
    }
    return store.queued(messageId);
  };
  expect((await sweeper(racing).sweep(later(RETENTION_MS + 2_001))).message).toBe(1);
  expect(await store.queued(retried)).toBeNull();
  expect(await store.message(retried)).toMatchObject({ status: 'FAILED', attempts: 4 });
});

it('keeps a replayed message, and refuses to replay one about to go', async () => {
  const userId = randomUUID();
  const endpoint = endpointRecord(userId);
  await store.insertEndpoint(endpoint);
  await publish(userId, 2);
  const [older, newer] = await listed(endpoint._id);
  await finish(older, later(1_000));
  await finish(newer, later(2_000));

  // A replay within the retention queues it again: the sweep stops there, and keeps the newer.
  const replayed = await replay(
    userId,
    { webhookId: endpoint._id, webhookDeliveryId: older },
    later(RETENTION_MS / 2),
  );
  expect(replayed).toMatchObject({ id: older, status: 'PENDING' });
  const swept = await sweeper().sweep(later(RETENTION_MS + 3_000));
  expect(swept.message).toBe(0);
  expect(await remaining(endpoint._id)).toEqual([older, newer].sort());

  // Sent again: kept for a retention from then. The newer, now first, is too near its
  // deletion to be replayed (the sweep of another replica may be deleting it).
  await finish(older, later(RETENTION_MS + 4_000), { attempts: 2 });
  await expect(
    replay(userId, { webhookId: endpoint._id, webhookDeliveryId: newer }, later(RETENTION_MS)),
  ).rejects.toMatchObject({ code: 409 });
  expect((await store.queued(newer)) === null).toBe(true);
  const after = await sweeper().sweep(later(RETENTION_MS + 5_000));
  expect(after.message).toBe(0);
  // The older goes first or not at all: the list keeps its top.
  expect(await remaining(endpoint._id)).toEqual([older, newer].sort());
  const finally_ = await sweeper().sweep(later(2 * RETENTION_MS + 4_001));
  expect(finally_).toMatchObject({ message: 2, event: 2 });
  // Deleted: a replay finds nothing.
  await expect(
    replay(userId, { webhookId: endpoint._id, webhookDeliveryId: older }, later(2 * RETENTION_MS)),
  ).rejects.toMatchObject({ code: 404 });
});

it('deletes each document once when replicas sweep at once, a batch at a time', async () => {
  const userId = randomUUID();
  const endpoints = [endpointRecord(userId), endpointRecord(userId)];
  for (const endpoint of endpoints) await store.insertEndpoint(endpoint);
  const count = RETENTION_BATCH + 10;
  const events = await publish(userId, count);
  const messages = endpoints.flatMap((e) => ids(e._id, events));
  for (let i = 0; i < messages.length; i += 20) {
    await Promise.all(messages.slice(i, i + 20).map((id) => finish(id, later(1_000))));
  }

  const now = later(RETENTION_MS + 1_001);
  const rounds = await Promise.all([sweeper(), sweeper(), sweeper()].map((s) => s.sweep(now)));
  const total = rounds.reduce((sum, r) => ({
    message: sum.message + r.message,
    attempt: sum.attempt + r.attempt,
    event: sum.event + r.event,
    lane: sum.lane + r.lane,
    list: sum.list + r.list,
    endpoint: sum.endpoint + r.endpoint,
    secret: sum.secret + r.secret,
  }));
  // Every record of the two endpoints once: a message, an attempt and an entry with its claim
  // each, an event per pair of messages, a lane per endpoint.
  expect(total).toEqual({
    message: 2 * count,
    attempt: 2 * count,
    event: count,
    lane: 2,
    list: 4 * count,
    endpoint: 0,
    secret: 0,
  });
  expect(await present('Message', messages)).toBe(0);
  expect(
    await present(
      'Event',
      events.map((e) => e.id),
    ),
  ).toBe(0);
  for (const endpoint of endpoints) {
    expect(await store.oldestMessages(endpoint._id, 10)).toEqual([]);
  }
  // No claim is left behind.
  expect(await db.models.RetentionClaim.countDocuments({})).toBe(0);
  // And a round after finds nothing more.
  expect((await sweeper().sweep(later(RETENTION_MS + 2_000))).message).toBe(0);
});

it('passes over a batch another replica holds, and takes over one whose sweep stopped', async () => {
  const userId = randomUUID();
  const endpoint = endpointRecord(userId);
  await store.insertEndpoint(endpoint);
  const events = await publish(userId, 2);
  for (const id of ids(endpoint._id, events)) await finish(id, later(1_000));
  const now = later(RETENTION_MS + 1_001);
  const [{ n }] = await store.oldestMessages(endpoint._id, 1);
  const claimId = `${endpoint._id}:${n}`;

  await store.claimRetention(claimId, now);
  expect((await sweeper().sweep(now)).message).toBe(0);
  expect(await remaining(endpoint._id)).toHaveLength(2);

  // Its holder stopped ten minutes ago: the batch is taken over, and the claim goes.
  await store.releaseRetention(claimId);
  await store.claimRetention(claimId, new Date(now.getTime() - 10 * 60_000));
  expect((await sweeper().sweep(now)).message).toBe(2);
  expect(await store.retentionClaim(claimId)).toBeNull();
});

it('goes on past a floor whose raise was lost, and never hands out a number it deleted', async () => {
  const userId = randomUUID();
  const endpoint = endpointRecord(userId);
  await store.insertEndpoint(endpoint);
  await publish(userId, 3);
  const [first, second, third] = await listed(endpoint._id);
  await finish(first, later(1_000));
  await finish(second, later(2_000));
  await finish(third, later(DAY));
  expect((await sweeper().sweep(later(RETENTION_MS + 2_001))).message).toBe(2);

  // The raise of the floor past the two deleted did not land (the sweep stopped in between,
  // or an append's raise of the hint, in the same document, wrote over it), and the hint lags
  // one behind.
  const heads = db.models.EndpointMessageHead.collection;
  await heads.updateOne({ _id: endpoint._id as never }, { $set: { floor: 1, n: 2 } });
  // The oldest entry still there is found past the gap, and the floor raised past it again.
  expect(await store.oldestMessages(endpoint._id, 1)).toEqual([
    expect.objectContaining({ itemId: third, n: 3 }),
  ]);
  expect(await heads.findOne({ _id: endpoint._id as never })).toMatchObject({ floor: 3 });

  // With the hint behind, a new message still takes the number after the last, not a deleted
  // one below the floor where neither the list's pages nor the sweep would see it.
  await heads.updateOne({ _id: endpoint._id as never }, { $set: { n: 0 } });
  const [fourth] = ids(endpoint._id, await publish(userId, 1));
  expect(await store.oldestMessages(endpoint._id, 10)).toEqual([
    expect.objectContaining({ itemId: third, n: 3 }),
    expect.objectContaining({ itemId: fourth, n: 4 }),
  ]);
  expect(await remaining(endpoint._id)).toEqual([third, fourth].sort());
  await finish(fourth, later(2 * DAY));
  expect((await sweeper().sweep(later(RETENTION_MS + 2 * DAY + 1))).message).toBe(2);
  expect(await remaining(endpoint._id)).toEqual([]);
});
