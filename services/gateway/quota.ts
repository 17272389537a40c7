import type Redis from 'ioredis';

export interface Quota {
  limit: number;
  windowSeconds: number;
}

export interface QuotaDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

// Fixed window per key: the first request of a window sets its expiry. One round trip,
// atomic, so every gateway replica shares the same count.
const CONSUME_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {count, ttl}
`;

type QuotaRedis = Redis & {
  consumeQuota(key: string, windowMs: number): Promise<[number, number]>;
};

export class QuotaLimiter {
  private readonly redis: QuotaRedis;

  constructor(
    redis: Redis,
    private readonly keyPrefix: string,
  ) {
    if (!('consumeQuota' in redis)) {
      redis.defineCommand('consumeQuota', { numberOfKeys: 1, lua: CONSUME_SCRIPT });
    }
    this.redis = redis as QuotaRedis;
  }

  async consume(subject: string, quota: Quota): Promise<QuotaDecision> {
    const key = `${this.keyPrefix}${subject}:${quota.windowSeconds}`;
    const [count, ttlMs] = await this.redis.consumeQuota(key, quota.windowSeconds * 1000);
    return {
      allowed: count <= quota.limit,
      limit: quota.limit,
      remaining: Math.max(0, quota.limit - count),
      resetSeconds: Math.max(1, Math.ceil(ttlMs / 1000)),
    };
  }
}

export function quotaHeaders(decision: QuotaDecision): Record<string, string> {
  const headers: Record<string, string> = {
    'RateLimit-Limit': String(decision.limit),
    'RateLimit-Remaining': String(decision.remaining),
    'RateLimit-Reset': String(decision.resetSeconds),
  };
  if (!decision.allowed) headers['Retry-After'] = String(decision.resetSeconds);
  return headers;
}
