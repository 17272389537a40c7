import { randomUUID } from 'node:crypto';
import type { Logger } from 'moleculer';
import type { Config } from '../../libs/config';
import { broadcast } from '../../libs/contracts';
import type { Broadcaster } from '../../libs/contracts/call';
import {
  CURRENCY,
  checkoutRefundReference,
  closeCheckoutParams,
  debitOfRefund,
  giveBackParams,
  referenceParams,
  startCheckoutParams,
  type CheckoutPayer,
  type CheckoutStart,
  type CheckoutStatus,
  type CheckoutView,
  type GiveBackParams,
  type GivenBack,
  type StartCheckoutParams,
} from '../../libs/contracts/payment';
import {
  badRequest,
  conflict,
  notFound,
  serviceBusy,
  serviceUnavailable,
  unauthorized,
  upstreamFailed,
} from '../../libs/errors';
import { forEachAtOnce } from '../../libs/at-once';
import { nameBasedId } from '../../libs/ids';
import { nairaToKobo } from '../../libs/money';
import { action, implement, requireUser, type ServiceActions } from '../../libs/service';
import {
  OPEN_ATTEMPTS,
  STILL_PAYING,
  attemptReference,
  checkoutOfAttempt,
  claimFor,
  expiresAt,
  expiryVerdict,
  fundingCreditReference,
  lateCreditReference,
  newCheckoutReference,
  nextAttemptWait,
  outcomeEvent,
  sendClaimState,
  sendName,
  statusOf,
  validSignature,
  verificationMismatch,
  type DecidedStatus,
  type OutcomeSource,
  type SessionFacts,
} from './checkout';
import { checkoutPage, checkoutPagePath, redirectPage } from './checkout-pages';
import type { CheckoutProvider, Initialized } from './checkout-providers';
import {
  checkoutStartView,
  fundWalletParams,
  pageParams,
  webhookParams,
  webhookView,
  type FundWalletParams,
  type WebhookParams,
} from './checkout-schemas';
import type {
  CheckoutStore,
  OpenedRecord,
  OutboxRecord,
  OutcomeRecord,
  SessionRecord,
} from './checkout-store';
import type { LedgerStore } from './ledger-store';
import { LateChecks } from './late-checks';
import { PayerRefunds } from './payer-refunds';
import { recordUncreditedPayment } from './uncredited';
import { disputeNote, failedRefund, Reversals, reversalCreditWaitMs } from './reversals';

/** The longest wait between two looks at a checkout whose charge is still under way. */
const STILL_PAYING_RECHECK_MS = 5 * 60_000;

/** Sessions expired and events sent per sweep at most; the rest wait for the next one. */
const SWEEP_BATCH = 100;
/**
 * Expired sessions one sweep asks the provider about at once: a provider answering slowly (up
 * to PAYSTACK_TIMEOUT_MS) holds up a sweep of a hundred for a tenth of that.
 */
const EXPIRY_CHECKS_AT_ONCE = 10;

export const SIGNATURE_HEADER = 'x-paystack-signature';

export interface CheckoutDeps {
  config: Config['payment'];
  store: CheckoutStore;
  ledger: LedgerStore;
  provider: CheckoutProvider;
  broadcaster: () => Broadcaster;
  logger: () => Pick<Logger, 'info' | 'warn' | 'error'>;
}

/**
 * Who reports a payment: the sandbox's page, where no money moves, or the provider's word on
 * one of its transactions, where money was taken.
 */
export type PaymentReport =
  { source: 'sandbox' } | { source: Exclude<OutcomeSource, 'sandbox'>; providerReference: string };

const facts = (session: SessionRecord): SessionFacts => ({
  reference: session._id,
  userId: session.userId,
  amountKobo: session.amountKobo,
  currency: session.currency,
  purpose: session.purpose,
  expiresAt: session.expiresAt,
});

/** The payload of an opened checkout: the integrator's handle is the checkout's reference. */
const startAnswer = (
  reference: string,
  opened: { authorizationUrl: string; accessCode?: string | null },
): CheckoutStart => ({
  status: true,
  message: 'Authorization URL created',
  data: {
    authorization_url: opened.authorizationUrl,
    access_code: opened.accessCode ?? '',
    reference,
  },
});

/**
 * Hosted checkouts (docs/payments.md, "Checkout"). A session's outcome is decided once, by
 * inserting it (the first of pay, decline, a verified webhook or the expiry sweep wins); the
 * outcome's event waits in an outbox, sent again by the sweep until its consumer
 * acknowledges it, so a crash between payment and acknowledgement loses nothing.
 */
export class Checkouts {
  /** Money the provider gave back to payers, taken back from the wallets it credited. */
  private readonly reversals: Reversals;
  /** Money given back to payers who are not the merchant, at the provider. */
  private readonly payerRefunds: PayerRefunds;
  /** Expired checkouts whose provider is asked again whether they were paid after all. */
  private readonly lateChecks: LateChecks;

