import type Redis from 'ioredis';
import { shareCounter, type AllowanceShare } from '../../libs/contracts/file';
import { serviceUnavailable, tooManyRequests } from '../../libs/errors';
import { readableBytes } from './sizes';
import { defineScripts } from '../../libs/redis';

/** A day's count outlives its day by a day: long enough for any clock between replicas. */
const KEPT_SECONDS = 2 * 86_400;

/** The UTC day a count belongs to: `2026-12-05`. */
export const budgetDay = (now: Date): string => now.toISOString().slice(0, 10);

/** Seconds until the next UTC midnight, when every user's count starts again (at least 1). */
export function secondsToNextDay(now: Date): number {
  const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  return Math.max(1, Math.ceil((next - now.getTime()) / 1000));
}

/** What `check` says once a share stored its day's bytes. */
export function budgetSpent(limitBytes: number, now: Date, share: AllowanceShare) {
  const who = share.publishable
    ? `This account's publishable keys stored their ${readableBytes(limitBytes)}`
    : `This account stored its ${readableBytes(limitBytes)}`;
  return tooManyRequests(
    `${who} of uploads for today ` +
      '(FILE_MAX_UPLOAD_BYTES_PER_USER_PER_DAY); uploads open again at 00:00 UTC (see `Retry-After`)',
    secondsToNextDay(now),
  );
}

/** What one upload added to its share's day. */
export interface Spent {
  share: AllowanceShare;
  bytes: number;
  at: Date;
}

// A count that ended (its key expired) is left alone: a negative one would be a credit.
const GIVE_BACK_BYTES = `
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('DECRBY', KEYS[1], ARGV[1]) end
`;

interface BudgetCommands {
  giveBackUploadBytes(key: string, bytes: number): Promise<null>;
}

/**
 * The bytes each user stored in a UTC day, shared by every file replica through Redis: an
 * upload is refused (429 until midnight UTC) once its share's count reached the limit, and each
 * stored file adds its size. A user's publishable keys count apart from its server keys
 * (`AllowanceShare`, decision 158), each share up to the limit. Counted when stored, so uploads under way together may take a
 * user past the limit by what they carry (bounded by `FILE_MAX_UPLOADS_PER_KEY`, the files of
 * a request and `FILE_MAX_BYTES`); refused and failed files count nothing, nor, once given back
 * (`giveBack`), those deleted because nobody was answered.
 */
export class UploadBudget {
  private readonly redis: Redis & BudgetCommands;

  constructor(
    redis: Redis,
    private readonly keyPrefix: string,
    readonly limitBytes: number,
  ) {
    this.redis = defineScripts<BudgetCommands>(redis, { giveBackUploadBytes: GIVE_BACK_BYTES });
  }

  private key(share: AllowanceShare, now: Date) {
    return `${this.keyPrefix}${shareCounter(share)}:${budgetDay(now)}`;
  }

  /** Refuses the upload (429) when its share stored the day's bytes; 503 without Redis. */
  async check(share: AllowanceShare, now = new Date()): Promise<void> {
    let stored: string | null;
    try {
      stored = await this.redis.get(this.key(share, now));
    } catch {
      throw serviceUnavailable('The upload allowance cannot be read; retry in a few seconds');
    }
    if (Number(stored ?? 0) >= this.limitBytes) throw budgetSpent(this.limitBytes, now, share);
  }

  /** Adds what an upload stored to its share's day; answers what it counted, and when. */
  async spend(share: AllowanceShare, bytes: number, now = new Date()): Promise<Spent | null> {
    if (bytes <= 0) return null;
    const key = this.key(share, now);
    const results = await this.redis.multi().incrby(key, bytes).expire(key, KEPT_SECONDS).exec();
    const failed = results?.find(([err]) => err !== null)?.[0];
    if (!results || failed) throw failed ?? new Error('the upload allowance was not counted');
    return { share, bytes, at: now };
  }

  /**
   * Takes back what `spend` counted for files deleted since (an upload nobody was answered):
   * from the day it was counted in, and only while that day's count is kept.
   */
  async giveBack({ share, bytes, at }: Spent): Promise<void> {
    await this.redis.giveBackUploadBytes(this.key(share, at), bytes);
  }
}
