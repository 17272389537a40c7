import fc from 'fast-check';
import {
  LedgerAudit,
  cashAccountId,
  collectedReference,
  entryId,
  nextBalance,
  cashRemittanceReference,
  payOnDeliveryReference,
  reversalPart,
  reversalReference,
  signedAmount,
  type AuditedEntry,
} from '../../../services/payment/ledger';

const WALLET = '0b8f5a4e-1c2d-4e3f-8a9b-0c1d2e3f4a5b';
const OTHER = '7c6d5e4f-3a2b-4c1d-9e8f-7a6b5c4d3e2f';
const COURIER = '3e2f1a0b-9c8d-4e7f-a6b5-c4d3e2f1a0b9';
const CASH = cashAccountId(COURIER);

function chain(walletId: string, amounts: number[]): AuditedEntry[] {
  let balanceKobo = 0;
  return amounts.map((amountKobo, i) => {
    balanceKobo += amountKobo;
    return { walletId, sequence: i + 1, amountKobo, balanceKobo, reference: `${walletId}-${i}` };
  });
}

function audit(entries: AuditedEntry[]) {
  const check = new LedgerAudit();
  for (const entry of entries) check.add(entry);
  check.finish();
  return check;
}

describe('ledger arithmetic', () => {
  it('names an entry after its wallet and sequence', () => {
    expect(entryId(WALLET, 7)).toBe(`${WALLET}:7`);
  });

  it('takes for a debit and gives for a credit or a refund', () => {
    expect(signedAmount('DEBIT', 500)).toBe(-500);
    expect(signedAmount('CREDIT', 500)).toBe(500);
    expect(signedAmount('REFUND', 500)).toBe(500);
  });

  it('refuses a posting that would take the balance below zero, to the kobo', () => {
    expect(nextBalance(WALLET, 1000, -1000)).toEqual({ ok: true, balanceKobo: 0 });
    expect(nextBalance(WALLET, 1000, -1001)).toEqual({ ok: false });
    expect(nextBalance(WALLET, 0, 1)).toEqual({ ok: true, balanceKobo: 1 });
  });

  it('lets a courier’s cash account go below zero, and only it', () => {
    expect(nextBalance(CASH, 0, -500_000)).toEqual({ ok: true, balanceKobo: -500_000 });
    expect(nextBalance(CASH, -500_000, 600_000)).toEqual({ ok: true, balanceKobo: 100_000 });
    // The courier's wallet is named by the courier's id: it is a wallet like any other.
    expect(nextBalance(COURIER, 0, -1)).toEqual({ ok: false });
  });

  it('names each part of a reversal apart', () => {
    expect(reversalReference('1234567', 1)).toBe('reversal:1234567:1');
    expect(reversalReference('1234567', 12)).toBe('reversal:1234567:12');
  });

  it('takes back in parts all a reversal owes and never more than a wallet holds (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000_000 }),
        fc.array(fc.integer({ min: 0, max: 5_000_000 }), { maxLength: 20 }),
        (owedKobo, credits) => {
          let balanceKobo = 0;
          let takenKobo = 0;
          for (const credit of [0, ...credits]) {
            balanceKobo += credit;
            const part = reversalPart(balanceKobo, owedKobo - takenKobo);
            expect(part).toBeGreaterThanOrEqual(0);
            expect(nextBalance(WALLET, balanceKobo, -part).ok).toBe(true);
            balanceKobo -= part;
            takenKobo += part;
            expect(takenKobo).toBeLessThanOrEqual(owedKobo);
          }
          const credited = credits.reduce((sum, c) => sum + c, 0);
          expect(takenKobo).toBe(Math.min(owedKobo, credited));
        },
      ),
    );
    expect(reversalPart(-5, 100)).toBe(0);
  });
});

