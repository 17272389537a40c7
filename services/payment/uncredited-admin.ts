import Joi from '../../libs/joi';
import { conflict, notFound } from '../../libs/errors';
import { fromUrl, plainText, view } from '../../libs/schemas';
import { action, type ServiceActions } from '../../libs/service';
import type {
  CheckoutStore,
  SettlementRecord,
  UncreditedQuery,
  UncreditedRecord,
} from './checkout-store';
import { PROVIDER_REFERENCE_PATTERN, providerListPage } from './schemas';
import { keptReason } from './uncredited';

/**
 * Payments the provider took that no checkout credits (another amount or currency than the
 * checkout's, decision 108): operators list them, refund each at the provider, and record
 * that they did, once.
 */

const settlementView = view('UncreditedSettlement', {
  note: Joi.string(),
  settledAt: Joi.string().isoDate(),
  settledBy: Joi.string()
    .allow(null)
    .description(
      'The operator who recorded it; null for settlements recorded before operators were named',
    ),
});

const uncreditedView = view('UncreditedPayment', {
  providerReference: Joi.string().description('The transaction at the provider'),
  checkoutReference: Joi.string().description('The checkout it was made through'),
  userId: Joi.string().description('The checkout’s user (the merchant)'),
  why: Joi.string().description('Why no checkout credits it'),
  at: Joi.string().isoDate(),
  settlement: settlementView.allow(null).description('Null until an operator records one'),
});

const listParams = Joi.object<UncreditedQuery, true>({
  ...providerListPage('providerReference', PROVIDER_REFERENCE_PATTERN),
  settled: fromUrl(Joi.boolean()).description(
    '`false`: only those no operator has settled yet; `true`: only the settled',
  ),
});

const settleParams = Joi.object<{ providerReference: string; note: string }, true>({
  providerReference: Joi.string()
    .pattern(PROVIDER_REFERENCE_PATTERN)
    .required()
    .description('As listed: a letter or digit, then letters, digits, `_`, `.`, `=` and `-`'),
  note: plainText(500).min(1).required().description('What was done: the refund’s reference'),
});

export function toUncreditedView(
  payment: UncreditedRecord & { settlement: SettlementRecord | null },
): Record<string, unknown> {
  const { settlement } = payment;
  return {
    providerReference: payment._id,
    checkoutReference: payment.checkoutReference,
    userId: payment.userId,
    // Kept whole before REASON_MAX_BYTES.
    why: keptReason(payment.why),
    at: new Date(payment.at).toISOString(),
    settlement: settlement && {
      note: settlement.note,
      settledAt: new Date(settlement.at).toISOString(),
      settledBy: settlement.by ?? null,
    },
  };
}

export function createUncreditedAdminActions(store: CheckoutStore): ServiceActions {
  return {
    listUncredited: action({
      retry: 'safe',
      http: {
        group: 'admin',
        method: 'GET',
        path: '/payments/uncredited',
        message: 'Uncredited payments retrieved',
        summary: 'Payments the provider took that no checkout credits, newest first, paged',
        description:
          'A charge of another amount or currency than its checkout’s is credited to nobody: refund it at the provider, then record that with `POST /admin/payments/uncredited/:providerReference/settle`.',
        response: Joi.array().items(uncreditedView),
        errors: { 404: '`after` names no uncredited payment' },
      },
      params: listParams,
      async handler(ctx) {
        return (await store.uncredited(ctx.params)).map(toUncreditedView);
      },
    }),

    settleUncredited: action({
      // The first note stands: the same again answers it, another is a 409.
      retry: 'safe',
      http: {
        group: 'admin',
        method: 'POST',
        path: '/payments/uncredited/:providerReference/settle',
        message: 'Uncredited payment settled',
        summary: 'Record that an uncredited payment was refunded at the provider',
        response: uncreditedView,
        errors: {
          404: 'No uncredited payment has this provider reference',
          409: 'It was settled already, with another note',
        },
      },
      params: settleParams,
      async handler(ctx) {
        const { providerReference, note } = ctx.params;
        const payment = await store.uncreditedPayment(providerReference);
        if (!payment) throw notFound(`No uncredited payment has reference ${providerReference}`);
        const { standing } = await store.settleUncredited({
          _id: providerReference,
          note,
          at: new Date(),
          by: ctx.meta.operator?.name,
        });
        if (standing.note !== note) {
          throw conflict(
            `Payment ${providerReference} was settled already on ${new Date(standing.at).toISOString()}: ${standing.note}`,
          );
        }
        return toUncreditedView({ ...payment, settlement: standing });
      },
    }),
  };
}