  constructor(private readonly deps: CheckoutDeps) {
    this.payerRefunds = new PayerRefunds({
      ...deps,
      givenToPayer: (session) => this.reversals.givenToPayer(session),
    });
    this.reversals = new Reversals({
      ...deps,
      recheckMs: deps.config.sweepIntervalMs,
      creditWaitMs: reversalCreditWaitMs(deps.config),
    });
    this.lateChecks = new LateChecks({
      ...deps,
      recheckMs: this.recheckMs,
      pay: (session, providerReference) =>
        this.confirmPayment(session, { source: 'sweep', providerReference }),
      uncredited: (session, providerReference, why) =>
        this.uncredited(session, providerReference, why),
    });
  }

  private get store() {
    return this.deps.store;
  }

  /** Opens a checkout, once per caller's key: the same key answers the same checkout. */
  async start(params: StartCheckoutParams): Promise<CheckoutStart> {
    const { userId, amountKobo, purpose, idempotencyKey } = params;
    const keyId = nameBasedId('checkout', userId, idempotencyKey);
    const reference = await this.store.claimKey(keyId, newCheckoutReference(), {
      amountKobo,
      purpose,
    });
    let session = await this.store.session(reference);
    if (!session) {
      const createdAt = new Date();
      const record: SessionRecord = {
        _id: reference,
        userId,
        amountKobo,
        currency: CURRENCY,
        purpose,
        email: params.email,
        // Unset when the caller names none (an order node of the version before, for whose
        // recipients order names the payer when it gives the money back).
        ...(params.payer ? { payer: params.payer } : {}),
        merchantName: params.merchantName,
        provider: this.deps.provider.name,
        authorizationUrl: null,
        accessCode: null,
        createdAt,
        expiresAt: expiresAt(createdAt, this.deps.config.checkoutTtlMs),
      };
      await this.store.createSession(record);
      session = (await this.store.session(reference)) ?? record;
    } else {
      await this.refuseEnded(session);
    }
    const { authorizationUrl } = session;
    const opened = authorizationUrl
      ? { ...session, authorizationUrl }
      : ((await this.store.opened(reference)) ?? (await this.open(session)));
    // Read again once the transaction is known opened: a sweep that expired the checkout while
    // it was opened may not have seen it opened, and so watches it for no late payment
    // (`expire` reads it again after its claim; one of the two reads sees the other's write).
    await this.refuseEnded(session, 'while the payment provider opened it');
    return startAnswer(reference, opened);
  }

  /**
   * A key's checkout that has ended (expired or declined) is not opened or handed out again:
   * a page paid after its end would never be credited (its money to be refunded by hand).
   */
  private async refuseEnded(session: SessionRecord, when?: string): Promise<void> {
    const outcome = await this.store.outcome(session._id);
    const status = statusOf(session, outcome, new Date());
    if (status === 'EXPIRED' || status === 'DECLINED') {
      throw conflict(
        when
          ? `Checkout ${session._id} ended (${status.toLowerCase()}) ${when}, and its page is not handed out; start a new one, with a new Idempotency-Key if you sent one`
          : `Checkout ${session._id} of this Idempotency-Key has ended (${status.toLowerCase()}); start a new one with a new key`,
      );
    }
  }

  /**
   * Opens the session's transaction at the provider: the first attempt whose reference no
   * call has used, each claimed by an insert (`attemptReference`). A call still running holds
   * its attempt (503 with the seconds to wait); a failed one, or one that cannot be running
   * any more, lets the next attempt start.
   */
  private async open(session: SessionRecord): Promise<OpenedRecord> {
    const { provider, config } = this.deps;
    for (let attempt = 0; attempt < OPEN_ATTEMPTS; attempt++) {
      const providerReference = attemptReference(session._id, attempt);
      const now = new Date();
      const holder = await this.store.claimAttempt({
        _id: providerReference,
        reference: session._id,
        startedAt: now,
        failedAt: null,
      });
      if (holder) {
        const waitMs = nextAttemptWait(holder, config.paystack.timeoutMs, now);
        if (waitMs === 0) continue;
        // It may have finished while we looked: then its answer stands.
        const opened = await this.store.opened(session._id);
        if (opened) return opened;
        // A 503, not a 409: nothing is refused, and the order service, which retries a
        // call lost with its node, must not record its request as refused.
        throw serviceBusy(
          'This checkout is being opened by another request with the same key; retry after the seconds in `Retry-After`',
          Math.ceil(waitMs / 1000),
        );
      }
      let initialized: Initialized;
      try {
        initialized = await provider.initialize({
          reference: session._id,
          providerReference,
          amountKobo: session.amountKobo,
          currency: session.currency,
          email: session.email,
          purpose: session.purpose,
        });
      } catch (err) {
        // Whether the provider opened it is unknown: this reference is never used again.
        await this.store.attemptFailed(providerReference, new Date());
        throw err;
      }
      return this.store.recordOpened({
        _id: session._id,
        providerReference,
        ...initialized,
        openedAt: new Date(),
      });
    }
    throw upstreamFailed(
      `The payment provider did not open this checkout in ${OPEN_ATTEMPTS} attempts; start a new one with a new key`,
    );
  }

