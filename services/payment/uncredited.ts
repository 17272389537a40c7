import type { Logger } from 'moleculer';
import { clipForJson } from '../../libs/text';
import type { CheckoutStore } from './checkout-store';

/**
 * The most of a reason for an operator that a record keeps, in bytes of JSON. The provider's
 * own words are part of it, as long as its answer (64 KiB): kept whole, 15 of them would make
 * a page of the operator's lists (200) too large for one NATS reply (decision 33).
 */
export const REASON_MAX_BYTES = 512;

/** A reason as records keep and lists show it: at most `REASON_MAX_BYTES`, readable. */
export const keptReason = (why: string) => clipForJson(why, REASON_MAX_BYTES);

/** A payment at the provider, as an uncredited one is listed. */
export interface UncreditedPayment {
  providerReference: string;
  checkoutReference: string;
  /** The checkout's user. */
  userId: string;
}

/**
 * A payment the provider took that nobody is credited with nor given back (another amount or
 * currency than its checkout's; a refund to its payer the provider refused or failed): logged
 * as an error, and listed for an operator to refund at the provider (`GET
 * /admin/payments/uncredited`), once however often it is seen.
 */
export async function recordUncreditedPayment(
  deps: {
    store: Pick<CheckoutStore, 'recordUncredited'>;
    logger: () => Pick<Logger, 'error'>;
  },
  payment: UncreditedPayment,
  why: string,
): Promise<void> {
  const { providerReference, checkoutReference, userId } = payment;
  const reason = keptReason(why);
  deps.logger().error('a payment at the provider is not credited; refund it there', {
    reference: providerReference,
    checkoutReference,
    why: reason,
  });
  await deps.store.recordUncredited({
    _id: providerReference,
    checkoutReference,
    userId,
    why: reason,
    at: new Date(),
  });
}
