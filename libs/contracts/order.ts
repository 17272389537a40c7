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

export interface OrderActions {
  /** A user's saved address (one stored on a delivery), or null when there is none. */
  'order.getAddress': { params: GetAddressParams; answer: ResolvedAddress | null };
}

export const ORDER_RETRY = {
  'order.getAddress': 'safe',
} as const satisfies Record<keyof OrderActions, Retry>;