  async view(reference: string): Promise<CheckoutView | null> {
    const session = await this.store.session(reference);
    if (!session) return null;
    const outcome = await this.store.outcome(reference);
    return {
      reference,
      status: statusOf(session, outcome, new Date()),
      amountKobo: session.amountKobo,
      purpose: session.purpose,
      expiresAt: session.expiresAt.toISOString(),
    };
  }

  /** The sandbox page of a session; 404 for a reference we never issued. */
  async page(reference: string): Promise<string> {
    const session = await this.store.session(reference);
    if (!session || session.provider !== 'sandbox') throw noSuchCheckout();
    const outcome = await this.store.outcome(reference);
    return checkoutPage({
      reference,
      merchantName: session.merchantName,
      amountKobo: session.amountKobo,
      currency: session.currency,
      status: statusOf(session, outcome, new Date()),
      expiresAt: session.expiresAt,
    });
  }

  /**
   * The one confirmation path of a payment, whoever reports it (the sandbox's Pay button, a
   * provider's verified webhook, the sweep that finds it paid at the provider). A provider's
   * report is of money taken: a checkout that had ended first (declined, or expired by another
   * sweep a moment earlier, or by one that stopped before carrying its expiry out) is credited
   * all the same (`paidAfterItEnded`). It is credited before the checkout leaves the pending
   * list, so that a failure in between leaves it to the sweep, which comes back here.
   */
  async confirmPayment(session: SessionRecord, report: PaymentReport): Promise<OutcomeRecord> {
    const claimed = await this.claim(session, 'PAID', report.source);
    const { status } = claimed.outcome;
    if (report.source !== 'sandbox' && status !== 'PAID') {
      await this.paidAfterItEnded(session, report.providerReference, status);
    }
    await this.carryOutIfDue(session, claimed);
    return claimed.outcome;
  }

  /** Claims an outcome for the session and carries it out (`carryOutIfDue`). */
  async decide(
    session: SessionRecord,
    wanted: DecidedStatus,
    source: OutcomeSource,
  ): Promise<OutcomeRecord> {
    const claimed = await this.claim(session, wanted, source);
    await this.carryOutIfDue(session, claimed);
    return claimed.outcome;
  }

  /** The session's outcome: this claim's when it is the first, else the one that was. */
  private claim(session: SessionRecord, wanted: DecidedStatus, source: OutcomeSource) {
    const now = new Date();
    const claimed = claimFor(wanted, source, session, now);
    return this.store.claimOutcome(session._id, claimed, source, now);
  }

  /**
   * Carries out a claimed outcome: event in the outbox, the session off the pending list, the
   * event sent. Whoever claims it or finds the session still pending carries it out, so a
   * crash after the claim is finished by the next attempt or the sweep.
   */
  private async carryOutIfDue(
    session: SessionRecord,
    { outcome, won }: { outcome: OutcomeRecord; won: boolean },
  ): Promise<void> {
    if (!won && !(await this.store.isPending(session._id))) return;
    await this.send(session, outcome, () => this.store.removePending(session._id));
  }

  /**
   * Sends an outcome's event once, whoever else is carrying the outcome out (`claimFirstSend`):
   * the claimant puts it in the outbox, marks its claim, does the pending list's part
   * (`listed`), then sends it. Another caller does the list's part once the event is in the
   * outbox, and nothing while it may not be there yet (the session stays listed, and a later
   * sweep finishes it).
   */
  private async send(
    session: SessionRecord,
    outcome: OutcomeRecord,
    listed: () => Promise<void>,
  ): Promise<void> {
    const claimed = await this.claimFirstSend(session._id);
    if (claimed === 'sent') return listed();
    if (claimed === 'busy') return;
    const event = outcomeEvent(facts(session), outcome);
    await this.store.enqueue(session._id, event, this.nextAttempt(new Date()));
    await this.store.markSent(claimed, new Date());
    await listed();
    this.deps.logger().info('checkout decided', {
      reference: session._id,
      status: outcome.status,
      source: outcome.source,
    });
    const queued = { _id: session._id, event: event.name, payload: event.payload };
    // The outcome stands; sending its event is the outbox's job, retried by the sweep.
    await this.deliver(queued).catch((err: unknown) =>
      this.deps.logger().warn('payment event not sent yet; the sweep retries', {
        reference: session._id,
        err,
      }),
    );
  }

  /**
   * Claims the first send of a checkout's event (decision 120): the name of this caller's
   * claim, or what holds it. A claim left without its sent mark for `PAYMENT_EVENT_RETRY_MS`
   * is a claimant that died before the event reached the outbox: the next turn is claimed
   * (by an insert too, so two callers finding it so take over once).
   */
  private async claimFirstSend(reference: string): Promise<string | 'sent' | 'busy'> {
    for (let turn = 0; ; turn++) {
      const name = sendName(reference, turn);
      const now = new Date();
      const holder = await this.store.claimSend({ _id: name, claimedAt: now, sentAt: null });
      if (!holder) return name;
      const state = sendClaimState(holder, this.deps.config.eventRetryMs, now);
      if (state !== 'stale') return state;
    }
  }

