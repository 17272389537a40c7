import Joi from '../joi';
import { uuid } from '../schemas';
import type { Retry } from './retry';

/**
 * What other services may know of the payment service: wallets kept as append-only ledgers
 * (docs/payments.md) and hosted checkouts. Amounts between services are integer kobo; the
 * decimal strings of the API are made at its edge.
 */

export const CURRENCY = 'NGN';

/** The 422 of a debit the wallet's balance does not cover. */
export const INSUFFICIENT_BALANCE = 'Insufficient balance';

/** A business reference: what makes a ledger entry or a checkout happen once; taken as sent. */
export const ledgerReference = () =>
  Joi.string()
    .min(1)
    .max(100)
    .pattern(/^[A-Za-z0-9][A-Za-z0-9_.:=-]*$/)
    .messages({
      'string.pattern.base':
        '{{#label}} may hold letters, digits and _ . : = - (starting with a letter or digit)',
    });

/** An amount of kobo that moves: a positive whole number, at most 10 billion naira. */
export const MAX_AMOUNT_KOBO = 1_000_000_000_000;
const amountKobo = () => Joi.number().integer().min(1).max(MAX_AMOUNT_KOBO);

/** The reference of a delivery's refund: at most one per delivery. */
export const refundReference = (deliveryId: string) => `refund:${deliveryId}`;

/** The debit a refund's reference names; undefined for any other reference. */
export const debitOfRefund = (reference: string): string | undefined =>
  reference.startsWith('refund:') ? reference.slice('refund:'.length) : undefined;

export const ENTRY_TYPES = ['CREDIT', 'DEBIT', 'REFUND'] as const;
export type EntryType = (typeof ENTRY_TYPES)[number];

/** A wallet as other services see it. */
export interface WalletBalance {
  userId: string;
  balanceKobo: number;
  /** The sequence number of the wallet's last entry; 0 for a wallet with none. */
  sequence: number;
  updatedAt: string | null;
}

/** One entry of a wallet's ledger, as posted. */
export interface LedgerEntry {
  /** `<walletId>:<sequence>`. */
  id: string;
  walletId: string;
  sequence: number;
  type: EntryType;
  /** Signed: negative for a debit. */
  amountKobo: number;
  balanceKobo: number;
  reference: string;
  description: string | null;
  createdAt: string;
}

/** The answer of a posting: the entry (the first one's, when the reference was posted before). */
export interface Posting {
  entry: LedgerEntry;
  /** True when this call found the reference already posted and changed nothing. */
  replayed: boolean;
}

/** A debit or a credit: an amount moved on a wallet, once per reference. */
export interface PostingParams {
  userId: string;
  amountKobo: number;
  /** The delivery (or other thing) paid for, the credit's own reference; once per reference, ever. */
  reference: string;
  description?: string;
}

export const postingParams = Joi.object<PostingParams, true>({
  userId: uuid().required(),
  amountKobo: amountKobo().required(),
  reference: ledgerReference().required(),
  description: Joi.string().trim().max(200),
});

export interface RefundParams {
  userId: string;
  /** The reference of the debit given back, whole; the refund's own is `refund:<debitReference>`. */
  debitReference: string;
  description?: string;
}

export const refundParams = Joi.object<RefundParams, true>({
  userId: uuid().required(),
  debitReference: ledgerReference().required(),
  description: Joi.string().trim().max(200),
});

export interface BalanceParams {
  userId: string;
}

export const balanceParams = Joi.object<BalanceParams, true>({ userId: uuid().required() });

/**
 * A pay-on-delivery delivery's money, once delivered: the collecting courier owes the cash
 * (their cash account is debited) and the remit target is credited, each once per delivery.
 */
export interface CollectOnDeliveryParams {
  deliveryId: string;
  /** The courier who collected the cash. */
  courierId: string;
  /** Whose wallet is credited: the merchant's, or a courier's (COURIER_WALLET). */
  remitToUserId: string;
  amountKobo: number;
  description?: string;
}

