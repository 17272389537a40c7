import { transferGuard } from '../../../services/gateway/edge';
import fc from 'fast-check';
import {
  transferLeaseMs,
  type UploadLease,
  type UploadLeases,
} from '../../../services/gateway/upload-leases';
import { routeHandler, type FoundAlias } from '../../../services/gateway/web-routing';
import { FakeResponse, fakeRequest } from './fake-http';

/**
 * Leases counted in memory per subject (a key, `user:<id>`), as Redis would; `held` counts the
 * keys' leases. `down` makes every call fail.
 */
function fakeLeases(options: { down?: boolean } = {}) {
  const bySubject = new Map<string, Set<number>>();
  const of = (subject: string) => {
    let set = bySubject.get(subject);
    if (!set) bySubject.set(subject, (set = new Set()));
    return set;
  };
  let next = 0;
  const leases = {
    async acquire(subject: string, limit: number): Promise<UploadLease | undefined> {
      if (options.down) throw new Error('Connection is closed.');
      const held = of(subject);
      if (held.size >= limit) return undefined;
      const id = next++;
      held.add(id);
      return { release: async () => void held.delete(id) };
    },
  };
  const keysHeld = () =>
    [...bySubject]
      .filter(([subject]) => !subject.startsWith('user:'))
      .reduce((n, [, s]) => n + s.size, 0);
  return {
    held: {
      get size() {
        return keysHeld();
      },
    },
    ofSubject: (subject: string) => of(subject).size,
    leases: leases as unknown as UploadLeases,
  };
}

/** Runs the middleware for a key (of user `u1`); resolves with what it passed to `next`. */
function run(
  guard: ReturnType<typeof transferGuard>,
  res = new FakeResponse(),
  meta: Record<string, unknown> = { apiKeyId: 'k1', user: { id: 'u1' } },
) {
  const req = fakeRequest({ method: 'POST', url: '/file/single-upload', meta });
  Object.assign(req, { socket: { destroyed: false } });
  return new Promise<{ err: unknown; res: FakeResponse }>((resolve) =>
    guard(req, res.asServerResponse(), (err) => resolve({ err, res })),
  );
}

