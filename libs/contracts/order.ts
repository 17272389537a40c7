import Joi from '../joi';
import { uuid } from '../schemas';
import type { ResolvedAddress } from './geo';
import type { Retry } from './retry';

/** What other services may know of the order service. */

export interface GetAddressParams {
  addressId: string;
  /** Whose address: another user's id finds nothing. */
  userId: string;
}

export const getAddressParams = Joi.object<GetAddressParams, true>({
  addressId: uuid().required(),
  userId: uuid().required(),
});

/** What a delivery event says: enough to route it (the API key) and to act on it. */
export interface DeliveryEventPayload {
  deliveryId: string;
  userId: string;
  /** The key that created the delivery: webhooks go back to its owner (spec, Events). */
  apiKeyId: string | null;
  trackingId: string;
  status: string;
  p2pStatus: string;
  matchingEligible: boolean;
  courierMatching: string;
  /** The courier assigned, once one is. */
  courierId: string | null;
  /** When the change happened. */
  at: string;
}

export const DELIVERY_CREATED_EVENT = 'order.deliveryCreated';
/** Every share of the fee is paid: matching may start. */
export const DELIVERY_PAID_EVENT = 'order.deliveryPaid';
export const DELIVERY_CANCELLED_EVENT = 'order.deliveryCancelled';
/** Any status change after creation (a courier assigned, collected, delivered…). */
export const DELIVERY_STATUS_CHANGED_EVENT = 'order.deliveryStatusChanged';

export interface OrderEvents {
  [DELIVERY_CREATED_EVENT]: DeliveryEventPayload;
  [DELIVERY_PAID_EVENT]: DeliveryEventPayload;
  [DELIVERY_CANCELLED_EVENT]: DeliveryEventPayload;
  [DELIVERY_STATUS_CHANGED_EVENT]: DeliveryEventPayload;
}

export interface AssignCourierParams {
  deliveryId: string;
  courierId: string;
}

export const assignCourierParams = Joi.object<AssignCourierParams, true>({
  deliveryId: uuid().required(),
  courierId: uuid().required(),
});

export interface MatchingEndParams {
  deliveryId: string;
}

export const matchingEndParams = Joi.object<MatchingEndParams, true>({
  deliveryId: uuid().required(),
});

/**
 * Whether the delivery now has this courier: false when it no longer waits for one (cancelled
 * meanwhile) or has another; `status` is the delivery's status after the call.
 */
export interface AssignAnswer {
  assigned: boolean;
  status: string;
}

export interface OrderActions {
  /** A user's saved address (one stored on a delivery), or null when there is none. */
  'order.getAddress': { params: GetAddressParams; answer: ResolvedAddress | null };
  /** Matching found a courier who accepted: the delivery is theirs. Repeatable. */
  'order.assignCourier': { params: AssignCourierParams; answer: AssignAnswer };
  /** Matching gave up: the delivery ends NO_COURIER_FOUND, refunded and released. Repeatable. */
  'order.noCourierFound': { params: MatchingEndParams; answer: { status: string } };
}

export const ORDER_RETRY = {
  'order.getAddress': 'safe',
  'order.assignCourier': 'safe',
  'order.noCourierFound': 'safe',
} as const satisfies Record<keyof OrderActions, Retry>;
