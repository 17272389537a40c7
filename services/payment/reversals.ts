import type { Logger } from 'moleculer';
import { formatNaira } from '../../libs/money';
import {
  checkoutOfAttempt,
  lateCreditReference,
  providerId,
  STILL_PAYING_GRACE_MS,
  providerKobo,
} from './checkout';
import { holds } from '../../libs/mongo';
import type { CheckoutStore, ReversalRecord, SessionRecord } from './checkout-store';
import type { LedgerStore } from './ledger-store';

/**
 * Money a payment provider gave back to a payer after we credited it (decision 146): a refund
 * made at the provider, or a chargeback the payer won (which the provider pays out as a
 * refund). The wallet the checkout credited gives it back, as far as it holds it and then
 * from what it is credited next.
 */

/** A refund the provider reports processed. */
export interface ProviderRefund {
  /** The provider's id of the refund: one reversal each, however often it is reported. */
  refundId: string;
  /** The transaction refunded: a checkout's reference, or one of its attempts'. */
  providerReference: string;
  amountKobo: number;
  currency: string;
}

/**
 * The refund a Paystack `refund.processed` event's `data` reports, or what it lacks: its `id`
 * (or, without one, its `refund_reference`), the `transaction_reference` it gave back from, the
 * `amount` in kobo and the `currency`.
 */
export function processedRefund(data: unknown): ProviderRefund | { unreadable: string } {
  const fields = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>;
  const refundId =
    fields.id === undefined || fields.id === null
      ? providerId(fields.refund_reference)
      : providerId(fields.id);
  const providerReference = fields.transaction_reference;
  const amountKobo = providerKobo(fields.amount);
  const { currency } = fields;
  if (refundId === undefined) {
    return { unreadable: 'no refund id (`data.id`, or `data.refund_reference`)' };
  }
  if (typeof providerReference !== 'string' || providerReference === '') {
    return { unreadable: 'no `data.transaction_reference`' };
  }
  if (amountKobo === undefined) return { unreadable: '`data.amount` is not a positive amount' };
  if (typeof currency !== 'string') return { unreadable: 'no `data.currency`' };
  return { refundId, providerReference, amountKobo, currency };
}

/** What a Paystack `refund.failed` event's `data` reports: the transaction, our refund's id, why. */
export interface FailedRefund {
  providerReference: string;
  refundId: string | null;
  why: string;
}

/**
 * The failed refund a Paystack `refund.failed` event's `data` reports: its `transaction_reference`
 * (undefined without one: nothing of ours to look up), its `id` and its `reason`.
 */
export function failedRefund(data: unknown): FailedRefund | undefined {
  const fields = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>;
  const providerReference = fields.transaction_reference;
  if (typeof providerReference !== 'string' || providerReference === '') return undefined;
  return {
    providerReference,
    refundId: providerId(fields.id) ?? null,
    why:
      typeof fields.reason === 'string' && fields.reason !== '' ? fields.reason : 'no reason given',
  };
}

/**
 * What operators are told of a Paystack dispute event (`charge.dispute.create`, `.remind`,
 * `.resolve`): no money moves on it. A dispute the payer wins is paid out as a refund, whose
 * `refund.processed` takes it back.
 */
export function disputeNote(data: unknown): Record<string, unknown> {
  const fields = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>;
  const transaction = fields.transaction as Record<string, unknown> | null | undefined;
  return {
    disputeId: providerId(fields.id) ?? null,
    providerReference: typeof transaction?.reference === 'string' ? transaction.reference : null,
    refundAmountKobo: providerKobo(fields.refund_amount) ?? null,
    status: typeof fields.status === 'string' ? fields.status : null,
    resolution: typeof fields.resolution === 'string' ? fields.resolution : null,
  };
}

/** How long the provider sends a webhook again until it is acknowledged (Paystack: 72 hours). */
export const PROVIDER_WEBHOOK_RETRY_MS = 72 * 3_600_000;

/** The least a reversal waits for its credit, and what it waits past the last chance of one. */
const CREDIT_WAIT_MIN_MS = 4 * 86_400_000;
const CREDIT_WAIT_MARGIN_MS = 86_400_000;

/**
 * How long a reversal of a checkout that has credited nothing yet waits for its credit before
 * it is settled as never credited: past the payment's webhook retries, and past the checkout's
 * last late check, which comes up to the checkout's time to live after the payment (a refund
 * follows its payment), then the last of `CHECKOUT_LATE_CHECKS_MS`, then, for a charge still
 * under way, `STILL_PAYING_GRACE_MS`; a day more, and 4 days at least. A fixed 4 days let a
 * late check configured later credit a payment whose refund was settled as never credited, and
 * the refunded money stayed in the wallet.
 */
