import { randomUUID } from 'node:crypto';
import type mongoose from 'mongoose';
import {
  CheckoutStore,
  defineCheckoutModels,
  type SessionRecord,
} from '../../services/payment/checkout-store';
import { defineLedgerModels, LedgerStore } from '../../services/payment/ledger-store';
import { Reversals } from '../../services/payment/reversals';
import { openPayerRefund, recipientsCheckout } from '../support/checkout-records';
import { useStoreDatabase } from '../support/store-database';

/**
 * A reversal of a checkout whose payment then went back to its payer (decision 174), on the
 * real server: what it took is given back to the wallet, however the two cross.
 */
const db = useStoreDatabase('payment', (connection: mongoose.Connection) => ({
  ...defineCheckoutModels(connection),
  ...defineLedgerModels(connection),
}));

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** A delivery's checkout of `amountKobo`, paid, whose merchant's wallet holds 1,000 NGN. */
async function paidCheckout(amountKobo: number) {
  const session = recipientsCheckout(amountKobo);
  const { _id: reference, userId } = session;
  const now = new Date();
  await db.models.CheckoutSession.create(session);
  await db.models.CheckoutOutcome.create({
    _id: reference,
    status: 'PAID',
    source: 'paystack',
    decidedAt: now,
  });
  const ledger = new LedgerStore(() => db.models);
  await ledger.post({
    walletId: userId,
    type: 'CREDIT',
    amountKobo: 100_000,
    reference: randomUUID(),
  });
  return { session, ledger };
}

it('gives back a reversal settled after its checkout went back to its payer, though that caller read no payer refund', async () => {
  const amountKobo = 5_000;
  const { session, ledger } = await paidCheckout(amountKobo);
  const { _id: reference, userId } = session;
  const store = new CheckoutStore(() => db.models);
  const deps = { store, ledger, logger: () => quiet, recheckMs: 60_000, creditWaitMs: 86_400_000 };
  const payerSide = new Reversals(deps);
  // The reversal's caller reads no payer refund (its first look); before it goes on, the
  // checkout is given back to its payer, whose look at the reversals finds the turn held.
  let looks = 0;
  const crossing = new Proxy(store, {
    get(target, key, receiver) {
      if (key !== 'payerRefund') return Reflect.get(target, key, receiver) as unknown;
      return async (checkout: string) => {
        looks += 1;
        const answer = await target.payerRefund(checkout);
        if (looks === 1) {
          await target.claimPayerRefund(openPayerRefund(session));
          await payerSide.givenToPayer(session);
        }
        return answer;
      };
    },
  });
  const refundId = String(Math.floor(Math.random() * 1e12));
  const reversals = new Reversals({ ...deps, store: crossing });
  const refund = { refundId, providerReference: reference, amountKobo, currency: 'NGN' };
  expect(await reversals.received(refund)).toBe(true);
  expect(await store.reversal(refundId)).toMatchObject({ givenBackKobo: amountKobo });
  expect((await ledger.balance(userId)).balanceKobo).toBe(100_000);
  // The sweep, and the payer's side again, change nothing.
  await payerSide.sweep(10);
  await payerSide.givenToPayer(session);
  expect((await ledger.balance(userId)).balanceKobo).toBe(100_000);
  const entries = await db.models.Entry.find({ walletId: userId }).lean();
  expect(entries.filter((e) => e.reference.includes(`reversal:${refundId}:`))).toHaveLength(2);
});

it('numbers the reversals recorded before they were, once however often the backfill passes', async () => {
  const store = new CheckoutStore(() => db.models);
  const session = recipientsCheckout(1_000);
  const checkoutReference = session._id;
  const ids = [
    await recordedByOldNode(session, new Date()),
    await recordedByOldNode(session, new Date()),
  ];
  expect(await store.reversalsOf(checkoutReference)).toEqual([]);
  await store.numberStoredReversals('start');
  await store.numberStoredReversals('after-rollout');
  await store.noteReversalOf(checkoutReference, ids[1]);
  expect((await store.reversalsOf(checkoutReference)).sort()).toEqual([...ids].sort());
});

it('lists for the sweep the reversals of checkouts given back since the version first ran, not those given back before', async () => {
  const store = new CheckoutStore(() => db.models);
  const reversalOf = async (session: SessionRecord, requestedAt: Date) => {
    await db.models.PayerRefund.create({ ...openPayerRefund(session), requestedAt });
    return recordedByOldNode(session, new Date(Date.now() - 86_400_000));
  };
  // The first pass ran a day ago, when this version did.
  await db.models.CheckoutPass.deleteMany({});
  await db.models.CheckoutPass.create({
    _id: 'checkout_reversals_of',
    startedAt: new Date(Date.now() - 86_400_000),
  });
  const before = await reversalOf(recipientsCheckout(1_000), new Date(Date.now() - 2 * 86_400_000));
  const since = await reversalOf(recipientsCheckout(1_000), new Date());
  await store.numberStoredReversals('after-rollout');
  expect(await db.models.OpenReversal.findById(since).lean()).not.toBeNull();
  expect(await db.models.OpenReversal.findById(before).lean()).toBeNull();
});

/**
 * A reversal of the checkout's whole payment as a node of the version before records it: not
 * numbered, settled as taken. Its id.
 */
async function recordedByOldNode(session: SessionRecord, receivedAt: Date): Promise<string> {
  const _id = String(Math.floor(Math.random() * 1e12));
  await db.models.Reversal.create({
    _id,
    providerReference: session._id,
    checkoutReference: session._id,
    userId: session.userId,
    amountKobo: session.amountKobo,
    receivedAt,
    credited: true,
    takenKobo: session.amountKobo,
    parts: 1,
    settledAt: new Date(),
  });
  return _id;
}
