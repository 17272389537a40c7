import Joi from '../../libs/joi';
import { formatNaira } from '../../libs/money';
import { fromUrl, view } from '../../libs/schemas';
import { action, type ServiceActions } from '../../libs/service';
import {
  PAYER_REFUND_STATES,
  type CheckoutStore,
  type PayerRefundQuery,
  type PayerRefundRecord,
  type ReversalQuery,
  type ReversalRecord,
} from './checkout-store';
import { PROVIDER_ID_PATTERN } from './checkout';
import { keptReason } from './uncredited';
import { PROVIDER_REFERENCE_PATTERN, providerListPage } from './schemas';

/**
 * Refunds at the payment provider. Of money a checkout credited (decision 146): operators list
 * them, and see what each wallet still owes of one. Of a recipient's payment that no delivery
 * uses, which we ask for (decision 168): operators see where each stands.
 */

const REVERSAL_STATES = [
  'AWAITING_CREDIT',
  'TAKING',
  'TAKEN',
  'NEVER_CREDITED',
  'GIVEN_BACK',
] as const;

const reversalView = view('Reversal', {
  refundId: Joi.string().description('The refund at the provider'),
  providerReference: Joi.string().description('The transaction it gave back from'),
  checkoutReference: Joi.string().description('The checkout the transaction paid'),
  userId: Joi.string().description('The wallet it is taken back from: the checkout’s user'),
  amount: Joi.string().description('Given back to the payer, NGN'),
  taken: Joi.string().description('Taken back from the wallet so far, NGN'),
  owed: Joi.string().description('Still to take once the wallet is credited, NGN'),
  state: Joi.string()
    .valid(...REVERSAL_STATES)
    .description(
      '`AWAITING_CREDIT`: the checkout has not credited its payment yet; `TAKING`: the wallet holds less than is owed, and what it is credited next is taken; `TAKEN`; `NEVER_CREDITED`: the payment was credited to nobody, so nothing is taken; `GIVEN_BACK`: the checkout’s payment was then refunded to its payer (its delivery called off), so what was taken is given back to the wallet',
    ),
  givenBack: Joi.string()
    .allow(null)
    .description('Given back to the wallet, NGN, once `GIVEN_BACK`; null otherwise'),
  givenBackAt: Joi.string().isoDate().allow(null).description('When, once `GIVEN_BACK`'),
  receivedAt: Joi.string().isoDate(),
  settledAt: Joi.string().isoDate().allow(null).description('Null while anything may be taken'),
});

const listParams = Joi.object<ReversalQuery, true>({
  ...providerListPage('refundId', PROVIDER_ID_PATTERN),
  open: fromUrl(Joi.boolean()).description(
    '`true`: only those still awaiting their credit or owed; `false`: only the settled',
  ),
});

function stateOf(reversal: ReversalRecord): (typeof REVERSAL_STATES)[number] {
  if (reversal.givenBackKobo != null) return 'GIVEN_BACK';
  if (reversal.credited === false) return 'NEVER_CREDITED';
  if (reversal.credited == null) return 'AWAITING_CREDIT';
  return reversal.settledAt ? 'TAKEN' : 'TAKING';
}

function toReversalView(reversal: ReversalRecord): Record<string, unknown> {
  const state = stateOf(reversal);
  const owedKobo =
    state === 'NEVER_CREDITED' || state === 'GIVEN_BACK'
      ? 0
      : reversal.amountKobo - reversal.takenKobo;
  return {
    refundId: reversal._id,
    providerReference: reversal.providerReference,
    checkoutReference: reversal.checkoutReference,
    userId: reversal.userId,
    amount: formatNaira(reversal.amountKobo),
    taken: formatNaira(reversal.takenKobo),
    owed: formatNaira(owedKobo),
    state,
    givenBack: reversal.givenBackKobo == null ? null : formatNaira(reversal.givenBackKobo),
    givenBackAt: reversal.givenBackAt ? reversal.givenBackAt.toISOString() : null,
    receivedAt: reversal.receivedAt.toISOString(),
    settledAt: reversal.settledAt ? reversal.settledAt.toISOString() : null,
  };
}

