/**
 * A wallet's chain of `count` credits of NGN 1.00, as the ledger stores them: a ledger larger
 * than one request reads, written straight to `ledger_entries`.
 */
export function bulkCredits(walletId: string, count: number) {
  const createdAt = new Date();
  return Array.from({ length: count }, (_, i) => ({
    _id: `${walletId}:${i + 1}`,
    walletId,
    sequence: i + 1,
    type: 'CREDIT',
    amountKobo: 100,
    balanceKobo: 100 * (i + 1),
    reference: `bulk-${walletId}-${i + 1}`,
    description: null,
    createdAt,
  }));
}
