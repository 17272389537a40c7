import { hashCourierToken, type CourierAuth } from '../../../libs/contracts/matching';
import { AuthFailureThrottle } from '../../../services/gateway/auth-throttle';
import { CourierTokenAuthenticator } from '../../../services/gateway/courier-auth';
import { courierGuard } from '../../../services/gateway/edge';
import type { QuotaLimiter } from '../../../services/gateway/quota';
import { FakeResponse, fakeRequest } from './fake-http';
import { fakeLimiter } from './fake-limiter';

const TOKEN = `wbc_${'A'.repeat(43)}`;
const COURIER: CourierAuth = { courierId: 'courier-1', tokenId: 'token-1' };
const QUOTA = { limit: 3, windowSeconds: 60 };

function guardOver(limiter: QuotaLimiter) {
  const lookup = jest.fn(async (hash: string) =>
    hash === hashCourierToken(TOKEN) ? COURIER : null,
  );
  const couriers = new CourierTokenAuthenticator({ cacheMs: 60_000, lookup });
  const guard = courierGuard({
    config: { trustProxyHops: 0, courierQuota: QUOTA },
    authenticator: () => couriers,
    authFailures: new AuthFailureThrottle(limiter, { limit: 10, windowSeconds: 60 }),
    quota: limiter,
  });
  return { guard, lookup };
}

/** Runs the guard on a courier call; resolves with what it passed to `next`, and the courier. */
async function call(guard: ReturnType<typeof courierGuard>) {
  const req = fakeRequest({
    url: '/courier/deliveries/d1/delivered',
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  const meta: Record<string, unknown> = {};
  Object.assign(req, { socket: { remoteAddress: '203.0.113.7' }, $ctx: { meta } });
  const passed = await new Promise<unknown>((resolve) =>
    guard(req, new FakeResponse().asServerResponse(), (err) => resolve(err)),
  );
  return { passed, courier: meta.courier };
}

describe('courierGuard', () => {
  it('counts each courier against its quota, and refuses past it with 429', async () => {
    const { counts, limiter } = fakeLimiter(QUOTA);
    const { guard } = guardOver(limiter);
    for (let i = 0; i < QUOTA.limit; i++) {
      expect(await call(guard)).toEqual({
        passed: undefined,
        courier: { id: 'courier-1', tokenId: 'token-1' },
      });
    }
    expect((await call(guard)).passed).toMatchObject({ code: 429 });
    expect(counts.get('courier:courier-1')).toBe(QUOTA.limit + 1);
  });

  it('while Redis is down, lets a token it accepted lately go on uncounted, and answers 503 for one it did not', async () => {
    const { state, limiter } = fakeLimiter(QUOTA);
    const accepted = guardOver(limiter);
    expect((await call(accepted.guard)).passed).toBeUndefined();
    state.down = true;
    // A courier's steps matter more than the limit: the call runs as its courier.
    expect(await call(accepted.guard)).toEqual({
      passed: undefined,
      courier: { id: 'courier-1', tokenId: 'token-1' },
    });
    expect(accepted.lookup).toHaveBeenCalledTimes(1);
    // A gateway that has not accepted it lately (just started) looks nothing up uncounted.
    const fresh = guardOver(limiter);
    expect((await call(fresh.guard)).passed).toMatchObject({ code: 503 });
    expect(fresh.lookup).not.toHaveBeenCalled();
  });
});
