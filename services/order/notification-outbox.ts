import { outboxStoreOver } from '../../libs/messaging/outbox-records';
import type { OutboxMessage, OutboxStore } from '../../libs/messaging/outbox-sender';
import { isTerminal } from './lifecycle';
import {
  deliveryIdOfMessage,
  EMAIL_SUBJECTS,
  proofCodeOfMessage,
  type NotificationRecord,
} from './notifications';
import type { ProofChecks } from './proofs';
import type { OrderStore } from './store';

/** A delivery's message as the shared sender takes it: its e-mail's subject from its purpose. */
const toOutboxMessage = (record: NotificationRecord): OutboxMessage => ({
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
 * (libs/messaging/outbox-sender.ts) reads and writes it; the records stay as they are. A proof
 * code's message a newer code replaced (`ProofChecks.replaced`), and any message of a delivery
 * that ended, is withdrawn rather than sent: the end's own withdrawal (`WITHDRAW_MESSAGES`)
 * misses what is queued after it (a request recovered after its merchant cancelled it, an
 * "on the way" settled as the delivery ended).
 */
export const notificationOutbox = (
  store: OrderStore,
  proofs: Pick<ProofChecks, 'replaced'>,
): OutboxStore => ({
  ...outboxStoreOver(store.notifications, toOutboxMessage),
  async outdated(message) {
    const code = proofCodeOfMessage(message._id);
    if (code && (await proofs.replaced(code.deliveryId, code.type, code.generation))) return true;
    const delivery = await store.delivery(deliveryIdOfMessage(message._id));
    return delivery !== null && isTerminal(delivery.lifecycle.status);
  },
});
