import type { EntryType } from '../../libs/contracts/payment';

/**
 * The ledger's arithmetic, pure. A wallet is the chain of its entries, numbered 1, 2, 3, ...:
 * each holds its signed amount and the balance after it, so the balance is the last entry's
 * and the chain can be checked link by link (docs/payments.md).
 */

/** The `_id` of a wallet's entry: two writers that read the same last entry collide on it. */
export const entryId = (walletId: string, sequence: number) => `${walletId}:${sequence}`;

/**
 * A courier's cash account: a chain like a wallet's, named apart from the courier's wallet
 * (whose id is the courier's own). Its balance is below zero by what the courier collected on
 * delivery and has not handed in yet.
 */
export const cashAccountId = (courierId: string) => `cash:${courierId}`;

/** What a cash account's balance says its courier owes: 0 when they owe nothing. */
export const owedKobo = (balanceKobo: number) => Math.max(0, -balanceKobo);

/** Only a cash account may go below zero: a wallet pays with what it holds, a courier owes. */
const mayGoNegative = (accountId: string) => accountId.startsWith(cashAccountId(''));

/** The references of the two postings of a pay-on-delivery delivery: each once, ever. */
export const collectedReference = (deliveryId: string) => `collected:${deliveryId}`;
export const payOnDeliveryReference = (deliveryId: string) => `pod:${deliveryId}`;

/** An operator's credit is posted under `admin:<their reference>`, apart from other kinds. */
export const adminCreditReference = (reference: string) => `admin:${reference}`;

/** An operator's correcting debit, under `admin-debit:<their reference>`, apart from credits. */
export const adminDebitReference = (reference: string) => `admin-debit:${reference}`;

/** An operator's record of cash a courier handed in, apart from other kinds of reference. */
export const cashRemittanceReference = (reference: string) => `remittance:${reference}`;

/** An operator's correction of a courier's cash account (a remittance recorded too high). */
export const cashCorrectionReference = (reference: string) => `cash-correction:${reference}`;

/**
 * The references of the debits that take back what a payment provider gave back to a payer
 * (a refund, or a chargeback lost): part 1, 2, ... of the reversal named `reversalId`, each
 * taking what the wallet held when it was posted.
 */
export const reversalReference = (reversalId: string, part: number) =>
  `reversal:${reversalId}:${part}`;

/**
 * What the next part of a reversal takes: all it still owes, or what the wallet holds when
 * that is less (a wallet never goes below 0; what is left is taken once the wallet holds more).
 */
export function reversalPart(balanceKobo: number, owedKobo: number): number {
  return Math.max(0, Math.min(balanceKobo, owedKobo));
}

/** What an entry changes: a debit takes, a credit and a refund give. */
export function signedAmount(type: EntryType, amountKobo: number): number {
  return type === 'DEBIT' ? -amountKobo : amountKobo;
}

export type NextBalance = { ok: true; balanceKobo: number } | { ok: false };

/**
 * The balance of `accountId` after posting `signedKobo` on `balanceKobo`; refused when it
 * would take a wallet below 0.
 */
export function nextBalance(
  accountId: string,
  balanceKobo: number,
  signedKobo: number,
): NextBalance {
  const after = balanceKobo + signedKobo;
  if (after < 0 && !mayGoNegative(accountId)) return { ok: false };
  if (!Number.isSafeInteger(after)) throw new RangeError(`balance out of range: ${after}`);
  return { ok: true, balanceKobo: after };
}

/** The facts of an entry that reconciliation checks. */
export interface AuditedEntry {
  walletId: string;
  sequence: number;
  amountKobo: number;
  balanceKobo: number;
  reference: string;
}

export const PROBLEM_KINDS = ['GAP', 'DUPLICATE', 'MISMATCH', 'UNMATCHED', 'UNREFUNDED'] as const;
export type ProblemKind = (typeof PROBLEM_KINDS)[number];

export interface LedgerProblem {
  walletId: string;
  kind: ProblemKind;
  sequence: number;
  detail: string;
}

/** A posting of one side of a pay-on-delivery, as the audit pairs it with the other side. */
interface PodSide {
  walletId: string;
  sequence: number;
  amountKobo: number;
}

/** The delivery a reference of `kind` names, or undefined for any other reference. */
function deliveryOf(reference: string, kind: (deliveryId: string) => string): string | undefined {
  const prefix = kind('');
  return reference.startsWith(prefix) ? reference.slice(prefix.length) : undefined;
}

/**
 * Reconciliation, fed one account's entries in order of sequence (an account after another):
 * a missing or repeated sequence is a GAP or DUPLICATE, a reference on two entries a
 * DUPLICATE, and a balance that is not the previous one plus the amount, or a wallet's below
 * zero, a MISMATCH. Once all are fed, `finish` reports every pay-on-delivery credit without the
 * debit of the same amount to a courier's cash account as UNMATCHED: money from nowhere.
 */
export class LedgerAudit {
  readonly problems: LedgerProblem[] = [];
  wallets = 0;
  cashAccounts = 0;
  entries = 0;
  private readonly podCredits = new Map<string, PodSide>();
  private readonly cashDebits = new Map<string, PodSide>();
  private walletId: string | undefined;
  private lastSequence = 0;
  private balanceKobo = 0;
  private readonly references = new Map<string, string>();

  constructor(private readonly maxProblems = 1000) {}

  /** Every problem found, those past `maxProblems` (not kept) included. */
  problemCount = 0;

  private report(problem: LedgerProblem): void {
    this.problemCount += 1;
    if (this.problems.length < this.maxProblems) this.problems.push(problem);
  }

  /** The id of the entry fed first that posted `reference`, if one did. */
  postedAs(reference: string): string | undefined {
    return this.references.get(reference);
  }

  add(entry: AuditedEntry): void {
    if (entry.walletId !== this.walletId) {
      this.walletId = entry.walletId;
      this.lastSequence = 0;
      this.balanceKobo = 0;
      if (mayGoNegative(entry.walletId)) this.cashAccounts++;
      else this.wallets++;
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
    } else if (entry.balanceKobo < 0 && !mayGoNegative(walletId)) {
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
    this.pairSide(entry);
    this.lastSequence = sequence;
    this.balanceKobo = entry.balanceKobo;
  }

  private pairSide(entry: AuditedEntry): void {
    const side = {
      walletId: entry.walletId,
      sequence: entry.sequence,
      amountKobo: entry.amountKobo,
    };
    const credited = deliveryOf(entry.reference, payOnDeliveryReference);
    if (credited !== undefined) this.podCredits.set(credited, side);
    const collected = deliveryOf(entry.reference, collectedReference);
    if (collected !== undefined && mayGoNegative(entry.walletId)) {
      this.cashDebits.set(collected, side);
    }
  }

  /**
   * Pairs the pay-on-delivery credits with their cash debits. A debit whose credit is not
   * posted yet is no problem: the credit is posted after it, and retried until it is.
   */
  finish(): void {
    for (const [deliveryId, credit] of this.podCredits) {
      const debit = this.cashDebits.get(deliveryId);
      if (debit && debit.amountKobo === -credit.amountKobo) continue;
      this.report({
        walletId: credit.walletId,
        kind: 'UNMATCHED',
        sequence: credit.sequence,
        detail: debit
          ? `collected on delivery ${deliveryId}: credited ${credit.amountKobo} kobo, but ${debit.walletId} was debited ${-debit.amountKobo}`
          : `collected on delivery ${deliveryId}: credited ${credit.amountKobo} kobo, but no courier's cash account was debited for it`,
      });
    }
  }
}
