import { transferGuard } from '../../../services/gateway/edge';
import type { UploadLease, UploadLeases } from '../../../services/gateway/upload-leases';
import { routeHandler, type FoundAlias } from '../../../services/gateway/web-routing';
import { FakeResponse, fakeRequest } from './fake-http';

/** Leases counted in memory, as Redis would for one key; `down` makes every call fail. */
function fakeLeases(options: { down?: boolean } = {}) {
  const held = new Set<number>();
  let next = 0;
  const leases = {
    async acquire(_subject: string, limit: number): Promise<UploadLease | undefined> {
      if (options.down) throw new Error('Connection is closed.');
      if (held.size >= limit) return undefined;
      const id = next++;
      held.add(id);
      return { release: async () => void held.delete(id) };
    },
  };
  return { held, leases: leases as unknown as UploadLeases };
}

/** Runs the middleware; resolves with what it passed to `next`. */
function run(guard: ReturnType<typeof transferGuard>, res = new FakeResponse()) {
  const req = fakeRequest({ method: 'POST', url: '/file/single-upload', meta: { apiKeyId: 'k1' } });
  Object.assign(req, { socket: { destroyed: false } });
  return new Promise<{ err: unknown; res: FakeResponse }>((resolve) =>
    guard(req, res.asServerResponse(), (err) => resolve({ err, res })),
  );
}

describe('transferGuard', () => {
  it('lets a key hold `limit` uploads, refuses the next with 429 and Retry-After', async () => {
    const { held, leases } = fakeLeases();
    const guard = transferGuard({ leases, limit: 2, what: 'uploads' });
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

  it('gives the lease back once the answer is out or the client has left', async () => {
    const { held, leases } = fakeLeases();
    const guard = transferGuard({ leases, limit: 1, what: 'downloads' });
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
    const guard = transferGuard({ leases: slow, limit: 1, what: 'downloads' });
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
    const guard = transferGuard({ leases, limit: 1, what: 'downloads' });
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
      what: 'uploads',
    });
    expect((await run(guard)).err).toMatchObject({
      code: 503,
      message: 'The quota store is unavailable; retry in a few seconds',
    });
  });
});
