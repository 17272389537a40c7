import { randomUUID } from 'node:crypto';
import type Redis from 'ioredis';
import { lastUploadWritesMs, type Config } from '../../libs/config';
import { SlidingWindow } from '../../libs/sliding-window';
import { undoneIfFailed } from '../../libs/redis';

export interface UploadLease {
  /** Gives the lease back; a failure is left to the lease's expiry. Once, however called. */
  release(): Promise<void>;
}

/**
 * Uploads in progress per API key, shared by every gateway replica through Redis. Each upload
 * holds a lease, a place in the key's sliding window (Redis's own clock, so replicas' clocks
 * do not matter): a lease whose gateway died without giving it back frees itself after
 * `leaseMs`, and the key's set expires with its newest lease.
 */
/**
 * How long a transfer's lease is held if its gateway dies before giving it back: longer than
 * the longest transfer. A download waits up to S3_TIMEOUT_MS for the object's headers before its
 * FILE_TIMEOUT_MS starts. An upload waits up to REDIS_COMMAND_TIMEOUT_MS on its day's
 * allowance before its body's FILE_TIMEOUT_MS, and in the gateway's process, whose lease waits
 * for the action, may then make its last writes (`lastUploadWritesMs`) and count the file
 * (REDIS_COMMAND_TIMEOUT_MS); a margin covers writing the answer. Given back as the transfer
 * ends, a lease is held no longer then.
 */
export const transferLeaseMs = (
  config: Pick<Config, 'redisCommandTimeoutMs'> & {
    files: Pick<Config['files'], 'timeoutMs'>;
    s3: Pick<Config['s3'], 'timeoutMs'>;
  },
) =>
  config.files.timeoutMs +
  lastUploadWritesMs(config.s3.timeoutMs) +
  2 * config.redisCommandTimeoutMs +
  5_000;

export class UploadLeases {
  private readonly window: SlidingWindow;

  /** `leaseMs`: longer than any transfer can last (`transferLeaseMs`). */
  constructor(
    redis: Redis,
    keyPrefix: string,
    readonly leaseMs: number,
  ) {
    this.window = new SlidingWindow(redis, keyPrefix, leaseMs);
  }

  /** A lease for one more upload of `subject`, or undefined when it has `limit` already. */
  async acquire(subject: string, limit: number): Promise<UploadLease | undefined> {
    const id = randomUUID();
    const answer = await undoneIfFailed(
      () => this.window.take(subject, id, limit),
      () => this.window.give(subject, id),
    );
    if (!answer.ok) return undefined;
    let released: Promise<void> | undefined;
    return {
      release: () => {
        released ??= this.window.give(subject, id).then(
          () => undefined,
          () => undefined,
        );
        return released;
      },
    };
  }
}
