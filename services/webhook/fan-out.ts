import {
  toldToRecipient,
  type PublishedEvent,
  type WebhookEventType,
} from '../../libs/contracts/webhook';
import { forEachAtOnce } from '../../libs/at-once';
import { queueEntryOf, subscribes } from './dispatch-rules';
import {
  messageIdOf,
  type EndpointRecord,
  type MessageRecord,
  type QueuedRecord,
  type WebhookStore,
} from './store';

/** Whether the endpoint is sent events of `type` now. */
const takes = (endpoint: EndpointRecord, type: WebhookEventType) =>
  endpoint.status === 'ACTIVE' && !endpoint.deleted && subscribes(endpoint.events, type);

/**
 * Of `userIds`, those with an endpoint that takes a courier's positions now (in
 * `environment`): order builds and hands over no position that nobody takes.
 */
export async function takingLocations(
  store: WebhookStore,
  userIds: readonly string[],
  environment: string,
): Promise<string[]> {
  const endpointsOf = store.endpointsReadOnce(environment);
  const taking: string[] = [];
  await forEachAtOnce([...new Set(userIds)], OWNERS_READ_AT_ONCE, async (userId) => {
    const endpoints = await endpointsOf(userId);
    if (endpoints.some((e) => takes(e, 'courier.location'))) taking.push(userId);
  });
  return taking;
}

/** Owners' endpoints read at once by `takingLocations`: a flush asks of hundreds. */
const OWNERS_READ_AT_ONCE = 16;

/**
 * Records each event some endpoint takes, once, and queues one message of it for every active endpoint of its owner
 * (and of its delivery's linked recipient, `toldToRecipient`) that takes its type. A delivery's events share a lane per endpoint, sent in order, its
 * courier's positions among them; a position is tried once, and skipped once stale.
 */
export async function fanOut(
  store: WebhookStore,
  events: readonly PublishedEvent[],
  environment: string,
  now: Date,
): Promise<number> {
  const items: { message: MessageRecord; queued: QueuedRecord }[] = [];
  const endpointsOfOwner = store.endpointsReadOnce(environment);
  for (const event of events) {
    const owners = [event.userId];
    if (event.recipientUserId && toldToRecipient(event)) owners.push(event.recipientUserId);
    const endpoints = (await Promise.all(owners.map(endpointsOfOwner))).flat();
    for (const endpoint of endpoints) {
      if (!takes(endpoint, event.type)) continue;
      const message: MessageRecord = {
        _id: messageIdOf(endpoint._id, event.id),
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
      };
      items.push({ message, queued: queueEntryOf(message, endpoint.userId, now) });
    }
  }
  // Only the events some endpoint takes are kept: most deliveries' owners have none, and a
  // courier's position comes every flush of each delivery under way. Recorded before their
  // messages, which the dispatcher reads them for; a publication repeated (order's sweep, after
  // a failure anywhere here) records them again, those there already left as they are, and an
  // event first published when nobody took it is recorded once an endpoint does.
  const taken = new Set(items.map((item) => item.message.eventId));
  const recorded = events.filter((event) => taken.has(event.id));
  if (recorded.length === 0) return 0;
  await store.recordEvents(
    recorded.map((event) => ({
      _id: event.id,
      ...withoutId(event),
      createdAt: new Date(event.createdAt),
    })),
  );
  try {
    return await store.enqueueAll(items);
  } catch (err) {
    await forgetUnqueuedPositions(
      store,
      items.filter((item) => item.queued.ephemeral),
    ).catch(() => undefined);
    throw err;
  }
}

/**
 * A courier's position is not published again after a failure (order's sweep publishes
 * changes again, never a position): recorded, and none of its messages stored, nothing would
 * ever read it or delete it, and it would keep its delivery's view past
 * WEBHOOK_RETENTION_DAYS. Forgotten here, unless a message of it was stored before the failure
 * (retention forgets it with its messages). A retry of this call on another replica may still
 * store a message after this look: the dispatcher skips a position whose event is gone.
 */
async function forgetUnqueuedPositions(
  store: WebhookStore,
  items: readonly { message: MessageRecord }[],
): Promise<void> {
  const messagesOf = new Map<string, string[]>();
  for (const { message } of items) {
    messagesOf.set(message.eventId, [...(messagesOf.get(message.eventId) ?? []), message._id]);
  }
  for (const [eventId, messageIds] of messagesOf) {
    const stored = await Promise.all(messageIds.map((id) => store.message(id)));
    if (stored.every((message) => message === null)) await store.deleteEvent(eventId);
  }
}

function withoutId({ id: _id, ...rest }: PublishedEvent) {
  return rest;
}