export const collectOnDeliveryParams = Joi.object<CollectOnDeliveryParams, true>({
  deliveryId: uuid().required(),
  courierId: uuid().required(),
  remitToUserId: uuid().required(),
  amountKobo: amountKobo().required(),
  description: Joi.string().trim().max(200),
});

export interface CollectedOnDelivery {
  /** The debit of the courier's cash account (`cash:<courierId>`). */
  collected: Posting;
  /** The credit of the remit target's wallet. */
  credited: Posting;
}

/** What a checkout pays for; named in its outcome so that the payer's service acts on it. */
export interface CheckoutPurpose {
  /** `DELIVERY` (the order service) or `WALLET_FUNDING` (the payment service itself). */
  kind: 'DELIVERY' | 'WALLET_FUNDING';
  /** The delivery's id for DELIVERY; the user's id for WALLET_FUNDING. */
  id: string;
}

/**
 * Who pays a checkout: its user, the merchant (a wallet funding, a delivery's creator), or a
 * delivery's recipient, who has no wallet with us. Money the checkout cannot use goes back to
 * its payer: to the merchant's wallet, or to the recipient at the provider (decision 168).
 */
export const CHECKOUT_PAYERS = ['MERCHANT', 'RECIPIENT'] as const;
export type CheckoutPayer = (typeof CHECKOUT_PAYERS)[number];

/** Who pays a delivery's share: its creator is the merchant. */
export const payerOf = (share: 'creator' | 'recipient'): CheckoutPayer =>
  share === 'recipient' ? 'RECIPIENT' : 'MERCHANT';

export interface StartCheckoutParams {
  /** The user who asked for the checkout (the merchant). */
  userId: string;
  /** MERCHANT when not given. */
  payer?: CheckoutPayer;
  amountKobo: number;
  purpose: CheckoutPurpose;
  /** The payer's e-mail, which the provider asks for. */
  email: string;
  /** Shown on the checkout page. */
  merchantName: string;
  /**
   * Makes the call idempotent: the same key answers the same checkout (a delivery's id, an
   * Idempotency-Key's token, a fresh UUID when the caller has neither).
   */
  idempotencyKey: string;
}

export const startCheckoutParams = Joi.object<StartCheckoutParams, true>({
  userId: uuid().required(),
  amountKobo: amountKobo().required(),
  purpose: Joi.object<CheckoutPurpose, true>({
    kind: Joi.string().valid('DELIVERY', 'WALLET_FUNDING').required(),
    id: uuid().required(),
  }).required(),
  payer: Joi.string().valid(...CHECKOUT_PAYERS),
  email: Joi.string().trim().email({ tlds: false }).max(254).required(),
  merchantName: Joi.string().trim().min(1).max(120).required(),
  idempotencyKey: Joi.string().min(1).max(200).required(),
});

/** The external checkout payload of the spec: what the provider's initialize answered. */
export interface CheckoutStart {
  status: boolean;
  message: string;
  data: { authorization_url: string; access_code: string; reference: string };
}

export type CheckoutStatus = 'PENDING' | 'PAID' | 'DECLINED' | 'EXPIRED';

export interface CheckoutView {
  reference: string;
  status: CheckoutStatus;
  amountKobo: number;
  purpose: CheckoutPurpose;
  expiresAt: string;
}

export interface ReferenceParams {
  reference: string;
}

export const referenceParams = Joi.object<ReferenceParams, true>({
  reference: ledgerReference().required(),
});

/** A paid checkout's money that its purpose cannot use, given back to its payer, once. */
export interface GiveBackParams {
  reference: string;
  /**
   * Who paid it, when the caller knows better than the checkout: one opened before checkouts
   * named their payer (decision 168) says MERCHANT. The checkout's own word comes first.
   */
  payer?: CheckoutPayer;
  /** The wallet credit's description, when it goes to the merchant's wallet. */
  description?: string;
}

