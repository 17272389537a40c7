import type { Config } from '../../libs/config';
import type { CheckoutPurpose } from '../../libs/contracts/payment';
import { serviceUnavailable, upstreamFailed, upstreamTimeout } from '../../libs/errors';
import { fetchOutbound, type Failed } from '../../libs/outbound-fetch';
import { isHttpsUrl } from '../../libs/schemas';
import { providerId, providerKobo, type VerifiedTransaction } from './checkout';

/** What a provider is asked to open: one transaction per attempt (`attemptReference`). */
export interface InitializeRequest {
  /** The checkout's own reference. */
  reference: string;
  /** The reference of this attempt, the transaction's at the provider. */
  providerReference: string;
  amountKobo: number;
  currency: string;
  email: string;
  purpose: CheckoutPurpose;
}

export interface Initialized {
  authorizationUrl: string;
  accessCode: string;
}

/** Where a checkout is paid. */
export interface CheckoutProvider {
  readonly name: Config['payment']['provider'];
  initialize(request: InitializeRequest): Promise<Initialized>;
  /**
   * What the provider says of a transaction: null when it knows none by that reference.
   * Throws (503/504/502) when it cannot tell. The sandbox has no record beyond ours: null.
   */
  verify(reference: string): Promise<VerifiedTransaction | null>;
  /**
   * Gives `amountKobo` of a paid transaction back to its payer: queued, or refused with the
   * provider's reason (a transaction already refunded whole, unknown, not settled). Throws
   * (503/504/502) when the provider cannot tell. The sandbox took no money: queued.
   */
  refund(request: RefundRequest): Promise<RefundAnswer>;
  /**
   * The refund of `amountKobo` (the whole) of a transaction that stands at the provider (in any
   * status but failed: one held for the merchant's attention may still be paid), or null when
   * none does: what a refund whose answer was lost became. Throws
   * (503/504/502) when the provider cannot tell. The sandbox keeps none: null.
   */
  refundOf(providerReference: string, amountKobo: number): Promise<ProviderRefundState | null>;
}

/** A refund at the provider: its id, and its status as the provider spells it. */
export interface ProviderRefundState {
  id: string;
  status: string;
}

export interface RefundRequest {
  /** The paid transaction, at the provider. */
  providerReference: string;
  amountKobo: number;
  currency: string;
  /** Why, for the merchant's side of the provider's records and the payer's. */
  note: string;
}

/** Queued (with the provider's id of the refund, when it said it), or refused and why. */
export type RefundAnswer = { queued: true; id: string | null } | { refused: string };

/** The sandbox: our own page at `<PUBLIC_BASE_URL>/checkout/<reference>`; nothing external. */
export function sandboxProvider(publicBaseUrl: string): CheckoutProvider {
  return {
    name: 'sandbox',
    async initialize({ reference }) {
      // The reference is the capability already; the access code only mirrors Paystack's shape.
      return { authorizationUrl: `${publicBaseUrl}/checkout/${reference}`, accessCode: reference };
    },
    async verify() {
      return null;
    },
    async refund() {
      return { queued: true, id: null };
    },
    async refundOf() {
      return null;
    },
  };
}

interface PaystackAnswer {
  status?: unknown;
  message?: unknown;
  data?: Record<string, unknown> | null;
}

const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);

/**
 * A verify answer (the largest: the customer, the card's authorization, the attempt's log) is
 * a few KB. 64 KiB leaves a wide margin and still bounds what a misbehaving provider, or
 * someone on its path, makes a payment node hold.
 */
export const PROVIDER_MAX_ANSWER_BYTES = 64 * 1024;

/**
 * A call that gave no answer to read, as the client is told: unreachable 503, late 504, and a
 * redirect or an oversized answer 502, as any other answer no such provider sends.
 */
function providerFailure(failed: Failed, timeoutMs: number) {
  switch (failed.failure) {
    case 'timeout':
      return upstreamTimeout(
        `The payment provider did not answer within ${timeoutMs} ms; retry in a few seconds`,
      );
    case 'unreachable':
      return serviceUnavailable('The payment provider cannot be reached; retry in a few seconds');
    case 'redirect':
    case 'too-large':
      return upstreamFailed(
        `The payment provider answered ${failed.reason}; retry later, and tell us if it lasts`,
      );
  }
}

/** Refunds read in one page of Paystack's list. */
const REFUNDS_PAGE = 100;

/** Whether a listed refund is of the transaction `transactionId` (named by id, or inline). */
const isOf = (transactionId: string) => (refund: unknown) => {
  const transaction = (refund as { transaction?: unknown } | null)?.transaction;
  const named =
    typeof transaction === 'object' && transaction !== null
      ? (transaction as { id?: unknown }).id
      : transaction;
  return providerId(named) === transactionId;
};

/**
 * A Paystack-compatible provider: `POST /transaction/initialize`,
 * `GET /transaction/verify/:reference`, `POST /refund` and `GET /refund?transaction=` with the
 * secret key, each within PAYSTACK_TIMEOUT_MS.
 * Failing to reach it is a 503, a late answer a 504, an error or a nonsensical answer a 502:
 * never a 500, and each says whether to retry.
 */
