import type { Logger } from 'moleculer';
import type { Config } from '../../libs/config';
import { forEachAtOnce } from '../../libs/at-once';
import { backoffMs } from '../../libs/backoff';
import { serviceUnavailable } from '../../libs/errors';
import { holds, RELEASE_MARGIN_MS, type Lease } from '../../libs/mongo';
import { checkoutOfAttempt } from './checkout';
import type { CheckoutProvider } from './checkout-providers';
import type { CheckoutStore, PayerRefundRecord, SessionRecord } from './checkout-store';
import { keptReason, recordUncreditedPayment } from './uncredited';

export interface PayerRefundDeps {
  config: Pick<Config['payment'], 'paystack' | 'sweepIntervalMs'>;
  store: CheckoutStore;
  provider: CheckoutProvider;
  logger: () => Pick<Logger, 'info' | 'warn' | 'error'>;
  /**
   * Gives the merchant back what refunds of the checkout at the provider took from them
   * (`Reversals.givenToPayer`, decision 174): asked before each try, while the refund is open,
   * so that a caller stopping after the claim leaves it to the sweep.
   */
  givenToPayer: (session: SessionRecord) => Promise<void>;
}

/** Refunds one sweep asks the provider for at once. */
const REFUNDS_AT_ONCE = 10;

/**
 * The wait before the try after `tries` that could not tell: doubling from the sweep's
 * interval, to an hour at most.
 */
export const nextPayerRefundWaitMs = (tries: number, sweepIntervalMs: number): number =>
  backoffMs(tries, { baseMs: sweepIntervalMs, maxMs: 60 * 60_000 });

/**
 * Money a payer who is not the merchant paid for what no longer uses it (a delivery's
 * recipient, who has no wallet with us), given back to them at the provider (decision 168):
 * claimed once per checkout by an insert, asked for in one caller's turn at a time, and asked
 * for again by the sweep until the provider queues it or refuses it. A refund the provider
 * refuses (or fails later) is listed with the uncredited payments, for an operator to refund
 * by hand: nothing is credited to anyone meanwhile.
 */
export class PayerRefunds {
  constructor(private readonly deps: PayerRefundDeps) {}

  /**
   * Long enough for a try's calls to the provider (a look for a standing refund, its
   * verification, the refund), the writes between them, and the release margin.
   */
  private get turnMs(): number {
    return 3 * this.deps.config.paystack.timeoutMs + RELEASE_MARGIN_MS + 10_000;
  }

  /**
   * Whether the turn holds long enough for one more call to the provider and what follows it:
   * a refund asked past the turn could be asked beside the next holder's.
   */
  private holdsForACall(turn: Lease): boolean {
    return holds(turn, Date.now() + this.deps.config.paystack.timeoutMs + 5_000);
  }

  /**
   * Claims the refund of `session`'s payment through `providerReference`, then asks for it
   * unless another caller is at it. Resolves once claimed: a try that fails is the sweep's.
   */
  async request(session: SessionRecord, providerReference: string, note: string): Promise<void> {
    const record = await this.deps.store.claimPayerRefund({
      _id: session._id,
      providerReference,
      userId: session.userId,
      amountKobo: session.amountKobo,
      currency: session.currency,
      note,
      requestedAt: new Date(),
      state: 'OPEN',
      why: null,
      settledAt: null,
      tries: 0,
    });
    await this.inTurn(session).catch((err: unknown) =>
      this.deps.logger().warn('refund to a payer not asked for yet; the sweep retries', {
        reference: record._id,
        err,
      }),
    );
  }

  /**
   * Refunds due a try, a few at once (each may wait on the provider), each on its own, so
   * that one failing holds up no other.
   */
  async sweep(limit: number): Promise<void> {
    const { store, logger } = this.deps;
    const due = await store.duePayerRefunds(new Date(), limit);
    await forEachAtOnce(due, REFUNDS_AT_ONCE, async ({ _id: reference, nextTryAt }) => {
      try {
        const session = await store.session(reference);
        if (await store.payerRefund(reference)) {
          if (session) await this.inTurn(session);
          return;
        }
        // Listed by a claim that stopped before its record (once it surely is not coming):
        // nothing was asked for. One still storing it is left to the next sweep.
        if (Date.now() - nextTryAt.getTime() >= this.turnMs) {
          await store.dropOpenPayerRefund(reference);
        }
      } catch (err) {
        logger().warn('refund to a payer not asked for; the next sweep retries', {
          reference,
          err,
        });
      }
    });
  }

  /**
   * The provider's word that a refund it had queued failed (`refund.failed`): the payer has
   * not been given their money back, and an operator must (listed uncredited). False for a
   * transaction with no refund of ours, or a refund of it that is not the one that stands
   * (one failed before ours was asked again); a refund still being asked for is sent back (503).
   */
  async failed(providerReference: string, refundId: string | null, why: string): Promise<boolean> {
    const { store } = this.deps;
    const record = await store.payerRefund(checkoutOfAttempt(providerReference));
    if (!record || record.providerReference !== providerReference) return false;
    if (record.state === 'FAILED' || record.state === 'REFUSED') return false;
    if (record.state === 'OPEN') {
      throw serviceUnavailable(
        `The refund of ${providerReference} is still being asked for; send this event again later`,
      );
    }
    if (record.refundId && refundId !== record.refundId) return false;
    if (!record.refundId) {
      const standing = await this.standingAtProvider(record);
      // Ours stands, and the failure is another refund's: ours is known by its id from now on.
      // The one reported may be ours all the same, listed as it was a moment before it failed.
      if (standing && standing.id !== refundId) {
        await store.settlePayerRefund(record._id, 'QUEUED', {
          state: 'QUEUED',
          refundId: standing.id,
        });
        return false;
      }
    }
    await this.listForOperator(record, `the provider could not refund it: ${why}`);
    await store.settlePayerRefund(record._id, 'QUEUED', { state: 'FAILED', why: keptReason(why) });
    return true;
  }

