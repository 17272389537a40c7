import { randomUUID } from 'node:crypto';
import type Redis from 'ioredis';
import { SlidingWindow } from '../../libs/sliding-window';

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
export class UploadLeases {
  private readonly window: SlidingWindow;

  /** `leaseMs`: longer than any upload can last (FILE_TIMEOUT_MS and a margin). */
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
    const answer = await this.window.take(subject, id, limit);
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
