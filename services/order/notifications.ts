import { CHANNELS, type Channel } from '../../libs/messaging/channels';
import type { StoredOutboxFields } from '../../libs/messaging/outbox-records';
import { formatNaira } from '../../libs/money';
import type { DeliveryRecord, ProofType, StoredAddress } from './delivery-record';
import type { Contact } from './request-input';

/**
 * The messages a delivery sends to people, as the notification outbox keeps them until the
 * sender (libs/messaging/outbox-sender.ts, through notification-outbox.ts) delivers them by SMS
 * and e-mail.
 */

export const NOTIFICATION_PURPOSES = [
  'COLLECTION_CODE',
  'DELIVERY_CODE',
  'RECIPIENT_PAYMENT_LINK',
  'COURIER_ON_THE_WAY',
  'RETURN_CODE',
] as const;
export type NotificationPurpose = (typeof NOTIFICATION_PURPOSES)[number];

export interface NotificationRecord extends StoredOutboxFields {
  /**
   * `<deliveryId>:<purpose>:<channel>`: one message of a kind per delivery, ever; a proof's
   * later codes add `:<generation>`.
   */
  _id: string;
  deliveryId: string;
  channel: Channel;
  purpose: NotificationPurpose;
  /** A phone number (SMS) or an e-mail address. */
  recipient: string;
  /** The text carries a secret (a proof code): never shown in live. */
  secret: boolean;
}

/**
 * Whether a withdrawn message's text is dropped: in live, as a sent one's is (it may hold a
 * code); kept elsewhere, for whoever tests the platform to read.
 */
export const dropsWithdrawnText = (appEnv: string) => appEnv === 'live';

/** The subject of a message's e-mail: its purpose, never its secret. */
export const EMAIL_SUBJECTS: Record<NotificationPurpose, string> = {
  COLLECTION_CODE: 'Your Waybill collection code',
  DELIVERY_CODE: 'Your Waybill delivery code',
  RECIPIENT_PAYMENT_LINK: 'Pay your part of a Waybill delivery',
  COURIER_ON_THE_WAY: 'Your Waybill delivery is on the way',
  RETURN_CODE: 'Your Waybill return code',
};

/** A stop's contact as its stored address keeps it. */
export function contactAt(stop: StoredAddress): Contact {
  return {
    name: String(stop.fields.contactName ?? ''),
    phone: String(stop.fields.contactPhone ?? ''),
    email: String(stop.fields.contactEmail ?? ''),
  };
}

const PROOF_PURPOSE: Record<ProofType, NotificationPurpose> = {
  COLLECTION: 'COLLECTION_CODE',
  DELIVERY: 'DELIVERY_CODE',
  RETURN: 'RETURN_CODE',
};

/** When the person gives the code: the moment the packages change hands. */
const HANDOVER: Record<ProofType, string> = {
  COLLECTION: 'when they collect the package',
  DELIVERY: 'when they hand it over',
  RETURN: 'when they bring the package back to you',
};

/** The `_id` of a delivery's message of a kind on a channel: its `nth` (a proof's new code). */
const messageId = (deliveryId: string, purpose: NotificationPurpose, channel: Channel, nth = 1) =>
  `${deliveryId}:${purpose}:${channel}${nth > 1 ? `:${nth}` : ''}`;

function toBoth(
  deliveryId: string,
  purpose: NotificationPurpose,
  contact: Contact,
  text: string,
  secret: boolean,
  now: Date,
  /** The second and later messages of a kind (a proof's new code): its number. */
  nth = 1,
): NotificationRecord[] {
  return CHANNELS.map((channel) => ({
    _id: messageId(deliveryId, purpose, channel, nth),
    deliveryId,
    channel,
    purpose,
    recipient: channel === 'SMS' ? contact.phone : contact.email,
    text,
    secret,
    status: 'PENDING',
    createdAt: now,
    sentAt: null,
    attempts: 0,
    nextAttemptAt: now,
    lastError: null,
  }));
}

/**
 * A proof code for the stop's contact: the sender gives it to the courier at collection (and
 * on the packages' return), the recipient at the door.
 */
