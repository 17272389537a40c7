import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type Redis from 'ioredis';
import { connectRedis, createRedis } from '../../libs/redis';
import { IdempotencyStore } from '../../services/gateway/idempotency';
import { QuotaLimiter, quotaStoreClient } from '../../services/gateway/quota';
import { UploadLeases } from '../../services/gateway/upload-leases';
import { eventually } from '../support/eventually';
import { createUserWithKey, expectErrorEnvelope, request } from '../support/http';
import { dropDatabases, freePort, isolation, startNode } from '../support/stack';
import { tcpProxy } from '../support/tcp-proxy';
import { rejectionOf } from '../unit/helpers';

/**
 * A Redis that stalls without closing the connection (frozen, a blackholed network, a long
 * script): a TCP proxy to the real one that stops forwarding and keeps every connection open.
 * Without a command timeout every request waited for it forever; the tests' own timeouts are
 * what a hang runs into.
 */
const iso = isolation();

afterAll(async () => {
  await dropDatabases(iso);
});

describe('a Redis that stops answering without closing the connection', () => {
  it('makes /api and /file answer 503 envelopes, not hang', async () => {
    const redis = await tcpProxy(process.env.REDIS_URL as string);
    await redis.open();
    const account = await startNode({ services: 'account', iso });
    const gateway = await startNode({
      services: 'gateway',
      iso,
      env: { REDIS_URL: `redis://127.0.0.1:${redis.port}`, REDIS_COMMAND_TIMEOUT_MS: '500' },
    });
    try {
      const { key } = await createUserWithKey(gateway.url);
      const headers = { 'api-key': key };
      expect((await request(gateway.url, 'GET', '/api/me', { headers })).status).toBe(200);

      redis.stall();
      const me = await request(gateway.url, 'GET', '/api/me', { headers });
      expectErrorEnvelope(me, 503, /quota store is unavailable/);
      const keyed = await request(gateway.url, 'POST', '/api/pricing', {
        headers: { ...headers, 'idempotency-key': randomUUID() },
        json: {
          origin: 'Ikeja, Lagos',
          destination: 'Lekki, Lagos',
          totalWeight: 1,
          totalValue: 1,
        },
      });
      expectErrorEnvelope(keyed, 503, /quota store is unavailable/);
      const file = await request(gateway.url, 'POST', '/file/download', {
        headers,
        json: { fileId: 'none' },
      });
      expectErrorEnvelope(file, 503, /quota store is unavailable/);
      // Failed authentications are counted in Redis too.
      const unknown = await request(gateway.url, 'GET', '/api/me', {
        headers: { 'api-key': `wb_staging_${'ab'.repeat(32)}` },
      });
      expectErrorEnvelope(unknown, 503, /quota store is unavailable/);
    } finally {
      await redis.cut();
      await Promise.all([gateway.stop(), account.stop()]);
    }
  }, 60_000);

  it('fails the quota count and the idempotency claim, and drops the silent connection', async () => {
    const proxy = await tcpProxy(process.env.REDIS_URL as string);
    await proxy.open();
    const url = `redis://127.0.0.1:${proxy.port}`;
    const gatewayClient = quotaStoreClient(url, 'stall-quota', () => undefined, 300);
    const plainClient = createRedis(url, 'stall-idempotency', () => undefined, {
      commandTimeoutMs: 300,
    });
    try {
      await Promise.all([connectRedis(gatewayClient), connectRedis(plainClient)]);
      const quota = new QuotaLimiter(gatewayClient, `${iso.namespace}:stall-quota:`);
      const store = new IdempotencyStore(plainClient, `${iso.namespace}:stall-idem:`, {
        pendingMs: 60_000,
        keepMs: 60_000,
      });
      const limits = { limit: 10, windowSeconds: 60 };
      expect((await quota.consume('k', limits)).allowed).toBe(true);
      const before = proxy.connections();

      proxy.stall();
      expect(await rejectionOf(() => quota.consume('k', limits))).toMatchObject({
        code: 503,
        message: expect.stringMatching(/quota store is unavailable/),
      });
      expect(await rejectionOf(() => store.claim('user', randomUUID(), 'print'))).toMatchObject({
        code: 503,
        message: expect.stringMatching(/Idempotency keys cannot be checked/),
      });
      // The connection that went silent is given up and another opened, so the commands that
      // timed out on it do not pile up for as long as the stall lasts.
      await eventually(() => expect(proxy.connections()).toBeGreaterThan(before), {
        timeout: 20_000,
        interval: 100,
      });
    } finally {
      gatewayClient.disconnect();
      plainClient.disconnect();
      await proxy.cut();
    }
  }, 60_000);
});

