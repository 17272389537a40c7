import type Redis from 'ioredis';
import { defineScripts } from './redis';

/**
 * At most `limit` places per subject within any `windowMs`, shared by every process through
 * Redis: a sorted set per subject whose members are the places taken, scored by when they were
 * taken. Places older than the window are dropped before counting, so a place never given
 * back frees itself; the set expires a window after its newest place, so an idle subject
 * leaves nothing behind.
 *
 * ARGV: limit, windowMs, member, now (ms; empty for Redis's own clock, so that processes'
 * clocks do not matter). A member already holding a place keeps it (a retried take counts
 * once). Answers {1, 0} when the place is taken, else {0, when the oldest place frees}.
 */
const TAKE_SCRIPT = `
local now = tonumber(ARGV[4])
if not now then
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZSCORE', KEYS[1], ARGV[3]) then return {1, 0} end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, tonumber(oldest[2]) + window}
end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], window)
return {1, 0}
`;

interface WindowCommands {
  takeWindowPlace(
    key: string,
    limit: number,
    windowMs: number,
    member: string,
    now: string,
  ): Promise<[number, number]>;
}

/** A window's limit is a count of places: a positive integer, else a RangeError. */
export function checkLimit(limit: number): void {
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new RangeError(`A window's limit must be a positive integer, not ${limit}`);
  }
}

export type WindowAnswer = { ok: true } | { ok: false; retryAt: number };

export class SlidingWindow {
  private readonly redis: Redis & WindowCommands;

  constructor(
    redis: Redis,
    private readonly keyPrefix: string,
    readonly windowMs: number,
  ) {
    if (!Number.isSafeInteger(windowMs) || windowMs < 1) {
      throw new RangeError(`A window's length must be a positive number of ms, not ${windowMs}`);
    }
    this.redis = defineScripts<WindowCommands>(redis, { takeWindowPlace: TAKE_SCRIPT });
  }

  /**
   * Takes a place for `member` in `subject`'s window unless `limit` are taken, else answers
   * when (ms since the epoch, in the clock used) the oldest place frees. `now` replaces
   * Redis's clock: for tests, and for callers that must agree with a clock of their own.
   */
  async take(subject: string, member: string, limit: number, now?: number): Promise<WindowAnswer> {
    checkLimit(limit);
    const [taken, retryAt] = await this.redis.takeWindowPlace(
      this.keyOf(subject),
      limit,
      this.windowMs,
      member,
      now === undefined ? '' : String(Math.floor(now)),
    );
    return taken === 1 ? { ok: true } : { ok: false, retryAt };
  }

  /**
   * The places `subject` holds, oldest first: each member and when (ms since the epoch) it took
   * its place, with the Redis server's time now (`now`), to compare them with whatever clock
   * this process keeps. Places past the window may still be listed until the next `take`
   * drops them; places taken with a `now` of the caller's are in that clock.
   */
  async places(
    subject: string,
  ): Promise<{ now: number; places: { member: string; takenAt: number }[] }> {
    const answers = await this.redis
      .multi()
      .time()
      .zrange(this.keyOf(subject), 0, -1, 'WITHSCORES')
      .exec();
    const [time, listed] = (answers ?? []).map(([err, value]) => {
      if (err) throw err;
      return value;
    }) as [[string, string], string[]];
    const places = [];
    for (let i = 0; i + 1 < listed.length; i += 2) {
      places.push({ member: listed[i], takenAt: Number(listed[i + 1]) });
    }
    return { now: Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000), places };
  }

  /** Gives `member`'s place back, as if it had never been taken. Safe to repeat. */
  async give(subject: string, member: string): Promise<void> {
    await this.redis.zrem(this.keyOf(subject), member);
  }

  private keyOf(subject: string): string {
    return `${this.keyPrefix}${subject}`;
  }
}