  private nextAttempt(now: Date): Date {
    return new Date(now.getTime() + this.deps.config.eventRetryMs);
  }

  /**
   * Sends an outcome's event. A wallet funding is this service's own to act on: its credit is
   * posted (once, by its reference) before the event leaves the outbox.
   */
  private async deliver(queued: Pick<OutboxRecord, '_id' | 'event' | 'payload'>): Promise<void> {
    const event = { name: queued.event, payload: queued.payload } as ReturnType<
      typeof outcomeEvent
    >;
    const { payload } = event;
    if (payload.purpose.kind === 'WALLET_FUNDING' && event.name === 'payment.succeeded') {
      await this.creditFunding(payload, 'Wallet funded through checkout');
    }
    await broadcast(this.deps.broadcaster(), event.name, event.payload as never);
    if (payload.purpose.kind === 'WALLET_FUNDING') await this.store.acknowledge(queued._id);
  }

  /** A funding checkout's credit to its wallet: once, whoever posts it, by its reference. */
  private async creditFunding(
    funding: { userId: string; amountKobo: number; reference: string },
    description: string,
  ): Promise<void> {
    await this.deps.ledger.post({
      walletId: funding.userId,
      type: 'CREDIT',
      amountKobo: funding.amountKobo,
      reference: fundingCreditReference(funding.reference),
      description,
    });
  }

  acknowledge(reference: string): Promise<boolean> {
    return this.store.acknowledge(reference);
  }

  /** A POST of the sandbox page: pay or decline, then back to the page (303). */
  async answer(reference: string, wanted: 'PAID' | 'DECLINED'): Promise<void> {
    const session = await this.store.session(reference);
    if (!session || session.provider !== 'sandbox') throw noSuchCheckout();
    if (wanted === 'PAID') await this.confirmPayment(session, { source: 'sandbox' });
    else await this.decide(session, 'DECLINED', 'sandbox');
  }

  /**
   * A Paystack webhook: its signature over the exact bytes first, then the provider's own
   * word on the transaction before anything changes. True when it paid a checkout.
   */
  async webhook(params: WebhookParams): Promise<boolean> {
    const secret = this.deps.config.paystack.secretKey;
    if (this.deps.provider.name !== 'paystack' || !secret) {
      throw serviceUnavailable('Paystack webhooks are not enabled here (PAYMENT_PROVIDER)');
    }
    const raw = Buffer.from(params.rawBody, 'base64');
    if (!validSignature(raw, params.headers[SIGNATURE_HEADER], secret)) {
      throw unauthorized(
        `The ${SIGNATURE_HEADER} header is missing or is not the HMAC-SHA512 of this body under the secret key`,
      );
    }
    let event: { event?: unknown; data?: { reference?: unknown } };
    try {
      event = JSON.parse(raw.toString('utf8'));
    } catch {
      throw badRequest('The webhook body is not JSON');
    }
    if (event?.event === 'refund.processed') return this.reversals.reported(event.data);
    if (event?.event === 'refund.failed') return this.refundFailed(event.data);
    if (typeof event?.event === 'string' && event.event.startsWith('charge.dispute.')) {
      this.deps.logger().warn('a payer disputes a charge at the provider', {
        event: event.event,
        ...disputeNote(event.data),
      });
      return false;
    }
    const paidReference = event?.data?.reference;
    if (event?.event !== 'charge.success' || typeof paidReference !== 'string') return false;
    const reference = checkoutOfAttempt(paidReference);
    const session = await this.store.session(reference);
    // Not ours (another integration on the same account): acknowledged, nothing done.
    if (!session) return false;
    // Paid and carried out already: a repeat.
    const decided = await this.store.outcome(reference);
    if (decided?.status === 'PAID' && !(await this.store.isPending(reference))) return false;
    const verified = await this.deps.provider.verify(paidReference);
    const mismatch = verified
      ? verificationMismatch(session, verified)
      : 'the provider knows no such transaction';
    if (mismatch) {
      if (verified?.status === 'success') {
        await this.uncredited(session, paidReference, mismatch);
        return false;
      }
      const unsettled = !verified || STILL_PAYING.has(verified.status);
      if (unsettled && (await this.mayEndUnwatched(session))) {
        this.deps.logger().warn('webhook of an ended checkout not settled yet; sent back', {
          reference: paidReference,
          mismatch,
        });
        // A 200 would be the last word on it: the provider retries a 5xx, and a payment that
        // settles later is credited by the retry.
        throw serviceBusy(
          `Checkout ${reference} has ended and the provider does not report ${paidReference} settled yet (${mismatch}); send this event again later`,
          Math.ceil(this.recheckMs / 1000),
        );
      }
      this.deps.logger().warn('webhook refused after verification', {
        reference: paidReference,
        mismatch,
      });
      return false;
    }
    // Over already, or expired by the sweep while the provider was asked: credited all the same.
    const outcome = await this.confirmPayment(session, {
      source: 'paystack',
      providerReference: paidReference,
    });
    return outcome.status === 'PAID' && outcome.source === 'paystack';
  }

