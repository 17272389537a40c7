import { call } from '../../libs/contracts';
import { COURIER_NOT_FOUND, courierIdParams } from '../../libs/contracts/matching';
import {
  collectOnDeliveryParams,
  type LedgerEntry,
  type WalletBalance,
} from '../../libs/contracts/payment';
import { conflict, notFound } from '../../libs/errors';
import { courierHasUserId, isUserId } from '../../libs/contracts/user-ids';
import { nairaToKobo } from '../../libs/money';
import {
  action,
  implement,
  operatorOf,
  requireCourier,
  type ServiceActions,
  type WaybillContext,
  type WithDefaults,
} from '../../libs/service';
import {
  cashAccountId,
  cashCorrectionReference,
  cashRemittanceReference,
  collectedReference,
  owedKobo,
  payOnDeliveryReference,
} from './ledger';
import type { Logger } from 'moleculer';
import type { LedgerStore } from './ledger-store';
import {
  cashCorrectionParams,
  cashEntryView,
  cashRemittanceParams,
  courierCashParams,
  courierCashView,
  courierWalletView,
  transactionsParams,
  type CashRemittanceParams,
  type CourierCashParams,
  type TransactionsParams,
} from './schemas';
import { toCourierCashView, toCourierWalletView, toTransactionView } from './views';

/**
 * Couriers' cash accounts (docs/payments.md): what a courier collected on delivery is debited
 * to their account, which may go below zero, and what they hand in is credited. The merchant
 * (or the COURIER_WALLET courier) is credited at delivery: the platform carries the risk of
 * the cash until the courier hands it in.
 */
/** How a chain's entries are paged: by sequence, so that new entries shift nothing. */
const PAGED =
  'A page of `limit` entries, newest first; the next page is `before=<sequence of the last one>`.';

