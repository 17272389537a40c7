import {
  checkWallet,
  refundedCreated,
  unrefundedOrphans,
  type WalletEntry,
} from '../../../scripts/lib/request-ledger';
import { ledgerSummary } from '../../../scripts/lib/wallet-reconcile';

/**
 * The reconciliation of `npm run bench:request`: one merchant's wallet against the answers to
 * its requests. Every way the ledger and the answers can disagree must be reported, since a
 * report is what fails the run.
 */
const FUNDED: WalletEntry = {
  sequence: 1,
  type: 'CREDIT',
  amount: '100000.00',
  reference: 'bench-m',
};
const debit = (sequence: number, reference: string, amount = '2756.25'): WalletEntry => ({
  sequence,
  type: 'DEBIT',
  amount: `-${amount}`,
  reference,
});
const refund = (sequence: number, reference: string, amount = '2756.25'): WalletEntry => ({
  sequence,
  type: 'REFUND',
  amount,
  reference: `refund:${reference}`,
});
const KOBO = 275_625;
const none = new Set<string>();

describe('bench:request reconciliation of a wallet', () => {
  it('finds nothing when each 201 has its one debit and the balance is credited less the debits', () => {
    const report = checkWallet({
      entries: [FUNDED, debit(2, 'd1'), debit(3, 'd2')],
      created: new Map([
        ['d1', KOBO],
        ['d2', KOBO],
      ]),
      balanceKobo: 10_000_000 - 2 * KOBO,
      delivered: none,
    });
    expect(report).toEqual({
      mismatches: [],
      orphans: 0,
      completed: 0,
      unsettled: 0,
      refundedNoCourier: 0,
    });
  });

  it('reports a 201 without a debit, a debit of another amount, a refunded 201 and a wrong balance', () => {
    const report = checkWallet({
      entries: [FUNDED, debit(2, 'd2', '100.00'), debit(3, 'd3'), refund(4, 'd3')],
      created: new Map([
        ['d1', KOBO],
        ['d2', KOBO],
        ['d3', KOBO],
      ]),
      balanceKobo: 10_000_000,
      delivered: none,
    });
    expect(report.mismatches).toEqual([
      'delivery d1: 0 DEBIT entries, not 1',
      'delivery d2: debited 100.00, the 201 says 2756.25',
      'delivery d3: answered 201 but refunded',
      'balance 100000.00, expected 100000.00 credited − 2856.25 kept = 97143.75',
    ]);
  });

  it('accepts a debit of no 201 refunded in full, or become a delivery, and counts both', () => {
    const entries = [FUNDED, debit(2, 'gone'), refund(3, 'gone'), debit(4, 'late')];
    expect(unrefundedOrphans(entries, new Map())).toEqual(['late']);
    const report = checkWallet({
      entries,
      created: new Map(),
      balanceKobo: 10_000_000 - KOBO,
      delivered: new Set(['late']),
    });
    expect(report).toEqual({
      mismatches: [],
      orphans: 2,
      completed: 1,
      unsettled: 0,
      refundedNoCourier: 0,
    });
  });

  it('accepts a 201 refunded in full once its search found no courier, and only that', () => {
    const entries = [
      FUNDED,
      debit(2, 'timed-out'),
      refund(3, 'timed-out'),
      debit(4, 'short'),
      refund(5, 'short', '1000.00'),
      debit(6, 'carried'),
      refund(7, 'carried'),
      debit(8, 'kept'),
    ];
    const created = new Map(['timed-out', 'short', 'carried', 'kept'].map((id) => [id, KOBO]));
    expect(refundedCreated(entries, created)).toEqual(['timed-out', 'short', 'carried']);
    const report = checkWallet({
      entries,
      created,
      // As the debits the answers account for leave it: only the two deliveries disagree.
      balanceKobo: 10_000_000 - 3 * KOBO,
      delivered: none,
      noCourier: new Set(['timed-out', 'short']),
    });
    expect(report.refundedNoCourier).toBe(1);
    expect(report.mismatches).toEqual([
      'delivery short: no courier found, refunded 1000.00 of 2756.25',
      'delivery carried: answered 201 but refunded',
    ]);
  });

  it('reports a debit of no 201 that is neither refunded nor a delivery as unsettled', () => {
    const report = checkWallet({
      entries: [FUNDED, debit(2, 'lost')],
      created: new Map(),
      balanceKobo: 10_000_000 - KOBO,
      delivered: none,
    });
    expect(report.unsettled).toBe(1);
    expect(report.mismatches[0]).toBe(
      'DEBIT lost (-2756.25) of no 201: refunded 0.00, not a delivery',
    );
  });

  it('reports a debit refunded in part, or refunded and delivered too', () => {
    const report = checkWallet({
      entries: [
        FUNDED,
        debit(2, 'half'),
        refund(3, 'half', '1000.00'),
        debit(4, 'both'),
        refund(5, 'both'),
      ],
      created: new Map(),
      balanceKobo: 10_000_000 - KOBO + 100_000,
      delivered: new Set(['both']),
    });
    expect(report.unsettled).toBe(0);
    expect(report.mismatches).toEqual([
      'DEBIT half (-2756.25) of no 201: refunded 1000.00, not a delivery',
      'DEBIT both (-2756.25) of no 201: refunded 2756.25, and a delivery',
      'balance 98243.75, expected 100000.00 credited − 0.00 kept = 100000.00',
    ]);
  });
});

describe('the ledger line bench:request and bench:soak print', () => {
  it('counts the debits of requests shed by how each was settled', () => {
    const ledger = { mismatches: [], orphans: 108, completed: 100, unsettled: 3 };
    expect(ledgerSummary(279, { ...ledger, refundedNoCourier: 0 })).toBe(
      'ledger: 279 requests answered 201; 108 debit(s) of requests shed (503, 504, no answer): 100 became deliveries, 5 refunded, 3 unsettled; every 201 has its one debit, balances add up, verify clean',
    );
    expect(ledgerSummary(279, { ...ledger, refundedNoCourier: 12 })).toMatch(
      /^ledger: 279 requests answered 201, 12 of them refunded when no courier was found in time; 108/,
    );
  });

  it('says how many mismatches there are instead of the all-clear', () => {
    expect(
      ledgerSummary(2, {
        mismatches: ['a', 'b'],
        orphans: 0,
        completed: 0,
        unsettled: 0,
        refundedNoCourier: 0,
      }),
    ).toMatch(/; 2 mismatch\(es\)$/);
  });
});