  /**
   * Whether the checkout may end (or has ended) with nothing here asking the provider about it
   * again: not paid, and off the sweep's list, or past its time, when the sweep may expire it
   * on an answer the provider gave before this payment (`abandoned`) at any moment. The list is
   * read first: a checkout leaves it only once decided.
   */
  private async mayEndUnwatched(session: SessionRecord): Promise<boolean> {
    const pastItsTime = session.expiresAt.getTime() <= Date.now();
    if (!pastItsTime && (await this.store.isPending(session._id))) return false;
    return (await this.store.outcome(session._id))?.status !== 'PAID';
  }

  /**
   * A charge still under way is looked at again as often as the checkout lasted, at most every
   * five minutes.
   */
  private get recheckMs(): number {
    return Math.min(STILL_PAYING_RECHECK_MS, this.deps.config.checkoutTtlMs);
  }

  /**
   * The provider took the exact amount for a checkout that had ended (expired or declined
   * first), and it goes back to its payer, once (`giveBack`): a wallet's own funding is
   * credited under the reference a paid funding would have credited under; a delivery's, whose
   * delivery its failure cancelled, as order gives back money paid for a delivery no longer
   * waiting for it: to the merchant's wallet, or to a recipient at the provider.
   */
  private async paidAfterItEnded(
    session: SessionRecord,
    providerReference: string,
    status: string,
  ): Promise<void> {
    const { purpose } = session;
    const funding = purpose.kind === 'WALLET_FUNDING';
    const given = await this.giveBackPaid(session, providerReference, {
      reference: lateCreditReference(session),
      description: funding
        ? 'Wallet funded through checkout (paid after the checkout had ended)'
        : `Paid for delivery ${purpose.id} after its checkout had ended`,
    });
    this.deps.logger().warn('a checkout paid after it ended was given back', {
      reference: session._id,
      purpose: purpose.kind,
      to: given.to,
      providerReference,
      status,
    });
  }

  /**
   * A paid checkout's money that its purpose cannot use (a delivery cancelled, or a request
   * that never became one) back to its payer, once: the merchant's wallet (credited under
   * `refund:<reference>`), or a recipient at the provider (decision 168). 409 for a checkout
   * not paid (nothing was taken to give back), or one that funded a wallet.
   */
  async giveBack(params: GiveBackParams): Promise<GivenBack> {
    const session = await this.store.session(params.reference);
    if (!session) throw notFound(`No checkout ${params.reference}`);
    // A paid funding is in its wallet already (`checkout:<reference>`): nothing to give back.
    if (session.purpose.kind !== 'DELIVERY') {
      throw conflict(`Checkout ${session._id} funded a wallet; its money is there`);
    }
    if ((await this.store.outcome(session._id))?.status !== 'PAID') {
      throw conflict(`Checkout ${session._id} is not paid: there is nothing to give back`);
    }
    const opened = await this.store.opened(session._id);
    return this.giveBackPaid(session, opened?.providerReference ?? session._id, {
      reference: checkoutRefundReference(session._id),
      description: params.description ?? `Refund of checkout ${session._id}`,
      payer: params.payer,
    });
  }

  /**
   * Ends a delivery's checkout before its time, as its expiry would: the provider is asked
   * first, so a payment already made is confirmed (and, its delivery called off, given back to
   * its payer), and one under way is waited for by the sweep. A checkout decided already stays
   * as it is. Its status after.
   */
  async close(reference: string, payer?: CheckoutPayer): Promise<{ status: CheckoutStatus }> {
    let session = await this.store.session(reference);
    if (!session) throw notFound(`No checkout ${reference}`);
    if (session.purpose.kind !== 'DELIVERY') {
      throw conflict(`Checkout ${reference} funds a wallet; only its payer ends it`);
    }
    // Opened before checkouts named their payer: named now, for a payment that lands after.
    if (!session.payer && payer) {
      await this.store.namePayer(reference, payer);
      session = { ...session, payer };
    }
    if (await this.store.isPending(reference)) await this.expire(session);
    const outcome = await this.store.outcome(reference);
    return { status: outcome?.status ?? 'PENDING' };
  }

  /**
   * 409 for a wallet credit of a checkout's money given back to its payer at the provider
   * (`refund:<reference>`, as an order node of the version before credits it): never both.
   */
  async refuseCreditOfPayerRefund(creditReference: string): Promise<void> {
    const checkout = debitOfRefund(creditReference);
    if (!checkout || !(await this.store.session(checkout))) return;
    if ((await this.wayBack(checkout, creditReference, 'WALLET')) === 'PAYER') {
      throw conflict(
        `Checkout ${checkout}'s money was given back to its payer at the provider; it is not credited to a wallet too`,
      );
    }
  }

