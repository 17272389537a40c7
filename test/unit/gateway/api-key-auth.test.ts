import crypto from 'node:crypto';
import fc from 'fast-check';
import type { AppEnvironment } from '../../../libs/config';
import { WaybillError } from '../../../libs/errors';
import type { ResolvedApiKey } from '../../../libs/contracts/account';
import { credentialHash } from '../../../libs/issued-tokens';
import {
  ApiKeyAuthenticator,
  type ApiKeyAuthOptions,
} from '../../../services/gateway/api-key-auth';
import { rejectionOf } from '../helpers';

const hex = (n: number) => n.toString(16).padStart(64, '0');
const keyOf = (n: number, env: AppEnvironment = 'staging') => `wb_${env}_${hex(n)}`;
const hashOf = (n: number, env: AppEnvironment = 'staging') => credentialHash(keyOf(n, env));

function record(n: number, overrides: Partial<ResolvedApiKey> = {}): ResolvedApiKey {
  return {
    id: `key-${n}`,
    userId: 'user-1',
    environment: 'staging',
    serverOnly: true,
    quota: null,
    createdAt: '2026-01-01T00:00:00.000Z',
    lastUsedAt: null,
    revokedAt: null,
    user: {
      id: 'user-1',
      name: 'Ada Obi',
      email: 'ada@example.com',
      phone: '+2348012345678',
      profileId: 'profile-1',
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:00.000Z',
    },
    ...overrides,
  };
}

type Lookup = jest.Mock<Promise<ResolvedApiKey | null>, [string]>;

/** An authenticator over an in-memory key table, with a clock the test moves by hand. */
function setup(options: Partial<ApiKeyAuthOptions> = {}, keys: ResolvedApiKey[] = [record(1)]) {
  const table = new Map<string, ResolvedApiKey>();
  for (const key of keys) table.set(hashOf(Number(key.id.slice(4)), key.environment), key);
  const lookup: Lookup = jest.fn(async (hash: string) => table.get(hash) ?? null);
  const clock = { now: 1_700_000_000_000 };
  const auth = new ApiKeyAuthenticator({
    prefix: 'wb',
    environment: 'staging',
    cacheMs: 5000,
    lookup,
    now: () => clock.now,
    ...options,
  });
  return { auth, lookup, clock, table };
}

async function unauthorizedBy(promise: () => Promise<unknown>): Promise<WaybillError> {
  const err = await rejectionOf(promise);
  expect(err).toBeInstanceOf(WaybillError);
  expect(err).toMatchObject({ type: 'UNAUTHORIZED', code: 401 });
  return err as WaybillError;
}

