/** What other services may know of the pricing service. */

/** Broadcast after a tariff tier changes, so that every pricing replica rereads the book. */
export const TARIFF_CHANGED_EVENT = 'pricing.tariffChanged';

export interface PricingEvents {
  [TARIFF_CHANGED_EVENT]: Record<string, never>;
}