describe('LedgerAudit', () => {
  it('finds nothing wrong in well-formed chains of several wallets', () => {
    const check = audit([...chain(WALLET, [1000, -300, 200]), ...chain(OTHER, [50])]);
    expect(check.problems).toEqual([]);
    expect(check.wallets).toBe(2);
    expect(check.entries).toBe(4);
  });

  it('reports a missing sequence as a gap', () => {
    const entries = chain(WALLET, [1000, -300, 200]);
    const check = audit([entries[0], entries[2]]);
    expect(check.problems).toContainEqual(
      expect.objectContaining({ kind: 'GAP', sequence: 3, walletId: WALLET }),
    );
  });

  it('reports a sequence written twice and a reference posted twice as duplicates', () => {
    const entries = chain(WALLET, [1000, -300]);
    const twice = audit([entries[0], entries[0]]);
    expect(twice.problems.map((p) => p.kind)).toContain('DUPLICATE');
    const sameReference = audit([entries[0], { ...entries[1], reference: entries[0].reference }]);
    expect(sameReference.problems).toEqual([
      expect.objectContaining({ kind: 'DUPLICATE', sequence: 2 }),
    ]);
  });

  it('reports a balance that is not the previous one plus the amount', () => {
    const entries = chain(WALLET, [1000, -300]);
    const check = audit([entries[0], { ...entries[1], balanceKobo: 800 }]);
    expect(check.problems).toEqual([
      expect.objectContaining({ kind: 'MISMATCH', sequence: 2, walletId: WALLET }),
    ]);
  });

  it('reports a balance below zero even when the arithmetic holds', () => {
    const check = audit(chain(WALLET, [100, -200]));
    expect(check.problems).toEqual([expect.objectContaining({ kind: 'MISMATCH', sequence: 2 })]);
  });

  it('lets a cash account be below zero, and counts it apart from the wallets', () => {
    const check = audit([...chain(CASH, [-500_000, 200_000]), ...chain(WALLET, [10])]);
    expect(check.problems).toEqual([]);
    expect(check.cashAccounts).toBe(1);
    expect(check.wallets).toBe(1);
  });

  it('reports a pay-on-delivery credit without its cash debit, or with another amount, as unmatched', () => {
    const credit = (deliveryId: string, kobo: number): AuditedEntry => ({
      walletId: WALLET,
      sequence: 1,
      amountKobo: kobo,
      balanceKobo: kobo,
      reference: payOnDeliveryReference(deliveryId),
    });
    const collected = (deliveryId: string, kobo: number): AuditedEntry => ({
      walletId: CASH,
      sequence: 1,
      amountKobo: -kobo,
      balanceKobo: -kobo,
      reference: collectedReference(deliveryId),
    });
    expect(audit([collected('d1', 5000), credit('d1', 5000)]).problems).toEqual([]);
    // Collected, not credited yet: the credit follows and is retried until posted.
    expect(audit([collected('d1', 5000)]).problems).toEqual([]);
    expect(audit([credit('d1', 5000)]).problems).toEqual([
      expect.objectContaining({ kind: 'UNMATCHED', walletId: WALLET, sequence: 1 }),
    ]);
    expect(audit([collected('d1', 4000), credit('d1', 5000)]).problems).toEqual([
      expect.objectContaining({ kind: 'UNMATCHED', detail: expect.stringMatching(/debited 4000/) }),
    ]);
    // A "collected" reference on a wallet is not a courier's debt.
    const onWallet = {
      ...collected('d1', 5000),
      walletId: OTHER,
      amountKobo: 5000,
      balanceKobo: 5000,
    };
    expect(audit([onWallet, credit('d1', 5000)]).problems.map((p) => p.kind)).toEqual([
      'UNMATCHED',
    ]);
  });

  it('keeps at most the number of problems it was given', () => {
    const entries = chain(WALLET, [1, 1, 1, 1, 1]).map((e) => ({ ...e, balanceKobo: 99 }));
    const check = new LedgerAudit(2);
    for (const entry of entries) check.add(entry);
    expect(check.problems).toHaveLength(2);
  });
});

const operations = fc.array(
  fc.oneof(
    fc.record({ kind: fc.constant('credit' as const), kobo: fc.integer({ min: 1, max: 100_000 }) }),
    fc.record({ kind: fc.constant('debit' as const), kobo: fc.integer({ min: 1, max: 100_000 }) }),
    fc.record({
      kind: fc.constant('refund' as const),
      debit: fc.nat(40),
    }),
  ),
  { maxLength: 60 },
);

