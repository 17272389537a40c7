import { randomUUID } from 'node:crypto';
import type Redis from 'ioredis';
import { connectRedis, createRedis } from '../../libs/redis';
import { CANCEL_LIMIT, CANCEL_WINDOW_MS, CancelWindow } from '../../services/order/cancel-window';
import { eventually } from '../support/eventually';
import { isolation } from '../support/stack';

const HOUR = 3_600_000;

/** CancelWindow against the real Redis, as every order replica shares it. */
describe('CancelWindow', () => {
  const clients: Redis[] = [];
  const client = async (name = 'cancel-window-test') => {
    const redis = createRedis(process.env.REDIS_URL as string, name, () => undefined);
    clients.push(redis);
    await connectRedis(redis);
    return redis;
  };
  let redis: Redis;
  /** Each test its own keys, so that runs and tests never share a window. */
  let keyPrefix: string;
  const window = (on: Redis = redis, windowMs = CANCEL_WINDOW_MS) =>
    new CancelWindow(on, { keyPrefix, limit: CANCEL_LIMIT, windowMs });

  beforeAll(async () => {
    redis = await client();
  });
  beforeEach(() => {
    keyPrefix = `${isolation().namespace}:cancels:`;
  });
  // Only those still open: disconnecting a closed client again arms a timer on its dead socket.
  afterAll(() => clients.filter((c) => c.status !== 'end').forEach((c) => c.disconnect()));

  /** The Redis server's clock, in ms. */
  async function serverNow(): Promise<number> {
    const [seconds, micros] = await redis.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }

  it('lets exactly 2 of 20 concurrent cancels of one user through, on the server clock', async () => {
    const cancels = window();
    const user = randomUUID();
    const before = await serverNow();
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => cancels.reserve(user, randomUUID())),
    );
    const after = await serverNow();
    expect(answers.filter((a) => a.ok)).toHaveLength(2);
    const refused = answers.filter((a) => !a.ok);
    expect(refused).toHaveLength(18);
    // Each refusal names when the oldest of the two slots frees: 3 hours after it was taken.
    const retryAts = new Set(refused.map((a) => (a.ok ? 0 : a.retryAt)));
    expect(retryAts.size).toBe(1);
    const [retryAt] = retryAts;
    expect(retryAt).toBeGreaterThanOrEqual(before + CANCEL_WINDOW_MS);
    expect(retryAt).toBeLessThanOrEqual(after + CANCEL_WINDOW_MS);
    expect(await redis.zcard(`${keyPrefix}${user}`)).toBe(2);
  });

  it('counts across replicas: 20 concurrent cancels over two clients, exactly 2 through', async () => {
    const replicas = [window(), window(await client('cancel-window-replica'))];
    const user = randomUUID();
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => replicas[i % 2].reserve(user, randomUUID())),
    );
    expect(answers.filter((a) => a.ok)).toHaveLength(2);
  });

  it('counts each user on their own', async () => {
    const cancels = window();
    const [one, other] = [randomUUID(), randomUUID()];
    const now = Date.now();
    await cancels.reserve(one, 'a', now);
    await cancels.reserve(one, 'b', now);
    expect((await cancels.reserve(one, 'c', now)).ok).toBe(false);
    expect(await cancels.reserve(other, 'c', now)).toEqual({ ok: true });
  });

  it('gives a released slot back: a refused or failed cancel does not count', async () => {
    const cancels = window();
    const user = randomUUID();
    const now = Date.now();
    expect(await cancels.reserve(user, 'first', now)).toEqual({ ok: true });
    expect(await cancels.reserve(user, 'refused', now + 1)).toEqual({ ok: true });
    expect(await cancels.reserve(user, 'third', now + 2)).toEqual({
      ok: false,
      retryAt: now + CANCEL_WINDOW_MS,
    });
    await cancels.release(user, 'refused');
    await cancels.release(user, 'refused'); // twice: still one slot given back
    await cancels.release(user, 'never-reserved');
    expect(await cancels.reserve(user, 'third', now + 3)).toEqual({ ok: true });
    expect(await redis.zrange(`${keyPrefix}${user}`, 0, -1)).toEqual(['first', 'third']);
  });

  it('takes one slot for an attempt reserved twice (a retried reserve)', async () => {
    const cancels = window();
    const user = randomUUID();
    const now = Date.now();
    expect(await cancels.reserve(user, 'attempt', now)).toEqual({ ok: true });
    expect(await cancels.reserve(user, 'attempt', now + 10)).toEqual({ ok: true });
    expect(await cancels.reserve(user, 'other', now + 20)).toEqual({ ok: true });
    expect((await cancels.reserve(user, 'third', now + 30)).ok).toBe(false);
  });

  it('slides: a slot frees exactly 3 hours after it was taken, the oldest first', async () => {
    const cancels = window();
    const user = randomUUID();
    const t0 = Date.now();
    expect(await cancels.reserve(user, 'a', t0)).toEqual({ ok: true });
    expect(await cancels.reserve(user, 'b', t0 + HOUR)).toEqual({ ok: true });
    expect(await cancels.reserve(user, 'c', t0 + 2 * HOUR)).toEqual({
      ok: false,
      retryAt: t0 + 3 * HOUR,
    });
    expect(await cancels.reserve(user, 'c', t0 + 3 * HOUR - 1)).toEqual({
      ok: false,
      retryAt: t0 + 3 * HOUR,
    });
    expect(await cancels.reserve(user, 'c', t0 + 3 * HOUR)).toEqual({ ok: true });
    // Now b (taken at 1 h) is the oldest.
    expect(await cancels.reserve(user, 'd', t0 + 3 * HOUR)).toEqual({
      ok: false,
      retryAt: t0 + 4 * HOUR,
    });
    expect(await cancels.reserve(user, 'd', t0 + 4 * HOUR)).toEqual({ ok: true });
  });

  it('keeps its count in Redis: a new client (a restarted order service) sees it', async () => {
    const first = await client('cancel-window-before-restart');
    const user = randomUUID();
    const now = Date.now();
    await window(first).reserve(user, 'a', now);
    await window(first).reserve(user, 'b', now);
    first.disconnect();
    const restarted = window(await client('cancel-window-after-restart'));
    expect(await restarted.reserve(user, 'c', now + 1)).toEqual({
      ok: false,
      retryAt: now + CANCEL_WINDOW_MS,
    });
  });

  it('keeps its keys under its prefix, each expiring a window after its newest slot', async () => {
    const cancels = window();
    const user = randomUUID();
    await cancels.reserve(user, 'a');
    expect(await redis.keys(`${keyPrefix}*`)).toEqual([`${keyPrefix}${user}`]);
    const ttl = await redis.pttl(`${keyPrefix}${user}`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(CANCEL_WINDOW_MS);
    // The last slot given back leaves no key behind.
    await cancels.release(user, 'a');
    expect(await redis.exists(`${keyPrefix}${user}`)).toBe(0);
  });

  it('forgets an idle user once the window has passed: nothing stays in Redis', async () => {
    const cancels = window(redis, 300);
    const user = randomUUID();
    expect(await cancels.reserve(user, 'a')).toEqual({ ok: true });
    await eventually(async () => expect(await redis.exists(`${keyPrefix}${user}`)).toBe(0), {
      timeout: 5_000,
      interval: 50,
    });
    expect(await cancels.reserve(user, 'b')).toEqual({ ok: true });
  });

  it('answers 503 (SERVICE_UNAVAILABLE) when Redis cannot be reached, for reserve and release', async () => {
    // A client whose connection is gone, as when Redis goes away under a running service.
    const down = await client('cancel-window-down');
    down.disconnect();
    const cancels = window(down);
    const unavailable = {
      code: 503,
      type: 'SERVICE_UNAVAILABLE',
      message:
        'Cancellations cannot be counted right now; nothing was cancelled, retry in a few seconds',
    };
    await expect(cancels.reserve(randomUUID(), 'a')).rejects.toMatchObject(unavailable);
    await expect(cancels.release(randomUUID(), 'a')).rejects.toMatchObject(unavailable);
  });

  it('refuses a limit or a window that is not a positive integer when it is built', () => {
    for (const [limit, windowMs] of [
      [0, 1000],
      [1.5, 1000],
      [2, 0],
      [2, -5],
      [2, Number.NaN],
    ]) {
      expect(() => new CancelWindow(redis, { keyPrefix, limit, windowMs })).toThrow(RangeError);
    }
  });

  it('says in its refusal what the limit is and when to cancel again', () => {
    const retryAt = Date.UTC(2030, 0, 2, 15, 4, 5);
    expect(window().exceededMessage(retryAt)).toBe(
      'A request may be cancelled only twice every 3 hours; cancel again after 2030-01-02T15:04:05.000Z',
    );
    const other = new CancelWindow(redis, { keyPrefix, limit: 1, windowMs: 90 * 60_000 });
    expect(other.exceededMessage(retryAt)).toMatch(
      /^A request may be cancelled only once every 90 minutes;/,
    );
  });
});
