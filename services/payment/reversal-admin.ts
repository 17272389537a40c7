import Joi from '../../libs/joi';
import { formatNaira } from '../../libs/money';
import { fromUrl, view } from '../../libs/schemas';
import { action, type ServiceActions } from '../../libs/service';
import type { CheckoutStore, ReversalQuery, ReversalRecord } from './checkout-store';
import { PROVIDER_ID_PATTERN } from './checkout';
import { providerListPage } from './schemas';

/**
 * Refunds made at the payment provider of money a checkout credited (decision 146): operators
 * list them, and see what each wallet still owes of one.
 */

const REVERSAL_STATES = ['AWAITING_CREDIT', 'TAKING', 'TAKEN', 'NEVER_CREDITED'] as const;

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
      '`AWAITING_CREDIT`: the checkout has not credited its payment yet; `TAKING`: the wallet holds less than is owed, and what it is credited next is taken; `TAKEN`; `NEVER_CREDITED`: the payment was credited to nobody, so nothing is taken',
    ),
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
  if (reversal.credited === false) return 'NEVER_CREDITED';
  if (reversal.credited == null) return 'AWAITING_CREDIT';
  return reversal.settledAt ? 'TAKEN' : 'TAKING';
}

function toReversalView(reversal: ReversalRecord): Record<string, unknown> {
  const state = stateOf(reversal);
  const owedKobo = state === 'NEVER_CREDITED' ? 0 : reversal.amountKobo - reversal.takenKobo;
  return {
    refundId: reversal._id,
    providerReference: reversal.providerReference,
    checkoutReference: reversal.checkoutReference,
    userId: reversal.userId,
    amount: formatNaira(reversal.amountKobo),
    taken: formatNaira(reversal.takenKobo),
    owed: formatNaira(owedKobo),
    state,
    receivedAt: reversal.receivedAt.toISOString(),
    settledAt: reversal.settledAt ? reversal.settledAt.toISOString() : null,
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
  };
}