function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('ApiKeyAuthenticator rejections', () => {
  it.each([undefined, '', '   ', [] as string[], ['']])(
    'requires a key: header %p → 401',
    async (header) => {
      const { auth, lookup } = setup();
      const err = await unauthorizedBy(() => auth.authenticate(header));
      expect(err.message).toBe('API key is required');
      expect(lookup).not.toHaveBeenCalled();
    },
  );

  it.each([
    'not-a-key',
    `wb_staging_${hex(1).slice(1)}`,
    `xx_staging_${hex(1)}`,
    `wb_production_${hex(1)}`,
    `Bearer ${keyOf(1)}`,
  ])('rejects the malformed key %p with 401', async (header) => {
    const { auth, lookup } = setup();
    const err = await unauthorizedBy(() => auth.authenticate(header));
    expect(err.message).toBe('Invalid API key format');
    expect(lookup).not.toHaveBeenCalled();
  });

  it('rejects a live key in staging, naming both environments', async () => {
    const { auth, lookup } = setup();
    const err = await unauthorizedBy(() => auth.authenticate(keyOf(1, 'live')));
    expect(err.message).toContain('live');
    expect(err.message).toContain('staging');
    expect(lookup).not.toHaveBeenCalled();
  });

  it('rejects a staging key in live, naming both environments', async () => {
    const { auth } = setup({ environment: 'live' }, [record(1, { environment: 'live' })]);
    const err = await unauthorizedBy(() => auth.authenticate(keyOf(1, 'staging')));
    expect(err.message).toMatch(/staging API key/);
    expect(err.message).toMatch(/live environment/);
  });

  it('rejects an unknown key with 401 after looking it up by its hash', async () => {
    const { auth, lookup } = setup();
    const err = await unauthorizedBy(() => auth.authenticate(keyOf(2)));
    expect(err.message).toContain('Unknown');
    expect(lookup).toHaveBeenCalledTimes(1);
    expect(lookup).toHaveBeenCalledWith(hashOf(2));
  });

  it('rejects a revoked key with 401', async () => {
    const { auth } = setup({}, [record(1, { revokedAt: '2024-01-01T00:00:00.000Z' })]);
    const err = await unauthorizedBy(() => auth.authenticate(keyOf(1)));
    expect(err.message).toMatch(/revoked/);
  });

  it('passes a failing lookup on and does not cache it', async () => {
    const { auth, lookup } = setup();
    lookup.mockRejectedValueOnce(new Error('database down'));
    await expect(auth.authenticate(keyOf(1))).rejects.toThrow('database down');
    await expect(auth.authenticate(keyOf(1))).resolves.toEqual(record(1));
    expect(lookup).toHaveBeenCalledTimes(2);
  });
});

describe('ApiKeyAuthenticator successes', () => {
  it('returns the record of a valid key', async () => {
    const { auth, lookup } = setup();
    await expect(auth.authenticate(keyOf(1))).resolves.toEqual(record(1));
    expect(lookup).toHaveBeenCalledWith(hashOf(1));
  });

  it('uses the first value of a repeated header', async () => {
    const { auth } = setup();
    await expect(auth.authenticate([keyOf(1), 'garbage'])).resolves.toEqual(record(1));
  });

  it('accepts upper-case hex and surrounding whitespace', async () => {
    const { auth, lookup } = setup({}, [record(0xabc)]);
    const key = `  wb_staging_${hex(0xabc).toUpperCase()}  `;
    await expect(auth.authenticate(key)).resolves.toEqual(record(0xabc));
    expect(lookup).toHaveBeenCalledWith(hashOf(0xabc));
  });

  it('accepts a live key in live', async () => {
    const { auth } = setup({ environment: 'live' }, [record(1, { environment: 'live' })]);
    await expect(auth.authenticate(keyOf(1, 'live'))).resolves.toMatchObject({ id: 'key-1' });
  });
});

