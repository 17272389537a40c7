import type { ResolvedAddress } from './geo';
import type { Retry } from './retry';

/** What other services may know of the order service (planned; geo already asks it). */

export interface OrderActions {
  /** A saved address of the order service, or null when there is none. */
  'order.getAddress': { params: { addressId: string }; answer: ResolvedAddress | null };
}

export const ORDER_RETRY = {
  'order.getAddress': 'safe',
} as const satisfies Record<keyof OrderActions, Retry>;
