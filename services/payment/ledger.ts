import type { EntryType } from '../../libs/contracts/payment';

/**
 * The ledger's arithmetic, pure. A wallet is the chain of its entries, numbered 1, 2, 3, ...:
 * each holds its signed amount and the balance after it, so the balance is the last entry's
 * and the chain can be checked link by link (docs/payments.md).
 */

/** The `_id` of a wallet's entry: two writers that read the same last entry collide on it. */
export const entryId = (walletId: string, sequence: number) => `${walletId}:${sequence}`;

/** What an entry changes: a debit takes, a credit and a refund give. */
export function signedAmount(type: EntryType, amountKobo: number): number {
  return type === 'DEBIT' ? -amountKobo : amountKobo;
}

export type NextBalance = { ok: true; balanceKobo: number } | { ok: false };

/** The balance after posting `signedKobo` on `balanceKobo`; refused when it would go below 0. */
export function nextBalance(balanceKobo: number, signedKobo: number): NextBalance {
  const after = balanceKobo + signedKobo;
  if (after < 0) return { ok: false };
  if (!Number.isSafeInteger(after)) throw new RangeError(`balance out of range: ${after}`);
  return { ok: true, balanceKobo: after };
}

/** A refund gives back at most what its debit took. */
export function refundableKobo(debitedKobo: number, requestedKobo: number | undefined): number {
  const amount = requestedKobo ?? debitedKobo;
  if (amount > debitedKobo) {
    throw new RangeError(`a refund of ${amount} kobo exceeds its debit of ${debitedKobo} kobo`);
  }
  return amount;
}

/** The facts of an entry that reconciliation checks. */
export interface AuditedEntry {
  walletId: string;
  sequence: number;
  amountKobo: number;
  balanceKobo: number;
  reference: string;
}

export const PROBLEM_KINDS = ['GAP', 'DUPLICATE', 'MISMATCH'] as const;
export type ProblemKind = (typeof PROBLEM_KINDS)[number];

export interface LedgerProblem {
  walletId: string;
  kind: ProblemKind;
  sequence: number;
  detail: string;
}

/**
 * Reconciliation, fed one wallet's entries in order of sequence (a wallet after another): a
 * missing or repeated sequence is a GAP or DUPLICATE, a reference on two entries a DUPLICATE,
 * and a balance that is not the previous one plus the amount, or below zero, a MISMATCH.
 */
export class LedgerAudit {
  readonly problems: LedgerProblem[] = [];
  wallets = 0;
  entries = 0;
  private walletId: string | undefined;
  private lastSequence = 0;
  private balanceKobo = 0;
  private readonly references = new Map<string, string>();

  constructor(private readonly maxProblems = 1000) {}

  private report(problem: LedgerProblem): void {
    if (this.problems.length < this.maxProblems) this.problems.push(problem);
  }

  add(entry: AuditedEntry): void {
    if (entry.walletId !== this.walletId) {
      this.walletId = entry.walletId;
      this.lastSequence = 0;
      this.balanceKobo = 0;
      this.wallets++;
    }
    this.entries++;
    const { walletId, sequence } = entry;
    if (sequence === this.lastSequence) {
      this.report({ walletId, kind: 'DUPLICATE', sequence, detail: 'two entries share it' });
    } else if (sequence !== this.lastSequence + 1) {
      this.report({
        walletId,
        kind: 'GAP',
        sequence,
        detail: `follows entry ${this.lastSequence}: entries ${this.lastSequence + 1}..${sequence - 1} are missing`,
      });
    }
    const expected = this.balanceKobo + entry.amountKobo;
    if (entry.balanceKobo !== expected) {
      this.report({
        walletId,
        kind: 'MISMATCH',
        sequence,
        detail: `balance ${entry.balanceKobo} kobo, but the previous ${this.balanceKobo} + ${entry.amountKobo} makes ${expected}`,
      });
    } else if (entry.balanceKobo < 0) {
      this.report({ walletId, kind: 'MISMATCH', sequence, detail: 'the balance is below zero' });
    }
    const holder = this.references.get(entry.reference);
    if (holder !== undefined) {
      this.report({
        walletId,
        kind: 'DUPLICATE',
        sequence,
        detail: `reference ${entry.reference} was already posted as ${holder}`,
      });
    } else {
      this.references.set(entry.reference, entryId(walletId, sequence));
    }
    this.lastSequence = sequence;
    this.balanceKobo = entry.balanceKobo;
  }
}