describe('ApiKeyAuthenticator cache', () => {
  it('looks a key up once while the cache entry lives', async () => {
    const { auth, lookup, clock } = setup({ cacheMs: 5000 });
    await auth.authenticate(keyOf(1));
    clock.now += 4999;
    await auth.authenticate(keyOf(1));
    await auth.authenticate(keyOf(1));
    expect(lookup).toHaveBeenCalledTimes(1);
  });

  it('looks a key up again once cacheMs has passed', async () => {
    const { auth, lookup, clock } = setup({ cacheMs: 5000 });
    await auth.authenticate(keyOf(1));
    clock.now += 5000;
    await auth.authenticate(keyOf(1));
    expect(lookup).toHaveBeenCalledTimes(2);
    clock.now += 1000;
    await auth.authenticate(keyOf(1));
    expect(lookup).toHaveBeenCalledTimes(2);
  });

  it('hashes a key accepted lately once for the cache lifetime, not on every request', async () => {
    const { auth, clock } = setup({ cacheMs: 5000 });
    const sha = jest.spyOn(crypto, 'createHash');
    try {
      await auth.authenticate(keyOf(1));
      clock.now += 4999;
      await auth.authenticate(keyOf(1));
      await auth.authenticate([keyOf(1)]);
      expect(sha).toHaveBeenCalledTimes(1);
      clock.now += 1;
      await auth.authenticate(keyOf(1));
      expect(sha).toHaveBeenCalledTimes(2);
    } finally {
      sha.mockRestore();
    }
  });

  it('remembers a key by its exact header only: padded ones are accepted and hashed each time', async () => {
    const { auth, lookup } = setup();
    const padded = [` ${keyOf(1)}`, `${keyOf(1)}  `, `\u00a0${keyOf(1)}`, `${keyOf(1)}\t`];
    const sha = jest.spyOn(crypto, 'createHash');
    try {
      for (const header of [...padded, ...padded]) {
        expect((await auth.authenticate(header)).id).toBe('key-1');
      }
      expect(sha).toHaveBeenCalledTimes(2 * padded.length);
      await auth.authenticate(keyOf(1));
      await auth.authenticate(keyOf(1));
      expect(sha).toHaveBeenCalledTimes(2 * padded.length + 1);
    } finally {
      sha.mockRestore();
    }
    expect(lookup).toHaveBeenCalledTimes(1);
  });

  it('keeps hashing refused keys: only accepted ones are remembered by the key', async () => {
    const { auth, table } = setup();
    table.set(hashOf(1), record(1, { revokedAt: '2024-01-01T00:00:00.000Z' }));
    const sha = jest.spyOn(crypto, 'createHash');
    try {
      await unauthorizedBy(() => auth.authenticate(keyOf(1)));
      await unauthorizedBy(() => auth.authenticate(keyOf(1)));
      await unauthorizedBy(() => auth.authenticate(keyOf(9)));
      expect(sha).toHaveBeenCalledTimes(3);
    } finally {
      sha.mockRestore();
    }
  });

  it('caches misses too', async () => {
    const { auth, lookup, clock } = setup();
    await unauthorizedBy(() => auth.authenticate(keyOf(9)));
    await unauthorizedBy(() => auth.authenticate(keyOf(9)));
    expect(lookup).toHaveBeenCalledTimes(1);
    clock.now += 5000;
    await unauthorizedBy(() => auth.authenticate(keyOf(9)));
    expect(lookup).toHaveBeenCalledTimes(2);
  });

  it('serves a key revoked after caching until the entry expires (the documented bound)', async () => {
    const { auth, clock, table } = setup();
    await auth.authenticate(keyOf(1));
    table.set(hashOf(1), record(1, { revokedAt: '2024-01-01T00:00:00.000Z' }));
    await expect(auth.authenticate(keyOf(1))).resolves.toEqual(record(1));
    clock.now += 5000;
    await unauthorizedBy(() => auth.authenticate(keyOf(1)));
  });

  it('forget(hash) drops the entry so the next call looks the key up', async () => {
    const { auth, lookup, table } = setup();
    await auth.authenticate(keyOf(1));
    table.set(hashOf(1), record(1, { revokedAt: '2024-01-01T00:00:00.000Z' }));
    auth.forget(hashOf(1));
    const err = await unauthorizedBy(() => auth.authenticate(keyOf(1)));
    expect(err.message).toMatch(/revoked/);
    expect(lookup).toHaveBeenCalledTimes(2);
  });

  it('forget of another or unknown hash keeps the entry', async () => {
    const { auth, lookup } = setup();
    await auth.authenticate(keyOf(1));
    auth.forget(hashOf(2));
    auth.forget('not-a-hash');
    await auth.authenticate(keyOf(1));
    expect(lookup).toHaveBeenCalledTimes(1);
  });

  it('shares one lookup among concurrent calls for one key, however it is spelled', async () => {
    const n = 0xabcdef;
    const { auth, lookup } = setup({}, [record(n)]);
    const pending = deferred<ResolvedApiKey | null>();
    lookup.mockReturnValueOnce(pending.promise);
    const calls = [
      auth.authenticate(keyOf(n)),
      auth.authenticate(keyOf(n)),
      auth.authenticate(` wb_staging_${hex(n).toUpperCase()} `),
    ];
    await Promise.resolve();
    expect(lookup).toHaveBeenCalledTimes(1);
    pending.resolve(record(n));
    await expect(Promise.all(calls)).resolves.toEqual([record(n), record(n), record(n)]);
    expect(lookup).toHaveBeenCalledTimes(1);
    expect(lookup).toHaveBeenCalledWith(hashOf(n));
  });

  it('shares one failing lookup among concurrent calls, then retries', async () => {
    const { auth, lookup } = setup();
    const pending = deferred<ResolvedApiKey | null>();
    lookup.mockReturnValueOnce(pending.promise);
    const first = auth.authenticate(keyOf(1));
    const second = auth.authenticate(keyOf(1));
    pending.reject(new Error('timeout'));
    await expect(first).rejects.toThrow('timeout');
    await expect(second).rejects.toThrow('timeout');
    expect(lookup).toHaveBeenCalledTimes(1);
    await expect(auth.authenticate(keyOf(1))).resolves.toEqual(record(1));
    expect(lookup).toHaveBeenCalledTimes(2);
  });

  it('looks different keys up separately, even concurrently', async () => {
    const { auth, lookup } = setup({}, [record(1), record(2)]);
    const [a, b] = await Promise.all([auth.authenticate(keyOf(1)), auth.authenticate(keyOf(2))]);
    expect(a.id).toBe('key-1');
    expect(b.id).toBe('key-2');
    expect(lookup).toHaveBeenCalledTimes(2);
  });

  it('with cacheMs 0, looks the key up on every call', async () => {
    const { auth, lookup } = setup({ cacheMs: 0 });
    await auth.authenticate(keyOf(1));
    await auth.authenticate(keyOf(1));
    await unauthorizedBy(() => auth.authenticate(keyOf(7)));
    await unauthorizedBy(() => auth.authenticate(keyOf(7)));
    expect(lookup).toHaveBeenCalledTimes(4);
  });

  it('with cacheMs 0, still shares a concurrent lookup', async () => {
    const { auth, lookup } = setup({ cacheMs: 0 });
    await Promise.all([auth.authenticate(keyOf(1)), auth.authenticate(keyOf(1))]);
    expect(lookup).toHaveBeenCalledTimes(1);
  });

  it('evicts the oldest entry beyond maxCacheEntries', async () => {
    const keys = [1, 2, 3, 4].map((n) => record(n));
    const { auth, lookup } = setup({ maxCacheEntries: 3 }, keys);
    for (const n of [1, 2, 3, 4]) await auth.authenticate(keyOf(n));
    expect(lookup).toHaveBeenCalledTimes(4);

    // 2, 3 and 4 are cached; 1 was evicted.
    for (const n of [2, 3, 4]) await auth.authenticate(keyOf(n));
    expect(lookup).toHaveBeenCalledTimes(4);
    await auth.authenticate(keyOf(1));
    expect(lookup).toHaveBeenCalledTimes(5);
    expect(lookup).toHaveBeenLastCalledWith(hashOf(1));
  });

  it('never holds more than maxCacheEntries entries (property)', async () => {
    const cacheSize = (auth: ApiKeyAuthenticator) => auth.cachedKeys;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.array(fc.record({ key: fc.integer({ min: 1, max: 12 }), advance: fc.nat(3000) }), {
          maxLength: 40,
        }),
        async (maxCacheEntries, calls) => {
          const known = [1, 2, 3, 4, 5, 6].map((n) => record(n));
          const { auth, clock } = setup({ maxCacheEntries }, known);
          for (const { key, advance } of calls) {
            clock.now += advance;
            await auth.authenticate(keyOf(key)).catch(() => undefined);
            expect(cacheSize(auth)).toBeLessThanOrEqual(maxCacheEntries);
          }
        },
      ),
    );
  });

  it('defaults maxCacheEntries to 10000', async () => {
    const keys = Array.from({ length: 10_001 }, (_, i) => record(100 + i));
    const { auth, lookup } = setup({ cacheMs: 60_000 }, keys);
    for (let n = 100; n < 10_100; n++) await auth.authenticate(keyOf(n));
    expect(lookup).toHaveBeenCalledTimes(10_000);
    await auth.authenticate(keyOf(100));
    expect(lookup).toHaveBeenCalledTimes(10_000);
    // One more key evicts the oldest entry (100; hits do not refresh an entry's age) only.
    await auth.authenticate(keyOf(10_100));
    await auth.authenticate(keyOf(101));
    expect(lookup).toHaveBeenCalledTimes(10_001);
    await auth.authenticate(keyOf(100));
    expect(lookup).toHaveBeenCalledTimes(10_002);
  });
});

