import { fanOut } from '../../services/webhook/fan-out';
import { defineWebhookModels, WebhookStore } from '../../services/webhook/store';
import { useStoreDatabase } from '../support/store-database';
import { endpointRecord, publishedEvent } from '../support/webhook-records';

/**
 * A publication repeated (order's sweep, a retry) queues again a message still PENDING: its
 * first publication may have stopped between the message and its entry. A dispatcher may end
 * that message (give it up, deliver it) between the repeat's read and its insert.
 */
const db = useStoreDatabase('webhook_enqueue', defineWebhookModels);
const store = new WebhookStore(() => db.models);

it('takes off an entry it queued for a message ended since it read it PENDING', async () => {
  const endpoint = endpointRecord('enqueue-owner');
  await store.insertEndpoint(endpoint);
  const event = publishedEvent('enqueue-owner', 0);
  await fanOut(store, [event], 'staging', new Date());
  const [message] = await store.messagesOf(endpoint._id, 1, 0);
  const pendingCopy = await store.message(message._id);
  // The dispatcher gives it up: its outcome written, then its entry taken off.
  await store.updateMessage(message._id, { status: 'FAILED', attempts: 3 });
  await store.dequeue(message._id);

  // The repeat read the message before it was given up.
  const read = jest.spyOn(store, 'message').mockResolvedValueOnce(pendingCopy);
  try {
    await fanOut(store, [event], 'staging', new Date());
  } finally {
    read.mockRestore();
  }
  expect(await store.queued(message._id)).toBeNull();
  expect((await store.message(message._id))?.status).toBe('FAILED');
});

it('queues again a message still PENDING whose entry its first publication never wrote', async () => {
  const endpoint = endpointRecord('enqueue-owner-2');
  await store.insertEndpoint(endpoint);
  const event = publishedEvent('enqueue-owner-2', 0);
  await fanOut(store, [event], 'staging', new Date());
  const [message] = await store.messagesOf(endpoint._id, 1, 0);
  await store.dequeue(message._id);

  await fanOut(store, [event], 'staging', new Date());
  expect(await store.queued(message._id)).toMatchObject({ attempts: 0 });
});