describe('a gateway whose Redis connection is slow to open', () => {
  it('is ready once connected, and answers its first request with Redis', async () => {
    const redis = await tcpProxy(process.env.REDIS_URL as string);
    await redis.open();
    // The connection's first command names the client: everything from it waits a second.
    const held = redis.holdFrom(`${iso.namespace}-gateway`);
    const starting = startNode({
      services: 'gateway,account',
      iso,
      env: { REDIS_URL: `redis://127.0.0.1:${redis.port}` },
    });
    await held;
    setTimeout(() => redis.release(), 1_000);
    const gateway = await starting;
    try {
      // Counted in Redis as a failed authentication, then looked up: not the quota store's 503.
      const unknown = await request(gateway.url, 'GET', '/api/me', {
        headers: { 'api-key': `wb_staging_${'cd'.repeat(32)}` },
      });
      expectErrorEnvelope(unknown, 401, /Unknown API key/);
    } finally {
      await gateway.stop();
      await redis.cut();
    }
  }, 60_000);
});

describe('a Redis command answered too late, or lost with its connection', () => {
  /** A client through a proxy of its own, whose commands time out after 300 ms. */
  async function throughProxy(name: string, target = process.env.REDIS_URL as string) {
    const proxy = await tcpProxy(target);
    await proxy.open();
    const client = createRedis(`redis://127.0.0.1:${proxy.port}`, name, () => undefined, {
      commandTimeoutMs: 300,
    });
    await connectRedis(client);
    return { proxy, client };
  }

  /**
   * Runs `write` on a client whose keys start `<namespace>:<name>:`, held by the proxy past
   * its timeout; what it failed with once the held write reached Redis after all (before the
   * connection is given up for silence), and the client for the next call.
   */
  async function failedThenLanded<T>(
    name: string,
    using: (client: Redis, prefix: string) => T,
    write: (made: T) => Promise<unknown>,
    then: (made: T, failure: unknown) => Promise<void>,
  ) {
    const { proxy, client } = await throughProxy(name);
    const prefix = `${iso.namespace}:${name}:`;
    const made = using(client, prefix);
    try {
      const held = proxy.holdFrom(prefix);
      const failing = rejectionOf(() => write(made));
      await held;
      const failure = await failing;
      proxy.release();
      await then(made, failure);
    } finally {
      client.disconnect();
      await proxy.cut();
    }
  }

  it('frees an idempotency key whose claim was answered 503 and landed after', async () => {
    const key = randomUUID();
    await failedThenLanded(
      'late-claim',
      (client, prefix) =>
        new IdempotencyStore(client, prefix, { pendingMs: 60_000, keepMs: 60_000 }),
      (store) => store.claim('user', key, 'print'),
      async (store, failure) => {
        expect(failure).toMatchObject({ code: 503 });
        // Its retry runs: nothing ran under the key.
        expect((await store.claim('user', key, 'print')).kind).toBe('first');
      },
    );
  }, 30_000);

  it('gives back an upload lease whose take was answered 503 and landed after', async () => {
    await failedThenLanded(
      'late-lease',
      (client, prefix) => new UploadLeases(client, prefix, 60_000),
      (leases) => leases.acquire('key-1', 1),
      async (leases, failure) => {
        expect(failure).toMatchObject({ message: expect.stringMatching(/timed out/i) });
        // The key's one place is free: no upload holds it.
        expect(await leases.acquire('key-1', 1)).toBeDefined();
      },
    );
  }, 30_000);

  it('sends nothing again on a new connection once its caller was answered', async () => {
    const { proxy, client } = await throughProxy('no-resend');
    const direct = createRedis(process.env.REDIS_URL as string, 'no-resend-check', () => {});
    const key = `${iso.namespace}:no-resend:${randomUUID()}`;
    try {
      await connectRedis(direct);
      const held = proxy.holdFrom(key);
      const counted = rejectionOf(() => client.incr(key));
      await held;
      expect(await counted).toMatchObject({ message: expect.stringMatching(/timed out/i) });
      // The connection is lost with the command on it; the client opens another.
      await proxy.cut();
      await proxy.open();
      await eventually(async () => expect(await client.ping()).toBe('PONG'), {
        timeout: 10_000,
        interval: 100,
      });
      expect(await direct.get(key)).toBeNull();
    } finally {
      client.disconnect();
      direct.disconnect();
      await proxy.cut();
    }
  }, 30_000);

  it('gives up the connection to a primary demoted to a replica (READONLY)', async () => {
    // A real Redis that is a replica, as a demoted primary is: it refuses every write.
    const port = await freePort();
    const replica = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--replicaof',
        '127.0.0.1',
        '1',
      ],
      { stdio: 'ignore' },
    );
    try {
      const target = `redis://127.0.0.1:${port}`;
      await eventually(
        async () => {
          const probe = createRedis(target, 'replica-probe', () => {});
          try {
            await connectRedis(probe);
          } finally {
            probe.disconnect();
          }
        },
        { timeout: 10_000, interval: 100 },
      );
      const { proxy, client } = await throughProxy('demoted', target);
      try {
        const before = proxy.connections();
        expect(await rejectionOf(() => client.set(`${iso.namespace}:demoted`, '1'))).toMatchObject({
          message: expect.stringMatching(/^READONLY/),
        });
        await eventually(() => expect(proxy.connections()).toBeGreaterThan(before), {
          timeout: 10_000,
          interval: 100,
        });
      } finally {
        client.disconnect();
        await proxy.cut();
      }
    } finally {
      replica.kill();
    }
  }, 30_000);
});