describe('a wallet under random credits, debits and refunds (property)', () => {
  it('never goes below zero and always equals the sum of its entries', () => {
    fc.assert(
      fc.property(operations, (ops) => {
        const entries: AuditedEntry[] = [];
        const debits: number[] = [];
        const refunded = new Set<number>();
        let balance = 0;
        const post = (signed: number, reference: string) => {
          const next = nextBalance(WALLET, balance, signed);
          if (!next.ok) return false;
          balance = next.balanceKobo;
          entries.push({
            walletId: WALLET,
            sequence: entries.length + 1,
            amountKobo: signed,
            balanceKobo: balance,
            reference,
          });
          return true;
        };
        for (const [i, op] of ops.entries()) {
          if (op.kind === 'credit') post(signedAmount('CREDIT', op.kobo), `c${i}`);
          if (op.kind === 'debit' && post(signedAmount('DEBIT', op.kobo), `d${i}`)) {
            debits.push(op.kobo);
          }
          if (op.kind === 'refund' && debits.length > 0) {
            const which = op.debit % debits.length;
            if (refunded.has(which)) continue;
            refunded.add(which);
            post(signedAmount('REFUND', debits[which]), `r${which}`);
          }
          expect(balance).toBeGreaterThanOrEqual(0);
          expect(balance).toBe(entries.reduce((sum, e) => sum + e.amountKobo, 0));
        }
        expect(audit(entries).problems).toEqual([]);
      }),
    );
  });
});

/**
 * Pay-on-delivery settled as the payment service does it (the cash debit, then the credit, each
 * once per reference), with crashes between the two and retries in any order, and remittances
 * of any amount: a model of the ledger's postings on the pure functions.
 */
const podOperations = fc.array(
  fc.oneof(
    fc.record({
      kind: fc.constant('deliver' as const),
      kobo: fc.integer({ min: 1, max: 1_000_000 }),
      crashAfterDebit: fc.boolean(),
    }),
    fc.record({ kind: fc.constant('retry' as const), which: fc.nat(30) }),
    fc.record({
      kind: fc.constant('remit' as const),
      kobo: fc.integer({ min: 1, max: 1_000_000 }),
    }),
  ),
  { maxLength: 60 },
);

describe('a courier’s cash account under deliveries, crashes, retries and remittances (property)', () => {
  it('owes what was collected less what was handed in, and every credit has its debit', () => {
    fc.assert(
      fc.property(podOperations, (ops) => {
        const chains = new Map<string, AuditedEntry[]>();
        const posted = new Set<string>();
        const post = (accountId: string, signed: number, reference: string) => {
          if (posted.has(reference)) return;
          const entries = chains.get(accountId) ?? [];
          const next = nextBalance(accountId, entries.at(-1)?.balanceKobo ?? 0, signed);
          if (!next.ok) throw new Error('a credit or a cash debit is never refused');
          entries.push({
            walletId: accountId,
            sequence: entries.length + 1,
            amountKobo: signed,
            balanceKobo: next.balanceKobo,
            reference,
          });
          chains.set(accountId, entries);
          posted.add(reference);
        };
        const deliveries: { id: string; kobo: number }[] = [];
        const settle = (d: { id: string; kobo: number }, crash: boolean) => {
          post(CASH, signedAmount('DEBIT', d.kobo), collectedReference(d.id));
          if (!crash) post(WALLET, signedAmount('CREDIT', d.kobo), payOnDeliveryReference(d.id));
        };
        const ledgerAudit = () => audit([...chains.values()].flat());
        let remitted = 0;
        for (const [i, op] of ops.entries()) {
          if (op.kind === 'deliver') {
            deliveries.push({ id: `d${i}`, kobo: op.kobo });
            settle(deliveries[deliveries.length - 1], op.crashAfterDebit);
          }
          if (op.kind === 'retry' && deliveries.length > 0) {
            settle(deliveries[op.which % deliveries.length], false);
          }
          if (op.kind === 'remit') {
            post(CASH, signedAmount('CREDIT', op.kobo), cashRemittanceReference(`r${i}`));
            remitted += op.kobo;
          }
          expect(ledgerAudit().problems).toEqual([]);
        }
        // The order sweep retries every unsettled delivery until it is.
        for (const d of deliveries) settle(d, false);
        const collected = deliveries.reduce((sum, d) => sum + d.kobo, 0);
        expect(chains.get(CASH)?.at(-1)?.balanceKobo ?? 0).toBe(remitted - collected);
        expect(chains.get(WALLET)?.at(-1)?.balanceKobo ?? 0).toBe(collected);
        expect(ledgerAudit().problems).toEqual([]);
      }),
    );
  });
});
