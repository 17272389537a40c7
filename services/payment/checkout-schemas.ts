import Joi from '../../libs/joi';
import { linkedPage, naira, view } from '../../libs/schemas';

/** Params and answers of the checkout actions; the answers are what /openapi.json documents. */

/** The largest wallet funding through one checkout, in NGN. */
export const MAX_FUNDING_NAIRA = 10_000_000;

/** The spec's external checkout payload, as the provider's initialize answers it. */
export const checkoutStartView = view('CheckoutStart', {
  status: Joi.boolean().description('True: the checkout is open'),
  message: Joi.string(),
  data: Joi.object({
    authorization_url: Joi.string().uri().description('Where the payer pays: open it in a browser'),
    access_code: Joi.string(),
    reference: Joi.string().description('The checkout’s reference, unique and unguessable'),
  }),
});

export interface FundWalletParams {
  amount: number;
}

export const fundWalletParams = Joi.object<FundWalletParams>({
  amount: naira()
    .greater(0)
    .max(MAX_FUNDING_NAIRA)
    .required()
    .description('NGN, at most two decimals'),
});

/**
 * A page's reference as it comes in the URL: anything (the URL's own limit bounds it), so that
 * a malformed one, however long, is the same 404 page as an unknown one.
 */
export const pageParams = linkedPage(
  Joi.object<{ reference: string }>({
    reference: Joi.string().required(),
  }),
);

export interface WebhookParams {
  /** The request body's exact bytes, base64. */
  rawBody: string;
  headers: Record<string, string | undefined>;
}

export const webhookParams = Joi.object<WebhookParams>({
  rawBody: Joi.string().base64().allow('').required(),
  // An empty signature is a missing one: 401, not a malformed request.
  headers: Joi.object().pattern(Joi.string(), Joi.string().allow('')).required(),
});

export const webhookView = view('WebhookReceipt', {
  handled: Joi.boolean().description(
    'True when the event changed a checkout; false when it was a duplicate, another kind of event, or named no checkout of ours',
  ),
});