export function proofCodeMessages(
  delivery: Pick<DeliveryRecord, '_id' | 'trackingId'>,
  type: ProofType,
  code: string,
  contact: Contact,
  now: Date,
  /** The proof's code number: above 1 when the merchant issued a new one. */
  generation = 1,
  /** Whether a code the person was sent stops working: this one is their new code. */
  replacing = generation > 1,
): NotificationRecord[] {
  // A return proof's first code is the news that the packages are coming back.
  const news = type === 'RETURN' && !replacing ? ' is coming back to you' : '';
  const fresh = replacing ? 'new ' : '';
  const text = `Waybill delivery ${delivery.trackingId}${news}: your ${fresh}${type.toLowerCase()} code is ${code}. Give it to the courier only ${HANDOVER[type]}.`;
  return toBoth(delivery._id, PROOF_PURPOSE[type], contact, text, true, now, generation);
}

/** The messages that carry a proof's code `generation`, one per channel. */
export const proofCodeMessageIds = (deliveryId: string, type: ProofType, generation: number) =>
  CHANNELS.map((channel) => messageId(deliveryId, PROOF_PURPOSE[type], channel, generation));

/** The messages that carried a proof's codes before its code `generation`. */
export function earlierProofCodeMessageIds(
  deliveryId: string,
  type: ProofType,
  generation: number,
): string[] {
  const earlier = Array.from({ length: generation - 1 }, (_, i) => i + 1);
  return earlier.flatMap((nth) => proofCodeMessageIds(deliveryId, type, nth));
}

const PROOF_OF_PURPOSE = new Map(
  Object.entries(PROOF_PURPOSE).map(([type, purpose]) => [purpose as string, type as ProofType]),
);

/** The delivery a message is of, by its `_id` (`<deliveryId>:<purpose>:<channel>[:<n>]`). */
export const deliveryIdOfMessage = (id: string) => id.slice(0, id.indexOf(':'));

/** The proof code a message carries, by its `_id`: its delivery, proof type and generation. */
export function proofCodeOfMessage(
  id: string,
): { deliveryId: string; type: ProofType; generation: number } | null {
  const [deliveryId, purpose, , nth = '1', ...rest] = id.split(':');
  const type = PROOF_OF_PURPOSE.get(purpose);
  if (!type || rest.length > 0) return null;
  return { deliveryId, type, generation: Number(nth) };
}

const CODE_IN_TEXT = /\bcode is (\d{6})\b/;

/** The code a proof-code message carries (the sandbox's virtual courier reads it). */
function proofCodeIn(text: string | null): string | undefined {
  return text ? CODE_IN_TEXT.exec(text)?.[1] : undefined;
}

/** The code last sent for a proof of that type, read from a delivery's messages. */
export function latestProofCode(
  // As stored, or as `GET /admin/notifications` shows them (staging's test suites read those).
  messages: readonly { purpose: string; channel: string; text: string | null }[],
  type: ProofType,
): string | undefined {
  const purpose = PROOF_PURPOSE[type];
  const sent = messages.filter((m) => m.purpose === purpose && m.channel === 'SMS').at(-1);
  return proofCodeIn(sent?.text ?? null);
}

/** The recipient's share of the fee, with the link to pay it. */
export function paymentLinkMessages(
  delivery: Pick<DeliveryRecord, '_id' | 'trackingId'>,
  amountKobo: number,
  url: string,
  senderName: string,
  contact: Contact,
  now: Date,
): NotificationRecord[] {
  const text = `${senderName} is sending you a delivery (${delivery.trackingId}). Pay your part of the fee, NGN ${formatNaira(amountKobo)}, at ${url} to have it sent.`;
  return toBoth(delivery._id, 'RECIPIENT_PAYMENT_LINK', contact, text, false, now);
}

/** The courier has the package: the recipient learns it is coming, with the tracking page. */
export function onTheWayMessages(
  delivery: Pick<DeliveryRecord, '_id' | 'trackingId'>,
  trackingUrl: string,
  contact: Contact,
  now: Date,
): NotificationRecord[] {
  const text = `Waybill delivery ${delivery.trackingId}: your courier has collected your package and is on the way. Follow it at ${trackingUrl}`;
  return toBoth(delivery._id, 'COURIER_ON_THE_WAY', contact, text, false, now);
}