export const giveBackParams = Joi.object<GiveBackParams, true>({
  reference: ledgerReference().required(),
  payer: Joi.string().valid(...CHECKOUT_PAYERS),
  description: Joi.string().trim().max(200),
});

/** A delivery's checkout to close; `payer` names it for one opened before checkouts did. */
export interface CloseCheckoutParams {
  reference: string;
  payer?: CheckoutPayer;
}

export const closeCheckoutParams = Joi.object<CloseCheckoutParams, true>({
  reference: ledgerReference().required(),
  payer: Joi.string().valid(...CHECKOUT_PAYERS),
});

/**
 * Where a checkout's money went back: the merchant's wallet (`refund:<reference>` credited),
 * or its payer at the provider (a refund asked for, or to be asked for by the sweep).
 */
export interface GivenBack {
  to: 'WALLET' | 'PAYER';
}

export interface PaymentActions {
  /** Takes money from a wallet; 422 INSUFFICIENT_BALANCE when it does not cover it. */
  'payment.debit': { params: PostingParams; answer: Posting };
  /** Gives a debit back, whole, once per debit (decision 163). */
  'payment.refund': { params: RefundParams; answer: Posting };
  /** Adds money to a wallet (an operator's credit, a paid funding checkout). */
  'payment.credit': { params: PostingParams; answer: Posting };
  'payment.balance': { params: BalanceParams; answer: WalletBalance };
  /** What a courier owes in cash collected on delivery (0 when nothing). */
  'payment.cashOwed': { params: { courierId: string }; answer: { owedKobo: number } };
  /** Records a pay-on-delivery: the courier's debt, then the target's credit; once each. */
  'payment.collectOnDelivery': { params: CollectOnDeliveryParams; answer: CollectedOnDelivery };
  /** Opens a hosted checkout with the configured provider. */
  'payment.startCheckout': { params: StartCheckoutParams; answer: CheckoutStart };
  'payment.checkout': { params: ReferenceParams; answer: CheckoutView | null };
  /** The outcome's consumer has acted on it: the sweep stops sending it again. */
  'payment.acknowledge': { params: ReferenceParams; answer: { acknowledged: boolean } };
  /** A delivery's paid checkout's money back to its payer, once (409 for one not paid). */
  'payment.giveBack': { params: GiveBackParams; answer: GivenBack };
  /**
   * Ends a delivery's checkout not paid yet, as its expiry would (the provider asked first):
   * its status after, PENDING while the provider reports a charge under way.
   */
  'payment.closeCheckout': { params: CloseCheckoutParams; answer: { status: CheckoutStatus } };
}

/** Every payment action is idempotent by its reference or key (or reads): each may be repeated. */
/**
 * The credit that gives a checkout's money to its user's wallet when its delivery cannot use
 * it (a share refunded, paid after the delivery or its checkout ended): once per checkout.
 */
export const checkoutRefundReference = (checkoutReference: string) => `refund:${checkoutReference}`;

export const PAYMENT_RETRY = {
  'payment.debit': 'safe',
  'payment.refund': 'safe',
  'payment.credit': 'safe',
  'payment.balance': 'safe',
  'payment.cashOwed': 'safe',
  'payment.collectOnDelivery': 'safe',
  'payment.startCheckout': 'safe',
  'payment.checkout': 'safe',
  'payment.acknowledge': 'safe',
  'payment.giveBack': 'safe',
  'payment.closeCheckout': 'safe',
} as const satisfies Record<keyof PaymentActions, Retry>;

/** A checkout's outcome, sent until its consumer acknowledges it (`payment.acknowledge`). */
export interface PaymentOutcome {
  reference: string;
  purpose: CheckoutPurpose;
  userId: string;
  amountKobo: number;
  /** When the outcome was decided (not when this copy was sent). */
  decidedAt: string;
}

export interface PaymentFailure extends PaymentOutcome {
  reason: 'DECLINED' | 'EXPIRED';
}

export interface PaymentEvents {
  'payment.succeeded': PaymentOutcome;
  'payment.failed': PaymentFailure;
}
