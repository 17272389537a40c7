import Joi from '../../libs/joi';
import { CURRENCY, ENTRY_TYPES, ledgerReference } from '../../libs/contracts/payment';
import { fromUrl, naira, pageParams, plainText, uuid, view } from '../../libs/schemas';
import { PROBLEM_KINDS } from './ledger';

/** Params and answers of the payment actions; the answers are what /openapi.json documents. */

/** The largest single credit an operator may make, in NGN. */
export const MAX_CREDIT_NAIRA = 100_000_000;

export const walletView = view('Wallet', {
  userId: uuid(),
  balance: Joi.string().description('NGN, two decimals: the last entry’s balance'),
  currency: Joi.string().valid(CURRENCY),
  updatedAt: Joi.string()
    .isoDate()
    .allow(null)
    .description('When the last entry was posted; null for a wallet without entries'),
});

export const transactionView = view('WalletTransaction', {
  id: Joi.string().description('`<userId>:<sequence>`'),
  sequence: Joi.number().integer().description('1 for the wallet’s first entry, then 2, 3, ...'),
  type: Joi.string().valid(...ENTRY_TYPES),
  amount: Joi.string().description('NGN, two decimals, signed: negative for a debit'),
  balance: Joi.string().description('NGN, two decimals: the balance after this entry'),
  reference: Joi.string().description(
    'What the entry is for: a delivery id (debit), `refund:<delivery id>`, `refund:<checkout reference>` (a delivery’s checkout money given back), `admin:<reference>` (an operator’s credit), `admin-debit:<reference>` (an operator’s correcting debit), `checkout:<reference>` (a paid funding checkout), `pod:<delivery id>` (cash collected on delivery), `reversal:<refund id>:<n>` (part of a refund made at the payment provider, taken back), `refund:reversal:<refund id>:<n>` (such a part given back)',
  ),
  description: Joi.string().allow(null),
  createdAt: Joi.string().isoDate(),
});

export const ledgerReportView = view('LedgerReport', {
  clean: Joi.boolean().description('True when no problem was found'),
  wallets: Joi.number().integer(),
  cashAccounts: Joi.number().integer().description('Couriers’ cash accounts with entries'),
  entries: Joi.number().integer(),
  problemCount: Joi.number()
    .integer()
    .description(
      'Every problem found: more than `problems` lists when they passed its most (1000); those the scan cannot see (`MISMATCH` of a head or a reference, `UNREFUNDED`) are listed first',
    ),
  problems: Joi.array().items(
    Joi.object({
      walletId: Joi.string().description(
        'A user’s id (their wallet), or `cash:<courierId>` (a courier’s cash account)',
      ),
      kind: Joi.string().valid(...PROBLEM_KINDS),
      sequence: Joi.number().integer(),
      detail: Joi.string(),
    }),
  ),
  checkedAt: Joi.string().isoDate(),
});

export const cashEntryView = view('CourierCashEntry', {
  id: Joi.string().description('`cash:<courierId>:<sequence>`'),
  sequence: Joi.number().integer().description('1 for the account’s first entry, then 2, 3, ...'),
  type: Joi.string()
    .valid('DEBIT', 'CREDIT')
    .description('DEBIT: cash collected on a delivery; CREDIT: cash handed in'),
  amount: Joi.string().description('NGN, two decimals, signed: negative for cash collected'),
  balance: Joi.string().description(
    'NGN, two decimals: the account after this entry, negative while the courier owes',
  ),
  reference: Joi.string().description(
    '`collected:<delivery id>` (cash collected on delivery) or `remittance:<reference>` (cash handed in, by the operator’s reference)',
  ),
  description: Joi.string().allow(null).description('The delivery, or the operator’s note'),
  createdAt: Joi.string().isoDate(),
});

export const courierCashView = view('CourierCash', {
  courierId: uuid(),
  balance: Joi.string().description(
    'NGN, two decimals: negative by what the courier owes, positive when they handed in more',
  ),
  owed: Joi.string().description('NGN, two decimals: what the courier owes, 0.00 when nothing'),
  currency: Joi.string().valid(CURRENCY),
  updatedAt: Joi.string()
    .isoDate()
    .allow(null)
    .description('When the last entry was posted; null for a courier who never collected'),
  entries: Joi.array()
    .items(cashEntryView)
    .description('A page of entries, newest first (`limit`, `before`)'),
});

