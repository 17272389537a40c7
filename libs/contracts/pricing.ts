import Joi from '../joi';
import { uuid, view } from '../schemas';
import { addressInput, type AddressInput, type Route } from './geo';
import type { Retry } from './retry';

/** What other services may know of the pricing service. */

/** Broadcast after a tariff tier changes, so that every pricing replica rereads the book. */
export const TARIFF_CHANGED_EVENT = 'pricing.tariffChanged';

/** Broadcast after a courier pricing rule changes, so that every pricing replica rereads them. */
export const COURIER_RULES_CHANGED_EVENT = 'pricing.courierRulesChanged';

export interface PricingEvents {
  [TARIFF_CHANGED_EVENT]: Record<string, never>;
  [COURIER_RULES_CHANGED_EVENT]: Record<string, never>;
}

export const URGENCY_TYPES = ['STANDARD', 'PRIORITY', 'SCHEDULED'] as const;
export type UrgencyType = (typeof URGENCY_TYPES)[number];

export const FEE_PAYERS = ['CREATOR', 'RECIPIENT', 'SPLIT'] as const;
export type FeePayer = (typeof FEE_PAYERS)[number];

/** Every fee component of a priced delivery, in integer kobo (docs/pricing.md). */
export interface FeeAmounts {
  base: number;
  weight: number;
  fleet: number;
  surcharge: number;
  insurance: number;
  deliverySubtotal: number;
  serviceFee: number;
  hubCommission: number;
  total: number;
}

/** The spec's `deliveryFee` block. */
export interface DeliveryFeeBlock {
  payer: FeePayer;
  gross: { delivery: string; serviceFee: string; hubCommission: string; bundledTotal: string };
  creator: { amount: string; paymentRequired: boolean; paid: boolean };
  recipient: {
    amount: string;
    paymentRequired: boolean;
    paid: boolean;
    checkoutUrl: string | null;
  };
  promotion: {
    settlementMode: string | null;
    platformFunded: boolean;
    settledAmount: string;
    discountAmount: string;
    isApplied: boolean;
  };
}

/** An amount of naira with its kobo, as the API writes money (`formatNaira`): `"1500.00"`. */
export const money = () => Joi.string().pattern(/^\d+\.\d{2}$/);

const party = {
  amount: money(),
  paymentRequired: Joi.boolean(),
  paid: Joi.boolean(),
};

/**
 * The `deliveryFee` block (`DeliveryFeeBlock`) as the document shows it: a quote's, and a
 * delivery request's, with who has paid.
 */
export const feeBlockView = () =>
  view('FeeBlock', {
    payer: Joi.string().valid(...FEE_PAYERS),
    gross: Joi.object({
      delivery: money(),
      serviceFee: money(),
      hubCommission: money(),
      bundledTotal: money(),
    }),
    creator: Joi.object(party),
    recipient: Joi.object({ ...party, checkoutUrl: Joi.string().allow(null) }),
    promotion: Joi.object({
      settlementMode: Joi.string().allow(null),
      platformFunded: Joi.boolean(),
      settledAmount: money(),
      discountAmount: money(),
      isApplied: Joi.boolean(),
    }),
  }).description('SPLIT: the recipient pays half rounded down, the creator the rest');

/** The spec's `payOnDelivery` block as pricing previews it (the request adds `remitTo`). */
export interface PayOnDeliveryBlock {
  enabled: boolean;
  collectAmount: string;
  collectTarget: 'PACKAGE_VALUE';
}

/** The tier revisions a price was computed from. */
export interface TierIds {
  countryPricingId: string | null;
  statePricingId: string | null;
  cityPricingId: string | null;
}

/**
 * `POST /api/pricing`'s Mode A answer. Its `deliveryCost` is documented by the pricing
 * service's schema; other services read only the typed parts.
 */
export interface ModeAQuote {
  deliveryCost: Record<string, unknown> & { tierIds: TierIds; tariffVersion: string };
  promotion: null;
  deliveryFee: DeliveryFeeBlock;
  matchingEligible: boolean;
  payOnDelivery: PayOnDeliveryBlock;
}

/** A load to price: what a delivery took, as `package.assign` answered it. */
export interface PricedLoadParams {
  weightGrams: number;
  valueKobo: number;
}

