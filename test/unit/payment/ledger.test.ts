import fc from 'fast-check';
import {
  LedgerAudit,
  entryId,
  nextBalance,
  refundableKobo,
  signedAmount,
  type AuditedEntry,
} from '../../../services/payment/ledger';

const WALLET = '0b8f5a4e-1c2d-4e3f-8a9b-0c1d2e3f4a5b';
const OTHER = '7c6d5e4f-3a2b-4c1d-9e8f-7a6b5c4d3e2f';

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
    expect(nextBalance(1000, -1000)).toEqual({ ok: true, balanceKobo: 0 });
    expect(nextBalance(1000, -1001)).toEqual({ ok: false });
    expect(nextBalance(0, 1)).toEqual({ ok: true, balanceKobo: 1 });
  });

  it('refunds at most what was debited, all of it by default', () => {
    expect(refundableKobo(5000, undefined)).toBe(5000);
    expect(refundableKobo(5000, 1200)).toBe(1200);
    expect(() => refundableKobo(5000, 5001)).toThrow(/exceeds its debit of 5000 kobo/);
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
      kobo: fc.option(fc.integer({ min: 1, max: 100_000 }), { nil: undefined }),
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
          const next = nextBalance(balance, signed);
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
            if (refunded.has(which) || (op.kobo ?? 0) > debits[which]) continue;
            refunded.add(which);
            post(signedAmount('REFUND', refundableKobo(debits[which], op.kobo)), `r${which}`);
          }
          expect(balance).toBeGreaterThanOrEqual(0);
          expect(balance).toBe(entries.reduce((sum, e) => sum + e.amountKobo, 0));
        }
        expect(audit(entries).problems).toEqual([]);
      }),
    );
  });
});
