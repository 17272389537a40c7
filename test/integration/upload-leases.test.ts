import { connectRedis, createRedis } from '../../libs/redis';
import { UploadLeases } from '../../services/gateway/upload-leases';
import { eventually } from '../support/eventually';
import { isolation } from '../support/stack';

/** UploadLeases against the real Redis: what every gateway replica shares. */
describe('UploadLeases', () => {
  const prefix = `${isolation().namespace}:uploads:`;
  const redis = createRedis(process.env.REDIS_URL as string, 'upload-leases-test', () => undefined);

  beforeAll(() => connectRedis(redis));
  afterAll(() => redis.disconnect());

  it('grants up to the limit per subject, and one more once a lease is given back', async () => {
    const leases = new UploadLeases(redis, prefix, 60_000);
    const first = await leases.acquire('key-a', 2);
    const second = await leases.acquire('key-a', 2);
    expect(first && second).toBeDefined();
    expect(await leases.acquire('key-a', 2)).toBeUndefined();
    // Another key counts on its own.
    expect(await leases.acquire('key-b', 2)).toBeDefined();
    await first?.release();
    await first?.release(); // twice: still one lease given back
    expect(await leases.acquire('key-a', 2)).toBeDefined();
    expect(await leases.acquire('key-a', 2)).toBeUndefined();
  });

  it('shares the count between instances, as between gateway replicas', async () => {
    const one = new UploadLeases(redis, prefix, 60_000);
    const other = new UploadLeases(redis, prefix, 60_000);
    expect(await one.acquire('key-c', 1)).toBeDefined();
    expect(await other.acquire('key-c', 1)).toBeUndefined();
  });

  it('frees a lease that is never given back once it expires, and leaves no key behind', async () => {
    const leases = new UploadLeases(redis, prefix, 300);
    expect(await leases.acquire('key-d', 1)).toBeDefined(); // its holder dies: never released
    expect(await leases.acquire('key-d', 1)).toBeUndefined();
    await eventually(async () => expect(await leases.acquire('key-d', 1)).toBeDefined(), {
      timeout: 5_000,
      interval: 50,
    });
    await eventually(async () => expect(await redis.exists(`${prefix}key-d`)).toBe(0), {
      timeout: 5_000,
      interval: 50,
    });
  });

  it('rejects when Redis cannot be reached, so that the gateway answers 503', async () => {
    const down = createRedis('redis://127.0.0.1:1', 'upload-leases-down', () => undefined);
    try {
      await expect(new UploadLeases(down, prefix, 1000).acquire('key-e', 1)).rejects.toThrow();
    } finally {
      down.disconnect();
    }
  });
});
