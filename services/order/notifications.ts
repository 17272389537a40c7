import { formatNaira } from '../../libs/money';
import type { DeliveryRecord, ProofType } from './delivery-record';
import type { Contact } from './request-input';

/**
 * The messages a delivery sends to people, as the notification outbox keeps them until a
 * sender delivers them (a log sink for now; SMS and e-mail come with the notifications issue).
 */

export const CHANNELS = ['SMS', 'EMAIL'] as const;
export type Channel = (typeof CHANNELS)[number];
export const NOTIFICATION_PURPOSES = [
  'COLLECTION_CODE',
  'DELIVERY_CODE',
  'RECIPIENT_PAYMENT_LINK',
] as const;
export type NotificationPurpose = (typeof NOTIFICATION_PURPOSES)[number];
export const NOTIFICATION_STATUSES = ['PENDING', 'SENT'] as const;
export type NotificationStatus = (typeof NOTIFICATION_STATUSES)[number];

export interface NotificationRecord {
  /** `<deliveryId>:<purpose>:<channel>`: one message of a kind per delivery, ever. */
  _id: string;
  deliveryId: string;
  channel: Channel;
  purpose: NotificationPurpose;
  /** A phone number (SMS) or an e-mail address. */
  recipient: string;
  /** Null once sent in live: a code must not outlive its delivery to the person. */
  text: string | null;
  /** The text carries a secret (a proof code): never shown in live. */
  secret: boolean;
  status: NotificationStatus;
  createdAt: Date;
  sentAt: Date | null;
}

const PROOF_PURPOSE: Record<ProofType, NotificationPurpose> = {
  COLLECTION: 'COLLECTION_CODE',
  DELIVERY: 'DELIVERY_CODE',
};

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
    _id: `${deliveryId}:${purpose}:${channel}${nth > 1 ? `:${nth}` : ''}`,
    deliveryId,
    channel,
    purpose,
    recipient: channel === 'SMS' ? contact.phone : contact.email,
    text,
    secret,
    status: 'PENDING',
    createdAt: now,
    sentAt: null,
  }));
}

/** A proof code for the stop's contact: the sender gives it to the courier at collection, the recipient at the door. */
export function proofCodeMessages(
  delivery: Pick<DeliveryRecord, '_id' | 'trackingId'>,
  type: ProofType,
  code: string,
  contact: Contact,
  now: Date,
  /** The proof's code number: above 1 when the merchant issued a new one. */
  generation = 1,
): NotificationRecord[] {
  const moment = type === 'COLLECTION' ? 'when they collect the package' : 'when they hand it over';
  const fresh = generation > 1 ? 'new ' : '';
  const text = `Waybill delivery ${delivery.trackingId}: your ${fresh}${type.toLowerCase()} code is ${code}. Give it to the courier only ${moment}.`;
  return toBoth(delivery._id, PROOF_PURPOSE[type], contact, text, true, now, generation);
}

const CODE_IN_TEXT = /\bcode is (\d{6})\b/;

/** The code a proof-code message carries (the sandbox's virtual courier reads it). */
function proofCodeIn(text: string | null): string | undefined {
  return text ? CODE_IN_TEXT.exec(text)?.[1] : undefined;
}

/** The code last sent for a proof of that type, read from a delivery's messages. */
export function latestProofCode(
  messages: readonly NotificationRecord[],
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
