import { randomUUID } from 'node:crypto';
import type { PublishedEvent } from '../../libs/contracts/webhook';
import type { EndpointRecord } from '../../services/webhook/store';

/** A live endpoint of the user in staging, as `POST /api/webhooks` stores one. */
export function endpointRecord(
  userId: string,
  fields: Partial<EndpointRecord> = {},
): EndpointRecord {
  return {
    _id: randomUUID(),
    userId,
    environment: 'staging',
    url: 'https://example.com/hook',
    events: null,
    description: null,
    secretVersion: 1,
    status: 'ACTIVE',
    failingSince: null,
    disabledAt: null,
    disabledReason: null,
    deleted: false,
    createdAt: new Date(),
    ...fields,
  };
}

/** An event of a delivery of the user's, as order publishes it to `webhook.publish`. */
export function publishedEvent(userId: string, sequence: number): PublishedEvent {
  return {
    id: randomUUID(),
    type: 'delivery.status_changed',
    userId,
    deliveryId: randomUUID(),
    sequence,
    createdAt: new Date().toISOString(),
    data: {},
  };
}