export function reversalCreditWaitMs(config: {
  checkoutTtlMs: number;
  lateChecksMs: readonly number[];
}): number {
  const lastCheck =
    config.checkoutTtlMs + Math.max(0, ...config.lateChecksMs) + STILL_PAYING_GRACE_MS;
  return Math.max(
    CREDIT_WAIT_MIN_MS,
    Math.max(PROVIDER_WEBHOOK_RETRY_MS, lastCheck) + CREDIT_WAIT_MARGIN_MS,
  );
}

export interface ReversalsDeps {
  store: CheckoutStore;
  ledger: LedgerStore;
  logger: () => Pick<Logger, 'info' | 'warn' | 'error'>;
  /**
   * How soon a reversal not settled is looked at again (PAYMENT_SWEEP_INTERVAL_MS): what a
   * wallet is credited is taken by the next sweep, before much of it can be spent.
   */
  recheckMs: number;
  /** `reversalCreditWaitMs` of the payment configuration. */
  creditWaitMs: number;
}

/**
 * How long a replica's turn at a reversal keeps the others from it: far longer than one call
 * takes (a few reads and writes by `_id`), so that only a replica that stopped is taken over.
 */
export const REVERSAL_TURN_MS = 60_000;

/** How long a listing without its record waits for it before it is dropped as never coming. */
const ORPHAN_LISTING_MS = 5 * 60_000;

export class Reversals {
  constructor(private readonly deps: ReversalsDeps) {}

  /**
   * A `refund.processed` of the provider's webhook (signed), as `received` takes it. One that
   * cannot be read is acknowledged (sent again, it would read no better) and logged for an
   * operator to look at.
   */
  async reported(data: unknown): Promise<boolean> {
    const refund = processedRefund(data);
    if ('unreadable' in refund) {
      this.deps
        .logger()
        .error('a refund event of the provider cannot be read; nothing taken back', {
          why: refund.unreadable,
        });
      return false;
    }
    return this.received(refund);
  }

  /**
   * A refund reported by the provider (its webhook, signed): recorded once by its id, then
   * taken back. False for a refund of no checkout of ours, one that does not fit its checkout,
   * and a repeat of one settled.
   */
  async received(refund: ProviderRefund): Promise<boolean> {
    const { store, logger, recheckMs } = this.deps;
    const session = await store.session(checkoutOfAttempt(refund.providerReference));
    // Another integration's on the same account: acknowledged, nothing done.
    if (!session) return false;
    // What no checkout credited is not held to the checkout (an overpayment refunded whole).
    const uncredited = await store.uncreditedPayment(refund.providerReference);
    if (!uncredited && !fitsCheckout(refund, session)) {
      logger().error('a refund at the provider does not fit its checkout; nothing taken back', {
        ...refund,
        checkoutAmountKobo: session.amountKobo,
        checkoutCurrency: session.currency,
      });
      return false;
    }
    // Before its record: a checkout given back to its payer after this reads it (decision 174).
    await store.noteReversalOf(session._id, refund.refundId);
    const record = await store.recordReversal(
      {
        _id: refund.refundId,
        providerReference: refund.providerReference,
        checkoutReference: session._id,
        userId: session.userId,
        amountKobo: refund.amountKobo,
        receivedAt: new Date(),
        credited: null,
        takenKobo: 0,
        parts: 0,
        settledAt: null,
        givenBackKobo: null,
        givenBackAt: null,
      },
      recheckMs,
    );
    if (record.providerReference !== refund.providerReference) {
      logger().error('a refund id the provider reported before, for another transaction; ignored', {
        ...refund,
        recordedFor: record.providerReference,
      });
      return false;
    }
    if (await this.settledForGood(record)) {
      // Listed again by this call: a repeat of one settled.
      await store.rescheduleReversal(record._id, null);
      return false;
    }
    await this.inTurn(record, session);
    return true;
  }

