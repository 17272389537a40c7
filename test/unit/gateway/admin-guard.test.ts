import { OPERATOR_TOKENS } from '../../../libs/contracts/account';
import { AdminAuthenticator } from '../../../services/gateway/admin-auth';
import { adminGuard } from '../../../services/gateway/edge';
import { AuthFailureThrottle } from '../../../services/gateway/auth-throttle';
import type { QuotaLimiter } from '../../../services/gateway/quota';
import { FakeResponse, fakeRequest } from './fake-http';
import { fakeLimiter as fakeLimiterOf } from './fake-limiter';

const TOKEN = 'admin-token-for-the-unit-test';
const OPERATOR_TOKEN = `wbo_${'B'.repeat(43)}`;
const REVOKED_TOKEN = `wbo_${'C'.repeat(43)}`;
const QUOTA = { limit: 2, windowSeconds: 60 };

/** Failures counted in memory by subject, as Redis would; `down` makes every count fail. */
const fakeLimiter = (options: { down?: boolean } = {}) => fakeLimiterOf(QUOTA, options);

/**
 * Runs the guard on an admin call from 203.0.113.7; resolves with what it passed to `next`,
 * and the operator the call then runs as.
 */
async function runAs(guard: ReturnType<typeof adminGuard>, authorization: string) {
  const req = fakeRequest({ url: '/admin/users', headers: { authorization } });
  const meta: Record<string, unknown> = {};
  Object.assign(req, { socket: { remoteAddress: '203.0.113.7' }, $ctx: { meta } });
  const passed = await new Promise<unknown>((resolve) =>
    guard(req, new FakeResponse().asServerResponse(), (err) => resolve(err)),
  );
  return { passed, operator: meta.operator };
}

const run = async (guard: ReturnType<typeof adminGuard>, authorization: string) =>
  (await runAs(guard, authorization)).passed;

function guardOver(limiter: QuotaLimiter) {
  const lookup = jest.fn(async (hash: string) =>
    hash === OPERATOR_TOKENS.hash(OPERATOR_TOKEN)
      ? { tokenId: 'token-1', name: 'ada@ops', expiresAt: null }
      : null,
  );
  const admins = new AdminAuthenticator({ adminToken: TOKEN, cacheMs: 60_000, lookup });
  const guard = adminGuard({
    config: { trustProxyHops: 0 },
    authenticator: () => admins,
    authFailures: new AuthFailureThrottle(limiter, QUOTA),
  });
  return Object.assign(guard, { lookup });
}

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

  it('still checks ADMIN_TOKEN, uncounted, while Redis is unreachable, but looks up no operator token not accepted lately', async () => {
    const down = fakeLimiter({ down: true });
    const guard = guardOver(down.limiter);
    expect(await run(guard, `Bearer ${TOKEN}`)).toBeUndefined();
    expect(await run(guard, 'Bearer wrong')).toMatchObject({
      code: 401,
      message: 'Invalid admin token',
    });
    // Made-up operator tokens would be looked up without limit: 503, nothing looked up.
    expect(await run(guard, `Bearer ${REVOKED_TOKEN}`)).toMatchObject({ code: 503 });
    expect(await run(guard, `Bearer ${OPERATOR_TOKEN}`)).toMatchObject({ code: 503 });
    expect(guard.lookup).not.toHaveBeenCalled();

    // One accepted before Redis went away is still served from the cache.
    const { limiter } = fakeLimiter();
    const admins = new AdminAuthenticator({
      adminToken: TOKEN,
      cacheMs: 60_000,
      lookup: async () => ({ tokenId: 'token-1', name: 'ada@ops', expiresAt: null }),
    });
    const options = { config: { trustProxyHops: 0 }, authenticator: () => admins };
    const up = adminGuard({ ...options, authFailures: new AuthFailureThrottle(limiter, QUOTA) });
    expect(await run(up, `Bearer ${OPERATOR_TOKEN}`)).toBeUndefined();
    const away = adminGuard({
      ...options,
      authFailures: new AuthFailureThrottle(down.limiter, QUOTA),
    });
    expect(await run(away, `Bearer ${OPERATOR_TOKEN}`)).toBeUndefined();
  });

  it('counts operator tokens apart: lookups the account service fails never shut out ADMIN_TOKEN', async () => {
    const { counts, limiter } = fakeLimiter();
    const admins = new AdminAuthenticator({
      adminToken: TOKEN,
      cacheMs: 60_000,
      lookup: async () => {
        throw new Error('account service away');
      },
    });
    const guard = adminGuard({
      config: { trustProxyHops: 0 },
      authenticator: () => admins,
      authFailures: new AuthFailureThrottle(limiter, QUOTA),
    });
    for (let i = 0; i < QUOTA.limit; i++) {
      expect(await run(guard, `Bearer ${OPERATOR_TOKEN}`)).toMatchObject({
        message: 'account service away',
      });
    }
    expect(await run(guard, `Bearer ${OPERATOR_TOKEN}`)).toMatchObject({
      code: 429,
      message: expect.stringContaining('with a valid operator token'),
    });
    expect(await run(guard, `Bearer ${TOKEN}`)).toBeUndefined();
    expect([...counts]).toEqual([['operator-tokens 203.0.113.7', QUOTA.limit]]);
  });

  it('runs the call as the operator the token names', async () => {
    const guard = guardOver(fakeLimiter().limiter);
    expect(await runAs(guard, `Bearer ${TOKEN}`)).toEqual({
      passed: undefined,
      operator: { name: 'admin-token', tokenId: null },
    });
    expect(await runAs(guard, `Bearer ${OPERATOR_TOKEN}`)).toEqual({
      passed: undefined,
      operator: { name: 'ada@ops', tokenId: 'token-1' },
    });
  });

  it('counts an operator token before its lookup, forgives a good one, and looks nothing up once the limit is reached', async () => {
    const { counts, limiter } = fakeLimiter();
    const guard = guardOver(limiter);
    expect(await run(guard, `Bearer ${OPERATOR_TOKEN}`)).toBeUndefined();
    expect(counts.get('operator-tokens 203.0.113.7')).toBe(0);
    // A revoked token, refused and cached, sent again is no new guess.
    for (let i = 0; i < 3; i++) {
      expect(await run(guard, `Bearer ${REVOKED_TOKEN}`)).toMatchObject({ code: 401 });
    }
    expect(counts.get('operator-tokens 203.0.113.7')).toBe(1);
    expect(counts.get('admin 203.0.113.7')).toBeUndefined();
    // Made-up ones are: past the limit, they are refused without a lookup.
    const lookups = guard.lookup.mock.calls.length;
    const madeUp = (n: number) => `Bearer wbo_${String(n).padStart(43, 'D')}`;
    expect(await run(guard, madeUp(1))).toMatchObject({ code: 401 });
    expect(await run(guard, madeUp(2))).toMatchObject({ code: 429 });
    expect(guard.lookup.mock.calls.length).toBe(lookups + 1);
    // The operator's own token, accepted before, is not shut out with the guesses.
    expect(await run(guard, `Bearer ${OPERATOR_TOKEN}`)).toBeUndefined();
    expect(guard.lookup.mock.calls.length).toBe(lookups + 1);
  });
});
