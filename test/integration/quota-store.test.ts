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

  it('counts the requests of one tick in one write to Redis, each exactly once', async () => {
    const limiter = new QuotaLimiter(redis, prefix);
    const quota = { limit: 30, windowSeconds: 60 };
    // A script's text goes once per connection; after that, its SHA.
    await limiter.consume('warm-up', quota);
    const writes = jest.spyOn(redis.stream, 'write');
    try {
      const decisions = await Promise.all(
        Array.from({ length: 50 }, () => limiter.consume('key-1', quota)),
      );
      expect(writes).toHaveBeenCalledTimes(1);
      expect(decisions.filter((d) => d.allowed)).toHaveLength(30);
      // Every request had a count of its own: 29 left after the first, down to 0.
      const remaining = decisions.map((d) => d.remaining).sort((a, b) => b - a);
      expect(remaining).toEqual([
        ...Array.from({ length: 30 }, (_, i) => 29 - i),
        ...Array.from({ length: 20 }, () => 0),
      ]);
      const peeked = await limiter.peek('key-1', quota);
      expect(peeked).toMatchObject({ allowed: false, remaining: 0 });
    } finally {
      writes.mockRestore();
    }
  });
});
