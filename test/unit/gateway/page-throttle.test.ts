import { pageThrottle } from '../../../services/gateway/edge';
import { quotaStoreUnavailable, type QuotaLimiter } from '../../../services/gateway/quota';
import { FakeResponse, fakeRequest } from './fake-http';

const PAGES = { limit: 2, windowSeconds: 60 };

/** Page requests counted in memory by address, as Redis would; `down` fails every count. */
function limiterOf(options: { down?: boolean } = {}) {
  const counts = new Map<string, number>();
  const limiter = {
    async consume(subject: string) {
      if (options.down) throw quotaStoreUnavailable();
      const count = (counts.get(subject) ?? 0) + 1;
      counts.set(subject, count);
      return { allowed: count <= PAGES.limit, limit: PAGES.limit, remaining: 0, resetSeconds: 42 };
    },
  };
  // Only consume is called by the page throttle.
  return { counts, limiter: limiter as unknown as QuotaLimiter };
}

/** A tracking page request from `address`; resolves with what the throttle passed to `next`. */
function open(limiter: QuotaLimiter, address: string) {
  const throttle = pageThrottle({ config: { pageRequests: PAGES, trustProxyHops: 0 }, limiter });
  const req = fakeRequest({ url: '/track/P2P-000000000000' });
  Object.assign(req, { socket: { remoteAddress: address } });
  return new Promise<unknown>((resolve) =>
    throttle(req, new FakeResponse().asServerResponse(), (err) => resolve(err)),
  );
}

describe('pageThrottle', () => {
  it('lets PAGE_REQUEST_LIMIT requests of an address through, then answers 429 with Retry-After', async () => {
    const { counts, limiter } = limiterOf();
    for (let i = 0; i < PAGES.limit; i++)
      expect(await open(limiter, '203.0.113.9')).toBeUndefined();
    expect(await open(limiter, '203.0.113.9')).toMatchObject({
      code: 429,
      message: 'Too many requests from your address; retry in 42 seconds',
      data: { retryAfter: 42 },
    });
    // Another address, and an IPv6 client by its /64.
    expect(await open(limiter, '203.0.113.10')).toBeUndefined();
    await open(limiter, '2001:db8:1:2::5');
    await open(limiter, '2001:db8:1:2::6');
    expect(counts.get('2001:db8:1:2::/64')).toBe(2);
  });

  it('serves the pages uncounted while the count cannot be reached', async () => {
    const { limiter } = limiterOf({ down: true });
    for (let i = 0; i < 3 * PAGES.limit; i++) {
      expect(await open(limiter, '203.0.113.9')).toBeUndefined();
    }
  });
});
