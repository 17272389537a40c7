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

it('records an attempt whose request could not start in time failed, unsent, and sends the message on the next', async () => {
  const userId = randomUUID();
  const endpoint = endpointRecord(userId, { url: receiver.url('/slow') });
  await store.insertEndpoint(endpoint);
  // Sealed as the dispatcher's box opens it (`quietDispatcher`).
  await store.claimSecret({
    _id: secretId(endpoint._id, 1),
    webhookId: endpoint._id,
    n: 1,
    sealed: new SecretBox('webhook-test').seal(newWebhookSecret()),
    createdAt: new Date(),
  });
  await fanOut(store, [publishedEvent(userId, 1)], 'staging', new Date());
  const [message] = await store.messagesOf(endpoint._id, 1, 0);

  await dispatchOnce(slowEvents(SEND_START_BUDGET_MS + 500));
  expect(receiver.at('/slow')).toEqual([]);
  const [attempt] = await store.attemptsOf({ ...message, attempts: 1 });
  expect(attempt).toMatchObject({ n: 1, statusCode: null, error: NOT_STARTED_WHY });
  const entry = await store.queued(message._id);
  expect(entry).toMatchObject({ attempts: 1 });

  // Its retry, once due, goes.
  await sleep(Math.max(0, new Date(entry!.nextAttemptAt as Date).getTime() - Date.now()) + 10);
  await dispatchOnce(store);
  expect(receiver.at('/slow')).toHaveLength(1);
  expect(await store.message(message._id)).toMatchObject({ status: 'DELIVERED', attempts: 2 });
}, 30_000);
