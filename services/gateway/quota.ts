import type Redis from 'ioredis';
import { serviceUnavailable } from '../../libs/errors';
import { createRedis, defineScripts, orUnavailable } from '../../libs/redis';

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
// atomic, so every gateway replica shares the same count (and shares the round trip with
// the other counts of its tick: quotaStoreClient).
const CONSUME_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {count, ttl}
`;

// The count so far and the time left, without counting: [0, -2] before the window starts.
const PEEK_SCRIPT = `
return {tonumber(redis.call('GET', KEYS[1]) or '0'), redis.call('PTTL', KEYS[1])}
`;

interface QuotaCommands {
  consumeQuota(key: string, windowMs: number): Promise<[number, number]>;
  peekQuota(key: string): Promise<[number, number]>;
}

/**
 * The gateway's one Redis client: quota counts, and also the authentication throttle, the
 * idempotency records and the upload leases. The commands of one tick go out in one write: a
 * write per request's quota count was the largest cost of the gateway under load
 * (docs/performance.md). Each count is still its own atomic script, so every replica still
 * counts exactly.
 */
export function quotaStoreClient(
  url: string,
  connectionName: string,
  onError: (err: Error) => void,
): Redis {
  return createRedis(url, connectionName, onError, { batchPerTick: true });
}

export class QuotaLimiter {
  private readonly redis: Redis & QuotaCommands;

  constructor(
    redis: Redis,
    private readonly keyPrefix: string,
  ) {
    this.redis = defineScripts<QuotaCommands>(redis, {
      consumeQuota: CONSUME_SCRIPT,
      peekQuota: PEEK_SCRIPT,
    });
  }

  /** Counts one request of `subject`; refused once the window holds more than the limit. */
  async consume(subject: string, quota: Quota): Promise<QuotaDecision> {
    const [count, ttlMs] = await this.reach(() =>
      this.redis.consumeQuota(this.keyOf(subject, quota), quota.windowSeconds * 1000),
    );
    return decide(quota, count, count <= quota.limit, ttlMs);
  }

  /** Whether one more request of `subject` would be allowed, without counting it. */
  async peek(subject: string, quota: Quota): Promise<QuotaDecision> {
    const [count, ttlMs] = await this.reach(() => this.redis.peekQuota(this.keyOf(subject, quota)));
    return decide(
      quota,
      count,
      count < quota.limit,
      ttlMs > 0 ? ttlMs : quota.windowSeconds * 1000,
    );
  }

  private keyOf(subject: string, quota: Quota): string {
    return `${this.keyPrefix}${subject}:${quota.windowSeconds}`;
  }

  /** Without Redis nothing can be counted: every caller answers the same 503. */
  private reach<T>(command: () => Promise<T>): Promise<T> {
    return orUnavailable(command, quotaStoreUnavailable);
  }
}

/** Redis, which keeps quotas, failed authentications and upload leases, cannot be reached. */
export const quotaStoreUnavailable = () =>
  serviceUnavailable('The quota store is unavailable; retry in a few seconds');

function decide(quota: Quota, count: number, allowed: boolean, ttlMs: number): QuotaDecision {
  return {
    allowed,
    limit: quota.limit,
    remaining: Math.max(0, quota.limit - count),
    resetSeconds: Math.max(1, Math.ceil(ttlMs / 1000)),
  };
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
