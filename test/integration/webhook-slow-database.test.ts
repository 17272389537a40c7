import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../../libs/config';
import { SecretBox } from '../../libs/secret-box';
import { newWebhookSecret } from '../../libs/webhook-signature';
import { NOT_STARTED_WHY, SEND_START_BUDGET_MS } from '../../services/webhook/dispatcher';
import { fanOut } from '../../services/webhook/fan-out';
import { defineWebhookModels, secretId, WebhookStore } from '../../services/webhook/store';
import { useStoreDatabase } from '../support/store-database';
import { WebhookReceiver } from '../support/webhook-receiver';
import { endpointRecord, publishedEvent, quietDispatcher } from '../support/webhook-records';

/**
 * A dispatcher whose database stalls between an attempt's claim and its request: the request
 * is not made late, when another dispatcher may take the attempt over and send the message
 * too; the attempt is recorded failed, saying why, and the message sent by the next attempt.
 */
const db = useStoreDatabase('webhook_slow_database', defineWebhookModels);
const store = new WebhookStore(() => db.models);
const config = loadConfig({ ...process.env, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
const receiver = new WebhookReceiver();
beforeAll(() => receiver.start());
afterAll(() => receiver.stop());

/** The store, its reads of events answered `delayMs` late. */
function slowEvents(delayMs: number): WebhookStore {
  const slow = Object.create(store) as WebhookStore;
  slow.event = async (eventId) => {
    const read = await store.event(eventId);
    await sleep(delayMs);
    return read;
  };
  return slow;
}

async function dispatchOnce(through: WebhookStore): Promise<void> {
  const dispatcher = quietDispatcher(through, config.webhook);
  await dispatcher.look(new Date());
  await dispatcher.settle();
  await dispatcher.stop();
}

/** A live endpoint of a new user's, at `path` of the receiver, with a secret that signs. */
async function endpointAt(path: string) {
  const userId = randomUUID();
  const endpoint = endpointRecord(userId, { url: receiver.url(path) });
  await store.insertEndpoint(endpoint);
  // Sealed as the dispatcher's box opens it (`quietDispatcher`).
  await store.claimSecret({
    _id: secretId(endpoint._id, 1),
    webhookId: endpoint._id,
    n: 1,
    sealed: new SecretBox('webhook-test').seal(newWebhookSecret()),
    createdAt: new Date(),
  });
  return { userId, endpoint };
}

it('records an attempt whose request could not start in time, unsent and blaming nobody, and sends the message on the next', async () => {
  const { userId, endpoint } = await endpointAt('/slow');
  await fanOut(store, [publishedEvent(userId, 1)], 'staging', new Date());
  const [message] = await store.messagesOf(endpoint._id, 1, 0);

  await dispatchOnce(slowEvents(SEND_START_BUDGET_MS + 500));
  expect(receiver.at('/slow')).toEqual([]);
  const [attempt] = await store.attemptsOf({ ...message, attempts: 1 });
  expect(attempt).toMatchObject({ n: 1, statusCode: null, error: NOT_STARTED_WHY });
  const entry = await store.queued(message._id);
  expect(entry).toMatchObject({ attempts: 1 });
  // The endpoint did nothing wrong: no failing streak begins.
  expect((await store.endpoint(endpoint._id))?.failingSince ?? null).toBeNull();
  expect(await store.message(message._id)).toMatchObject({ status: 'PENDING', attempts: 1 });

  // Its retry, once due, goes.
  await sleep(Math.max(0, new Date(entry!.nextAttemptAt as Date).getTime() - Date.now()) + 10);
  await dispatchOnce(store);
  expect(receiver.at('/slow')).toHaveLength(1);
  expect(await store.message(message._id)).toMatchObject({ status: 'DELIVERED', attempts: 2 });
}, 30_000);

it('keeps a courier position whose request could not start in time, and sends it on the next attempt', async () => {
  const { userId, endpoint } = await endpointAt('/slow-position');
  const position = { ...publishedEvent(userId, 1), type: 'courier.location' as const };
  await fanOut(store, [position], 'staging', new Date());
  const [message] = await store.messagesOf(endpoint._id, 1, 0);

  await dispatchOnce(slowEvents(SEND_START_BUDGET_MS + 500));
  expect(receiver.at('/slow-position')).toEqual([]);
  // Not given up as a failed position is: still queued, still PENDING.
  const entry = await store.queued(message._id);
  expect(entry).toMatchObject({ attempts: 1 });
  expect((await store.message(message._id))?.status).toBe('PENDING');

  await sleep(Math.max(0, new Date(entry!.nextAttemptAt as Date).getTime() - Date.now()) + 10);
  await dispatchOnce(store);
  expect(receiver.at('/slow-position')).toHaveLength(1);
  expect(await store.message(message._id)).toMatchObject({ status: 'DELIVERED', attempts: 2 });
}, 30_000);
