import { randomUUID } from 'node:crypto';
import type { PublishedEvent } from '../../libs/contracts/webhook';
import type { Config } from '../../libs/config';
import { SecretBox } from '../../libs/secret-box';
import { Dispatcher } from '../../services/webhook/dispatcher';
import type { EndpointRecord, WebhookStore } from '../../services/webhook/store';

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

/** A dispatcher over `store` in staging, logging nothing, recording disables as they come. */
export function quietDispatcher(store: WebhookStore, config: Config['webhook']): Dispatcher {
  return new Dispatcher({
    store,
    config,
    appEnv: 'staging',
    box: new SecretBox('webhook-test'),
    logger: () => ({ warn: () => undefined, info: () => undefined }) as never,
    recordDisable: async (_endpoint, at) => at,
  });
}