export function createCashAccountActions(
  ledger: LedgerStore,
  logger: () => Logger,
): ServiceActions {
  /**
   * An operator's entry on a courier's cash account, once per reference: cash handed in
   * (CREDIT, a remittance) or a remittance recorded too high taken back (DEBIT, a correction).
   * Logged when made, with its operator, whom its entry records too (`postedBy`, decision 157).
   */
  async function recordByOperator(
    ctx: WaybillContext<unknown>,
    { courierId, amount, reference, note }: CashRemittanceParams,
    type: 'CREDIT' | 'DEBIT',
  ) {
    await requireKnownCourier(ctx, courierId);
    const remittance = type === 'CREDIT';
    const { entry, replayed } = await ledger.post({
      walletId: cashAccountId(courierId),
      type,
      amountKobo: nairaToKobo(amount),
      reference: (remittance ? cashRemittanceReference : cashCorrectionReference)(reference),
      description: note ?? 'Cash handed in',
      postedBy: ctx.meta.operator?.name,
    });
    if (!replayed) {
      const what = remittance ? 'cash remittance recorded' : 'cash correction recorded';
      logger().info(what, { courierId, amount, reference, note, ...operatorOf(ctx.meta) });
    }
    return toTransactionView(entry);
  }

  /** A courier's cash account and a page of its entries. */
  const cashOf = async (courierId: string, page: TransactionsParams) =>
    toCourierCashView(courierId, ...(await chainOf(cashAccountId(courierId), page)));

  /**
   * A courier's wallet, by their id. A courier created with a user's id before that was refused
   * shares the user's wallet: it is shown to neither as the courier's (409).
   */
  async function courierWalletOf(
    ctx: WaybillContext<unknown>,
    courierId: string,
    page: TransactionsParams,
  ) {
    if (!(await isUserId(ctx, courierId))) {
      return toCourierWalletView(courierId, ...(await chainOf(courierId, page)));
    }
    throw conflict(
      `${courierHasUserId(courierId)}; an operator must give the courier a profile of its own`,
    );
  }

  /** A chain's balance and a page of its entries, newest first. */
  async function chainOf(
    accountId: string,
    page: TransactionsParams,
  ): Promise<[WalletBalance, LedgerEntry[]]> {
    const account = await ledger.balance(accountId);
    return [account, await ledger.page(accountId, page, account)];
  }

  /** 404 unless the directory knows the courier (retired ones too: they may owe cash). */
  async function requireKnownCourier(ctx: WaybillContext<unknown>, courierId: string) {
    const courier = await call(ctx, 'courier-matching.getCourier', { courierId });
    if (!courier) {
      throw notFound(
        `${COURIER_NOT_FOUND}: no courier ${courierId} in the directory (GET /admin/couriers)`,
      );
    }
  }

  return {
    cashOwed: implement('payment.cashOwed', {
      visibility: 'public',
      params: courierIdParams,
      async handler(ctx) {
        const account = await ledger.balance(cashAccountId(ctx.params.courierId));
        return { owedKobo: owedKobo(account.balanceKobo) };
      },
    }),

    collectOnDelivery: implement('payment.collectOnDelivery', {
      visibility: 'public',
      params: collectOnDeliveryParams,
      async handler(ctx) {
        const { deliveryId, courierId, remitToUserId, amountKobo, description } = ctx.params;
        // The debt first: a credit is never on the ledger without the debit that pays for it
        // (the audit holds it so), and a failure between them leaves the caller to retry both.
        const collected = await ledger.post({
          walletId: cashAccountId(courierId),
          type: 'DEBIT',
          amountKobo,
          reference: collectedReference(deliveryId),
          description: description ?? null,
        });
        const credited = await ledger.post({
          walletId: remitToUserId,
          type: 'CREDIT',
          amountKobo,
          reference: payOnDeliveryReference(deliveryId),
          description: description ?? null,
        });
        return { collected, credited };
      },
    }),

    courierCashRemittance: action({
      // The reference makes a repeat record nothing more.
      retry: 'safe',
      http: {
        group: 'admin',
        method: 'POST',
        path: '/couriers/:courierId/cash-remittances',
        status: 201,
        message: 'Cash remittance recorded',
        summary: 'Record cash a courier handed in',
        description:
          '`amount` in NGN, at most two decimals, credited to the courier’s cash account. The answer is the entry; the same `reference` again records nothing more and answers the same entry; with another amount (or for another courier) it is a 409. More than the courier owes is accepted and shows as a positive balance, counted against what they collect next.',
        response: cashEntryView,
        errors: {
          404: 'No such courier',
          409: 'The reference was already used for another amount or courier',
        },
      },
      params: cashRemittanceParams,
      handler: (ctx) => recordByOperator(ctx, ctx.params, 'CREDIT'),
    }),

    courierCashCorrection: action({
      // The reference makes a repeat record nothing more.
      retry: 'safe',
      http: {
        group: 'admin',
        method: 'POST',
        path: '/couriers/:courierId/cash-corrections',
        status: 201,
        message: 'Cash correction recorded',
        summary: 'Take back a remittance recorded too high',
        description:
          '`amount` in NGN, at most two decimals, debited to the courier’s cash account: what a remittance recorded that the courier did not hand in (its reference is spent, so it cannot be recorded again). `note` says why, and is the entry’s description the courier reads. The answer is the entry; the same `reference` again records nothing more; with another amount (or for another courier) it is a 409. The account may go below zero: the courier then owes it.',
        response: cashEntryView,
        errors: {
          404: 'No such courier',
          409: 'The reference was already used for another amount or courier',
        },
      },
      params: cashCorrectionParams,
      handler: (ctx) => recordByOperator(ctx, ctx.params, 'DEBIT'),
    }),

    courierWallet: action({
      retry: 'safe',
      http: {
        group: 'admin',
        method: 'GET',
        path: '/couriers/:courierId/wallet',
        message: 'Courier wallet retrieved',
        summary: 'What was credited to a courier’s wallet (pay-on-delivery money remitted to them)',
        description:
          'A COURIER_WALLET pay-on-delivery credits the courier’s wallet, apart from their cash account. ' +
          PAGED,
        response: courierWalletView,
        errors: { 404: 'No such courier', 409: 'The courier has a user’s id' },
      },
      params: courierCashParams,
      async handler(ctx: WaybillContext<WithDefaults<CourierCashParams, 'limit'>>) {
        const { courierId, ...page } = ctx.params;
        await requireKnownCourier(ctx, courierId);
        return courierWalletOf(ctx, courierId, page);
      },
    }),

    ownWallet: action({
      retry: 'safe',
      http: {
        group: 'courier',
        method: 'GET',
        path: '/wallet',
        message: 'Wallet retrieved',
        summary: 'Your wallet: pay-on-delivery money remitted to you, newest entries first',
        description: PAGED,
        response: courierWalletView,
        errors: { 409: 'Your courier profile has a user’s id: ask an operator for another' },
      },
      params: transactionsParams,
      async handler(ctx: WaybillContext<WithDefaults<TransactionsParams, 'limit'>>) {
        return courierWalletOf(ctx, requireCourier(ctx), ctx.params);
      },
    }),

    ownCash: action({
      retry: 'safe',
      http: {
        group: 'courier',
        method: 'GET',
        path: '/cash',
        message: 'Cash account retrieved',
        summary: 'The cash you collected on delivery and have not handed in yet (`owed`)',
        description: PAGED,
        response: courierCashView,
      },
      params: transactionsParams,
      async handler(ctx: WaybillContext<WithDefaults<TransactionsParams, 'limit'>>) {
        return cashOf(requireCourier(ctx), ctx.params);
      },
    }),

    courierCash: action({
      retry: 'safe',
      http: {
        group: 'admin',
        method: 'GET',
        path: '/couriers/:courierId/cash',
        message: 'Courier cash account retrieved',
        summary: 'What a courier owes in cash collected on delivery, and the latest entries',
        description:
          '`owed` is what the courier collected on delivery and has not handed in. ' + PAGED,
        response: courierCashView,
        errors: { 404: 'No such courier' },
      },
      params: courierCashParams,
      async handler(ctx: WaybillContext<WithDefaults<CourierCashParams, 'limit'>>) {
        const { courierId, ...page } = ctx.params;
        await requireKnownCourier(ctx, courierId);
        return cashOf(courierId, page);
      },
    }),
  };
}
