import type { Connection } from 'mongoose';
import { defineCheckoutModels } from './checkout-store';
import { defineLedgerModels } from './ledger-store';

/** Every collection of the payment service's database. */
export function definePaymentModels(connection: Connection) {
  return { ...defineLedgerModels(connection), ...defineCheckoutModels(connection) };
}

export type PaymentModels = ReturnType<typeof definePaymentModels>;
