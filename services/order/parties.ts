import { forbidden, notFound } from '../../libs/errors';
import type { DeliveryRecord } from './delivery-record';

/**
 * Who may see and change a delivery, pure. Its creator owns it. With
 * `link3rdPartyByContactInfo`, the account whose e-mail (or phone no other account shares) is
 * the destination contact's is linked to it as its recipient: they may read it (and hear of it
 * at their webhooks), but only the creator changes it. Anyone else is told it does not exist.
 */

export const DELIVERY_NOT_FOUND = 'Delivery request not found';
export const CREATOR_ONLY =
  'Only the creator of this delivery can change it; it is linked to your account as its recipient';

export const DELIVERY_ROLES = ['CREATOR', 'RECIPIENT'] as const;
export type DeliveryRole = (typeof DELIVERY_ROLES)[number];

type Parties = Pick<DeliveryRecord, 'userId' | 'recipientUserId'>;

export function roleOf(delivery: Parties, userId: string): DeliveryRole | null {
  if (delivery.userId === userId) return 'CREATOR';
  if (delivery.recipientUserId === userId) return 'RECIPIENT';
  return null;
}

/** The delivery, for a user who may read it; 404 for anyone else. */
export function readableBy<D extends Parties>(delivery: D | null, userId: string): D {
  if (!delivery || !roleOf(delivery, userId)) throw notFound(DELIVERY_NOT_FOUND);
  return delivery;
}

/** The delivery, for its creator; 403 for its recipient, 404 for anyone else. */
export function changeableBy<D extends Parties>(delivery: D | null, userId: string): D {
  if (readableBy(delivery, userId).userId !== userId) throw forbidden(CREATOR_ONLY);
  return delivery as D;
}

/** The account a delivery links to as its recipient: never its creator. */
export const linkedRecipient = (creatorId: string, found: { id: string } | null) =>
  found && found.id !== creatorId ? found.id : null;