  /**
   * Where a checkout's money goes back, `wanted` unless another way was taken first: a wallet
   * credit made before this version decided it by an insert (an order node of the version
   * before), a refund asked before the way was claimed (decision 168's first commits), or the
   * first claim of the way (`claimGivenBack`).
   */
  private async wayBack(
    checkout: string,
    creditReference: string,
    wanted: GivenBack['to'],
  ): Promise<GivenBack['to']> {
    if (await this.deps.ledger.isPosted(creditReference)) return 'WALLET';
    if (await this.store.payerRefund(checkout)) return 'PAYER';
    return this.store.claimGivenBack(checkout, wanted);
  }

  /**
   * Gives a checkout's money back to whoever paid it: the checkout's own word on its payer
   * first, then the caller's (a checkout opened before checkouts named theirs). The way is
   * decided once, by an insert (`claimGivenBack`) every path makes, the wallet credit of an
   * order node of the version before included: never credited and refunded both.
   */
  private async giveBackPaid(
    session: SessionRecord,
    providerReference: string,
    credit: { reference: string; description: string; payer?: GiveBackParams['payer'] },
  ): Promise<GivenBack> {
    const { ledger } = this.deps;
    const payer = session.payer ?? credit.payer ?? 'MERCHANT';
    const to = await this.wayBack(
      session._id,
      credit.reference,
      payer === 'RECIPIENT' ? 'PAYER' : 'WALLET',
    );
    if (to === 'PAYER') {
      await this.payerRefunds.request(
        session,
        providerReference,
        `Refund of a payment for delivery ${session.purpose.id}, which no longer needs it`,
      );
      return { to };
    }
    await ledger.post({
      walletId: session.userId,
      type: 'CREDIT',
      amountKobo: session.amountKobo,
      reference: credit.reference,
      description: credit.description,
    });
    return { to };
  }

  /** A payment the provider took that no checkout credits (another amount or currency). */
  private uncredited(session: SessionRecord, providerReference: string, why: string) {
    const payment = { providerReference, checkoutReference: session._id, userId: session.userId };
    return recordUncreditedPayment(this.deps, payment, why);
  }

  /**
   * One sweep, safe in every replica at once (each outcome is claimed): sends the events not
   * acknowledged in time again, expires the sessions past their time (asking the provider
   * first whether one was paid after all), then asks about expired ones whose late check is due.
   */
  async sweep(): Promise<void> {
    const now = new Date();
    // The events first: expiries each ask the provider, which may take PAYSTACK_TIMEOUT_MS
    // apiece while it is slow, and a payment's event must not wait behind them.
    for (const queued of await this.store.dueEvents(now, SWEEP_BATCH)) {
      await this.eachOnItsOwn(queued._id, async () => {
        // Moved on before the claim, so that a claimant dying after it leaves the next resend due.
        await this.store.postpone(queued._id, this.nextAttempt(now));
        // Every sweep that read this entry names the same resend: one of them sends it.
        const resend = sendName(queued._id, queued.nextAttemptAt);
        if (await this.store.claimSend({ _id: resend, claimedAt: now, sentAt: null })) return;
        await this.deliver(queued);
      });
    }
    // One failing again and again (the provider refusing to answer about it) goes behind the
    // others, so that no number of such ones holds up the rest of the list.
    const later = () => new Date(Date.now() + this.deps.config.sweepIntervalMs);
    const due = await this.store.duePending(now, SWEEP_BATCH);
    await forEachAtOnce(due, EXPIRY_CHECKS_AT_ONCE, ({ _id: reference, closing }) =>
      this.eachOnItsOwn(
        reference,
        async () => {
          const session = await this.store.session(reference);
          if (!session) return this.dropSessionless(reference);
          // Listed by a start that stopped before its session; a start again with its key made
          // the session later, at a time of its own. One closed early is asked about when its
          // close said, its charge having been under way.
          if (session.expiresAt.getTime() > now.getTime() && !closing) {
            return this.store.recheckPendingAt(reference, session.expiresAt);
          }
          await this.expire(session);
        },
        () => this.store.recheckPendingAt(reference, later()),
      ),
    );
    await this.lateChecks.sweep(now);
  }

  /**
   * Takes back what is still owed of refunds made at the provider, and settles those whose
   * checkout's credit was awaited: a sweep of its own, so that a provider answering slowly to
   * the checkout sweep's questions holds none of it up.
   */
  sweepReversals(): Promise<void> {
    return this.reversals.sweep(SWEEP_BATCH);
  }

  /**
   * Asks the provider again for the refunds to payers it could not be asked for yet: a sweep
   * of its own, since each may wait PAYSTACK_TIMEOUT_MS on the provider.
   */
  sweepPayerRefunds(): Promise<void> {
    return this.payerRefunds.sweep(SWEEP_BATCH);
  }

