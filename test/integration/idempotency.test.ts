import { createHash, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { connectRedis, createRedis } from '../../libs/redis';
import { Errors } from 'moleculer';
import { badRequest, serviceUnavailable } from '../../libs/errors';
import { IdempotencyStore, MAX_KEPT_ANSWER_BYTES } from '../../services/gateway/idempotency';
import { expectErrorEnvelope, request } from '../support/http';
import { useMerchantStack } from '../support/merchant-stack';
import { rejectionOf } from '../unit/helpers';

const stack = useMerchantStack({ internal: ['package'] });
const redis = createRedis(process.env.REDIS_URL as string, 'idempotency-test', () => undefined);
beforeAll(() => connectRedis(redis));
afterAll(() => redis.quit());

const shoes = { packageType: 'Fashion', name: 'Shoes', quantity: 1, size: 'SMALL', value: 900 };

const savePackage = (who: { key: string }, json: unknown, key?: string) =>
  request(stack.node.url, 'POST', '/api/package', {
    headers: { 'api-key': who.key, ...(key === undefined ? {} : { 'idempotency-key': key }) },
    json,
  });
const packageIds = async (who: { key: string }) =>
  (
    await request(stack.node.url, 'GET', '/api/packages', { headers: { 'api-key': who.key } })
  ).body.data.map((p: { id: string }) => p.id) as string[];

describe('Idempotency-Key on POST /api', () => {
  it('replays the first answer to a retry instead of saving the package again', async () => {
    const key = randomUUID();
    const first = await savePackage(stack.alice, shoes, key);
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();

    const retry = await savePackage(stack.alice, { ...shoes }, key);
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.text).toBe(first.text);
    expect((await packageIds(stack.alice)).filter((id) => id === first.body.data.id)).toHaveLength(
      1,
    );
  });

  it('replays to a retry sent to the same route spelt otherwise (case, trailing slash)', async () => {
    const key = randomUUID();
    const first = await savePackage(stack.alice, shoes, key);
    expect(first.status).toBe(201);
    for (const path of ['/api/package/', '/API/Package']) {
      const retry = await request(stack.node.url, 'POST', path, {
        headers: { 'api-key': stack.alice.key, 'idempotency-key': key },
        json: shoes,
      });
      expect(retry.status).toBe(201);
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
      expect(retry.text).toBe(first.text);
    }
  });

  it('keeps no answer of a read (a quote): a retry runs it again, and Redis holds nothing', async () => {
    const key = randomUUID();
    const quote = () =>
      request(stack.node.url, 'POST', '/api/pricing', {
        headers: { 'api-key': stack.alice.key, 'idempotency-key': key },
        json: {
          origin: 'Ikeja, Lagos',
          destination: 'Lekki, Lagos',
          totalWeight: 1,
          totalValue: 1,
        },
      });
    const first = await quote();
    expect(first.status).toBe(200);
    const retry = await quote();
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(retry.body.data.costs).toEqual(first.body.data.costs);
    const redisKey = `${stack.iso.namespace}:idempotency:${stack.alice.userId}:${sha256(key)}`;
    expect(await redis.exists(redisKey)).toBe(0);
  });

  it('saves exactly one package for many simultaneous requests with one key', async () => {
    const key = randomUUID();
    const before = (await packageIds(stack.alice)).length;
    const replies = await Promise.all(
      Array.from({ length: 10 }, () => savePackage(stack.alice, shoes, key)),
    );
    const created = replies.filter((r) => r.status === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    expect(new Set(created.map((r) => r.body.data.id)).size).toBe(1);
    for (const reply of replies.filter((r) => r.status !== 201)) {
      expectErrorEnvelope(
        reply,
        409,
        /still in progress or its outcome is unknown; retry after \d+ seconds/,
      );
      expect(Number(reply.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    expect((await packageIds(stack.alice)).length).toBe(before + 1);
  });

  it('refuses a key reused for a different request with 422', async () => {
    const key = randomUUID();
    expect((await savePackage(stack.alice, shoes, key)).status).toBe(201);
    expectErrorEnvelope(
      await savePackage(stack.alice, { ...shoes, quantity: 2 }, key),
      422,
      /already used for a different request; send a new key/,
    );
    const pricing = await request(stack.node.url, 'POST', '/api/pricing', {
      headers: { 'api-key': stack.alice.key, 'idempotency-key': key },
      json: { origin: 'Ikeja, Lagos', destination: 'Lekki, Lagos', totalWeight: 1, totalValue: 1 },
    });
    expectErrorEnvelope(pricing, 422);
  });

  it('keeps each user’s keys apart', async () => {
    const key = randomUUID();
    const alices = await savePackage(stack.alice, shoes, key);
    const bobs = await savePackage(stack.bob, shoes, key);
    expect([alices.status, bobs.status]).toEqual([201, 201]);
    expect(bobs.headers.get('idempotent-replayed')).toBeNull();
    expect(bobs.body.data.userId).toBe(stack.bob.userId);
    expect(bobs.body.data.id).not.toBe(alices.body.data.id);
  });

  it('frees the key of a refused request, so the corrected one can use it', async () => {
    const key = randomUUID();
    expectErrorEnvelope(await savePackage(stack.alice, { ...shoes, size: 'HUGE' }, key), 400);
    const corrected = await savePackage(stack.alice, shoes, key);
    expect(corrected.status).toBe(201);
    expect(corrected.headers.get('idempotent-replayed')).toBeNull();
  });

  it('refuses an unusable key with 400, and ignores the header where it does not apply', async () => {
    expectErrorEnvelope(await savePackage(stack.alice, shoes, 'two words'), 400, /Idempotency-Key/);
    const list = await request(stack.node.url, 'GET', '/api/packages', {
      headers: { 'api-key': stack.alice.key, 'idempotency-key': 'two words' },
    });
    expect(list.status).toBe(200);
  });

  it('without the header, every request is its own', async () => {
    const a = await savePackage(stack.alice, shoes);
    const b = await savePackage(stack.alice, shoes);
    expect(a.body.data.id).not.toBe(b.body.data.id);
  });
});

describe('a package saved under an Idempotency-Key', () => {
  const saveInternally = (token: string, body = shoes) =>
    stack.client.call<{ id: string }, typeof shoes>('package.save', body, {
      meta: { user: { id: stack.alice.userId }, idempotencyToken: token },
    });

  it('is created once even when the gateway has forgotten the key (a lost answer)', async () => {
    const token = randomUUID();
    const before = (await packageIds(stack.alice)).length;
    const runs = await Promise.all(Array.from({ length: 5 }, () => saveInternally(token)));
    expect(new Set(runs.map((p) => p.id)).size).toBe(1);
    expect((await saveInternally(token)).id).toBe(runs[0].id);
    expect((await packageIds(stack.alice)).length).toBe(before + 1);
    expect((await saveInternally(randomUUID())).id).not.toBe(runs[0].id);
  });

  it('is not answered as created again once deleted: 409, and a new key creates another', async () => {
    const token = randomUUID();
    const first = await saveInternally(token);
    const deleted = await request(stack.node.url, 'DELETE', `/api/package/${first.id}`, {
      headers: { 'api-key': stack.alice.key },
    });
    expect(deleted.status).toBe(204);
    const again = await rejectionOf(() => saveInternally(token));
    expect(again).toMatchObject({
      code: 409,
      message: expect.stringMatching(
        /already created package .* since deleted.*new Idempotency-Key/,
      ),
    });
    expect((await packageIds(stack.alice)).includes(first.id)).toBe(false);
    expect((await saveInternally(randomUUID())).id).not.toBe(first.id);
  });

  it('gets an id named after the key and request, which edits accept', async () => {
    const key = randomUUID();
    const first = await savePackage(stack.alice, shoes, key);
    expect(first.body.data.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5/);
    const edited = await savePackage(stack.alice, { packageId: first.body.data.id, quantity: 3 });
    expect(edited.status).toBe(201);
    expect(edited.body.data.quantity).toBe(3);
  });
});

/** How the store names a key in Redis: its SHA-256, never the key itself. */
const sha256 = (text: string) => createHash('sha256').update(text).digest('base64url');

describe('IdempotencyStore on Redis', () => {
  const store = new IdempotencyStore(redis, `${stack.iso.namespace}:idem-test:`, {
    pendingMs: 60_000,
    keepMs: 60_000,
  });

  it('keeps the key of a request whose outcome is unknown until pendingMs passes', async () => {
    const first = await store.claim('u1', 'k-timeout', 'fp');
    expect(first.kind).toBe('first');
    if (first.kind === 'first') {
      await first.fail({ type: 'REQUEST_TIMEOUT', code: 504 }, 'package.save');
    }
    await expect(store.claim('u1', 'k-timeout', 'fp')).rejects.toMatchObject({ code: 409 });
  });

  describe('an action a second run would do again (retry kind never)', () => {
    const short = new IdempotencyStore(redis, `${stack.iso.namespace}:idem-never:`, {
      pendingMs: 300,
      keepMs: 60_000,
    });
    const unknownOutcome = {
      code: 409,
      message: expect.stringMatching(
        /^The request with this Idempotency-Key may have completed: .* It is not run again under this key/,
      ),
      data: undefined,
    };

    it('is never run again once its outcome is unknown: told at once, for keepMs', async () => {
      const key = `k-${randomUUID()}`;
      const first = await short.claim('u1', key, 'fp', 'never');
      if (first.kind !== 'first') throw new Error('not first');
      await first.fail({ type: 'REQUEST_TIMEOUT', code: 504 }, 'order.cancel');
      const refusal = await rejectionOf(() => short.claim('u1', key, 'fp', 'never'));
      // No Retry-After: waiting does not change it.
      expect(refusal).toMatchObject(unknownOutcome);
      await new Promise((resolve) => setTimeout(resolve, 500));
      await expect(short.claim('u1', key, 'fp', 'never')).rejects.toMatchObject(unknownOutcome);
      await expect(short.claim('u1', key, 'another request', 'never')).rejects.toMatchObject({
        code: 422,
      });
      const redisKey = `${stack.iso.namespace}:idem-never:u1:${sha256(key)}`;
      expect(await redis.pttl(redisKey)).toBeGreaterThan(30_000);
    });

    it('whose gateway went away before answering: held while it may run, then not run again', async () => {
      const key = `k-${randomUUID()}`;
      const first = await short.claim('u1', key, 'fp', 'never');
      expect(first.kind).toBe('first');
      // Neither complete nor fail is ever called: the gateway is gone.
      await expect(short.claim('u1', key, 'fp', 'never')).rejects.toMatchObject({
        code: 409,
        data: { retryAfter: 1 },
      });
      await new Promise((resolve) => setTimeout(resolve, 500));
      await expect(short.claim('u1', key, 'fp', 'never')).rejects.toMatchObject(unknownOutcome);
      // A keyed action, named after the key, is run again and finds its first outcome.
      const keyed = `k-${randomUUID()}`;
      expect((await short.claim('u1', keyed, 'fp', 'keyed')).kind).toBe('first');
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect((await short.claim('u1', keyed, 'fp', 'keyed')).kind).toBe('first');
    });

    it("is held as long as its claimer's hold, read by a gateway of other settings", async () => {
      const claimer = new IdempotencyStore(redis, `${stack.iso.namespace}:idem-never:`, {
        pendingMs: 60_000,
        keepMs: 120_000,
      });
      const key = `k-${randomUUID()}`;
      expect((await claimer.claim('u1', key, 'fp', 'never')).kind).toBe('first');
      await new Promise((resolve) => setTimeout(resolve, 500));
      // This one holds its own for 300 ms: the first request may still be running all the same.
      const reader = new IdempotencyStore(redis, `${stack.iso.namespace}:idem-never:`, {
        pendingMs: 300,
        keepMs: 120_000,
      });
      const held = await rejectionOf(() => reader.claim('u1', key, 'fp', 'never'));
      expect(held).toMatchObject({ code: 409 });
      expect((held as { data?: { retryAfter?: number } }).data?.retryAfter).toBeGreaterThan(55);
    });

    it('is freed by a refusal, and replays an answer, as any other', async () => {
      const refused = `k-${randomUUID()}`;
      const first = await short.claim('u1', refused, 'fp', 'never');
      if (first.kind !== 'first') throw new Error('not first');
      await first.fail(badRequest('no'), 'order.cancel');
      expect((await short.claim('u1', refused, 'fp', 'never')).kind).toBe('first');
      const answered = `k-${randomUUID()}`;
      const again = await short.claim('u1', answered, 'fp', 'never');
      if (again.kind !== 'first') throw new Error('not first');
      const answer = { status: 201, headers: {}, body: { cancelled: true } };
      expect(await again.complete(answer)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await short.claim('u1', answered, 'fp', 'never')).toEqual({
        kind: 'replay',
        response: answer,
      });
    });
  });

  it('holds the key of an answer too large to keep: a retry gets 409, not a second run', async () => {
    const key = `k-${randomUUID()}`;
    const first = await store.claim('u1', key, 'fp');
    if (first.kind !== 'first') throw new Error('not first');
    const big = { status: 200, headers: {}, body: { text: 'x'.repeat(MAX_KEPT_ANSWER_BYTES) } };
    expect(await first.complete(big)).toBe(true);
    await expect(store.claim('u1', key, 'fp')).rejects.toMatchObject({
      code: 409,
      message: expect.stringMatching(/completed, but its answer was larger than 64 KB/),
    });
    await expect(store.claim('u1', key, 'another request')).rejects.toMatchObject({ code: 422 });
    const kept = await redis.get(`${stack.iso.namespace}:idem-test:u1:${sha256(key)}`);
    expect(Buffer.byteLength(kept ?? '')).toBeLessThan(1024);
    expect(await redis.pttl(`${stack.iso.namespace}:idem-test:u1:${sha256(key)}`)).toBeGreaterThan(
      30_000,
    );
  });

  it('keeps an answer up to the cap', async () => {
    const key = `k-${randomUUID()}`;
    const first = await store.claim('u1', key, 'fp');
    if (first.kind !== 'first') throw new Error('not first');
    // The answer's JSON is measured, not its sealed form (a third larger).
    const answer = {
      status: 201,
      headers: {},
      body: { text: 'x'.repeat(MAX_KEPT_ANSWER_BYTES - 100) },
    };
    expect(Buffer.byteLength(JSON.stringify(answer))).toBeLessThanOrEqual(MAX_KEPT_ANSWER_BYTES);
    expect(await first.complete(answer)).toBe(true);
    expect(await store.claim('u1', key, 'fp')).toEqual({ kind: 'replay', response: answer });
  });

  it("claims a read's key only while it runs, released however it ends", async () => {
    const key = `k-${randomUUID()}`;
    const first = await store.claim('u1', key, 'fp', 'safe');
    if (first.kind !== 'first') throw new Error('not first');
    await expect(store.claim('u1', key, 'fp', 'safe')).rejects.toMatchObject({ code: 409 });
    await first.complete({ status: 200, headers: {}, body: {} });
    const again = await store.claim('u1', key, 'fp', 'safe');
    expect(again.kind).toBe('first');
    if (again.kind === 'first')
      await again.fail({ type: 'REQUEST_TIMEOUT', code: 504 }, 'geo.route');
    expect((await store.claim('u1', key, 'fp', 'safe')).kind).toBe('first');
  });

  it('never answers, nor frees, the key of a later request once its own claim ran out', async () => {
    const short = new IdempotencyStore(redis, `${stack.iso.namespace}:idem-short:`, {
      pendingMs: 200,
      keepMs: 60_000,
    });
    const key = `k-${randomUUID()}`;
    const slow = await short.claim('u1', key, 'fp');
    if (slow.kind !== 'first') throw new Error('not first');
    await new Promise((resolve) => setTimeout(resolve, 400));
    // Its claim ran out (a call retried past pendingMs): another request took the key.
    const later = await short.claim('u1', key, 'another request');
    expect(later.kind).toBe('first');
    expect(await slow.complete({ status: 201, headers: {}, body: { id: 'slow' } })).toBe(false);
    await slow.fail(badRequest('no'), 'package.save');
    // The later request still holds its key: a copy of it waits, the slow one's retry is refused.
    await expect(short.claim('u1', key, 'another request')).rejects.toMatchObject({ code: 409 });
    await expect(short.claim('u1', key, 'fp')).rejects.toMatchObject({ code: 422 });
  });

  it('releases the key of a refused request', async () => {
    const first = await store.claim('u1', 'k-refused', 'fp');
    if (first.kind === 'first') await first.fail(badRequest('no'), 'package.save');
    expect((await store.claim('u1', 'k-refused', 'fp')).kind).toBe('first');
  });

  // A 503 is no proof that nothing happened: the node may have committed before it dropped.
  it.each<[string, unknown]>([
    [
      'REQUEST_REJECTED (the node went away with the request)',
      new Errors.RequestRejectedError({ action: 'package.save', nodeID: 'package-1' }),
    ],
    [
      'the same error as it crosses NATS, a plain object',
      { name: 'RequestRejectedError', type: 'REQUEST_REJECTED', code: 503, data: {} },
    ],
    ['a 503 of a dependency, raised by the service', serviceUnavailable('S3 is unavailable')],
    [
      'SERVICE_NOT_AVAILABLE of another action the service called',
      new Errors.ServiceNotAvailableError({ action: 'geo.route', nodeID: 'geo-1' }),
    ],
  ])('keeps the key after %s, and says when to retry', async (_name, err) => {
    const key = `k-${randomUUID()}`;
    const first = await store.claim('u1', key, 'fp');
    expect(first.kind).toBe('first');
    if (first.kind === 'first') await first.fail(err, 'package.save');
    await expect(store.claim('u1', key, 'fp')).rejects.toMatchObject({
      code: 409,
      message: expect.stringMatching(
        /^A request with this Idempotency-Key is still in progress or its outcome is unknown; retry after (59|60) seconds$/,
      ),
      data: { retryAfter: expect.any(Number) },
    });
  });

  it.each<[string, unknown]>([
    [
      'SERVICE_NOT_FOUND of the action called (no node runs it)',
      new Errors.ServiceNotFoundError({ action: 'package.save' }),
    ],
    [
      'SERVICE_NOT_AVAILABLE of the action called (its node was stopping)',
      new Errors.ServiceNotAvailableError({ action: 'package.save', nodeID: 'package-1' }),
    ],
  ])('releases the key after %s: it never started', async (_name, err) => {
    const key = `k-${randomUUID()}`;
    const first = await store.claim('u1', key, 'fp');
    if (first.kind === 'first') await first.fail(err, 'package.save');
    expect((await store.claim('u1', key, 'fp')).kind).toBe('first');
  });

  it('replays a completed answer, status and headers included', async () => {
    const first = await store.claim('u1', 'k-done', 'fp');
    const response = { status: 201, headers: { Location: '/x' }, body: { data: 1 } };
    if (first.kind === 'first') expect(await first.complete(response)).toBe(true);
    expect(await store.claim('u1', 'k-done', 'fp')).toEqual({ kind: 'replay', response });
  });

  it('keeps an answer sealed under the key: Redis holds none of its text, the retry reads it', async () => {
    const key = `k-${randomUUID()}`;
    const first = await store.claim('u1', key, 'fp');
    const secret = `whsec_${randomUUID()}`;
    const response = { status: 201, headers: {}, body: { data: { secret, name: 'Ada Obi' } } };
    if (first.kind === 'first') expect(await first.complete(response)).toBe(true);
    const stored = await redis.get(`${stack.iso.namespace}:idem-test:u1:${sha256(key)}`);
    expect(stored).toContain('"sealed"');
    for (const text of [secret, 'Ada Obi']) expect(stored).not.toContain(text);
    expect(await store.claim('u1', key, 'fp')).toEqual({ kind: 'replay', response });
  });

  it('replays an answer kept in clear before answers were sealed', async () => {
    const key = `k-${randomUUID()}`;
    const response = { status: 201, headers: {}, body: { data: 2 } };
    await redis.set(
      `${stack.iso.namespace}:idem-test:u1:${sha256(key)}`,
      JSON.stringify({ fingerprint: 'fp', response }),
      'PX',
      60_000,
    );
    expect(await store.claim('u1', key, 'fp')).toEqual({ kind: 'replay', response });
  });

  it('never stores a stream or bytes: the key stays held, nothing is replayed', async () => {
    for (const [name, body] of [
      ['stream', Readable.from([Buffer.from('file bytes')])],
      ['buffer', Buffer.from('file bytes')],
    ] as const) {
      const first = await store.claim('u1', `k-${name}`, 'fp');
      expect(first.kind).toBe('first');
      if (first.kind === 'first') {
        expect(await first.complete({ status: 200, headers: {}, body })).toBe(false);
      }
      await expect(store.claim('u1', `k-${name}`, 'fp')).rejects.toMatchObject({ code: 409 });
    }
  });

  it('answers 503, not 500, when Redis cannot be reached', async () => {
    const down = createRedis('redis://127.0.0.1:1', 'idempotency-down', () => undefined);
    const unreachable = new IdempotencyStore(down, 'x:', { pendingMs: 1000, keepMs: 1000 });
    await expect(unreachable.claim('u1', 'k', 'fp')).rejects.toMatchObject({ code: 503 });
    down.disconnect();
  });
});
