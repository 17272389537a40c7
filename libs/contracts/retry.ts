import { ACCOUNT_RETRY } from './account';
import { GEO_RETRY } from './geo';
import type { ActionName } from './index';
import { ORDER_RETRY } from './order';
import { PACKAGE_RETRY } from './package';
import { PAYMENT_RETRY } from './payment';
import { PRICING_RETRY } from './pricing';
import { MATCHING_RETRY } from './matching';
import { WEBHOOK_RETRY } from './webhook';

/**
 * Whether a call may be sent again, to another node, when the node it went to is lost before
 * answering (crashed, cut off from NATS), so that the caller cannot tell whether it ran:
 *
 * - `safe`: running it twice changes nothing twice (reads, quotes, writes that say so);
 * - `keyed`: safe only when the request carries an `Idempotency-Key` (`meta.idempotencyToken`),
 *   because the service names what it creates after the key (decision 32);
 * - `never`: everything else. Its caller sees the loss (503) and must not assume either outcome.
 *
 * Every action declares one: contract actions in their contract (`<SERVICE>_RETRY` next to
 * the action types), the others in their definition (`action({ retry, ... })`). The broker's
 * retry policy (`libs/resilience`) decides which failures are losses; this, how many times.
 */
export type Retry = 'safe' | 'keyed' | 'never';

/** Attempts after the first for a call that may be repeated: enough for two lost nodes. */
export const SAFE_RETRIES = 3;

/** Every contract action's kind, as its contract declares it. */
export const CONTRACT_RETRY: Readonly<Record<ActionName, Retry>> = {
  ...ACCOUNT_RETRY,
  ...GEO_RETRY,
  ...ORDER_RETRY,
  ...PACKAGE_RETRY,
  ...PAYMENT_RETRY,
  ...PRICING_RETRY,
  ...MATCHING_RETRY,
  ...WEBHOOK_RETRY,
};

/** moleculer's per-call `retries` option for an action of this kind, called with `meta`. */
export function retriesFor(retry: Retry, meta?: { idempotencyToken?: unknown }): number {
  if (retry === 'safe') return SAFE_RETRIES;
  if (retry === 'keyed' && typeof meta?.idempotencyToken === 'string') return SAFE_RETRIES;
  return 0;
}