describe('ApiKeyAuthenticator negative cache', () => {
  it('never lets unknown keys evict known ones', async () => {
    const { auth, lookup } = setup({ maxCacheEntries: 3, cacheMs: 60_000 }, [
      record(1),
      record(2),
      record(3),
    ]);
    for (const n of [1, 2, 3]) await auth.authenticate(keyOf(n));
    for (let n = 100; n < 2_100; n++) await unauthorizedBy(() => auth.authenticate(keyOf(n)));
    lookup.mockClear();
    for (const n of [1, 2, 3]) await auth.authenticate(keyOf(n));
    expect(lookup).not.toHaveBeenCalled();
  });

  it('never lets unknown or revoked keys evict an active one (property)', async () => {
    const revoked = [7, 8].map((n) => record(n, { revokedAt: '2026-01-02T00:00:00.000Z' }));
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 4, max: 40 }), { maxLength: 60 }),
        async (refusedKeys) => {
          const active = [1, 2, 3].map((n) => record(n));
          const { auth, lookup } = setup(
            { maxCacheEntries: 3, maxNegativeEntries: 2, cacheMs: 60_000 },
            [...active, ...revoked],
          );
          for (const n of [1, 2, 3]) await auth.authenticate(keyOf(n));
          for (const n of refusedKeys) {
            await unauthorizedBy(() => auth.authenticate(keyOf(n)));
          }
          lookup.mockClear();
          for (const n of [1, 2, 3]) await auth.authenticate(keyOf(n));
          expect(lookup).not.toHaveBeenCalled();
        },
      ),
    );
  });

  it('keeps at most maxNegativeEntries refused keys, oldest out first', async () => {
    const { auth, lookup } = setup({ maxNegativeEntries: 2 });
    for (const n of [7, 8, 9]) await unauthorizedBy(() => auth.authenticate(keyOf(n)));
    expect(lookup).toHaveBeenCalledTimes(3);
    for (const n of [8, 9]) await unauthorizedBy(() => auth.authenticate(keyOf(n)));
    expect(lookup).toHaveBeenCalledTimes(3);
    await unauthorizedBy(() => auth.authenticate(keyOf(7)));
    expect(lookup).toHaveBeenCalledTimes(4);
  });

  it('defaults maxNegativeEntries to 1000', async () => {
    const { auth, lookup } = setup({ cacheMs: 60_000 });
    for (let n = 100; n < 1_101; n++) await unauthorizedBy(() => auth.authenticate(keyOf(n)));
    expect(lookup).toHaveBeenCalledTimes(1_001);
    await unauthorizedBy(() => auth.authenticate(keyOf(101)));
    expect(lookup).toHaveBeenCalledTimes(1_001);
    await unauthorizedBy(() => auth.authenticate(keyOf(100)));
    expect(lookup).toHaveBeenCalledTimes(1_002);
  });

  it('moves a key that became active out of the negative cache', async () => {
    const { auth, lookup, clock, table } = setup({}, []);
    await unauthorizedBy(() => auth.authenticate(keyOf(1)));
    table.set(hashOf(1), record(1));
    clock.now += 5000;
    await expect(auth.authenticate(keyOf(1))).resolves.toEqual(record(1));
    await expect(auth.authenticate(keyOf(1))).resolves.toEqual(record(1));
    expect(lookup).toHaveBeenCalledTimes(2);
  });
});

