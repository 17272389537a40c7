import { outboxStoreOver } from '../../libs/messaging/outbox-records';
import type { OutboxMessage, OutboxStore } from '../../libs/messaging/outbox-sender';
import { DELIVERY_STATUSES, isTerminal, type Lifecycle } from './lifecycle';
import {
  deliveryIdOfMessage,
  EMAIL_SUBJECTS,
  proofCodeOfMessage,
  type NotificationPurpose,
  type NotificationRecord,
} from './notifications';
import { proofOpenIn, type ProofChecks } from './proofs';
import type { OrderStore } from './store';
import type { DeliveryTransitions } from './transitions';

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
  nextAttemptAt: record.nextAttemptAt,
  label: record.purpose,
});

/**
 * When a message that carries no code says nothing true any more, before its delivery ends:
 * "on the way" once the packages go back to the sender; the recipient's payment link once they
 * paid. A code's message is stale once its proof can no longer be given (`proofOpenIn`: a
 * collection code once collected, the recipient's code once going back). Read as it is about
 * to go: a provider failing for a while holds messages past such a change, which sends no
 * withdrawal of its own (only an end does).
 */
const STALE: Partial<Record<NotificationPurpose, (lifecycle: Lifecycle) => boolean>> = {
  COURIER_ON_THE_WAY: ({ status }) => status === 'RETURNING',
  RECIPIENT_PAYMENT_LINK: ({ paid }) => paid?.recipient === true,
};

/**
 * The notification outbox (`notifications`, `notification_attempts`) as the shared sender
 * (libs/messaging/outbox-sender.ts) reads and writes it; the records stay as they are. A proof
 * code's message a newer code replaced (`ProofChecks.replaced`), any message of a delivery
 * that ended, and a message its delivery's change made stale (`STALE`) is withdrawn rather than
 * sent: the end's own withdrawal (`WITHDRAW_MESSAGES`) misses what is queued after it (a
 * request recovered after its merchant cancelled it, an "on the way" settled as the delivery
 * ended).
 */
export const notificationOutbox = (
  store: OrderStore,
  proofs: Pick<ProofChecks, 'replaced'>,
  transitions: Pick<DeliveryTransitions, 'current'>,
): OutboxStore => ({
  ...outboxStoreOver(store.notifications, toOutboxMessage),
  async outdated(message) {
    const code = proofCodeOfMessage(message._id);
    if (code && (await proofs.replaced(code.deliveryId, code.type, code.generation))) return true;
    // With its transitions: the document may lag them (a projection left for the next read).
    const delivery = await transitions.current(deliveryIdOfMessage(message._id));
    const status = delivery?.lifecycle.status;
    // A status of a later version (read during a rollback) is taken for nothing.
    if (!delivery || status === undefined || !DELIVERY_STATUSES.includes(status)) return false;
    if (isTerminal(status)) return true;
    if (code) return !proofOpenIn(code.type, status);
    return STALE[message.label as NotificationPurpose]?.(delivery.lifecycle) === true;
  },
});