  /**
   * The refund of the whole payment standing at the provider, for a refund recorded without
   * its id (the provider answered none, and no look-up fitted the turn): the one reported
   * failed may be another of the transaction's (an earlier try's, an operator's from the
   * dashboard) while ours stands, and listed for an operator it would be refunded twice. Not
   * known (the provider away): the event is sent back (503), for its retry.
   */
  private async standingAtProvider(record: PayerRefundRecord) {
    try {
      return await this.deps.provider.refundOf(record.providerReference, record.amountKobo);
    } catch {
      throw serviceUnavailable(
        `Whether the refund of ${record.providerReference} stands could not be read from the provider; send this event again later`,
      );
    }
  }

  /** One caller's try at a refund; left to another caller while it holds the turn. */
  private async inTurn(session: SessionRecord): Promise<void> {
    const { store, logger } = this.deps;
    const reference = session._id;
    const turn = await store.claimPayerRefundTurn(reference, this.turnMs);
    if (!turn) return;
    try {
      // Read again in the turn: the last holder may have settled it.
      const record = await store.payerRefund(reference);
      if (!record || record.state !== 'OPEN') {
        await store.dropOpenPayerRefund(reference);
        return;
      }
      const attempt = async () => {
        await this.deps.givenToPayer(session);
        await this.ask(record, session.provider, turn);
      };
      await attempt().catch(async (err: unknown) => {
        // Asked again later, each time a little later, however it failed.
        const failures = (await store.payerRefundFailures(reference)) + 1;
        const waitMs = nextPayerRefundWaitMs(failures, this.deps.config.sweepIntervalMs);
        await store.reschedulePayerRefund(reference, failures, new Date(Date.now() + waitMs));
        throw err;
      });
    } finally {
      await store
        .releasePayerRefundTurn(turn)
        .catch((err: unknown) =>
          logger().warn('payer refund turn not given back; it runs out', { reference, err }),
        );
    }
  }

  /**
   * Asks the provider for the refund, once it has looked for one an earlier try may have made
   * (its answer lost, or its holder stopped or past its turn before settling): Paystack's
   * refund is not idempotent, and a transaction whose refund is pending reads paid for days.
   */
  private async ask(record: PayerRefundRecord, provider: string, turn: Lease): Promise<void> {
    const { store } = this.deps;
    const holding = () => holds(turn);
    // The sandbox took no money: there is nothing to give back at any provider.
    if (provider === 'sandbox') {
      await store.settlePayerRefund(record._id, 'OPEN', { state: 'QUEUED' });
      return;
    }
    if (provider !== this.deps.provider.name) {
      throw serviceUnavailable(
        `Checkout ${record._id} was paid through ${provider}, which is not configured (PAYMENT_PROVIDER); its refund waits for it`,
      );
    }
    if (record.tries > 0 && (await this.settledIfStanding(record, holding))) return;
    // Past it, the count's write (the record written whole) could land after the next holder's
    // settle, and put its refund back to OPEN, off every list.
    if (!this.holdsForACall(turn)) return;
    await store.payerRefundAsked(record._id, record.tries + 1);
    if (!this.holdsForACall(turn)) return;
    const answer = await this.deps.provider.refund(record);
    if ('queued' in answer) {
      // Recorded whatever is left of the turn (only an open refund is settled): left unrecorded,
      // the next holder could miss it at the provider and ask again. Recorded by its id, which a
      // `refund.failed` must name: looked up when not answered and the turn still holds for it,
      // and recorded without one otherwise (asking again could refund it twice).
      const lookedUp = answer.id
        ? null
        : this.holdsForACall(turn)
          ? await this.deps.provider
              .refundOf(record.providerReference, record.amountKobo)
              .catch(() => null)
          : null;
      const refundId = answer.id ?? lookedUp?.id ?? null;
      this.queued(record, refundId);
      await store.settlePayerRefund(record._id, 'OPEN', { state: 'QUEUED', refundId });
      return;
    }
    if (!holding()) return;
    // Refused: one made already (an earlier try's, an operator's from the dashboard) stands;
    // anything else is an operator's to settle.
    if (await this.settledIfStanding(record, holding)) return;
    if (!holding()) return;
    await this.listForOperator(record, `the provider refused its refund: ${answer.refused}`);
    await store.settlePayerRefund(record._id, 'OPEN', {
      state: 'REFUSED',
      why: keptReason(answer.refused),
    });
  }

  /**
   * Settles the refund as queued when a refund of its whole amount stands at the provider for
   * its transaction.
   */
  private async settledIfStanding(
    record: PayerRefundRecord,
    holding: () => boolean,
  ): Promise<boolean> {
    const standing = await this.deps.provider.refundOf(record.providerReference, record.amountKobo);
    if (!standing || !holding()) return standing !== null;
    this.queued(record, standing.id);
    await this.deps.store.settlePayerRefund(record._id, 'OPEN', {
      state: 'QUEUED',
      refundId: standing.id,
    });
    return true;
  }

  private queued(record: PayerRefundRecord, refundId: string | null): void {
    this.deps.logger().info('a payment given back to its payer at the provider', {
      reference: record._id,
      providerReference: record.providerReference,
      amountKobo: record.amountKobo,
      refundId,
    });
  }

  private listForOperator(record: PayerRefundRecord, why: string): Promise<void> {
    const { providerReference, _id: checkoutReference, userId } = record;
    return recordUncreditedPayment(
      this.deps,
      { providerReference, checkoutReference, userId },
      why,
    );
  }
}
