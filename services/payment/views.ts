import { CURRENCY, type LedgerEntry, type WalletBalance } from '../../libs/contracts/payment';
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