const QUOTE_VERSION = 'q1';
const QUOTE_DIGEST_CHARS = 43;
const QUOTE_BODY_MAX_CHARS = 900;
/** A quote id's form: version, signed claims, HMAC-SHA256, each base64url (decision 142). */
export const QUOTE_ID = {
  version: QUOTE_VERSION,
  pattern: new RegExp(
    `^${QUOTE_VERSION}\\.[A-Za-z0-9_-]{1,${QUOTE_BODY_MAX_CHARS}}\\.[A-Za-z0-9_-]{${QUOTE_DIGEST_CHARS}}$`,
  ),
  maxLength: QUOTE_VERSION.length + QUOTE_BODY_MAX_CHARS + QUOTE_DIGEST_CHARS + 2,
};

/** `quoteId` of `POST /api/request` and `pricing.quote`: a Mode A answer's, as it gave it. */
export const quoteId = () =>
  Joi.string()
    .max(QUOTE_ID.maxLength)
    .pattern(QUOTE_ID.pattern)
    .messages({
      'string.pattern.base':
        '{{#label}} must be the quoteId of a Mode A answer of POST /api/pricing, as it was given',
    })
    .description(
      'The quoteId of a Mode A answer of POST /api/pricing, before its quoteExpiresAt: the request is priced on its route distance and refused (409) if its total would differ',
    );

export interface QuoteLoadParams {
  origin: AddressInput;
  destination: AddressInput;
  load: PricedLoadParams;
  urgencyType: UrgencyType;
  /**
   * When SCHEDULED (and only then): `YYYY-MM-DD` and `HH:MM - HH:MM`, as `POST /api/pricing`
   * takes them. The pricing service checks them as that route does, with its 400s.
   */
  deliveryDate?: string;
  deliverySlot?: string;
  fleetTypeId?: string;
  /** A SPECIFIC courier, whose pricing rules apply. */
  courierId?: string;
  deliveryFeePayer: FeePayer;
  payOnDelivery: boolean;
  /** The requester's quote (ctx.meta.user's): its distance holds and its total must. */
  quoteId?: string;
}

export const quoteLoadParams = Joi.object<QuoteLoadParams, true>({
  origin: addressInput().required(),
  destination: addressInput().required(),
  load: Joi.object<PricedLoadParams, true>({
    weightGrams: Joi.number().integer().min(1).required(),
    valueKobo: Joi.number().integer().min(0).required(),
  }).required(),
  urgencyType: Joi.string()
    .valid(...URGENCY_TYPES)
    .required(),
  deliveryDate: Joi.string(),
  deliverySlot: Joi.string(),
  fleetTypeId: uuid(),
  courierId: uuid(),
  deliveryFeePayer: Joi.string()
    .valid(...FEE_PAYERS)
    .required(),
  payOnDelivery: Joi.boolean().required(),
  quoteId: quoteId(),
});

/**
 * A delivery priced from a load: exactly what Mode A answers for the same inputs (`quote`),
 * with the amounts in kobo and the route and fleet type it was priced for.
 */
export interface PricedDelivery {
  quote: ModeAQuote;
  fees: FeeAmounts;
  /** Who owes what of `fees.total`, in kobo. */
  shares: { creator: number; recipient: number };
  route: Route;
  fleetType: { id: string; name: string; icon: string | null };
  tierIds: TierIds;
  tariffVersion: string;
  /** When a SCHEDULED delivery's slot opens, in the tariff's time zone (ISO); else null. */
  slotStartsAt: string | null;
  /** When that slot closes, read the same way; else null. */
  slotEndsAt: string | null;
  /** The tariff's IANA time zone: the clock the delivery's times are shown in. */
  timeZone: string;
}

export interface PricingActions {
  /**
   * Prices a known load with the same rules, checks and errors as `POST /api/pricing`
   * (400 on a schedule or area problem, 404 `Fleet type not found`).
   */
  'pricing.quote': { params: QuoteLoadParams; answer: PricedDelivery };
}

/** A quote reads. */
export const PRICING_RETRY = {
  'pricing.quote': 'safe',
} as const satisfies Record<keyof PricingActions, Retry>;
