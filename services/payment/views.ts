import { CURRENCY, type LedgerEntry, type WalletBalance } from '../../libs/contracts/payment';
import { owedKobo } from './ledger';
import { formatNaira } from '../../libs/money';

export function toWalletView(wallet: WalletBalance) {
  return {
    userId: wallet.userId,
    balance: formatNaira(wallet.balanceKobo),
    currency: CURRENCY,
    updatedAt: wallet.updatedAt,
  };
}

export function toTransactionView(entry: LedgerEntry) {
  return {
    id: entry.id,
    sequence: entry.sequence,
    type: entry.type,
    amount: formatNaira(entry.amountKobo),
    balance: formatNaira(entry.balanceKobo),
    reference: entry.reference,
    description: entry.description,
    createdAt: entry.createdAt,
  };
}

/** A courier's wallet: what was credited to them. */
export function toCourierWalletView(
  courierId: string,
  account: WalletBalance,
  entries: LedgerEntry[],
) {
  return {
    courierId,
    balance: formatNaira(account.balanceKobo),
    currency: CURRENCY,
    updatedAt: account.updatedAt,
    // Entries of any chain show the same way.
    entries: entries.map(toTransactionView),
  };
}

/** A courier's cash account: its balance is below zero by what they owe. */
export function toCourierCashView(
  courierId: string,
  account: WalletBalance,
  entries: LedgerEntry[],
) {
  const { entries: shown, ...wallet } = toCourierWalletView(courierId, account, entries);
  return { ...wallet, owed: formatNaira(owedKobo(account.balanceKobo)), entries: shown };
}
