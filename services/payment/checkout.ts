import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { turnName } from '../../libs/ids';
import {
  checkoutRefundReference,
  type CheckoutPurpose,
  type CheckoutStatus,
  type PaymentFailure,
  type PaymentOutcome,
} from '../../libs/contracts/payment';

/**
 * The pure rules of hosted checkouts (docs/payments.md, "Checkout"): references, expiry,
 * which outcome a session ends with, the provider's signature and verification.
 */

/** The outcomes a session can end with; PENDING is the absence of one. */
export type DecidedStatus = Exclude<CheckoutStatus, 'PENDING'>;

/**
 * What decided an outcome, recorded with it: the payer on the sandbox's page, the provider's
 * verified webhook, or the sweep (an expiry, or a payment it verified at the provider).
 */
export type OutcomeSource = 'sandbox' | 'paystack' | 'sweep';

/** Random bytes of a reference: 160 bits, far beyond guessing. */
const REFERENCE_BYTES = 20;

/**
 * A new checkout reference: `ck-` and 40 hex digits. It is the capability of the sandbox page,
 * so it is random (never derived from anything an outsider knows), and it uses only what
 * Paystack accepts in a reference (letters, digits, `-`, `.`, `=`) and `ledgerReference()`
 * allows.
 */
export function newCheckoutReference(): string {
  return `ck-${randomBytes(REFERENCE_BYTES).toString('hex')}`;
}

/**
 * Attempts to open a checkout at the provider, at most. A provider that answered too late may
 * have opened the transaction all the same, and refuses its reference ever after ("Duplicate
 * Transaction Reference"): so each attempt has a reference of its own, and an attempt whose
 * answer was lost is never made again.
 */
export const OPEN_ATTEMPTS = 10;

/**
 * How long past the provider's timeout an attempt's claim stands before the next attempt may
 * start: its call was given up at the timeout, so by then it has recorded its answer or failed
 * (or its replica died). The margin covers the writes after the call.
 */
export const ATTEMPT_GRACE_MS = 5_000;

/**
 * The provider's reference of attempt `n` to open a checkout: the checkout's own for the first
 * (as every checkout opened before attempts existed has it), then `<reference>.<n>`, which
 * Paystack accepts (`.` is among its characters) and no checkout reference holds.
 */
export function attemptReference(reference: string, attempt: number): string {
  return attempt === 0 ? reference : `${reference}.${attempt}`;
}

/** The checkout a provider's reference belongs to: the reference less its attempt number. */
export function checkoutOfAttempt(providerReference: string): string {
  const numbered = /^(.+)\.([1-9][0-9]*)$/.exec(providerReference);
  return numbered && Number(numbered[2]) < OPEN_ATTEMPTS ? numbered[1] : providerReference;
}

/** What became of an attempt to open a checkout, as its claim records it. */
export interface AttemptFacts {
  startedAt: Date;
  /** Set when its call failed: its reference is spent, the next attempt may start at once. */
  failedAt?: Date | null;
}

/**
 * Whether the next attempt may start after `attempt`, or in how many ms: at once after a
 * failure, else once the attempt's call and writes must be over (`ATTEMPT_GRACE_MS` past the
 * provider's timeout).
 */
export function nextAttemptWait(attempt: AttemptFacts, timeoutMs: number, now: Date): number {
  if (attempt.failedAt) return 0;
  const over = attempt.startedAt.getTime() + timeoutMs + ATTEMPT_GRACE_MS;
  return Math.max(0, over - now.getTime());
}

/**
 * The name of a send of a checkout's outcome event, the `_id` that claims it. The first send's
 * is the reference, then `<reference>~<n>` for the n-th taking over from a claimant that died
 * (`sendClaimState`); a resend of the outbox entry due at `dueAt` is `<reference>@<dueAt>`,
 * the same for every sweep that read the entry at that time.
 */
export function sendName(reference: string, turn: number | Date): string {
  if (turn instanceof Date) return `${reference}@${turn.toISOString()}`;
  return turnName(reference, turn);
}

/**
 * The name of the claim of late check `check` of a checkout: `<reference>#<check>` (then
 * `~<turn>` for a replica taking over from one that stopped while it held the claim).
 */
