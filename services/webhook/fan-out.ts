import type { PublishedEvent } from '../../libs/contracts/webhook';
import { nameBasedId } from '../../libs/ids';
import { subscribes } from './dispatch-rules';
import type { WebhookStore } from './store';

/** Names an endpoint's message of an event: the same pair is one message, however often published. */
export const messageIdOf = (webhookId: string, eventId: string) =>
  nameBasedId('webhook-message', webhookId, eventId);

/**
 * Records each event once and queues one message of it for every active endpoint of its owner
 * that takes its type. A delivery's events share a lane per endpoint, sent in order; a courier's
 * position is alone in its lane (tried once, it neither waits for nor holds up the others).
 */
export async function fanOut(
  store: WebhookStore,
  events: readonly PublishedEvent[],
  environment: string,
  now: Date,
): Promise<number> {
  let queued = 0;
  for (const event of events) {
    await store.recordEvent({
      _id: event.id,
      ...withoutId(event),
      createdAt: new Date(event.createdAt),
    });
    const endpoints = await store.endpointsOf(event.userId, environment);
    for (const endpoint of endpoints) {
      if (endpoint.status !== 'ACTIVE' || !subscribes(endpoint.events, event.type)) continue;
      const messageId = messageIdOf(endpoint._id, event.id);
      const ephemeral = event.type === 'courier.location';
      const created = await store.enqueue(
        {
          _id: messageId,
          webhookId: endpoint._id,
          eventId: event.id,
          type: event.type,
          deliveryId: event.deliveryId,
          sequence: event.sequence,
          status: 'PENDING',
          attempts: 0,
          lastAttemptAt: null,
          lastStatusCode: null,
          lastError: null,
          deliveredAt: null,
          createdAt: now,
        },
        {
          _id: messageId,
          webhookId: endpoint._id,
          eventId: event.id,
          lane: ephemeral ? messageId : `${endpoint._id}:${event.deliveryId}`,
          sequence: event.sequence,
          attempts: 0,
          firstAttemptAt: null,
          nextAttemptAt: now,
          ephemeral,
        },
      );
      if (created) queued += 1;
    }
  }
  return queued;
}

function withoutId({ id: _id, ...rest }: PublishedEvent) {
  return rest;
}
