import { quotaStoreUnavailable, type QuotaLimiter } from '../../../services/gateway/quota';

/**
 * Requests counted in memory by subject, as Redis would, against `quota`; while `state.down`
 * every count fails as Redis away does. `peek` says whether one more would pass.
 */
export function fakeLimiter(quota: { limit: number }, options: { down?: boolean } = {}) {
  const state = { down: options.down ?? false };
  const counts = new Map<string, number>();
  const decide = (allowed: boolean, count: number) => ({
    allowed,
    limit: quota.limit,
    remaining: Math.max(0, quota.limit - count),
    resetSeconds: 60,
  });
  // Counted or read when called, as Redis does in the order of the calls; answered later.
  const limiter = {
    async peek(subject: string) {
      if (state.down) throw quotaStoreUnavailable();
      const count = counts.get(subject) ?? 0;
      return decide(count < quota.limit, count);
    },
    async consume(subject: string) {
      if (state.down) throw quotaStoreUnavailable();
      const count = (counts.get(subject) ?? 0) + 1;
      counts.set(subject, count);
      return decide(count <= quota.limit, count);
    },
    async giveBack(subject: string) {
      if (state.down) throw quotaStoreUnavailable();
      counts.set(subject, (counts.get(subject) ?? 1) - 1);
    },
  };
  // Only peek, consume and giveBack are called by the guards.
  return { counts, state, limiter: limiter as unknown as QuotaLimiter };
}
