import { randomUUID } from 'node:crypto';
import type Redis from 'ioredis';

/**
 * Uploads in progress per API key, shared by every gateway replica through Redis. Each upload
 * holds a lease: a member of the key's sorted set scored by when it expires, in Redis's own
 * clock (replicas' clocks do not matter). Expired leases are dropped before counting, so a
 * lease whose gateway died without giving it back frees itself after `leaseMs`; the set
 * itself expires with its newest lease.
 */
const ACQUIRE_SCRIPT = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`;

type LeaseRedis = Redis & {
  acquireUploadLease(key: string, limit: number, leaseMs: number, id: string): Promise<number>;
};

export interface UploadLease {
  /** Gives the lease back; a failure is left to the lease's expiry. Once, however called. */
  release(): Promise<void>;
}

export class UploadLeases {
  private readonly redis: LeaseRedis;

  /** `leaseMs`: longer than any upload can last (FILE_TIMEOUT_MS and a margin). */
  constructor(
    redis: Redis,
    private readonly keyPrefix: string,
    readonly leaseMs: number,
  ) {
    if (!('acquireUploadLease' in redis)) {
      redis.defineCommand('acquireUploadLease', { numberOfKeys: 1, lua: ACQUIRE_SCRIPT });
    }
    this.redis = redis as LeaseRedis;
  }

  /** A lease for one more upload of `subject`, or undefined when it has `limit` already. */
  async acquire(subject: string, limit: number): Promise<UploadLease | undefined> {
    const key = `${this.keyPrefix}${subject}`;
    const id = randomUUID();
    const granted = await this.redis.acquireUploadLease(key, limit, this.leaseMs, id);
    if (granted !== 1) return undefined;
    let released: Promise<void> | undefined;
    return {
      release: () => {
        released ??= this.redis.zrem(key, id).then(
          () => undefined,
          () => undefined,
        );
        return released;
      },
    };
  }
}
