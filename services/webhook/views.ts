import { attemptError, excerpt } from './dispatch-rules';
import type { AttemptRecord, EndpointRecord, MessageRecord, QueuedRecord } from './store';

export interface WebhookView {
  id: string;
  url: string;
  events: string[] | null;
  description: string | null;
  status: string;
  failingSince: Date | null;
  disabledAt: Date | null;
  disabledReason: string | null;
  createdAt: Date;
}

export function toWebhookView(e: EndpointRecord): WebhookView {
  return {
    id: e._id,
    url: e.url,
    events: e.events,
    description: e.description,
    status: e.status,
    failingSince: e.failingSince,
    disabledAt: e.disabledAt,
    disabledReason: e.disabledReason,
    createdAt: e.createdAt,
  };
}

export function toWebhookWithSecret(
  e: EndpointRecord,
  secret: string,
  previousSecretExpiresAt: Date | null,
) {
  return { ...toWebhookView(e), secret, previousSecretExpiresAt };
}

export function toWebhookDeliveryView(
  m: MessageRecord,
  attempts: AttemptRecord[],
  queued: QueuedRecord | null,
) {
  return {
    id: m._id,
    eventId: m.eventId,
    type: m.type,
    deliveryId: m.deliveryId,
    status: m.status,
    nextAttemptAt: queued ? queued.nextAttemptAt : null,
    deliveredAt: m.deliveredAt,
    createdAt: m.createdAt,
    attempts: attempts.map((a) => ({
      n: a.n,
      startedAt: a.startedAt,
      durationMs: a.durationMs,
      statusCode: a.statusCode,
      // Capped again as sent: older versions kept 512 characters of any answer, and errors whole.
      error: a.error && attemptError(a.error),
      responseExcerpt: a.responseExcerpt && excerpt(a.responseExcerpt),
      replay: a.replay,
    })),
  };
}
