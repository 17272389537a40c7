import type { Logger, ServiceBroker } from 'moleculer';
import Joi from '../../libs/joi';
import type { Config } from '../../libs/config';
import {
  balanceParams,
  postingParams,
  refundParams,
  type EntryType,
  type PostingParams,
} from '../../libs/contracts/payment';
import { notFound } from '../../libs/errors';
import { ServiceDatabase } from '../../libs/mongo';
import {
  action,
  implement,
  requireUser,
  type ServiceDefinition,
  type WaybillContext,
} from '../../libs/service';
import { createCashAccountActions } from './cash-accounts';
import { Checkouts, createCheckoutActions } from './checkout-actions';
import { checkoutProvider } from './checkout-providers';
import { CheckoutStore } from './checkout-store';
import { LedgerStore } from './ledger-store';
import {
  transactionView,
  transactionsParams,
  walletView,
  type TransactionsParams,
} from './schemas';
import { Backfills } from '../../libs/backfills';
import { Periodic } from '../../libs/periodic';
import { definePaymentModels } from './store';
import { toTransactionView, toWalletView } from './views';
import { createReversalAdminActions } from './reversal-admin';
import { createUncreditedAdminActions } from './uncredited-admin';
import { createWalletAdminActions } from './wallet-admin';

export function createPaymentService(config: Config): ServiceDefinition {
  const db = new ServiceDatabase(config, 'payment', definePaymentModels);
  const ledger = new LedgerStore(() => db.models);
  const post =
    (type: EntryType) =>
    ({ params }: { params: PostingParams }) =>
      ledger.post({ walletId: params.userId, type, ...params });
  let broker: ServiceBroker;
  let logger: Logger;
  const checkoutStore = new CheckoutStore(() => db.models);
  const checkouts = new Checkouts({
    config: config.payment,
    store: checkoutStore,
    ledger,
    provider: checkoutProvider(config.payment),
    broadcaster: () => broker,
    logger: () => logger,
  });
  /**
   * The checkout sweep, the repair of debits given up and still taken (decision 121), the
   * taking back of refunds made at the provider (decision 146), and the refunds to payers still
   * to ask the provider for (decision 168).
   */
  let sweeps: Periodic[] = [];
  // Not awaited: until they have run, the repair sweep misses only marks made before the list,
  // a checkout given back to its payer only reversals recorded before they were numbered, and
  // the late checks only those stored by the version before.
  const backfills = new Backfills(
    [
      {
        what: 'debits given up before their open list',
        run: (pass) => ledger.listOpenGivenUp(pass),
      },
      {
        what: "each checkout's reversals recorded before they were numbered",
        run: (pass) => checkoutStore.numberStoredReversals(pass),
      },
      {
        what: 'late checks stored before their buckets',
        run: (pass) => checkoutStore.listStoredLateChecks(pass),
      },
    ],
    config.backfillAfterRolloutMs,
  );

  return {
    name: 'payment',
    mixins: [db.mixin()],
    created() {
      broker = this.broker;
      logger = this.logger;
    },
    // After the mixin's started(): the database is connected.
    async started() {
      if (!config.background) return;
      await backfills.start(logger);
      const every = config.payment.sweepIntervalMs;
      const checkoutSweep = new Periodic(
        every,
        () => checkouts.sweep(),
        (err) => logger.warn('checkout sweep failed; the next one retries', { err }),
      );
      const ledgerRepairs: Periodic = new Periodic(
        every,
        async () => {
          const givenBack = await ledger.repairGivenUp({
            stopping: () => ledgerRepairs.stopping,
            onError: (reference, err) =>
              logger.warn('debit given up not repaired; the next sweep retries', {
                reference,
                err,
              }),
          });
          if (givenBack > 0) {
            logger.warn('gave back debits their refunds had given up and were still taken', {
              givenBack,
            });
          }
        },
        (err) => logger.warn('ledger repair failed; the next sweep retries', { err }),
      );
      const reversals = new Periodic(
        every,
        () => checkouts.sweepReversals(),
        (err) => logger.warn('reversal sweep failed; the next one retries', { err }),
      );
      const payerRefunds = new Periodic(
        every,
        () => checkouts.sweepPayerRefunds(),
        (err) => logger.warn('payer refund sweep failed; the next one retries', { err }),
      );
      sweeps = [checkoutSweep, ledgerRepairs, reversals, payerRefunds];
      for (const sweep of sweeps) sweep.start();
    },
    async stopped() {
      await Promise.all([backfills.stop(), ...sweeps.map((sweep) => sweep.stop())]);
    },
    actions: {
      wallet: action({
        retry: 'safe',
        http: {
          group: 'api',
          method: 'GET',
          path: '/wallet',
          message: 'Wallet retrieved',
          summary: 'Your wallet: the balance deliveries are paid from',
          response: walletView,
        },
        params: Joi.object({}),
        async handler(ctx) {
          return toWalletView(await ledger.balance(requireUser(ctx)));
        },
      }),

      transactions: action({
        retry: 'safe',
        http: {
          group: 'api',
          method: 'GET',
          path: '/wallet/transactions',
          message: 'Wallet transactions retrieved',
          summary: 'Your wallet’s entries, newest first',
          description:
            'A page of `limit` entries; the next page is `before=<sequence of the last one>`. Sequences are the wallet’s own, 1 for its first entry.',
          response: Joi.array().items(transactionView),
        },
        params: transactionsParams,
        async handler(ctx: WaybillContext<TransactionsParams>) {
          const entries = await ledger.page(requireUser(ctx), ctx.params);
          return entries.map(toTransactionView);
        },
      }),

      /** Internal: takes money from a wallet, once per reference. */
      debit: implement('payment.debit', {
        visibility: 'public',
        params: postingParams,
        handler: post('DEBIT'),
      }),

      /** Internal: gives a debit back, whole, once (decision 163). */
      refund: implement('payment.refund', {
        visibility: 'public',
        params: refundParams,
        async handler(ctx) {
          const { userId, debitReference, description } = ctx.params;
          const refunded = await ledger.refundDebit(userId, debitReference, description ?? null);
          if (!refunded) throw notFound(`No debit ${debitReference} of this wallet to refund`);
          return refunded;
        },
      }),

      /** Internal: adds money to a wallet, once per reference. */
      credit: implement('payment.credit', {
        visibility: 'public',
        params: postingParams,
        async handler(ctx) {
          await checkouts.refuseCreditOfPayerRefund(ctx.params.reference);
          return post('CREDIT')(ctx);
        },
      }),

      balance: implement('payment.balance', {
        visibility: 'public',
        params: balanceParams,
        async handler(ctx) {
          return ledger.balance(ctx.params.userId);
        },
      }),

      ...createWalletAdminActions(ledger, () => logger),
      ...createCashAccountActions(ledger, () => logger),
      ...createCheckoutActions(checkouts),
      ...createUncreditedAdminActions(checkoutStore),
      ...createReversalAdminActions(checkoutStore),
    },
  };
}