describe('transferGuard', () => {
  it('lets a key hold `limit` uploads, refuses the next with 429 and Retry-After', async () => {
    const { held, leases } = fakeLeases();
    const guard = transferGuard({ leases, limit: 2, userLimit: 8, what: 'uploads' });
    expect((await run(guard)).err).toBeUndefined();
    expect((await run(guard)).err).toBeUndefined();
    const { err } = await run(guard);
    expect(err).toMatchObject({
      code: 429,
      type: 'TOO_MANY_REQUESTS',
      message:
        'This API key already has 2 uploads in progress; wait for one to finish, or retry in 5 seconds',
      data: { retryAfter: 5 },
    });
    expect(held.size).toBe(2);
  });

  it('holds an account to `userLimit` across its keys, giving back the key’s lease it took', async () => {
    const { held, ofSubject, leases } = fakeLeases();
    const guard = transferGuard({ leases, limit: 2, userLimit: 3, what: 'uploads' });
    const as = (key: string, user = 'u1') =>
      run(guard, new FakeResponse(), { apiKeyId: key, user: { id: user } });
    expect((await as('k1')).err).toBeUndefined();
    expect((await as('k1')).err).toBeUndefined();
    expect((await as('k2')).err).toBeUndefined();
    const { err } = await as('k2');
    expect(err).toMatchObject({
      code: 429,
      message:
        'This account already has 3 uploads in progress; wait for one to finish, or retry in 5 seconds',
      data: { retryAfter: 5 },
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(ofSubject('k2')).toBe(1);
    expect(ofSubject('user:u1')).toBe(3);
    expect(held.size).toBe(3);
    // Another account's keys are counted apart.
    expect((await as('k3', 'u2')).err).toBeUndefined();
  });

  it("holds an account's publishable keys to a `userLimit` of their own, apart from its server keys'", async () => {
    const { ofSubject, leases } = fakeLeases();
    const guard = transferGuard({ leases, limit: 4, userLimit: 3, what: 'uploads' });
    const as = (key: string, publishable: boolean) =>
      run(guard, new FakeResponse(), {
        apiKeyId: key,
        user: { id: 'u1' },
        ...(publishable ? { publishableKey: true } : {}),
      });
    for (const key of ['app-ios', 'app-ios', 'app-android']) {
      expect((await as(key, true)).err).toBeUndefined();
    }
    expect((await as('app-android', true)).err).toMatchObject({
      code: 429,
      message:
        "This account's publishable keys already have 3 uploads in progress; wait for one to finish, or retry in 5 seconds",
    });
    // The account's servers still upload, up to their own share.
    for (let i = 0; i < 3; i++) expect((await as('server', false)).err).toBeUndefined();
    expect((await as('server', false)).err).toMatchObject({
      message:
        'This account already has 3 uploads in progress; wait for one to finish, or retry in 5 seconds',
    });
    expect(ofSubject('user:u1:publishable')).toBe(3);
    expect(ofSubject('user:u1')).toBe(3);
  });

  it('gives the lease back once the answer is out or the client has left', async () => {
    const { held, leases } = fakeLeases();
    const guard = transferGuard({ leases, limit: 1, userLimit: 8, what: 'downloads' });
    const { res } = await run(guard);
    expect(held.size).toBe(1);
    res.end('answered');
    await res.done();
    await new Promise((resolve) => setImmediate(resolve));
    expect(held.size).toBe(0);
  });

  it('starts nothing for a client gone while its lease was taken, and gives the lease back', async () => {
    const { held, leases } = fakeLeases();
    let taken: () => void = () => undefined;
    const slow = {
      acquire: async (subject: string, limit: number) => {
        await new Promise<void>((resolve) => (taken = resolve));
        return leases.acquire(subject, limit);
      },
    } as unknown as UploadLeases;
    const guard = transferGuard({ leases: slow, limit: 1, userLimit: 8, what: 'downloads' });
    const res = new FakeResponse();
    const req = fakeRequest({ method: 'POST', url: '/file/download', meta: { apiKeyId: 'k1' } });
    const socket = { destroyed: false };
    Object.assign(req, { socket });
    const next = jest.fn();
    guard(req, res.asServerResponse(), next);
    // The client leaves while Redis answers.
    socket.destroyed = true;
    res.destroy();
    await res.done();
    taken();
    await new Promise((resolve) => setImmediate(resolve));
    expect(next).not.toHaveBeenCalled();
    expect(held.size).toBe(0);
  });

  it('keeps the lease of a call its client left until the call is over', async () => {
    const { held, leases } = fakeLeases();
    const guard = transferGuard({ leases, limit: 1, userLimit: 8, what: 'downloads' });
    let answer: () => void = () => undefined;
    const service = {
      // S3 answering a download: the file service's slot is taken meanwhile.
      aliasHandler: () => new Promise<void>((resolve) => (answer = resolve)),
    };
    const req = fakeRequest({ method: 'POST', url: '/file/download', meta: { apiKeyId: 'k1' } });
    Object.assign(req, { socket: { destroyed: false } });
    const res = new FakeResponse();
    const found = { alias: { fullPath: '/file/download', action: 'file.download' }, params: {} };
    const settled = routeHandler.call(
      service,
      req.$ctx,
      { middlewares: [guard] },
      req,
      res.asServerResponse(),
      found as unknown as FoundAlias,
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(held.size).toBe(1);
    res.destroy();
    await settled; // the route is done with the client...
    await new Promise((resolve) => setImmediate(resolve));
    expect(held.size).toBe(1); // ...not the call
    answer();
    await new Promise((resolve) => setImmediate(resolve));
    expect(held.size).toBe(0);
  });

  it('answers 503 when the lease store cannot be reached', async () => {
    const guard = transferGuard({
      leases: fakeLeases({ down: true }).leases,
      limit: 1,
      userLimit: 8,
      what: 'uploads',
    });
    expect((await run(guard)).err).toMatchObject({
      code: 503,
      message: 'The quota store is unavailable; retry in a few seconds',
    });
  });
});

describe('transferLeaseMs', () => {
  it('outlives the longest transfer: a wait on S3 or Redis, FILE_TIMEOUT_MS, then an upload’s last writes, each retried (property)', () => {
    const ms = fc.integer({ min: 100, max: 3_600_000 });
    fc.assert(
      fc.property(ms, ms, ms, (file, s3, redis) => {
        const lease = transferLeaseMs({
          files: { timeoutMs: file },
          s3: { timeoutMs: s3 },
          redisCommandTimeoutMs: redis,
        });
        // A download that waited S3_TIMEOUT_MS for its headers; an upload that waited on its
        // day's allowance: each then runs FILE_TIMEOUT_MS; in one process the upload then
        // waits for a part in flight, sends its last part and completes the file, each of the
        // three retried once (two attempts of S3_TIMEOUT_MS), and counts it.
        expect(lease).toBeGreaterThan(s3 + file);
        expect(lease).toBeGreaterThan(redis + file + 3 * 2 * s3 + redis);
      }),
    );
  });
});
