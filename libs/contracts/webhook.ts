import Joi from '../joi';
import { uuid } from '../schemas';
import { recipientToldOfPositions } from './order';
import type { Retry } from './retry';

/** What other services may know of the webhook service. */

/** The events an endpoint may subscribe to (`events`); none named means every one. */
export const WEBHOOK_EVENT_TYPES = [
  'delivery.created',
  'delivery.paid',
  'delivery.status_changed',
  'courier.assigned',
  'courier.location',
  'delivery.delivered',
  'delivery.cancelled',
  'payment.failed',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** One event of a delivery, as its owner's endpoints will receive it. */
export interface PublishedEvent {
  /** Stable: the same event published again is the same event (never sent twice per endpoint). */
  id: string;
  type: WebhookEventType;
  /** Whose endpoints receive it: the user whose key created the delivery. */
  userId: string;
  /**
   * The account linked to the delivery as its recipient (`link3rdPartyByContactInfo`): their
   * endpoints receive its delivery and courier events too, never its payments'.
   */
  recipientUserId?: string;
  deliveryId: string;
  /** The event's place among its delivery's events: an endpoint receives them in this order. */
  sequence: number;
  createdAt: string;
  /** The delivery as `GET /api/deliveries/:id` answers it, at the event. */
  data: Record<string, unknown>;
}

/**
 * Whether the delivery's linked recipient hears of an event: not of the creator's payments, nor
 * of where the courier is but while carrying their parcel (before the pickup, their reads show
 * only its area; once it goes back to the sender, nothing).
 */
export const toldToRecipient = ({ type, data }: Pick<PublishedEvent, 'type' | 'data'>) =>
  !type.startsWith('payment.') &&
  (type !== 'courier.location' || recipientToldOfPositions(data.status));

/** Who an endpoint's owner is to the delivery an event is of (the body's `role`). */
export const roleInEvent = (event: Pick<PublishedEvent, 'userId'>, endpointOwner: string) =>
  endpointOwner === event.userId ? 'CREATOR' : 'RECIPIENT';

export interface PublishParams {
  events: PublishedEvent[];
}

const publishedEvent = Joi.object<PublishedEvent, true>({
  id: uuid().required(),
  type: Joi.string()
    .valid(...WEBHOOK_EVENT_TYPES)
    .required(),
  userId: uuid().required(),
  recipientUserId: uuid(),
  deliveryId: uuid().required(),
  sequence: Joi.number().integer().min(0).required(),
  createdAt: Joi.string().isoDate().required(),
  data: Joi.object().unknown(true).required(),
});

export const publishParams = Joi.object<PublishParams, true>({
  events: Joi.array().items(publishedEvent).min(1).max(100).required(),
});

export interface WebhookActions {
  /**
   * Queues events for their owner's endpoints. Repeatable: an event already queued is queued
   * no more, so its publisher retries until this answers.
   */
  'webhook.publish': { params: PublishParams; answer: { queued: number } };
  /**
   * Of these users, those with an endpoint that takes `courier.location` now: a position of a
   * delivery nobody takes is not built (its courier read, its view) nor handed over.
   */
  'webhook.takingLocations': { params: TakingLocationsParams; answer: { userIds: string[] } };
}

/** Users asked of at once: a flush of positions asks of its deliveries' owners in batches. */
export const TAKING_LOCATIONS_MAX = 500;

export interface TakingLocationsParams {
  userIds: string[];
}

export const takingLocationsParams = Joi.object<TakingLocationsParams, true>({
  userIds: Joi.array().items(uuid()).min(1).max(TAKING_LOCATIONS_MAX).required(),
});

export const WEBHOOK_RETRY = {
  'webhook.publish': 'safe',
  'webhook.takingLocations': 'safe',
} as const satisfies Record<keyof WebhookActions, Retry>;