/** Lets the lookup of a call begin (it may wait on a few promise steps first). */
const started = () => new Promise((resolve) => setImmediate(resolve));
const revokedRecord = (n: number) => record(n, { revokedAt: '2026-01-02T00:00:00.000Z' });

describe('ApiKeyAuthenticator and a revocation during a lookup', () => {
  it('never caches what a lookup begun before forget() read', async () => {
    const { auth, lookup, table } = setup({ cacheMs: 60_000 });
    const stale = deferred<ResolvedApiKey | null>();
    lookup.mockReturnValueOnce(stale.promise);
    const inFlight = auth.authenticate(keyOf(1));
    await started();
    expect(lookup).toHaveBeenCalledTimes(1);

    // The key is revoked after the lookup read it as active, before the answer came back.
    table.set(hashOf(1), revokedRecord(1));
    auth.forget(hashOf(1));
    stale.resolve(record(1));
    // That request began before the revocation: it may still pass.
    await expect(inFlight).resolves.toEqual(record(1));

    const err = await unauthorizedBy(() => auth.authenticate(keyOf(1)));
    expect(err.message).toMatch(/revoked/);
    expect(lookup).toHaveBeenCalledTimes(2);
  });

  it('does not share a lookup begun before forget() with later callers', async () => {
    const { auth, lookup, table } = setup({ cacheMs: 60_000 });
    const stale = deferred<ResolvedApiKey | null>();
    lookup.mockReturnValueOnce(stale.promise);
    const before = auth.authenticate(keyOf(1));
    await started();

    table.set(hashOf(1), revokedRecord(1));
    auth.forget(hashOf(1));
    const after = auth.authenticate(keyOf(1));
    stale.resolve(record(1));

    await expect(before).resolves.toEqual(record(1));
    const err = await unauthorizedBy(() => after);
    expect(err.message).toMatch(/revoked/);
    expect(lookup).toHaveBeenCalledTimes(2);
  });

  it('keeps sharing the newer lookup when the disowned one settles first', async () => {
    const { auth, lookup, table } = setup({ cacheMs: 60_000 });
    const stale = deferred<ResolvedApiKey | null>();
    const fresh = deferred<ResolvedApiKey | null>();
    lookup.mockReturnValueOnce(stale.promise).mockReturnValueOnce(fresh.promise);
    const before = auth.authenticate(keyOf(1));
    await started();
    auth.forget(hashOf(1));
    const after = auth.authenticate(keyOf(1));
    await started();
    stale.resolve(record(1));
    await before;

    const joining = auth.authenticate(keyOf(1));
    await started();
    expect(lookup).toHaveBeenCalledTimes(2);
    table.set(hashOf(1), revokedRecord(1));
    fresh.resolve(revokedRecord(1));
    await unauthorizedBy(() => after);
    await unauthorizedBy(() => joining);
  });
});