export interface TransactionsParams {
  limit: number;
  before?: number;
}

/** A page of a ledger chain, newest first: by sequence, so that new entries shift nothing. */
const chainPage = {
  limit: fromUrl(Joi.number().integer().min(1).max(100).default(20)).description(
    'Entries per page, newest first',
  ),
  before: fromUrl(Joi.number().integer().min(1).max(Number.MAX_SAFE_INTEGER)).description(
    'Only entries older than this `sequence`: the last `sequence` of the previous page',
  ),
};

export const transactionsParams = Joi.object<TransactionsParams>(chainPage);

export const courierWalletView = view('CourierWallet', {
  courierId: uuid(),
  balance: Joi.string().description(
    'NGN, two decimals: what was credited to the courier (pay-on-delivery money remitted to them)',
  ),
  currency: Joi.string().valid(CURRENCY),
  updatedAt: Joi.string()
    .isoDate()
    .allow(null)
    .description('When the last entry was posted; null for a wallet without entries'),
  entries: Joi.array()
    .items(transactionView)
    .description('A page of entries, newest first (`limit`, `before`)'),
});

export interface CourierCashParams extends TransactionsParams {
  courierId: string;
}

export const courierCashParams = Joi.object<CourierCashParams>({
  courierId: uuid().required(),
  ...chainPage,
});

export interface AdminCreditParams {
  userId: string;
  amount: number;
  reference: string;
  note?: string;
}

export interface AdminDebitParams extends AdminCreditParams {
  note: string;
}

/** Why an operator moved a wallet's money: the entry's description, which its owner reads. */
const operatorsNote = () =>
  plainText(200).min(1).description('Shown to the account’s owner as the entry’s description');

/** An operator's amount of money, in NGN. */
const adminAmount = () =>
  naira().greater(0).max(MAX_CREDIT_NAIRA).required().description('NGN, at most two decimals');

/** An operator's move of money beyond whose it is: how much, and their reference for it. */
const operatorsMove = (reference: string) => ({
  amount: adminAmount(),
  reference: ledgerReference().required().description(reference),
});

export const adminCreditParams = Joi.object<AdminCreditParams>({
  userId: uuid().required(),
  ...operatorsMove('Yours, unique per credit: the same reference again credits nothing more'),
  note: operatorsNote(),
});

export const adminDebitParams = Joi.object<AdminDebitParams>({
  userId: uuid().required(),
  ...operatorsMove('Yours, unique per debit: the same reference again takes nothing more'),
  note: operatorsNote().required(),
});

export interface CashRemittanceParams {
  courierId: string;
  amount: number;
  reference: string;
  note?: string;
}

export interface CashCorrectionParams extends CashRemittanceParams {
  note: string;
}

export const cashCorrectionParams = Joi.object<CashCorrectionParams>({
  courierId: uuid().required(),
  ...operatorsMove('Yours, unique per correction: the same reference again records nothing more'),
  note: operatorsNote().required(),
});

export const cashRemittanceParams = Joi.object<CashRemittanceParams>({
  courierId: uuid().required(),
  ...operatorsMove(
    'Yours, unique per remittance (a receipt number): the same reference again records nothing more',
  ),
  note: operatorsNote(),
});

/**
 * The pages of an operator's lists of the provider's money (payments no checkout credits,
 * refunds taken back): 50 entries by default, 200 at most, over the API and in the CLI.
 */
export const PROVIDER_LIST_PAGE = { max: 200, byDefault: 50 };

/** A transaction's reference at the provider, as recorded; a checkout's reference fits it too. */
export const PROVIDER_REFERENCE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.=-]{0,199}$/;

/**
 * `limit`, and `after` the last one of the previous page, by its id (`what`): an offset skips
 * what an operator settled since they read the page before, and these lists are worked through.
 */
export const providerListPage = (what: string, id: RegExp) => ({
  limit: pageParams().limit.max(PROVIDER_LIST_PAGE.max).default(PROVIDER_LIST_PAGE.byDefault),
  after: Joi.string()
    .pattern(id)
    .description(`The ${what} of the last one of the previous page; absent: the first page`),
});
