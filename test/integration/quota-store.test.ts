import { connectRedis } from '../../libs/redis';
import { QuotaLimiter, quotaStoreClient } from '../../services/gateway/quota';
import { isolation } from '../support/stack';

/** The gateway's own Redis client, against the real Redis: what every request's quota costs. */
describe("the gateway's quota store", () => {
  const redis = quotaStoreClient(
    process.env.REDIS_URL as string,
    'quota-store-test',
    () => undefined,
  );
  const prefix = `${isolation().namespace}:quota:`;

  beforeAll(() => connectRedis(redis));
  afterAll(() => redis.disconnect());

  /**
   * What `work` writes to Redis, once the limiter's script is loaded on the connection (its
   * text goes once per connection; after that, its SHA), and how many scripts that runs.
   */
  async function writtenBy<T>(limiter: QuotaLimiter, work: () => Promise<T>) {
    await limiter.consume('warm-up', { limit: 1, windowSeconds: 60 });
    const writes = jest.spyOn(redis.stream, 'write');
    try {
      const result = await work();
      const sent = writes.mock.calls.map(([data]) => String(data));
      const scripts = sent.join('').match(/\$(7\r\nevalsha|4\r\neval)\r\n/gi)?.length ?? 0;
      return { result, writes: sent.length, scripts };
    } finally {
      writes.mockRestore();
    }
  }

  it('counts the requests of one tick in one write to Redis, each exactly once', async () => {
    const limiter = new QuotaLimiter(redis, prefix);
    const quota = { limit: 30, windowSeconds: 60 };
    const { result: decisions, writes } = await writtenBy(limiter, () =>
      Promise.all(Array.from({ length: 50 }, () => limiter.consume('key-1', quota))),
    );
    expect(writes).toBe(1);
    expect(decisions.filter((d) => d.allowed)).toHaveLength(30);
    // Every request had a count of its own: 29 left after the first, down to 0.
    const remaining = decisions.map((d) => d.remaining).sort((a, b) => b - a);
    expect(remaining).toEqual([
      ...Array.from({ length: 30 }, (_, i) => 29 - i),
      ...Array.from({ length: 20 }, () => 0),
    ]);
    expect(await redis.get(`${prefix}key-1:60`)).toBe('50');
  });

  it('reads a count in order with the counts of its turn, and counts nothing', async () => {
    const limiter = new QuotaLimiter(redis, prefix);
    const quota = { limit: 2, windowSeconds: 60 };
    expect(await limiter.peek('read-in-turn', quota)).toMatchObject({ allowed: true });
    expect(await redis.exists(`${prefix}read-in-turn:60`)).toBe(0);
    const [, second, , last] = await Promise.all([
      limiter.consume('read-in-turn', quota),
      limiter.peek('read-in-turn', quota),
      limiter.consume('read-in-turn', quota),
      limiter.peek('read-in-turn', quota),
    ]);
    expect(second).toMatchObject({ allowed: true, remaining: 1 });
    expect(last).toMatchObject({ allowed: false, remaining: 0 });
    expect(await redis.get(`${prefix}read-in-turn:60`)).toBe('2');
  });

  it('gives a count back within its window, never below nothing nor past the window', async () => {
    const limiter = new QuotaLimiter(redis, prefix);
    const quota = { limit: 2, windowSeconds: 60 };
    const key = `${prefix}given-back:60`;
    await limiter.consume('given-back', quota);
    await limiter.consume('given-back', quota);
    const ttlBefore = await redis.pttl(key);
    await limiter.giveBack('given-back', quota);
    expect(await redis.get(key)).toBe('1');
    // The window still ends when it did.
    expect(await redis.pttl(key)).toBeGreaterThan(0);
    expect(await redis.pttl(key)).toBeLessThanOrEqual(ttlBefore);
    expect(await limiter.consume('given-back', quota)).toMatchObject({ allowed: true });

    await redis.del(key);
    await limiter.giveBack('given-back', quota);
    expect(await redis.exists(key)).toBe(0);
  });

  it('counts the requests of one key in one turn with one command, however many keys', async () => {
    const limiter = new QuotaLimiter(redis, prefix);
    const quota = { limit: 5, windowSeconds: 60 };
    const keys = ['turn-a', 'turn-b', 'turn-c'];
    const {
      result: decisions,
      writes,
      scripts,
    } = await writtenBy(limiter, () =>
      Promise.all(
        keys.flatMap((key) => Array.from({ length: 8 }, () => limiter.consume(key, quota))),
      ),
    );
    expect(writes).toBe(1);
    expect(scripts).toBe(3);
    for (let k = 0; k < keys.length; k++) {
      const ofKey = decisions.slice(k * 8, k * 8 + 8);
      // In the order they came: the first five allowed, 4 down to 0 left, then refused.
      expect(ofKey.map((d) => d.allowed)).toEqual([
        ...Array(5).fill(true),
        ...Array(3).fill(false),
      ]);
      expect(ofKey.map((d) => d.remaining)).toEqual([4, 3, 2, 1, 0, 0, 0, 0]);
    }
  });

  it('lets two replicas together through exactly the limit, each request with a count of its own', async () => {
    const other = quotaStoreClient(
      process.env.REDIS_URL as string,
      'quota-store-other',
      () => undefined,
    );
    await connectRedis(other);
    try {
      const replicas = [new QuotaLimiter(redis, prefix), new QuotaLimiter(other, prefix)];
      const quota = { limit: 120, windowSeconds: 60 };
      // 300 requests, spread over both replicas and over several turns of the event loop.
      const decisions = await Promise.all(
        Array.from({ length: 300 }, async (_, i) => {
          for (let turn = 0; turn < i % 4; turn++) await new Promise((r) => setImmediate(r));
          return replicas[i % 2].consume('shared', quota);
        }),
      );
      const allowed = decisions.filter((d) => d.allowed);
      expect(allowed).toHaveLength(120);
      expect(allowed.map((d) => d.remaining).sort((a, b) => a - b)).toEqual(
        Array.from({ length: 120 }, (_, i) => i),
      );
      expect(await redis.get(`${prefix}shared:60`)).toBe('300');
    } finally {
      other.disconnect();
    }
  });

  it('fails only the requests of a key whose count failed, not the others of the turn', async () => {
    const limiter = new QuotaLimiter(redis, prefix);
    const quota = { limit: 10, windowSeconds: 60 };
    // A key holding a list: INCRBY on it fails (WRONGTYPE) inside the turn's pipeline.
    await redis.lpush(`${prefix}broken:60`, 'not a count');
    const outcomes = await Promise.allSettled([
      limiter.consume('broken', quota),
      limiter.consume('sound', quota),
      limiter.consume('broken', quota),
      limiter.consume('sound', quota),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual([
      'rejected',
      'fulfilled',
      'rejected',
      'fulfilled',
    ]);
    expect(outcomes[0]).toMatchObject({ reason: { code: 503 } });
    expect(outcomes[3]).toMatchObject({ value: { allowed: true, remaining: 8 } });
  });

  it('answers every waiting request 503 when Redis cannot be reached, none left hanging', async () => {
    const unreachable = quotaStoreClient(
      'redis://127.0.0.1:1',
      'quota-store-down',
      () => undefined,
    );
    try {
      const limiter = new QuotaLimiter(unreachable, prefix);
      const quota = { limit: 10, windowSeconds: 60 };
      const outcomes = await Promise.allSettled(
        ['a', 'a', 'b'].map((key) => limiter.consume(key, quota)),
      );
      for (const outcome of outcomes) {
        expect(outcome).toMatchObject({
          status: 'rejected',
          reason: { code: 503, message: expect.stringMatching(/quota store is unavailable/) },
        });
      }
    } finally {
      unreachable.disconnect();
    }
  });
});
