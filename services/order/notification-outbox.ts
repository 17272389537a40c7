import type { OutboxMessage, OutboxStore } from '../../libs/messaging/outbox-sender';
import { EMAIL_SUBJECTS, type NotificationRecord } from './notifications';
import type { OrderStore } from './store';

/** A delivery's message as the shared sender takes it: its e-mail's subject from its purpose. */
export const toOutboxMessage = (record: NotificationRecord): OutboxMessage => ({
  _id: record._id,
  channel: record.channel,
  recipient: record.recipient,
  text: record.text,
  subject: EMAIL_SUBJECTS[record.purpose],
  secret: record.secret,
  status: record.status,
  attempts: record.attempts,
  label: record.purpose,
});

/**
 * The notification outbox (`notifications`, `notification_attempts`) as the shared sender
 * (libs/messaging/outbox-sender.ts) reads and writes it; the records stay as they are.
 */
export function notificationOutbox(store: OrderStore): OutboxStore {
  return {
    due: async (now, limit) => (await store.dueNotifications(now, limit)).map(toOutboxMessage),
    get: async (id) => {
      const record = await store.notification(id);
      return record && toOutboxMessage(record);
    },
    claimAttempt: (id, attempt, at) => store.claimNotificationAttempt(id, attempt, at),
    attemptClaimedAt: (id, attempt) => store.notificationAttemptAt(id, attempt),
    markSent: (id, attempt, dropText) => store.markSent(id, attempt, dropText),
    markAttemptFailed: (id, attempt, error, retryAt, dropText) =>
      store.markAttemptFailed(id, attempt, error, retryAt, dropText),
  };
}
