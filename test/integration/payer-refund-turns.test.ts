import type { CheckoutProvider } from '../../services/payment/checkout-providers';
import { CheckoutStore, defineCheckoutModels } from '../../services/payment/checkout-store';
import { PayerRefunds } from '../../services/payment/payer-refunds';
import { openPayerRefund, recipientsCheckout } from '../support/checkout-records';
import { useStoreDatabase } from '../support/store-database';

/** A refund to a payer asked in one caller's turn at a time (decision 168), on the real server. */
const db = useStoreDatabase('payment', defineCheckoutModels);

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
const TIMEOUT_MS = 1_000;

afterEach(() => jest.restoreAllMocks());

it('counts no try, and asks nothing, once its turn holds too little for another call to the provider', async () => {
  const store = new CheckoutStore(() => db.models);
  const session = recipientsCheckout(5_000);
  const reference = session._id;
  await db.models.CheckoutSession.create(session);
  // Asked once already, its answer lost: the next try looks for a refund standing first.
  await store.claimPayerRefund(openPayerRefund(session, 1));
  const realNow = Date.now();
  const refund = jest.fn();
  // The look for a standing refund answers late: the turn (3 calls, the margins) nearly out.
  const turnMs = 3 * TIMEOUT_MS + 15_000 + 10_000;
  const provider = {
    name: 'paystack',
    refund,
    refundOf: async () => {
      jest.spyOn(Date, 'now').mockReturnValue(realNow + turnMs - TIMEOUT_MS - 1_000);
      return null;
    },
  } as unknown as CheckoutProvider; // only what a refund's try calls
  const payerRefunds = new PayerRefunds({
    config: {
      paystack: { baseUrl: '', secretKey: 'sk', timeoutMs: TIMEOUT_MS },
      sweepIntervalMs: 100,
    },
    store,
    provider,
    logger: () => quiet,
    givenToPayer: async () => undefined,
  });
  await payerRefunds.sweep(10);
  expect(refund).not.toHaveBeenCalled();
  // A write past the turn could land after the next holder's settle, and put OPEN back.
  expect(await store.payerRefund(reference)).toMatchObject({ state: 'OPEN', tries: 1 });
});
