import { randomUUID } from 'node:crypto';
import { loadConfig } from '../../libs/config';
import { SecretBox } from '../../libs/secret-box';
import type { WaybillContext } from '../../libs/service';
import { createEndpointActions } from '../../services/webhook/endpoints';
import { fanOut } from '../../services/webhook/fan-out';
import type { ReplayParams } from '../../services/webhook/schemas';
import {
  defineWebhookModels,
  WebhookStore,
  type MessageRecord,
} from '../../services/webhook/store';
import { CLAIM_HOLD_MS, queueEntryOf } from '../../services/webhook/dispatch-rules';
import { useStoreDatabase } from '../support/store-database';
import { endpointRecord, publishedEvent, quietDispatcher } from '../support/webhook-records';

/**
 * Replays of one message at once, on the real server: one queues it, the others answer 409,
 * and none of them writes the message's status but the one whose entry is queued, so the log
 * never says DELIVERED (or FAILED) of a message being sent again.
 */
const db = useStoreDatabase('webhook_replay', defineWebhookModels);
const store = new WebhookStore(() => db.models);
const config = loadConfig({ ...process.env, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });

/** The store, each of its `message` reads followed by `after` (given the id) before it answers. */
function afterEachRead(after: (messageId: string) => Promise<void>): WebhookStore {
  const watched = Object.create(store) as WebhookStore;
  watched.message = async (messageId) => {
    const read = await store.message(messageId);
    await after(messageId);
    return read;
  };
  return watched;
}

/**
 * The store, its first `readers` `message` reads held until all are under way: every replay
 * reads the message as it was before any of them wrote.
 */
function readingTogether(readers: number): WebhookStore {
  const waiting: (() => void)[] = [];
  return afterEachRead(async () => {
    // The first read of each: a replay's read after its entry is queued goes at once.
    if (waiting.length === readers) return;
    await new Promise<void>((resolve) => {
      waiting.push(resolve);
      if (waiting.length === readers) for (const go of waiting) go();
    });
  });
}

/** A new endpoint of the user's and its one message, of an event of `type`, queued. */
async function queuedMessage(userId: string, type?: 'courier.location') {
  const endpoint = endpointRecord(userId);
  await store.insertEndpoint(endpoint);
  const event = { ...publishedEvent(userId, 1), ...(type ? { type } : {}) };
  await fanOut(store, [event], 'staging', new Date());
  const [message] = await store.messagesOf(endpoint._id, 1, 0);
  return { endpoint, message };
}

/** A message of the user's endpoint, delivered and off the queue, as a replay finds one. */
async function deliveredMessage(userId: string) {
  const { endpoint, message } = await queuedMessage(userId);
  await store.updateMessage(message._id, {
    status: 'DELIVERED',
    attempts: 1,
    deliveredAt: new Date(),
  });
  await store.dequeue(message._id);
  return { endpoint, messageId: message._id };
}

/** A dispatcher's one look at the queue at `now`, its attempts concluded. */
async function dispatchOnce(now: Date): Promise<void> {
  const dispatcher = quietDispatcher(store, config.webhook);
  await dispatcher.look(now);
  await dispatcher.settle();
  await dispatcher.stop();
}

function replay(replaying: WebhookStore, userId: string, params: ReplayParams, now?: () => Date) {
  const actions = createEndpointActions({
    store: replaying,
    config: config.webhook,
    appEnv: 'staging',
    box: new SecretBox('replay-test'),
    now,
  });
  const handler = (actions.replayWebhookDelivery as { handler: (ctx: unknown) => unknown }).handler;
  const ctx = { params, meta: { user: { id: userId } } };
  return Promise.resolve(handler(ctx as WaybillContext<ReplayParams>));
}