  /**
   * A refund the provider failed after queueing it (`refund.failed`): one of ours to a payer
   * is listed for an operator; an operator's own from the dashboard is theirs to see.
   */
  private async refundFailed(data: unknown): Promise<boolean> {
    const failed = failedRefund(data);
    if (!failed) return false;
    return this.payerRefunds.failed(failed.providerReference, failed.refundId, failed.why);
  }

  /**
   * A pending entry without its session: its start died between the two inserts, and nobody
   * saw its reference; unless a start again with its key stored the session since this sweep
   * looked, which keeps it listed (`CheckoutStore.createSession`).
   */
  private async dropSessionless(reference: string): Promise<void> {
    await this.store.removePending(reference);
    const since = await this.store.session(reference);
    if (since) await this.store.listPending(reference, since.expiresAt);
  }

  /**
   * One checkout's part of a sweep: its failure (the provider is down) holds up no other, and
   * `putBehind` (if given) moves it behind the others on its list.
   */
  private async eachOnItsOwn(
    reference: string,
    work: () => Promise<void>,
    putBehind?: () => Promise<void>,
  ): Promise<void> {
    try {
      await work();
    } catch (err) {
      this.deps.logger().warn('checkout sweep skipped one; a later sweep retries', {
        reference,
        err,
      });
      await putBehind?.().catch(() => undefined);
    }
  }

  private async expire(session: SessionRecord): Promise<void> {
    const decided = await this.store.outcome(session._id);
    // Claimed by one that stopped before carrying it out: a payment or a decline stands
    // whatever the provider says, and waits for it no longer.
    if (decided && decided.status !== 'EXPIRED') {
      await this.carryOutIfDue(session, { outcome: decided, won: false });
      return;
    }
    // So does an expiry's event; but the checkout is asked about (below) before it leaves the
    // list: the payer may have paid since, and its webhook may never come (decision 108).
    if (decided && !(await this.sendEarly(session, decided))) return;
    // The transaction handed out is the only one a payer could reach.
    const opened = await this.store.opened(session._id);
    const providerReference = opened?.providerReference ?? session._id;
    const verified = await this.deps.provider.verify(providerReference);
    const verdict = expiryVerdict(session, verified, new Date(), this.recheckMs);
    if ('pay' in verdict) {
      await this.confirmPayment(session, { source: 'sweep', providerReference });
      return;
    }
    if ('recheckAt' in verdict) {
      this.deps.logger().info('checkout past its time with its charge under way; asked again', {
        reference: session._id,
        providerStatus: verified?.status,
        recheckAt: verdict.recheckAt,
      });
      // Closed before its time (`close`): looked at again then, not at its own time.
      const closing = session.expiresAt.getTime() > Date.now();
      await this.store.recheckPendingAt(session._id, verdict.recheckAt, closing);
      return;
    }
    if (verdict.uncredited) {
      await this.uncredited(session, providerReference, verdict.uncredited);
    } else if (opened) {
      await this.lateChecks.watch(session);
    }
    const claimed = await this.claim(session, 'EXPIRED', 'sweep');
    // A start opening it meanwhile hands its link out only when it reads no outcome after
    // recording the opening (`start`): read after this claim, such an opening is seen here.
    if (!opened && !verdict.uncredited && claimed.outcome.status === 'EXPIRED') {
      if (await this.store.opened(session._id)) await this.lateChecks.watch(session);
    }
    // Before the expiry takes it off the pending list: a sweep stopped in between expires it
    // again, and lists it once.
    await this.carryOutIfDue(session, claimed);
  }

  /**
   * Sends the event of an expiry claimed but not carried out, once (`send`), leaving the
   * checkout on the pending list for the provider's answer. False when it is off the list
   * already: whoever took it off carried it out.
   */
  private async sendEarly(session: SessionRecord, expired: OutcomeRecord): Promise<boolean> {
    if (!(await this.store.isPending(session._id))) return false;
    await this.send(session, expired, async () => {});
    return true;
  }
}

const noSuchCheckout = () =>
  notFound('No such checkout: check the link you were given, or ask the merchant for a new one');

/** Page answers: the markup, with the status and redirect the gateway sends. */
function seeOther(meta: { $statusCode?: number; $location?: string }, reference: string) {
  meta.$statusCode = 303;
  meta.$location = checkoutPagePath(reference);
  return redirectPage(reference);
}

/** The checkout actions: the contract's, the sandbox pages, the webhook, wallet funding. */
/** A button of the sandbox page: its answer, then back to the page (303). */
function pageButton(
  checkouts: Checkouts,
  wanted: 'PAID' | 'DECLINED',
  path: string,
  message: string,
  button: string,
) {
  return action({
    // The outcome is claimed once: a repeat changes nothing.
    retry: 'safe',
    http: {
      group: 'checkout',
      method: 'POST',
      path: `/:reference/${path}`,
      page: true,
      message,
      summary: `The sandbox checkout’s ${button} button`,
    },
    params: pageParams,
    async handler(ctx) {
      await checkouts.answer(ctx.params.reference, wanted);
      return seeOther(ctx.meta, ctx.params.reference);
    },
  });
}

