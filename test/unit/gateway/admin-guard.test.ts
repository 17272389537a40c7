import { adminGuard } from '../../../services/gateway/edge';
import { AuthFailureThrottle } from '../../../services/gateway/auth-throttle';
import { quotaStoreUnavailable, type QuotaLimiter } from '../../../services/gateway/quota';
import { FakeResponse, fakeRequest } from './fake-http';

const TOKEN = 'admin-token-for-the-unit-test';
const QUOTA = { limit: 2, windowSeconds: 60 };

/** Failures counted in memory by subject, as Redis would; `down` makes every count fail. */
function fakeLimiter(options: { down?: boolean } = {}) {
  const counts = new Map<string, number>();
  const decide = (allowed: boolean) => ({
    allowed,
    limit: QUOTA.limit,
    remaining: 0,
    resetSeconds: 60,
  });
  // Counted or read when called, as Redis does in the order of the calls; answered later.
  const limiter = {
    async peek(subject: string) {
      if (options.down) throw quotaStoreUnavailable();
      return decide((counts.get(subject) ?? 0) < QUOTA.limit);
    },
    async consume(subject: string) {
      if (options.down) throw quotaStoreUnavailable();
      const count = (counts.get(subject) ?? 0) + 1;
      counts.set(subject, count);
      return decide(count <= QUOTA.limit);
    },
  };
  // Only peek and consume are called by the admin guard.
  return { counts, limiter: limiter as unknown as QuotaLimiter };
}

/** Runs the guard on an admin call from 203.0.113.7; resolves with what it passed to `next`. */
function run(guard: ReturnType<typeof adminGuard>, authorization: string) {
  const req = fakeRequest({ url: '/admin/users', headers: { authorization } });
  Object.assign(req, { socket: { remoteAddress: '203.0.113.7' } });
  return new Promise<unknown>((resolve) =>
    guard(req, new FakeResponse().asServerResponse(), (err) => resolve(err)),
  );
}

const guardOver = (limiter: QuotaLimiter) =>
  adminGuard({
    config: { trustProxyHops: 0, adminToken: TOKEN },
    authFailures: new AuthFailureThrottle(limiter, QUOTA),
  });

describe('adminGuard', () => {
  it('counts wrong tokens apart from API keys, per address, and then refuses every token', async () => {
    const { counts, limiter } = fakeLimiter();
    const guard = guardOver(limiter);
    expect(await run(guard, `Bearer ${TOKEN}`)).toBeUndefined();
    for (let i = 0; i < QUOTA.limit; i++) {
      expect(await run(guard, 'Bearer wrong')).toMatchObject({ code: 401 });
    }
    expect([...counts]).toEqual([['admin 203.0.113.7', QUOTA.limit]]);
    expect(await run(guard, 'Bearer wrong')).toMatchObject({
      code: 429,
      message: expect.stringContaining('with a valid admin token'),
    });
    expect(await run(guard, `Bearer ${TOKEN}`)).toMatchObject({ code: 429 });
  });

  it("refuses the right token sent in a burst after the limit, and lets an operator's burst through", async () => {
    const { counts, limiter } = fakeLimiter();
    const guard = guardOver(limiter);
    const outcomes = await Promise.all([
      ...Array.from({ length: QUOTA.limit }, () => run(guard, 'Bearer wrong')),
      run(guard, `Bearer ${TOKEN}`),
      run(guard, 'Bearer wrong'),
    ]);
    expect(outcomes.map((outcome) => (outcome as { code: number }).code)).toEqual([
      ...Array(QUOTA.limit).fill(401),
      429,
      429,
    ]);
    expect(counts.get('admin 203.0.113.7')).toBe(QUOTA.limit + 1);

    const other = fakeLimiter();
    const operator = guardOver(other.limiter);
    const calls = Array.from({ length: QUOTA.limit * 5 }, () => run(operator, `Bearer ${TOKEN}`));
    expect(await Promise.all(calls)).toEqual(calls.map(() => undefined));
    expect(other.counts.size).toBe(0);
  });

  it('still checks the token, uncounted, while Redis is unreachable', async () => {
    const guard = guardOver(fakeLimiter({ down: true }).limiter);
    expect(await run(guard, `Bearer ${TOKEN}`)).toBeUndefined();
    expect(await run(guard, 'Bearer wrong')).toMatchObject({
      code: 401,
      message: 'Invalid admin token',
    });
  });
});
