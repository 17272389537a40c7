import Joi from '../../libs/joi';
import { CURRENCY, ENTRY_TYPES, ledgerReference } from '../../libs/contracts/payment';
import { fromUrl, naira, uuid, view } from '../../libs/schemas';
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
    'What the entry is for: a delivery id (debit), `refund:<delivery id>`, `admin:<reference>` (an operator’s credit), `checkout:<reference>` (a paid funding checkout)',
  ),
  description: Joi.string().allow(null),
  createdAt: Joi.string().isoDate(),
});

export const ledgerReportView = view('LedgerReport', {
  clean: Joi.boolean().description('True when no problem was found'),
  wallets: Joi.number().integer(),
  entries: Joi.number().integer(),
  problems: Joi.array().items(
    Joi.object({
      walletId: uuid(),
      kind: Joi.string().valid(...PROBLEM_KINDS),
      sequence: Joi.number().integer(),
      detail: Joi.string(),
    }),
  ),
  checkedAt: Joi.string().isoDate(),
});

export interface TransactionsParams {
  limit: number;
  before?: number;
}

export const transactionsParams = Joi.object<TransactionsParams>({
  limit: fromUrl(Joi.number().integer().min(1).max(100).default(20)).description(
    'Entries per page, newest first',
  ),
  before: fromUrl(Joi.number().integer().min(1).max(Number.MAX_SAFE_INTEGER)).description(
    'Only entries older than this `sequence`: the last `sequence` of the previous page',
  ),
});

export interface AdminCreditParams {
  userId: string;
  amount: number;
  reference: string;
}

export const adminCreditParams = Joi.object<AdminCreditParams>({
  userId: uuid().required(),
  amount: naira()
    .greater(0)
    .max(MAX_CREDIT_NAIRA)
    .required()
    .description('NGN, at most two decimals'),
  reference: ledgerReference()
    .required()
    .description('Yours, unique per credit: the same reference again credits nothing more'),
});
