import type { Logger } from 'moleculer';
import type { CheckoutStore } from './checkout-store';

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
  deps.logger().error('a payment at the provider is not credited; refund it there', {
    reference: providerReference,
    checkoutReference,
    why,
  });
  await deps.store.recordUncredited({
    _id: providerReference,
    checkoutReference,
    userId,
    why,
    at: new Date(),
  });
}
