import { call } from '../../libs/contracts';
import Joi from '../../libs/joi';
import { nairaToKobo } from '../../libs/money';
import { action, operatorOf, type ServiceActions, type WaybillContext } from '../../libs/service';
import type { Logger } from 'moleculer';
import type { LedgerReport, LedgerStore } from './ledger-store';
import { userIdParams } from '../../libs/schemas';
import {
  adminCreditParams,
  adminDebitParams,
  ledgerReportView,
  walletView,
  type AdminCreditParams,
} from './schemas';
import { toWalletView } from './views';

/**
 * The operators' wallet actions: credit a wallet, take back a credit made by mistake, read one,
 * reconcile the ledger. Each move is logged with its reference, note and operator, and its
 * entry records the operator (`postedBy`, decision 157).
 */
export function createWalletAdminActions(
  ledger: LedgerStore,
  logger: () => Logger,
): ServiceActions {
  /** The ledger's verify running in this replica for a caller, if one is. */
  let verifying: Promise<LedgerReport> | undefined;

  /** A credit or a correcting debit, once per reference, logged when made; then the wallet. */
  async function moveByOperator(
    ctx: WaybillContext<unknown>,
    { userId, amount, reference, note }: AdminCreditParams,
    how: 'credited' | 'debited',
  ) {
    await call(ctx, 'account.getUser', { userId });
    const kobo = nairaToKobo(amount);
    const move = { note, postedBy: ctx.meta.operator?.name };
    const posting =
      how === 'credited'
        ? await ledger.creditByOperator(userId, reference, kobo, move)
        : await ledger.debitByOperator(userId, reference, kobo, move);
    if (!posting.replayed) {
      logger().info(`wallet ${how} by an operator`, {
        userId,
        amount,
        reference,
        note,
        ...operatorOf(ctx.meta),
      });
    }
    return toWalletView(await ledger.balance(userId));
  }

  return {
    adminCredit: action({
      // The reference makes a repeat credit nothing more.
      retry: 'safe',
      http: {
        group: 'admin',
        method: 'POST',
        path: '/users/:userId/wallet/credit',
        status: 201,
        message: 'Wallet credited',
        summary: 'Credit a user’s wallet',
        description:
          "`amount` in NGN, at most two decimals. The same `reference` again credits nothing more and answers the wallet as it is; with another amount it is a 409. `refund:<debit reference>` gives back a debit its refund gave up that was taken anyway (what `GET /admin/ledger/verify` reports as `UNREFUNDED`), or a debit still standing (its delivery not ended): it is posted as that refund, once, whoever posts it first, the delivery's own refund then giving nothing more.",
        response: walletView,
        errors: {
          404: 'No such user',
          409: 'The reference was already used for another amount; or, for `refund:<debit reference>`, the amount is not what the debit took, the debit took nothing (undone, refused, or still being posted: retry in a minute), or it was taken from another wallet',
        },
      },
      params: adminCreditParams,
      handler: (ctx) => moveByOperator(ctx, ctx.params, 'credited'),
    }),

    adminDebit: action({
      // The reference makes a repeat take nothing more.
      retry: 'safe',
      http: {
        group: 'admin',
        method: 'POST',
        path: '/users/:userId/wallet/debit',
        status: 201,
        message: 'Wallet debited',
        summary: 'Take back from a user’s wallet what was credited by mistake',
        description:
          '`amount` in NGN, at most two decimals; `note` says why, and is the entry’s description its owner reads. The same `reference` again takes nothing more and answers the wallet as it is; with another amount it is a 409. A wallet never goes below zero: 422 when it holds less than the amount, and the reference is then spent (sent again, even once the wallet holds enough, it is a 409 and takes nothing: take what the wallet holds under a new one).',
        response: walletView,
        errors: {
          404: 'No such user',
          409: 'The reference was already used for another amount, or its debit was refused (422) when it came',
          422: 'The wallet holds less than the amount',
        },
      },
      params: adminDebitParams,
      handler: (ctx) => moveByOperator(ctx, ctx.params, 'debited'),
    }),

    adminWallet: action({
      retry: 'safe',
      http: {
        group: 'admin',
        method: 'GET',
        path: '/users/:userId/wallet',
        message: 'Wallet retrieved',
        summary: 'A user’s wallet',
        response: walletView,
        errors: { 404: 'No such user' },
      },
      params: userIdParams,
      async handler(ctx) {
        const { userId } = ctx.params;
        await call(ctx, 'account.getUser', { userId });
        return toWalletView(await ledger.balance(userId));
      },
    }),

    verifyLedger: action({
      retry: 'safe',
      http: {
        group: 'admin',
        method: 'GET',
        path: '/ledger/verify',
        message: 'Ledger verified',
        summary: 'Reconcile every wallet',
        description:
          'Recomputes every wallet from its entries and reports any gap or duplicate in a wallet’s sequence, any reference posted twice, any balance that is not the previous balance plus the amount, and any debit its refund gave up that was taken and not given back (`UNREFUNDED`; its detail says how to credit it back) (at most 1000 listed, those only the reads after the scan find first; `problemCount` counts them all). Held to the request’s time: on a ledger too large for it, 503, and `waybill ledger verify` reads it all. Calls while one runs on the same replica share its answer.',
        response: ledgerReportView,
        errors: { 503: 'The ledger is too large to verify within one request' },
      },
      params: Joi.object({}),
      handler(ctx) {
        // The gateway has answered 504 by the call's deadline: the scan stops there too, and
        // calls sent meanwhile (an operator's retries) share it rather than start their own.
        const timeout = ctx.options?.timeout ?? 0;
        verifying ??= ledger
          .verify(undefined, timeout > 0 ? Date.now() + timeout : undefined)
          .finally(() => (verifying = undefined));
        return verifying;
      },
    }),
  };
}
