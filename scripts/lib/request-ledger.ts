import { refundReference } from '../../libs/contracts/payment';
import { nairaToKobo } from '../../libs/money';

/** A wallet entry as `GET /api/wallet/transactions` shows it (amounts in NGN, signed). */
export interface WalletEntry {
  sequence: number;
  type: 'CREDIT' | 'DEBIT' | 'REFUND';
  amount: string;
  reference: string;
}

export interface WalletCheck {
  entries: readonly WalletEntry[];
  /** deliveryId → kobo the 201 said the merchant paid, for this wallet's 201s. */
  created: ReadonlyMap<string, number>;
  balanceKobo: number;
  /** deliveryIds (among `unrefundedOrphans`) whose delivery exists. */
  delivered: ReadonlySet<string>;
  /**
   * deliveryIds (among `refundedCreated`) whose delivery ended NO_COURIER_FOUND: a search
   * that found nobody in its time (a run longer than `MATCHING_SEARCH_TIMEOUT_MS` with more
   * requests than its couriers carry) gives the money back, and that is no mismatch.
   */
  noCourier?: ReadonlySet<string>;
}

export interface WalletReport {
  mismatches: string[];
  /** DEBITs of no 201: requests shed (503, 504, no answer). */
  orphans: number;
  /** Of those, the ones whose delivery was created after all (kept, not refunded). */
  completed: number;
  /** Orphans neither refunded nor delivered yet: the sweep may still settle them. */
  unsettled: number;
  /** 201s refunded in full once their search found no courier (`noCourier`). */
  refundedNoCourier: number;
}

const naira = (kobo: number) => (kobo / 100).toFixed(2);

function byReference(entries: readonly WalletEntry[]): Map<string, WalletEntry[]> {
  const map = new Map<string, WalletEntry[]>();
  for (const e of entries) map.set(e.reference, [...(map.get(e.reference) ?? []), e]);
  return map;
}

/** Kobo refunded against the debit `reference`. */
function refundedKobo(index: Map<string, WalletEntry[]>, reference: string): number {
  return (index.get(refundReference(reference)) ?? []).reduce(
    (sum, r) => sum + nairaToKobo(r.amount),
    0,
  );
}

/** The 201s with a refund: the caller asks how each delivery ended (`noCourier`). */
export function refundedCreated(
  entries: readonly WalletEntry[],
  created: ReadonlyMap<string, number>,
): string[] {
  const index = byReference(entries);
  return [...created.keys()].filter((deliveryId) => index.has(refundReference(deliveryId)));
}

/** DEBITs of no 201 that are not refunded in full: the caller asks whether their delivery exists. */
export function unrefundedOrphans(
  entries: readonly WalletEntry[],
  created: ReadonlyMap<string, number>,
): string[] {
  const index = byReference(entries);
  return entries
    .filter((e) => e.type === 'DEBIT' && !created.has(e.reference))
    .filter((e) => refundedKobo(index, e.reference) !== -nairaToKobo(e.amount))
    .map((e) => e.reference);
}

/**
 * One merchant's wallet against the answers to its requests: every 201 has exactly one DEBIT
 * with its deliveryId as reference, of the amount the 201 states, and no refund; a DEBIT of no
 * 201 (a request shed with 503, 504 or no answer) was refunded in full or became a delivery, never
 * both; the balance is what was credited less what the deliveries kept.
 */
export function checkWallet(check: WalletCheck): WalletReport {
  const { entries, created, balanceKobo, delivered, noCourier = new Set<string>() } = check;
  const index = byReference(entries);
  const mismatches: string[] = [];
  let creditedKobo = 0;
  let keptKobo = 0;
  let orphans = 0;
  let completed = 0;
  let unsettled = 0;
  let refundedNoCourier = 0;
  for (const e of entries) if (e.type === 'CREDIT') creditedKobo += nairaToKobo(e.amount);

  for (const [deliveryId, paidKobo] of created) {
    const debits = (index.get(deliveryId) ?? []).filter((e) => e.type === 'DEBIT');
    if (debits.length !== 1) {
      mismatches.push(`delivery ${deliveryId}: ${debits.length} DEBIT entries, not 1`);
      continue;
    }
    const debitKobo = -nairaToKobo(debits[0].amount);
    if (debitKobo !== paidKobo) {
      mismatches.push(
        `delivery ${deliveryId}: debited ${naira(debitKobo)}, the 201 says ${naira(paidKobo)}`,
      );
    }
    if (index.has(refundReference(deliveryId))) {
      const refunded = refundedKobo(index, deliveryId);
      if (!noCourier.has(deliveryId)) {
        mismatches.push(`delivery ${deliveryId}: answered 201 but refunded`);
      } else if (refunded !== debitKobo) {
        mismatches.push(
          `delivery ${deliveryId}: no courier found, refunded ${naira(refunded)} of ${naira(debitKobo)}`,
        );
      } else {
        refundedNoCourier++;
        continue;
      }
    }
    keptKobo += debitKobo;
  }

  for (const e of entries) {
    if (e.type !== 'DEBIT' || created.has(e.reference)) continue;
    orphans++;
    const debitKobo = -nairaToKobo(e.amount);
    const refunded = refundedKobo(index, e.reference);
    if (refunded === debitKobo && !delivered.has(e.reference)) continue;
    if (refunded === 0 && delivered.has(e.reference)) {
      keptKobo += debitKobo;
      completed++;
      continue;
    }
    if (refunded === 0) unsettled++;
    mismatches.push(
      `DEBIT ${e.reference} (${e.amount}) of no 201: refunded ${naira(refunded)}, ${delivered.has(e.reference) ? 'and' : 'not'} a delivery`,
    );
  }

  if (balanceKobo !== creditedKobo - keptKobo) {
    mismatches.push(
      `balance ${naira(balanceKobo)}, expected ${naira(creditedKobo)} credited − ${naira(keptKobo)} kept = ${naira(creditedKobo - keptKobo)}`,
    );
  }
  return { mismatches, orphans, completed, unsettled, refundedNoCourier };
}
