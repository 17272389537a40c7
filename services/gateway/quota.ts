import type { ChainableCommander, default as Redis } from 'ioredis';
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

// Fixed window per key: the first count of a window sets its expiry. ARGV[2] requests are
// counted at once (those of one key in one turn of the event loop: QuotaLimiter), atomically,
// so every gateway replica shares the same count; 0 when the turn's requests only read it,
// which then writes nothing before the window starts.
const CONSUME_SCRIPT = `
local added = tonumber(ARGV[2])
if added == 0 and redis.call('EXISTS', KEYS[1]) == 0 then return {0, tonumber(ARGV[1])} end
local count = redis.call('INCRBY', KEYS[1], added)
if count == added then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {count, ttl}
`;

// One count taken back, its window's expiry kept. A window that has ended (its key gone) is
// left alone: a negative count without an expiry would be a credit that never ends.
const GIVE_BACK_SCRIPT = `
if tonumber(redis.call('GET', KEYS[1]) or '0') > 0 then redis.call('DECR', KEYS[1]) end
`;

interface QuotaCommands {
  consumeQuota(key: string, windowMs: number, count: number): Promise<[number, number]>;
  giveBackQuota(key: string): Promise<null>;
}

/**
 * The gateway's one Redis client: quota counts, and also the authentication throttle, the
 * idempotency records and the upload leases. The commands of one tick go out in one write (a
 * write per request was the largest cost of the gateway under load, docs/performance.md);
 * the quota counts of a tick are gathered per key before that (`QuotaLimiter`).
 */
export function quotaStoreClient(
  url: string,
  connectionName: string,
  onError: (err: Error) => void,
  commandTimeoutMs?: number,
): Redis {
  return createRedis(url, connectionName, onError, { batchPerTick: true, commandTimeoutMs });
}

/** The requests of one key waiting for this turn's count, in the order they came. */
interface PendingCount {
  windowMs: number;
  waiters: {
    /** 1 to be counted, 0 to read the count as it stands after the requests before it. */
    adds: 0 | 1;
    resolve: (counted: [number, number]) => void;
    reject: (err: unknown) => void;
  }[];
}

type QuotaPipeline = ChainableCommander & {
  consumeQuota(key: string, windowMs: number, count: number): ChainableCommander;
};

export class QuotaLimiter {
  private readonly redis: Redis & QuotaCommands;
  private pending = new Map<string, PendingCount>();

  constructor(
    redis: Redis,
    private readonly keyPrefix: string,
  ) {
    this.redis = defineScripts<QuotaCommands>(redis, {
      consumeQuota: CONSUME_SCRIPT,
      giveBackQuota: GIVE_BACK_SCRIPT,
    });
  }

  /**
   * Counts one request of `subject`; refused once the window holds more than the limit. The
   * requests of one key in one turn of the event loop are counted by one command that adds
   * them all (decision 82): each still gets a count of its own, as if counted one by one
   * without another replica's count between them, so every replica counts exactly.
   */
  async consume(subject: string, quota: Quota): Promise<QuotaDecision> {
    const [count, ttlMs] = await this.reach(() =>
      this.countInThisTurn(this.keyOf(subject, quota), quota.windowSeconds * 1000, 1),
    );
    return decide(quota, count, count <= quota.limit, ttlMs);
  }

  /**
   * Whether one more request of `subject` would be allowed, without counting it. Read in
   * order with the counts of the turn, so that every request counted before it is seen.
   */
  async peek(subject: string, quota: Quota): Promise<QuotaDecision> {
    const [count, ttlMs] = await this.reach(() =>
      this.countInThisTurn(this.keyOf(subject, quota), quota.windowSeconds * 1000, 0),
    );
    return decide(quota, count, count < quota.limit, ttlMs);
  }

  /** Uncounts one request of `subject` that `consume` counted in the current window. */
  async giveBack(subject: string, quota: Quota): Promise<void> {
    await this.reach(() => this.redis.giveBackQuota(this.keyOf(subject, quota)));
  }

  private countInThisTurn(key: string, windowMs: number, adds: 0 | 1): Promise<[number, number]> {
    return new Promise((resolve, reject) => {
      if (this.pending.size === 0) setImmediate(() => this.sendCounts());
      let batch = this.pending.get(key);
      if (!batch) {
        batch = { windowMs, waiters: [] };
        this.pending.set(key, batch);
      }
      batch.waiters.push({ adds, resolve, reject });
    });
  }

  /** One write for the turn: a command per key, each adding its requests. */
  private sendCounts(): void {
    const batches = [...this.pending];
    this.pending = new Map();
    const failAll = (err: unknown) => {
      for (const [, { waiters }] of batches) for (const waiter of waiters) waiter.reject(err);
    };
    try {
      const pipeline = this.redis.pipeline() as QuotaPipeline;
      for (const [key, { windowMs, waiters }] of batches) {
        pipeline.consumeQuota(key, windowMs, sumOf(waiters.map((waiter) => waiter.adds)));
      }
      pipeline
        .exec()
        .then((results) =>
          batches.forEach(([, { waiters }], index) => {
            // Each key's answer on its own: one that failed fails only its requests.
            try {
              const [err, counted] = results?.[index] ?? [new Error('not counted')];
              if (err) throw err;
              const [total, ttlMs] = counted as [number, number];
              const counts = countsOfBatch(
                total,
                waiters.map((waiter) => waiter.adds),
              );
              waiters.forEach((waiter, i) => waiter.resolve([counts[i], ttlMs]));
            } catch (err) {
              waiters.forEach((waiter) => waiter.reject(err));
            }
          }),
        )
        // A waiter settled already ignores a second answer.
        .catch(failAll);
    } catch (err) {
      failAll(err);
    }
  }

  private keyOf(subject: string, quota: Quota): string {
    return `${this.keyPrefix}${subject}:${quota.windowSeconds}`;
  }

  /** Without Redis nothing can be counted: every caller answers the same 503. */
  private reach<T>(command: () => Promise<T>): Promise<T> {
    return orUnavailable(command, quotaStoreUnavailable);
  }
}

/**
 * The count of each request of a batch, in their order, when the window's count after them
 * is `total` and each added `adds[i]` (1, or 0 for a read): as if counted one by one, the
 * first counted `total - counted + 1`, up to `total` for the last; a read sees the count
 * after those before it.
 */
export function countsOfBatch(total: number, adds: readonly number[]): number[] {
  let count = total - sumOf(adds);
  return adds.map((added) => (count += added));
}

const sumOf = (numbers: readonly number[]) => numbers.reduce((sum, n) => sum + n, 0);

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