export const lateCheckName = (reference: string, check: number) => `${reference}#${check}`;

/** A claim of a first send, as the store records it. */
export interface SendClaimFacts {
  claimedAt: Date;
  /** Set once its event is in the outbox. */
  sentAt?: Date | null;
}

/**
 * What a caller finds when another holds a first send's claim: `sent` (the outbox has the
 * event), `busy` (its claimant may still be at it), or `stale`: no sent mark `leaseMs` after
 * the claim, so its claimant died between its claim and its mark, and the next turn may claim.
 */
export function sendClaimState(
  claim: SendClaimFacts,
  leaseMs: number,
  now: Date,
): 'sent' | 'busy' | 'stale' {
  if (claim.sentAt) return 'sent';
  return claim.claimedAt.getTime() + leaseMs > now.getTime() ? 'busy' : 'stale';
}

/** The ledger reference of the credit a paid wallet-funding checkout makes: once per checkout. */
export const fundingCreditReference = (reference: string) => `checkout:${reference}`;

/**
 * The reference a checkout's payment is credited under when it is paid after the checkout
 * ended: a funding's, as a paid funding's; a delivery's to the merchant, as order credits money
 * paid for a delivery no longer waiting for it (decision 108).
 */
export function lateCreditReference(session: {
  _id: string;
  purpose: { kind: CheckoutPurpose['kind'] };
}): string {
  return session.purpose.kind === 'WALLET_FUNDING'
    ? fundingCreditReference(session._id)
    : checkoutRefundReference(session._id);
}

/** What a session holds that the rules read. */
export interface SessionFacts {
  reference: string;
  userId: string;
  amountKobo: number;
  currency: string;
  purpose: CheckoutPurpose;
  expiresAt: Date;
}

/** A decided outcome, as recorded once per reference. */
export interface OutcomeFacts {
  status: DecidedStatus;
  decidedAt: Date;
}

export function expiresAt(createdAt: Date, ttlMs: number): Date {
  return new Date(createdAt.getTime() + ttlMs);
}

export function isExpired(session: Pick<SessionFacts, 'expiresAt'>, now: Date): boolean {
  return now.getTime() >= session.expiresAt.getTime();
}

/** A session's state: its outcome once decided, else EXPIRED past its time, else PENDING. */
export function statusOf(
  session: Pick<SessionFacts, 'expiresAt'>,
  outcome: Pick<OutcomeFacts, 'status'> | null,
  now: Date,
): CheckoutStatus {
  if (outcome) return outcome.status;
  return isExpired(session, now) ? 'EXPIRED' : 'PENDING';
}

/**
 * The outcome an attempt to decide a session claims: a payer's answer on the sandbox's page
 * (Pay, Decline) past the session's time claims EXPIRED instead, so that a late click cannot
 * pay a session the sweep is about to expire. A payment the provider verified claims PAID
 * whatever the time: the payer's money was taken, and only a session not yet decided is
 * claimed (one expired already stays so, its money to be refunded at the provider). The claim
 * itself (an insert) decides between racing attempts.
 */
export function claimFor(
  wanted: DecidedStatus,
  source: OutcomeSource,
  session: Pick<SessionFacts, 'expiresAt'>,
  now: Date,
): DecidedStatus {
  const payersLateAnswer = source === 'sandbox' && wanted !== 'EXPIRED';
  return payersLateAnswer && isExpired(session, now) ? 'EXPIRED' : wanted;
}

/** The event of an outcome and its payload. */
export type OutcomeEvent =
  | { name: 'payment.succeeded'; payload: PaymentOutcome }
  | { name: 'payment.failed'; payload: PaymentFailure };

export function outcomeEvent(session: SessionFacts, outcome: OutcomeFacts): OutcomeEvent {
  const payload: PaymentOutcome = {
    reference: session.reference,
    purpose: session.purpose,
    userId: session.userId,
    amountKobo: session.amountKobo,
    decidedAt: outcome.decidedAt.toISOString(),
  };
  if (outcome.status === 'PAID') return { name: 'payment.succeeded', payload };
  return { name: 'payment.failed', payload: { ...payload, reason: outcome.status } };
}

