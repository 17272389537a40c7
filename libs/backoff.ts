/** How long to wait before trying again: doubling from a base, capped. */
export interface Backoff {
  baseMs: number;
  maxMs: number;
}

/**
 * The wait after the n-th failed attempt (1, 2, ...): the base, doubled each time, spread by
 * ±20 % with `random` in [0, 1), capped, so that many retries of one outage do not all come
 * back at once (0.5, the default, spreads nothing).
 */
export function backoffMs(failedAttempts: number, backoff: Backoff, random = 0.5): number {
  // 2 ** 40 already exceeds any cap: the exponent is bounded so that the product stays finite.
  const exponent = Math.min(Math.max(failedAttempts, 1) - 1, 40);
  const plain = Math.min(backoff.maxMs, backoff.baseMs * 2 ** exponent);
  // Capped after the spread too: the longest wait is the one configured, never a fifth more.
  return Math.min(backoff.maxMs, Math.round(plain * (0.8 + 0.4 * random)));
}