const payerRefundView = view('PayerRefund', {
  checkoutReference: Joi.string().description('The checkout the payer paid through'),
  providerReference: Joi.string().description('The transaction refunded'),
  userId: Joi.string().description('The checkout’s user: the merchant whose delivery it paid'),
  amount: Joi.string().description('Given back to the payer, NGN: the whole payment'),
  state: Joi.string()
    .valid(...PAYER_REFUND_STATES)
    .description(
      '`OPEN`: still being asked for (the sweep asks again while the provider cannot answer); `QUEUED`: the provider took it (the sandbox queues nothing: it took no money); `REFUSED`: the provider would not refund it; `FAILED`: it queued it, then reported it failed (`refund.failed`)',
    ),
  tries: Joi.number().integer().description('Times it was asked of the provider'),
  refundId: Joi.string()
    .allow(null)
    .description('The provider’s id of the refund, once known (null in the sandbox)'),
  why: Joi.string().allow(null).description('The provider’s reason, when refused or failed'),
  note: Joi.string().description('What the payer is told at the provider'),
  requestedAt: Joi.string().isoDate(),
  settledAt: Joi.string().isoDate().allow(null).description('Null while `OPEN`'),
});

const payerRefundParams = Joi.object<PayerRefundQuery, true>({
  ...providerListPage('checkoutReference', PROVIDER_REFERENCE_PATTERN),
  state: Joi.string()
    .valid(...PAYER_REFUND_STATES)
    .description('Only those in this state'),
});

export function toPayerRefundView(refund: PayerRefundRecord): Record<string, unknown> {
  return {
    checkoutReference: refund._id,
    providerReference: refund.providerReference,
    userId: refund.userId,
    amount: formatNaira(refund.amountKobo),
    state: refund.state,
    tries: refund.tries,
    refundId: refund.refundId ?? null,
    // Kept whole before REASON_MAX_BYTES.
    why: refund.why === null || refund.why === undefined ? null : keptReason(refund.why),
    note: refund.note,
    requestedAt: refund.requestedAt.toISOString(),
    settledAt: refund.settledAt ? refund.settledAt.toISOString() : null,
  };
}

export function createReversalAdminActions(store: CheckoutStore): ServiceActions {
  return {
    listReversals: action({
      retry: 'safe',
      http: {
        group: 'admin',
        method: 'GET',
        path: '/payments/reversals',
        message: 'Reversals retrieved',
        summary:
          'Refunds made at the payment provider and what is taken back of each, newest first',
        description:
          'Money the provider gave back to a payer (a refund, or a chargeback the payer won) is taken back from the wallet its checkout credited, as far as the wallet holds it and then from what it is credited next.',
        response: Joi.array().items(reversalView),
        errors: { 404: '`after` names no reversal' },
      },
      params: listParams,
      async handler(ctx) {
        return (await store.reversals(ctx.params)).map(toReversalView);
      },
    }),
    listPayerRefunds: action({
      retry: 'safe',
      http: {
        group: 'admin',
        method: 'GET',
        path: '/payments/payer-refunds',
        message: 'Refunds to payers retrieved',
        summary: 'Refunds asked of the payment provider for payers, newest first',
        description:
          'A recipient’s payment for a delivery that no longer uses it (cancelled, or paid after its checkout was closed) is refunded to them at the provider, never credited to the merchant. `REFUSED` and `FAILED` ones are also listed with the uncredited payments (`GET /admin/payments/uncredited`): refund those at the provider by hand, then settle them there.',
        response: Joi.array().items(payerRefundView),
        errors: { 404: '`after` names no refund to a payer' },
      },
      params: payerRefundParams,
      async handler(ctx) {
        return (await store.payerRefunds(ctx.params)).map(toPayerRefundView);
      },
    }),
  };
}
