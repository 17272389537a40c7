import type { CheckoutStatus } from '../../libs/contracts/payment';
import { escapeHtml, htmlDocument } from '../../libs/html';
import { formatNaira } from '../../libs/money';

/** What the sandbox's checkout page shows. */
export interface CheckoutPageData {
  reference: string;
  merchantName: string;
  amountKobo: number;
  currency: string;
  status: CheckoutStatus;
  expiresAt: Date;
}

/** The page's own path: forms post next to it, answers redirect back to it. */
export const checkoutPagePath = (reference: string) => `/checkout/${encodeURIComponent(reference)}`;

const STATUS_TEXT: Record<Exclude<CheckoutStatus, 'PENDING'>, string> = {
  PAID: 'Payment received. You may close this page.',
  DECLINED: 'Payment declined. Nothing was charged.',
  EXPIRED: 'This checkout has expired. Nothing was charged; ask the merchant for a new link.',
};

const button = (reference: string, action: 'pay' | 'decline', label: string) =>
  `<form method="post" action="${escapeHtml(`${checkoutPagePath(reference)}/${action}`)}">` +
  `<button type="submit" name="${action}">${label}</button></form>`;

/**
 * The sandbox checkout: the amount and the merchant's name, with Pay and Decline buttons
 * while it is open, its outcome once decided. Every text from outside is escaped.
 */
export function checkoutPage(data: CheckoutPageData): string {
  const merchant = escapeHtml(data.merchantName);
  const amount = `${escapeHtml(data.currency)} ${formatNaira(data.amountKobo)}`;
  const head =
    `<h1>Pay <span class="merchant">${merchant}</span></h1>` +
    `<p class="amount">${amount}</p>` +
    `<p>Reference <code>${escapeHtml(data.reference)}</code></p>`;
  if (data.status === 'PENDING') {
    const body =
      head +
      `<p>This is a sandbox checkout: no real money moves. Open until ${escapeHtml(data.expiresAt.toISOString())}.</p>` +
      button(data.reference, 'pay', 'Pay') +
      button(data.reference, 'decline', 'Decline');
    return htmlDocument(`Pay ${data.merchantName}`, body);
  }
  const body =
    head +
    `<p class="status" data-status="${data.status}">${escapeHtml(STATUS_TEXT[data.status])}</p>`;
  return htmlDocument(`Checkout ${data.status.toLowerCase()}`, body);
}

/** The small answer of a form post, before the browser follows its redirect. */
export function redirectPage(reference: string): string {
  const path = escapeHtml(checkoutPagePath(reference));
  return htmlDocument('Checkout', `<p>See <a href="${path}">the checkout</a>.</p>`);
}