export function createCheckoutActions(checkouts: Checkouts): ServiceActions {
  return {
    startCheckout: implement('payment.startCheckout', {
      visibility: 'public',
      params: startCheckoutParams,
      handler: (ctx) => checkouts.start(ctx.params),
    }),

    checkout: implement('payment.checkout', {
      visibility: 'public',
      params: referenceParams,
      handler: (ctx) => checkouts.view(ctx.params.reference),
    }),

    closeCheckout: implement('payment.closeCheckout', {
      visibility: 'public',
      params: closeCheckoutParams,
      handler: (ctx) => checkouts.close(ctx.params.reference, ctx.params.payer),
    }),

    giveBack: implement('payment.giveBack', {
      visibility: 'public',
      params: giveBackParams,
      handler: (ctx) => checkouts.giveBack(ctx.params),
    }),

    acknowledge: implement('payment.acknowledge', {
      visibility: 'public',
      params: referenceParams,
      async handler(ctx) {
        return { acknowledged: await checkouts.acknowledge(ctx.params.reference) };
      },
    }),

    fundWallet: action({
      // Without an Idempotency-Key every request opens its own checkout.
      retry: 'keyed',
      http: {
        group: 'api',
        method: 'POST',
        path: '/wallet/fund',
        status: 201,
        message: 'Checkout created',
        summary: 'Fund your wallet through a hosted checkout',
        description:
          'Answers the external checkout payload: open `data.authorization_url` to pay `amount` NGN. Once paid, the wallet is credited exactly once, with an entry whose reference is `checkout:<reference>`. With an `Idempotency-Key`, a retry answers the same checkout.',
        response: checkoutStartView,
        errors: {
          409: 'The checkout of this `Idempotency-Key` has ended (expired or declined); send a new key',
          502: 'The payment provider refused the checkout or answered nonsense; retry later',
          503: 'The payment provider or a service is unavailable; retry in a few seconds (with the same `Idempotency-Key`)',
          504: 'The payment provider or a service did not answer in time; retry (with the same `Idempotency-Key`)',
        },
      },
      params: fundWalletParams,
      async handler(ctx) {
        const userId = requireUser(ctx);
        const user = ctx.meta.user;
        const { amount } = ctx.params as FundWalletParams;
        const token = ctx.meta.idempotencyToken;
        return checkouts.start({
          userId,
          amountKobo: nairaToKobo(amount),
          purpose: { kind: 'WALLET_FUNDING', id: userId },
          email: user?.email ?? '',
          merchantName: user?.name ?? '',
          idempotencyKey: typeof token === 'string' ? token : randomUUID(),
        });
      },
    }),

    checkoutPage: action({
      retry: 'safe',
      http: {
        group: 'checkout',
        method: 'GET',
        path: '/:reference',
        page: true,
        message: 'Checkout',
        summary: 'The sandbox checkout page',
      },
      params: pageParams,
      handler: (ctx) => checkouts.page(ctx.params.reference),
    }),

    payCheckout: pageButton(checkouts, 'PAID', 'pay', 'Checkout paid', 'Pay'),
    declineCheckout: pageButton(checkouts, 'DECLINED', 'decline', 'Checkout declined', 'Decline'),

    paystackWebhook: action({
      // Verified and claimed once: a repeat changes nothing.
      retry: 'safe',
      http: {
        group: 'webhooks',
        method: 'POST',
        path: '/paystack',
        body: 'raw',
        headers: [SIGNATURE_HEADER],
        message: 'Event received',
        summary: 'Paystack’s webhook: payments, refunds and disputes',
        description:
          'For the payment provider only. The body must be signed: `x-paystack-signature` is the hex HMAC-SHA512 of the exact body under the secret key (401 otherwise). A `charge.success` is verified with the provider before it pays the checkout; a duplicate, another event, or a reference that is not ours answers 200 and changes nothing. A provider that cannot be reached for the verification gets a 5xx, and retries; so does one that does not report the charge settled yet (still under way, or unknown to it) for a checkout that has ended. A `refund.processed` of a checkout’s transaction is taken back, once per refund id, from the wallet the checkout credited (`GET /admin/payments/reversals`); a `refund.failed` of a refund we asked for a recipient is listed for operators (`GET /admin/payments/uncredited`), and answers 503 while that refund is still being asked for; `charge.dispute.*` events are logged for operators.',
        response: webhookView,
        errors: {
          401: 'Unsigned, or the signature does not match the body',
          502: 'The provider’s verification failed; retry later',
          503: 'The provider or a service is unavailable, or the charge of a checkout that has ended is not settled at the provider yet; retry',
          504: 'The provider did not answer the verification in time; retry',
        },
      },
      params: webhookParams,
      async handler(ctx) {
        return { handled: await checkouts.webhook(ctx.params as WebhookParams) };
      },
    }),
  };
}