describe('ApiKeyAuthenticator beforeLookup', () => {
  const refuse = () => jest.fn(async () => Promise.reject(new Error('throttled')));

  it('is asked before the lookup of a key never accepted; its refusal skips the lookup', async () => {
    const { auth, lookup } = setup();
    const hook = refuse();
    await expect(auth.authenticate(keyOf(9), hook)).rejects.toThrow('throttled');
    await expect(auth.authenticate(keyOf(1), hook)).rejects.toThrow('throttled');
    expect(hook).toHaveBeenCalledTimes(2);
    expect(lookup).not.toHaveBeenCalled();
  });

  it('is not asked for a malformed key, nor for a cached answer', async () => {
    const { auth } = setup();
    const allow = jest.fn(async () => undefined);
    await unauthorizedBy(() => auth.authenticate('not-a-key', allow));
    await unauthorizedBy(() => auth.authenticate(keyOf(9), allow));
    await auth.authenticate(keyOf(1), allow);
    expect(allow).toHaveBeenCalledTimes(2);

    const hook = refuse();
    await unauthorizedBy(() => auth.authenticate(keyOf(9), hook));
    await expect(auth.authenticate(keyOf(1), hook)).resolves.toEqual(record(1));
    expect(hook).not.toHaveBeenCalled();
  });

  it('is not asked again for a key accepted before whose entry expired', async () => {
    const { auth, lookup, clock } = setup();
    await auth.authenticate(keyOf(1));
    clock.now += 60_000;
    const hook = refuse();
    await expect(auth.authenticate(keyOf(1), hook)).resolves.toEqual(record(1));
    expect(hook).not.toHaveBeenCalled();
    expect(lookup).toHaveBeenCalledTimes(2);
  });

  it('is asked again once the key is forgotten, or found revoked', async () => {
    const { auth, clock, table } = setup({}, [record(1), record(2)]);
    await auth.authenticate(keyOf(1));
    await auth.authenticate(keyOf(2));
    auth.forget(hashOf(1));
    table.set(hashOf(2), revokedRecord(2));
    clock.now += 5000;
    await unauthorizedBy(() => auth.authenticate(keyOf(2)));
    clock.now += 5000;

    const hook = refuse();
    await expect(auth.authenticate(keyOf(1), hook)).rejects.toThrow('throttled');
    await expect(auth.authenticate(keyOf(2), hook)).rejects.toThrow('throttled');
  });

  it('is asked once for a burst of one key, whose callers share the lookup it let through', async () => {
    const { auth, lookup } = setup();
    const asked = deferred<void>();
    const hook = jest.fn(() => asked.promise);
    const burst = Array.from({ length: 5 }, () => auth.authenticate(keyOf(1), hook));
    asked.resolve();
    await expect(Promise.all(burst)).resolves.toEqual(Array(5).fill(record(1)));
    expect(hook).toHaveBeenCalledTimes(1);
    expect(lookup).toHaveBeenCalledTimes(1);
  });

  it('asks the next caller of a key in turn when the one asked first is refused', async () => {
    const { auth, lookup } = setup();
    const refused = deferred<void>();
    const first = auth.authenticate(
      keyOf(1),
      jest.fn(() => refused.promise),
    );
    const allow = jest.fn(async () => undefined);
    const second = auth.authenticate(keyOf(1), allow);
    refused.reject(new Error('throttled'));
    await expect(first).rejects.toThrow('throttled');
    await expect(second).resolves.toEqual(record(1));
    expect(allow).toHaveBeenCalledTimes(1);
    expect(lookup).toHaveBeenCalledTimes(1);
  });

  it('after a refusal asks the waiting callers all at once, not one round trip after another', async () => {
    const { auth, lookup } = setup();
    const refused = deferred<void>();
    const first = auth.authenticate(
      keyOf(1),
      jest.fn(() => refused.promise),
    );
    let asking = 0;
    let most = 0;
    const gate = deferred<void>();
    const hook = jest.fn(async () => {
      asking += 1;
      most = Math.max(most, asking);
      await gate.promise;
      asking -= 1;
    });
    const waiting = Array.from({ length: 4 }, () => auth.authenticate(keyOf(1), hook));
    refused.reject(new Error('throttled'));
    await expect(first).rejects.toThrow('throttled');
    await new Promise((resolve) => setImmediate(resolve));
    gate.resolve();
    await expect(Promise.all(waiting)).resolves.toEqual(Array(4).fill(record(1)));
    expect(most).toBe(4);
    expect(lookup).toHaveBeenCalledTimes(1);
  });

  it('with cacheMs 0, still knows which keys it accepted', async () => {
    const { auth, lookup } = setup({ cacheMs: 0 });
    await auth.authenticate(keyOf(1));
    const hook = refuse();
    await expect(auth.authenticate(keyOf(1), hook)).resolves.toEqual(record(1));
    await expect(auth.authenticate(keyOf(9), hook)).rejects.toThrow('throttled');
    expect(lookup).toHaveBeenCalledTimes(2);
  });
});
