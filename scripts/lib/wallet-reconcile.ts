import { setTimeout as sleep } from 'node:timers/promises';
import { nairaToKobo } from '../../libs/money';
import type { Party } from '../../test/support/deliveries';
import { adminHeaders, request } from '../../test/support/http';
import {
  checkWallet,
  refundedCreated,
  unrefundedOrphans,
  type WalletEntry,
} from './request-ledger';

/**
 * A benchmark's wallet-paid delivery requests held against the ledger through the public
 * API, once the load is over: every 201 has its one debit, every debit of a request shed
 * (503, 504, no answer) was refunded in full or became a delivery, every balance adds up, and
 * `GET /admin/ledger/verify` is clean. bench:request and bench:soak both end with it.
 */

/**
 * Answers of load, not faults: none at all, a service too busy (503), a timeout (504). The
 * request may have been under way: such requests are reconciled, not failed.
 */
export const SHED_STATUSES: ReadonlySet<number> = new Set([0, 503, 504]);

/** deliveryId → who was charged for it and what its 201 said, in kobo. */
export type CreatedDeliveries = ReadonlyMap<string, { merchant: Party; amountKobo: number }>;

export interface LedgerReconciliation {
  mismatches: string[];
  /** DEBITs of no 201. */
  orphans: number;
  /** Of those, the ones whose delivery was created after all. */
  completed: number;
  /** Of those, the ones neither refunded nor delivered yet. */
  unsettled: number;
  /** 201s refunded in full once their search found no courier in its time. */
  refundedNoCourier: number;
}

/** Every entry of a merchant's wallet, through the public API, page by page. */
async function entriesOf(url: string, who: Party): Promise<WalletEntry[]> {
  const entries: WalletEntry[] = [];
  let before = '';
  for (;;) {
    const reply = await request(url, 'GET', `/api/wallet/transactions?limit=100${before}`, {
      headers: { 'api-key': who.key },
    });
    if (reply.status !== 200) throw new Error(`transactions: ${reply.status} ${reply.text}`);
    const page = reply.body.data as WalletEntry[];
    entries.push(...page);
    if (page.length < 100) return entries;
    before = `&before=${page[page.length - 1].sequence}`;
  }
}

async function balanceOf(url: string, who: Party): Promise<number> {
  const reply = await request(url, 'GET', '/api/wallet', { headers: { 'api-key': who.key } });
  if (reply.status !== 200) throw new Error(`wallet: ${reply.status} ${reply.text}`);
  return nairaToKobo(reply.body.data.balance);
}

/** Reads of a wallet tried before its entries and balance are compared however they moved. */
const STILL_READS = 20;

/**
 * A wallet's entries and its balance as of one moment: read again while money moved between
 * the balance read before the entries and the one after (refunds still land after a load, as
 * searches that found no courier end).
 */
async function walletAtRest(
  url: string,
  who: Party,
): Promise<{ entries: WalletEntry[]; balanceKobo: number }> {
  for (let read = 1; ; read++) {
    const before = await balanceOf(url, who);
    const entries = await entriesOf(url, who);
    const after = await balanceOf(url, who);
    if (before === after || read >= STILL_READS) return { entries, balanceKobo: after };
  }
}

/** Those of `deliveryIds` that exist as the merchant reads them, in a status `wanted` takes. */
async function deliveriesWhere(
  url: string,
  merchant: Party,
  deliveryIds: readonly string[],
  wanted: (status: string) => boolean,
): Promise<Set<string>> {
  const found = new Set<string>();
  for (const deliveryId of deliveryIds) {
    const reply = await request(url, 'GET', `/api/deliveries/${deliveryId}`, {
      headers: { 'api-key': merchant.key },
    });
    if (reply.status === 200 && wanted(reply.body.data.status)) found.add(deliveryId);
  }
  return found;
}

/**
 * Every merchant's wallet checked against the answers (checkWallet), the debits of requests
 * shed at most as many as those requests, and the whole ledger verified.
 */
