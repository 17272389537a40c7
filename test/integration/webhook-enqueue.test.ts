import type { PublishedEvent } from '../../libs/contracts/webhook';
import {
  LOST_POSITION_WHY,
  OLD_POSITION_WHY,
  POSITION_SENT_WITHIN_MS,
} from '../../services/webhook/dispatch-rules';
import { fanOut } from '../../services/webhook/fan-out';
import { defineWebhookModels, WebhookStore } from '../../services/webhook/store';
import { useStoreDatabase } from '../support/store-database';
import { endpointRecord, publishedEvent, quietDispatcher } from '../support/webhook-records';
import { loadConfig } from '../../libs/config';

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

/** A courier's position of a delivery of `owner`, who has an endpoint taking every event. */
async function positionOfOwnerWithEndpoint(owner: string, fields: Partial<PublishedEvent> = {}) {
  const endpoint = endpointRecord(owner);
  await store.insertEndpoint(endpoint);
  const position: PublishedEvent = {
    ...publishedEvent(owner, 0),
    type: 'courier.location',
    ...fields,
  };
  return { endpoint, position };
}

/** One look of a dispatcher over the queue, to its end. */
async function dispatchOnce(): Promise<void> {
  const dispatcher = quietDispatcher(store, loadConfig({ ...process.env }).webhook);
  try {
    await dispatcher.look(new Date());
    await dispatcher.settle();
  } finally {
    await dispatcher.stop();
  }
}

describe('a publication whose messages could not be stored', () => {
  /** `fanOut` with the store's message writes failing, as a database away would. */
  async function failingFanOut(events: PublishedEvent[]) {
    const enqueue = jest.spyOn(store, 'enqueueAll').mockRejectedValueOnce(new Error('db away'));
    try {
      await expect(fanOut(store, events, 'staging', new Date())).rejects.toThrow('db away');
    } finally {
      enqueue.mockRestore();
    }
  }

  it('forgets a courier’s position it recorded: published once, nothing else would ever delete it', async () => {
    const { position } = await positionOfOwnerWithEndpoint('enqueue-owner-3');
    const change = publishedEvent('enqueue-owner-3', 1);
    await failingFanOut([change, position]);
    expect(await store.event(position.id)).toBeNull();
    // A change is published again by order's sweep, which finds it recorded.
    expect(await store.event(change.id)).not.toBeNull();
  });

  it('keeps a position a message of which was stored before the failure: retention forgets it', async () => {
    const { position } = await positionOfOwnerWithEndpoint('enqueue-owner-4');
    await fanOut(store, [position], 'staging', new Date());
    await failingFanOut([position]);
    expect(await store.event(position.id)).not.toBeNull();
  });
});

it('skips a queued position whose event a failed publication forgot, as stale, failing nobody', async () => {
  const { endpoint, position } = await positionOfOwnerWithEndpoint('enqueue-owner-5');
  // Stored by a retry on another replica after the first publication forgot the event.
  await fanOut(store, [position], 'staging', new Date());
  await store.deleteEvent(position.id);
  const [message] = await store.messagesOf(endpoint._id, 1, 0);

  await dispatchOnce();
  expect(await store.message(message._id)).toMatchObject({
    status: 'SKIPPED',
    attempts: 1,
    lastError: LOST_POSITION_WHY,
  });
  expect(await store.queued(message._id)).toBeNull();
  expect((await store.endpoint(endpoint._id))?.failingSince).toBeNull();
});

/** A position made a minute more than 15 minutes ago, queued for `owner`'s endpoint. */
async function queuedOldPosition(owner: string) {
  const madeAt = new Date(Date.now() - POSITION_SENT_WITHIN_MS - 60_000);
  const { endpoint, position } = await positionOfOwnerWithEndpoint(owner, {
    createdAt: madeAt.toISOString(),
  });
  await fanOut(store, [position], 'staging', new Date());
  const [message] = await store.messagesOf(endpoint._id, 1, 0);
  return { endpoint, message };
}

it('skips a position older than 15 minutes at its turn: it waited behind a disabled endpoint or a change retried', async () => {
  const { endpoint, message } = await queuedOldPosition('enqueue-owner-6');

  await dispatchOnce();
  expect(await store.message(message._id)).toMatchObject({
    status: 'SKIPPED',
    lastError: OLD_POSITION_WHY,
  });
  expect((await store.endpoint(endpoint._id))?.failingSince).toBeNull();
});

it('sends a position its owner replayed whatever its age: they asked for it as it was', async () => {
  const { message } = await queuedOldPosition('enqueue-owner-7');
  // Queued again by `/replay` (its entry says so).
  await db.models.Queue.updateOne({ _id: message._id }, { $set: { replay: true } });

  await dispatchOnce();
  const attempted = await store.message(message._id);
  // Tried: its endpoint here answers nothing, so it failed, and it was not skipped for its age.
  expect(attempted).toMatchObject({ attempts: 1 });
  expect(attempted?.status).not.toBe('SKIPPED');
  expect(attempted?.lastError).not.toBe(OLD_POSITION_WHY);
});