  /** Reversals due another look: each on its own, so that one failing holds up no other. */
  async sweep(limit: number): Promise<void> {
    const { store, logger, recheckMs } = this.deps;
    const now = new Date();
    for (const due of await store.dueReversals(now, limit)) {
      try {
        const record = await store.reversal(due._id);
        // Listed by a call that stopped before its record (once it is surely not coming), or
        // settled since it was read (unless listed again to be given back).
        // A listing made before listings kept when they were made starts its wait now: its next
        // look, moved on by every sweep, would never grow old enough.
        const listedAt =
          due.listedAt ?? (record ? now : await store.noteReversalListedAt(due._id, now));
        if (record ? await this.settledForGood(record) : overdue(listedAt, now)) {
          await store.rescheduleReversal(due._id, null);
          continue;
        }
        if (!record) {
          // Its call may still be storing it: behind the others meanwhile.
          await store.rescheduleReversal(due._id, new Date(Date.now() + recheckMs));
          continue;
        }
        const session = await store.session(record.checkoutReference);
        if (!session) throw new Error(`checkout ${record.checkoutReference} is not stored`);
        await this.inTurn(record, session);
      } catch (err) {
        logger().warn('reversal not settled; the next sweep retries', { refundId: due._id, err });
        // Behind the others, so that one failing again and again holds up none of them.
        await store
          .rescheduleReversal(due._id, new Date(Date.now() + recheckMs))
          .catch(() => undefined);
      }
    }
  }

  /**
   * Settles a reversal in this replica's turn at it: one caller at a time takes a reversal
   * back (`LedgerStore.takeBack` gives up a part the wallet no longer covers, which must not be
   * being written by another). While another replica holds the turn, it is left to it.
   */
  private async inTurn(record: ReversalRecord, session: SessionRecord): Promise<void> {
    const { store, logger } = this.deps;
    const turn = await store.claimReversalTurn(record._id, REVERSAL_TURN_MS);
    if (!turn) return;
    try {
      // Read again in the turn: the last holder may have counted more, or settled it.
      const current = (await store.reversal(record._id)) ?? record;
      const holding = () => holds(turn);
      if (await store.payerRefund(session._id)) {
        await this.giveBack(current, session, holding);
      } else if (!current.settledAt) {
        await this.settle(current, session, holding);
      }
    } finally {
      // A turn not given back is taken over once it runs out: nothing is lost but a minute.
      await store
        .releaseReversalTurn(turn)
        .catch((err: unknown) =>
          logger().warn('reversal turn not given back; it runs out', { refundId: record._id, err }),
        );
    }
  }

  /**
   * Takes back what the checkout credited, as far as its wallet holds it; looked at again
   * while anything is owed, or while the credit may still come.
   */
  private async settle(
    record: ReversalRecord,
    session: SessionRecord,
    /** Whether this caller still holds its turn: past it, it writes nothing more. */
    holding: () => boolean,
  ): Promise<void> {
    const { store, ledger, logger } = this.deps;
    const now = new Date();
    const later = new Date(now.getTime() + this.deps.recheckMs);
    const counted = { takenKobo: record.takenKobo, parts: record.parts };
    let credited = await this.credited(record, session);
    if (!holding()) return;
    if (credited === null) {
      const waited = now.getTime() - record.receivedAt.getTime() >= this.deps.creditWaitMs;
      if (!waited) {
        await store.reversalProgress(record._id, { credited, ...counted, nextCheckAt: later });
        return;
      }
      credited = false;
    }
    if (!credited) {
      logger().info('a refund at the provider of money never credited; nothing taken back', {
        refundId: record._id,
        providerReference: record.providerReference,
      });
      await store.reversalProgress(record._id, { credited, ...counted, nextCheckAt: null });
      return;
    }
    const taken = await ledger.takeBack(
      record.userId,
      {
        id: record._id,
        amountKobo: record.amountKobo,
        description: `Taken back: the payment provider gave NGN ${formatNaira(record.amountKobo)} of checkout ${session._id} back to its payer (refund ${record._id})`,
      },
      { from: counted, holding },
    );
    // Run out mid-way: another caller may be at it now, and knows better.
    if (!holding()) return;
    const owedKobo = record.amountKobo - taken.takenKobo;
    if (owedKobo > 0) {
      logger().warn('a refund at the provider is not all taken back: the wallet holds less', {
        refundId: record._id,
        userId: record.userId,
        takenKobo: taken.takenKobo,
        owedKobo,
      });
    }
    await store.reversalProgress(record._id, {
      credited,
      ...taken,
      nextCheckAt: owedKobo > 0 ? later : null,
    });
    // Its checkout given back to its payer while it was taken: the listing that asked for it
    // to be given back came before this settle took it off the sweep's list.
    if (owedKobo <= 0 && (await store.payerRefund(session._id))) {
      await this.giveBack({ ...record, credited, ...taken }, session, holding);
    }
  }

