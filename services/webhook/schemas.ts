import Joi from '../../libs/joi';
import { MAX_URL_LENGTH } from '../../libs/contracts/file';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../../libs/contracts/webhook';
import { pageParams, plainText, uuid } from '../../libs/schemas';
import { ENDPOINT_STATUSES, MESSAGE_STATUSES } from './store';

export interface CreateWebhookParams {
  url: string;
  events?: WebhookEventType[];
  description?: string;
}

export const createWebhookParams = Joi.object<CreateWebhookParams, true>({
  // The form is only this; what the URL holds and where it points is the data's to decide
  // (libs/outbound-url), refused with a 400 that says what to change.
  url: Joi.string()
    .max(MAX_URL_LENGTH)
    .pattern(/^[Hh][Tt][Tt][Pp][Ss]?:\/\/\S+$/, 'http(s) URL')
    .required()
    .description(
      'Where events are POSTed: https in live; a private, loopback or link-local address is refused (staging may allow private ones)',
    ),
  events: Joi.array()
    .items(Joi.string().valid(...WEBHOOK_EVENT_TYPES))
    .min(1)
    .unique()
    .description('The events to receive; every event when left out'),
  description: plainText(200).allow('').description('A note for yourself'),
});

export interface WebhookIdParams {
  webhookId: string;
}

export const webhookIdParams = Joi.object<WebhookIdParams, true>({
  webhookId: uuid().required(),
});

export interface DeliveriesParams extends WebhookIdParams {
  limit: number;
  offset: number;
}

export const deliveriesParams = Joi.object<DeliveriesParams, true>({
  webhookId: uuid().required(),
  ...pageParams(),
  limit: pageParams().limit.max(100).default(20),
});

export interface ReplayParams extends WebhookIdParams {
  webhookDeliveryId: string;
}

export const replayParams = Joi.object<ReplayParams, true>({
  webhookId: uuid().required(),
  webhookDeliveryId: uuid().required(),
});

const isoDate = () => Joi.date().iso();

export const webhookView = Joi.object({
  id: uuid().required(),
  url: Joi.string().required(),
  events: Joi.array()
    .items(Joi.string().valid(...WEBHOOK_EVENT_TYPES))
    .allow(null)
    .required()
    .description('Null: every event'),
  description: Joi.string().allow(null, '').required(),
  status: Joi.string()
    .valid(...ENDPOINT_STATUSES)
    .required()
    .description(
      'DISABLED once every attempt failed for 24 h: its messages wait, and the owner is told by e-mail (to the account’s address), once per disable, how to enable it again',
    ),
  failingSince: isoDate().allow(null).required(),
  disabledAt: isoDate().allow(null).required(),
  disabledReason: Joi.string().allow(null).required(),
  createdAt: isoDate().required(),
});

export const webhookWithSecretView = webhookView.keys({
  secret: Joi.string()
    .required()
    .description('The signing secret, shown this once: keep it to verify `Waybill-Signature`'),
  previousSecretExpiresAt: isoDate()
    .allow(null)
    .required()
    .description('Until when the previous secret also signs (after a rotation), or null'),
});

export const attemptView = Joi.object({
  n: Joi.number().integer().required(),
  startedAt: isoDate().required(),
  durationMs: Joi.number().integer().allow(null).required(),
  statusCode: Joi.number().integer().allow(null).required(),
  error: Joi.string().allow(null).required(),
  responseExcerpt: Joi.string().allow(null, '').required(),
  replay: Joi.boolean().required(),
});

export const webhookDeliveryView = Joi.object({
  id: uuid().required(),
  eventId: uuid().required(),
  type: Joi.string()
    .valid(...WEBHOOK_EVENT_TYPES)
    .required(),
  deliveryId: uuid().required(),
  status: Joi.string()
    .valid(...MESSAGE_STATUSES)
    .required(),
  nextAttemptAt: isoDate().allow(null).required(),
  deliveredAt: isoDate().allow(null).required(),
  createdAt: isoDate().required(),
  attempts: Joi.array().items(attemptView).required(),
});