it('queues a message once when replayed several times at once, and it reads PENDING', async () => {
  const userId = randomUUID();
  const { endpoint, messageId } = await deliveredMessage(userId);
  const params = { webhookId: endpoint._id, webhookDeliveryId: messageId };
  const together = readingTogether(4);
  const replies = await Promise.allSettled(
    Array.from({ length: 4 }, () => replay(together, userId, params)),
  );
  const queued = replies.filter((r) => r.status === 'fulfilled');
  const refused = replies.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  expect(queued).toHaveLength(1);
  expect(refused.map((r) => (r.reason as { code: number }).code)).toEqual([409, 409, 409]);
  // Queued, due now, and the log says so: the refused replays put back nothing.
  const entry = await store.queued(messageId);
  expect(entry).toMatchObject({ replay: true, attempts: 1 });
  expect(new Date(entry?.nextAttemptAt as Date).getTime()).toBeLessThanOrEqual(Date.now());
  expect((await store.message(messageId))?.status).toBe('PENDING');

  // Another replay while it waits: 409, and it changes nothing.
  await expect(replay(store, userId, params)).rejects.toMatchObject({ code: 409 });
  expect((await store.message(messageId))?.status).toBe('PENDING');
  expect(await store.queued(messageId)).toEqual(entry);
});

/**
 * The store, its first `message` read answered as it was, then `since` written and the
 * message's entry taken off the queue: a dispatcher concluded an attempt right after the read.
 */
function concludedAfterFirstRead(since: Partial<MessageRecord>): WebhookStore {
  let concluded = false;
  return afterEachRead(async (messageId) => {
    if (concluded) return;
    concluded = true;
    await store.updateMessage(messageId, since);
    await store.dequeue(messageId);
  });
}

it('holds a replay’s entry from dispatchers from when it is queued, however long the reads before took', async () => {
  const userId = randomUUID();
  const { endpoint, messageId } = await deliveredMessage(userId);
  // The replay's clock: 45 s pass between its first look at it and its queuing.
  const start = Date.now();
  const times = [start, start + 45_000];
  const clock = () => new Date(times.shift() ?? start + 45_000);
  let heldUntil: number | undefined;
  let reads = 0;
  // Its second read of the message comes after its entry is queued, before its mark.
  const watching = afterEachRead(async (id) => {
    if (++reads !== 2) return;
    heldUntil = new Date((await store.queued(id))?.nextAttemptAt as Date).getTime();
  });
  await replay(watching, userId, { webhookId: endpoint._id, webhookDeliveryId: messageId }, clock);
  expect(heldUntil).toBe(start + 45_000 + CLAIM_HOLD_MS);
  expect(CLAIM_HOLD_MS).toBeGreaterThanOrEqual(4 * 10_000);
});

it('replays a message read PENDING that its dispatcher concluded meanwhile as the attempt after its last', async () => {
  const userId = randomUUID();
  const { endpoint, message } = await queuedMessage(userId);
  // Read PENDING, before any attempt; its first attempt is then concluded, delivered.
  const late = concludedAfterFirstRead({ status: 'DELIVERED', attempts: 1 });
  const params = { webhookId: endpoint._id, webhookDeliveryId: message._id };
  const view = await replay(late, userId, params);
  // Its attempt is the second: the first, taken, would be concluded again, and nothing sent.
  expect(await store.queued(message._id)).toMatchObject({ replay: true, attempts: 1 });
  expect(view).toMatchObject({ status: 'PENDING' });
  expect((await store.message(message._id))?.status).toBe('PENDING');
});

it('replays a delivered message whose other replay went meanwhile as the attempt after that one', async () => {
  const userId = randomUUID();
  const { endpoint, messageId } = await deliveredMessage(userId);
  // Read after its first attempt; another replay's, the second, is then made and concluded.
  const late = concludedAfterFirstRead({ status: 'DELIVERED', attempts: 2 });
  await replay(late, userId, { webhookId: endpoint._id, webhookDeliveryId: messageId });
  expect(await store.queued(messageId)).toMatchObject({ replay: true, attempts: 2 });
});

it('refuses to replay a message read PENDING that was skipped as stale meanwhile, queuing nothing', async () => {
  const userId = randomUUID();
  const { endpoint, message } = await queuedMessage(userId, 'courier.location');
  const late = concludedAfterFirstRead({ status: 'SKIPPED', attempts: 1 });
  const params = { webhookId: endpoint._id, webhookDeliveryId: message._id };
  await expect(replay(late, userId, params)).rejects.toMatchObject({ code: 409 });
  expect(await store.queued(message._id)).toBeNull();
  expect((await store.message(message._id))?.status).toBe('SKIPPED');
});