/**
 * Whether `signature` (the `x-paystack-signature` header) is the hex HMAC-SHA512 of the raw
 * body under the secret. Compared in constant time; a header of another length, or none, is
 * simply false. Whole bytes only: Buffer.from drops a trailing odd hex digit, which would
 * let the signature with one digit more pass.
 */
export function validSignature(
  rawBody: Buffer,
  signature: string | undefined,
  secret: string,
): boolean {
  if (typeof signature !== 'string' || !/^(?:[0-9a-f]{2})+$/i.test(signature)) return false;
  const expected = createHmac('sha512', secret).update(rawBody).digest();
  const given = Buffer.from(signature, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** A Paystack id as kept: a number's digits, or letters, digits, `_`, `.`, `=` and `-`. */
export const PROVIDER_ID_PATTERN = /^[A-Za-z0-9_.=-]{1,100}$/;

/** A Paystack id (a refund's, a transaction's): a number, or a string of those characters. */
export function providerId(value: unknown): string | undefined {
  const id = typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : value;
  return typeof id === 'string' && PROVIDER_ID_PATTERN.test(id) ? id : undefined;
}

/** A Paystack amount in kobo: a whole number, which some of its answers write as a string. */
export function providerKobo(value: unknown): number | undefined {
  const amount = typeof value === 'string' && /^[0-9]{1,15}$/.test(value) ? Number(value) : value;
  return typeof amount === 'number' && Number.isSafeInteger(amount) && amount > 0
    ? amount
    : undefined;
}

export interface VerifiedTransaction {
  /** `success`, `failed`, `abandoned`, ... as the provider spells it. */
  status: string;
  amountKobo: number;
  currency: string;
}

/** Why a verified transaction does not pay the session, or null when it does. */
export function verificationMismatch(
  session: Pick<SessionFacts, 'amountKobo' | 'currency'>,
  verified: VerifiedTransaction,
): string | null {
  if (verified.status !== 'success') return `the provider reports it ${verified.status}`;
  if (verified.currency !== session.currency) {
    return `the provider reports ${verified.currency}, the checkout is in ${session.currency}`;
  }
  if (verified.amountKobo !== session.amountKobo) {
    return `the provider reports ${verified.amountKobo} kobo, the checkout is for ${session.amountKobo}`;
  }
  return null;
}

/**
 * The provider's statuses of a charge still under way: the payer is at an OTP or 3-D Secure
 * step, or a bank transfer has not settled. A checkout past its time is not expired on these.
 */
export const STILL_PAYING: ReadonlySet<string> = new Set([
  'ongoing',
  'pending',
  'processing',
  'queued',
]);

/**
 * How long past its time a checkout whose charge is still under way at the provider is
 * waited for, then expired all the same (a transfer that never settles).
 */
export const STILL_PAYING_GRACE_MS = 24 * 3_600_000;

/** What the expiry sweep does with a checkout past its time, given the provider's word. */
export type ExpiryVerdict =
  { pay: true } | { expire: true; uncredited?: string } | { recheckAt: Date };

/**
 * Paid when the provider verified the exact charge; looked at again (within
 * `STILL_PAYING_GRACE_MS` of its time, every `recheckMs`) while the charge is still under way;
 * expired otherwise: no transaction, or one failed, abandoned or reversed, or one that took
 * another amount or currency (`uncredited` says how: an operator refunds it).
 */
export function expiryVerdict(
  session: Pick<SessionFacts, 'amountKobo' | 'currency' | 'expiresAt'>,
  verified: VerifiedTransaction | null,
  now: Date,
  recheckMs: number,
): ExpiryVerdict {
  const mismatch = verified && verificationMismatch(session, verified);
  if (verified && mismatch === null) return { pay: true };
  const waiting = now.getTime() < session.expiresAt.getTime() + STILL_PAYING_GRACE_MS;
  if (verified && STILL_PAYING.has(verified.status) && waiting) {
    return { recheckAt: new Date(now.getTime() + recheckMs) };
  }
  return verified?.status === 'success' && mismatch
    ? { expire: true, uncredited: mismatch }
    : { expire: true };
}