export async function reconcileWallets(
  url: string,
  merchants: readonly Party[],
  created: CreatedDeliveries,
  shed: number,
): Promise<LedgerReconciliation> {
  const mismatches: string[] = [];
  let orphans = 0;
  let completed = 0;
  let unsettled = 0;
  let refundedNoCourier = 0;
  for (const merchant of merchants) {
    const mine = new Map<string, number>();
    for (const [id, c] of created) if (c.merchant === merchant) mine.set(id, c.amountKobo);
    const { entries, balanceKobo } = await walletAtRest(url, merchant);
    const delivered = await deliveriesWhere(
      url,
      merchant,
      unrefundedOrphans(entries, mine),
      () => true,
    );
    const noCourier = await deliveriesWhere(
      url,
      merchant,
      refundedCreated(entries, mine),
      (status) => status === 'NO_COURIER_FOUND',
    );
    const wallet = checkWallet({
      entries,
      created: mine,
      balanceKobo,
      delivered,
      noCourier,
    });
    mismatches.push(...wallet.mismatches.map((m) => `merchant ${merchant.userId}: ${m}`));
    orphans += wallet.orphans;
    completed += wallet.completed;
    unsettled += wallet.unsettled;
    refundedNoCourier += wallet.refundedNoCourier;
  }
  if (orphans > shed) {
    mismatches.push(`${orphans} debits of no 201, but only ${shed} requests were shed`);
  }
  const verify = await request(url, 'GET', '/admin/ledger/verify', { headers: adminHeaders });
  if (verify.status !== 200 || verify.body.data.clean !== true) {
    mismatches.push(`GET /admin/ledger/verify: ${verify.status} ${verify.text.slice(0, 500)}`);
  }
  return { mismatches, orphans, completed, unsettled, refundedNoCourier };
}

/** How long the order service's sweep may take to settle a request shed half-way. */
export interface SweepTiming {
  /** ORDER_STALE_REQUEST_MS the services run with. */
  staleMs: number;
  /** ORDER_SWEEP_INTERVAL_MS the services run with. */
  intervalMs: number;
}

/** The order service's settings that let a reconciliation wait for its sweep briefly. */
export const sweepEnv = (timing: SweepTiming) => ({
  ORDER_STALE_REQUEST_MS: String(timing.staleMs),
  ORDER_SWEEP_INTERVAL_MS: String(timing.intervalMs),
});

/**
 * `reconcileWallets`, again each sweep interval while some debit of a request shed is
 * neither refunded nor a delivery, until the sweep has had time to settle every one.
 */
export async function reconcileWhenSettled(
  url: string,
  merchants: readonly Party[],
  created: CreatedDeliveries,
  shed: number,
  timing: SweepTiming,
): Promise<LedgerReconciliation> {
  const deadline = Date.now() + (shed > 0 ? timing.staleMs + 3 * timing.intervalMs : 0);
  let ledger = await reconcileWallets(url, merchants, created, shed);
  while (ledger.unsettled > 0 && Date.now() < deadline) {
    await sleep(timing.intervalMs);
    ledger = await reconcileWallets(url, merchants, created, shed);
  }
  return ledger;
}

/** One line for the run's report: what the ledger says of the requests. */
export function ledgerSummary(createdCount: number, ledger: LedgerReconciliation): string {
  const refunded = ledger.orphans - ledger.completed - ledger.unsettled;
  const verdict =
    ledger.mismatches.length === 0
      ? 'every 201 has its one debit, balances add up, verify clean'
      : `${ledger.mismatches.length} mismatch(es)`;
  const noCourier =
    ledger.refundedNoCourier > 0
      ? `, ${ledger.refundedNoCourier} of them refunded when no courier was found in time`
      : '';
  return `ledger: ${createdCount} requests answered 201${noCourier}; ${ledger.orphans} debit(s) of requests shed (503, 504, no answer): ${ledger.completed} became deliveries, ${refunded} refunded, ${ledger.unsettled} unsettled; ${verdict}`;
}