it('replays a courier position as a position: tried once, skipped once a later event went', async () => {
  const userId = randomUUID();
  const { endpoint, message } = await queuedMessage(userId, 'courier.location');
  await store.updateMessage(message._id, { status: 'FAILED', attempts: 1 });
  await store.dequeue(message._id);
  await replay(store, userId, { webhookId: endpoint._id, webhookDeliveryId: message._id });
  expect(await store.queued(message._id)).toMatchObject({ replay: true, ephemeral: true });
});

it('refuses to replay a delivered position that a change of its delivery sent since outdates, its log left as it was', async () => {
  const userId = randomUUID();
  const { endpoint, message } = await queuedMessage(userId, 'courier.location');
  await store.updateMessage(message._id, {
    status: 'DELIVERED',
    attempts: 1,
    deliveredAt: new Date(),
  });
  await store.dequeue(message._id);
  const params = { webhookId: endpoint._id, webhookDeliveryId: message._id };
  const entry = queueEntryOf(message, userId, new Date());
  // A change of its delivery at its own version went: still current, the replay queues it.
  await store.markLane(entry.lane, message.sequence);
  await replay(store, userId, params);
  expect(await store.queued(message._id)).toMatchObject({ replay: true, ephemeral: true });
  await store.updateMessage(message._id, { status: 'DELIVERED' });
  await store.dequeue(message._id);

  // A later change went: sent again, it would show the delivery as it was before that one.
  await store.markLane(entry.lane, message.sequence + 1);
  await expect(replay(store, userId, params)).rejects.toMatchObject({
    code: 409,
    message: expect.stringMatching(/older than a change of its delivery sent since/),
  });
  expect(await store.queued(message._id)).toBeNull();
  expect(await store.message(message._id)).toMatchObject({ status: 'DELIVERED', attempts: 1 });
});

it('leaves a replayed position alone while its replay holds it, behind a change and before another', async () => {
  const userId = randomUUID();
  const endpoint = endpointRecord(userId);
  await store.insertEndpoint(endpoint);
  const deliveryId = randomUUID();
  const [changed, position, changedAgain] = [1, 2, 3].map((sequence) => ({
    ...publishedEvent(userId, sequence),
    deliveryId,
    ...(sequence === 2 ? { type: 'courier.location' as const } : {}),
  }));
  await fanOut(store, [changed, position, changedAgain], 'staging', new Date());
  const messages = await store.messagesOf(endpoint._id, 3, 0);
  const messageId = messages.find((m) => m.type === 'courier.location')?._id as string;
  const queued = await store.queued(messageId);
  // Tried once and failed; its owner replays it: the replay's entry, held while it marks it.
  await store.updateMessage(messageId, { status: 'FAILED', attempts: 1 });
  await store.dequeue(messageId);
  const now = new Date();
  const held = new Date(now.getTime() + 30_000);
  await store.requeue({
    ...(queued as NonNullable<typeof queued>),
    attempts: 1,
    replay: true,
    nextAttemptAt: held,
  });
  await dispatchOnce(now);
  expect(await store.queued(messageId)).toMatchObject({ replay: true, nextAttemptAt: held });
  expect((await store.message(messageId))?.status).toBe('FAILED');
});

it('waits after a replayed message’s first failure as after a first failure, not after its earlier attempts', async () => {
  const userId = randomUUID();
  const { endpoint, message } = await queuedMessage(userId);
  // Given up after many attempts; its owner mends the endpoint and replays it.
  await store.updateMessage(message._id, { status: 'FAILED', attempts: 20 });
  await store.dequeue(message._id);
  await replay(store, userId, { webhookId: endpoint._id, webhookDeliveryId: message._id });
  expect(await store.queued(message._id)).toMatchObject({ attempts: 20, replayedAfter: 20 });
  // Its attempt fails (this endpoint has no signing secret, which fails as a refusal does).
  const now = new Date();
  await dispatchOnce(now);
  const entry = await store.queued(message._id);
  expect(entry).toMatchObject({ attempts: 21, replayedAfter: 20 });
  // The first wait (WEBHOOK_BACKOFF_BASE_MS, ±20 %), not the longest.
  const wait = new Date(entry?.nextAttemptAt as Date).getTime() - now.getTime();
  expect(wait).toBeGreaterThan(0);
  expect(wait).toBeLessThan(2 * config.webhook.backoffBaseMs);
  expect(config.webhook.backoffMaxMs).toBeGreaterThan(4 * config.webhook.backoffBaseMs);
});