  /**
   * A reversal of a checkout whose payment we gave back to its payer (decision 168: its
   * delivery was called off): the provider gives a transaction back once, so the payer is made
   * whole by this refund or by ours, and the wallet owes nothing for a delivery it no longer
   * has (decision 174). What was taken is given back; a reversal that took nothing of a
   * checkout that credited nothing is settled as never credited, as before.
   */
  private async giveBack(
    record: ReversalRecord,
    session: SessionRecord,
    holding: () => boolean,
  ): Promise<void> {
    const { store, ledger, logger } = this.deps;
    if (record.givenBackKobo != null) {
      // Given back by a caller that stopped before taking it off the list.
      await store.reversalGivenBack(record, record.givenBackKobo);
      return;
    }
    // Settled as never credited: it took nothing (its payer's refund of ours, say).
    if (record.settledAt && record.credited === false) {
      await store.rescheduleReversal(record._id, null);
      return;
    }
    const givenBackKobo = await ledger.giveBackReversal(
      record.userId,
      {
        id: record._id,
        description: `Given back: checkout ${session._id}'s payment was refunded to its payer, so refund ${record._id} at the payment provider is not taken from this wallet`,
      },
      holding,
    );
    if (givenBackKobo === null || !holding()) return;
    if (givenBackKobo === 0 && record.credited !== true) {
      const counted = { takenKobo: record.takenKobo, parts: record.parts };
      await store.reversalProgress(record._id, { credited: false, ...counted, nextCheckAt: null });
      return;
    }
    logger().info('a reversal given back: its checkout’s payment went back to its payer', {
      refundId: record._id,
      userId: record.userId,
      givenBackKobo,
    });
    await store.reversalGivenBack(record, givenBackKobo);
  }

  /**
   * A checkout's payment given back to its payer (decision 168): its reversals are looked at
   * again, settled or not, to give back what they took. All are listed first, so that the
   * sweep gives back what this call does not (it stops, or one of them fails).
   */
  async givenToPayer(session: SessionRecord): Promise<void> {
    const { store, logger } = this.deps;
    const refundIds = await store.reversalsOf(session._id);
    for (const refundId of refundIds) await store.rescheduleReversal(refundId, new Date());
    for (const refundId of refundIds) {
      try {
        const record = await store.reversal(refundId);
        if (record?.checkoutReference === session._id) await this.inTurn(record, session);
      } catch (err) {
        logger().warn('reversal not given back yet; the sweep retries', { refundId, err });
      }
    }
  }

  /**
   * Whether a reversal is settled with nothing left to do: not one that took from its wallet
   * and is owed back since its checkout went back to its payer (decision 174).
   */
  private async settledForGood(record: ReversalRecord): Promise<boolean> {
    if (!record.settledAt) return false;
    if (record.givenBackKobo != null || record.credited !== true) return true;
    return (await this.deps.store.payerRefund(record.checkoutReference)) === null;
  }

  /**
   * Whether the checkout credited the money of the refunded transaction: true once it was paid
   * with it (whether the payment went to its wallet, or to its delivery, for which its user,
   * the merchant, answers), false when it never can be (a transaction no checkout credits),
   * null while it may still be (the checkout not decided yet, or a late payment still to come).
   */
  private async credited(record: ReversalRecord, session: SessionRecord): Promise<boolean | null> {
    const { store, ledger } = this.deps;
    if (await store.uncreditedPayment(record.providerReference)) return false;
    // The transaction handed out is the only one a payer could pay: a checkout opened before
    // attempts were recorded handed out its own reference.
    const opened = await store.opened(session._id);
    if ((opened?.providerReference ?? session._id) !== record.providerReference) return false;
    if ((await store.outcome(session._id))?.status === 'PAID') return true;
    return (await ledger.isPosted(lateCreditReference(session))) ? true : null;
  }
}

/** Whether a listing due at `since` has waited for its record longer than any call lasts. */
const overdue = (since: Date, now: Date) =>
  now.getTime() - new Date(since).getTime() >= ORPHAN_LISTING_MS;

/** Whether a refund could be of the checkout's payment: its currency, and no more than it. */
function fitsCheckout(refund: ProviderRefund, session: SessionRecord): boolean {
  return refund.currency === session.currency && refund.amountKobo <= session.amountKobo;
}