export function paystackProvider(settings: Config['payment']['paystack']): CheckoutProvider {
  const { baseUrl, timeoutMs } = settings;
  const secretKey = settings.secretKey ?? '';

  async function send(
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
  ): Promise<{ status: number; answer: PaystackAnswer }> {
    const res = await fetchOutbound(`${baseUrl}${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${secretKey}`,
        Accept: 'application/json',
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      timeoutMs,
      maxAnswerBytes: PROVIDER_MAX_ANSWER_BYTES,
    });
    if (!res.ok) throw providerFailure(res, timeoutMs);
    let answer: PaystackAnswer;
    try {
      answer = JSON.parse(res.text) as PaystackAnswer;
    } catch {
      throw upstreamFailed(
        `The payment provider answered ${res.status} without JSON; retry later, and tell us if it lasts`,
      );
    }
    if (res.status >= 500) {
      throw serviceUnavailable(
        `The payment provider failed (${res.status}); retry in a few seconds`,
      );
    }
    return { status: res.status, answer: answer ?? {} };
  }

  return {
    name: 'paystack',
    async initialize(request) {
      const { status, answer } = await send('POST', '/transaction/initialize', {
        email: request.email,
        amount: request.amountKobo,
        reference: request.providerReference,
        currency: request.currency,
        metadata: { purpose: request.purpose },
      });
      const url = text(answer.data?.authorization_url);
      const accessCode = text(answer.data?.access_code);
      if (status >= 300 || answer.status !== true || !url || !accessCode) {
        const said = text(answer.message) ?? `status ${status}`;
        throw upstreamFailed(`The payment provider refused the checkout: ${said}`);
      }
      // Handed to integrators and texted to recipients as the payment link: never a
      // `javascript:`, plain-http, credentialed or IP one, whatever the provider (or someone on
      // its path) says; and documented as the schemas' https URL.
      if (!isHttpsUrl(url)) {
        throw upstreamFailed(
          'The payment provider answered a payment link that is not https as a browser writes it (a host name, no user name or IP address)',
        );
      }
      return { authorizationUrl: url, accessCode };
    },
    async verify(reference) {
      const path = `/transaction/verify/${encodeURIComponent(reference)}`;
      const { status, answer } = await send('GET', path);
      // Paystack answers an unknown reference with 400/404 and `status: false`.
      if (status === 404 || (status === 400 && answer.status === false)) return null;
      const data = answer.data;
      // A number, or the whole number some of Paystack's answers write as a string.
      const amount = typeof data?.amount === 'number' ? data.amount : providerKobo(data?.amount);
      if (
        status >= 300 ||
        answer.status !== true ||
        typeof data?.status !== 'string' ||
        typeof amount !== 'number' ||
        !Number.isSafeInteger(amount)
      ) {
        const said = text(answer.message) ?? `status ${status}`;
        throw upstreamFailed(`The payment provider could not verify ${reference}: ${said}`);
      }
      // Another transaction's answer (a provider's fault, or something on its path) must not
      // pay this checkout, however well its amount and currency match.
      if (text(data.reference) !== reference) {
        throw upstreamFailed(
          `The payment provider answered the verification of ${reference} about another transaction`,
        );
      }
      return { status: data.status, amountKobo: amount, currency: text(data.currency) ?? '' };
    },
    async refund({ providerReference, amountKobo, currency, note }) {
      // Not idempotent at the provider: a second refund of a transaction refunded whole is
      // refused, which is what keeps a retry after a lost answer from paying twice.
      const { status, answer } = await send('POST', '/refund', {
        transaction: providerReference,
        amount: amountKobo,
        currency,
        customer_note: note,
        merchant_note: note,
      });
      if (status < 300 && answer.status === true) {
        return { queued: true, id: providerId(answer.data?.id) ?? null };
      }
      // Our key refused (PAYSTACK_SECRET_KEY wrong or revoked), a rate limit, a conflict of the
      // moment: nothing said of the refund itself, so the sweep asks again later.
      const ofTheMoment = [401, 403, 408, 409, 429].includes(status);
      if (status >= 400 && status < 500 && !ofTheMoment) {
        return { refused: text(answer.message) ?? `status ${status}` };
      }
      throw upstreamFailed(
        `The payment provider answered a refund of ${providerReference} with status ${status}; retry later`,
      );
    },
    async refundOf(providerReference, amountKobo) {
      // Paystack lists refunds by the transaction's id, which its verification gives.
      const verified = await send(
        'GET',
        `/transaction/verify/${encodeURIComponent(providerReference)}`,
      );
      if (
        verified.status === 404 ||
        (verified.status === 400 && verified.answer.status === false)
      ) {
        return null;
      }
      const transactionId = providerId(verified.answer.data?.id);
      if (verified.status >= 300 || verified.answer.status !== true || !transactionId) {
        throw upstreamFailed(
          `The payment provider could not verify ${providerReference}; retry later`,
        );
      }
      const listed = await send(
        'GET',
        `/refund?transaction=${encodeURIComponent(transactionId)}&perPage=${REFUNDS_PAGE}`,
      );
      const refunds: unknown = listed.answer.data;
      if (listed.status >= 300 || listed.answer.status !== true || !Array.isArray(refunds)) {
        throw upstreamFailed(
          `The payment provider could not list the refunds of ${providerReference}; retry later`,
        );
      }
      for (const refund of refunds as Record<string, unknown>[]) {
        const id = providerId(refund?.id);
        const refundStatus = text(refund?.status);
        if (!id || !refundStatus || refundStatus === 'failed') continue;
        // A list that ignored the filter, or a refund of part of it, is not this refund.
        if (isOf(transactionId)(refund) && providerKobo(refund.amount) === amountKobo) {
          return { id, status: refundStatus };
        }
      }
      // A whole page with other transactions' refunds: the filter was not applied, and the one
      // looked for may be on a later page. Not knowing is not "none".
      if (refunds.length >= REFUNDS_PAGE && !refunds.every(isOf(transactionId))) {
        throw upstreamFailed(
          `The payment provider listed other transactions' refunds for ${providerReference}; retry later`,
        );
      }
      return null;
    },
  };
}

export function checkoutProvider(config: Config['payment']): CheckoutProvider {
  return config.provider === 'paystack'
    ? paystackProvider(config.paystack)
    : sandboxProvider(config.publicBaseUrl);
}
