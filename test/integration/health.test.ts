import { eventually } from '../support/eventually';
import { adminHeaders, createUserWithKey, expectErrorEnvelope, request } from '../support/http';
import { count, samples } from '../support/metrics';
import { dropDatabases, freePort, isolation, startNode } from '../support/stack';
import { tcpProxy } from '../support/tcp-proxy';

const iso = isolation();

afterAll(async () => {
  await dropDatabases(iso);
});

describe('health probes', () => {
  it('are live and ready on the gateway port and the ops port', async () => {
    const node = await startNode({ services: 'all', iso });
    try {
      const live = await request(node.url, 'GET', '/health/live');
      expect(live.status).toBe(200);
      const ready = await request(node.url, 'GET', '/health/ready');
      expect(ready.status).toBe(200);
      expect(ready.body.data.checks).toEqual({
        broker: true,
        transporter: true,
        redis: true,
        // The order service's cancel windows.
        'order-redis': true,
        // courier-matching's index of couriers' positions.
        'matching-redis': true,
        // The file service's count of each user's bytes of the day (reported, not required).
        'file-redis': true,
        [`mongo:${iso.dbPrefix}account`]: true,
        [`mongo:${iso.dbPrefix}geo`]: true,
        [`mongo:${iso.dbPrefix}pricing`]: true,
        [`mongo:${iso.dbPrefix}package`]: true,
        [`mongo:${iso.dbPrefix}payment`]: true,
        [`mongo:${iso.dbPrefix}order`]: true,
        // courier-matching's database is named for what it holds.
        [`mongo:${iso.dbPrefix}matching`]: true,
        [`mongo:${iso.dbPrefix}webhook`]: true,
        s3: true,
      });
      const metrics = await fetch(`${node.opsUrl}/metrics`);
      expect(metrics.headers.get('content-type')).toMatch(/text\/plain/);
      expect(await metrics.text()).toMatch(/moleculer_request_total/);
    } finally {
      await node.stop();
    }
  });

  it('keep a gateway without Redis ready: /api and /file answer 503, /admin goes on', async () => {
    const deadPort = await freePort();
    const account = await startNode({ services: 'account', iso });
    const gateway = await startNode({
      services: 'gateway',
      iso,
      env: { REDIS_URL: `redis://127.0.0.1:${deadPort}` },
      waitReady: false,
    });
    try {
      const ops = await eventually(
        async () => {
          const reply = await request(gateway.opsUrl, 'GET', '/health/ready');
          expect(reply.status).toBe(200);
          return reply;
        },
        { timeout: 15_000, interval: 200 },
      );
      expect(ops.body).toMatchObject({
        ready: true,
        checks: { broker: true, transporter: true, redis: false },
        degraded: ['redis'],
      });
      const ready = await request(gateway.url, 'GET', '/health/ready');
      expect(ready.status).toBe(200);
      expect(ready.body.message).toMatch(/degraded: redis down/);
      const up = await samples(gateway.opsUrl, 'waybill_dependency_up');
      expect(count(up, { dependency: 'redis' })).toBe(0);
      expect(count(up, { dependency: 'transporter' })).toBe(1);

      // The admin API needs no Redis.
      const { key } = await createUserWithKey(gateway.url);
      const users = await request(gateway.url, 'GET', '/admin/users', { headers: adminHeaders });
      expect(users.status).toBe(200);
      const api = await request(gateway.url, 'GET', '/api/me', { headers: { 'api-key': key } });
      expectErrorEnvelope(api, 503, /quota store is unavailable/);
      const file = await request(gateway.url, 'POST', '/file/download', {
        headers: { 'api-key': key },
        json: { fileId: 'none' },
      });
      expectErrorEnvelope(file, 503, /quota store is unavailable/);
    } finally {
      await Promise.all([gateway.stop(), account.stop()]);
    }
  });

  it('keep a file service without Redis ready: uploads answer 503, downloads go on', async () => {
    const deadPort = await freePort();
    const cdn = 'https://cdn.health.test';
    const [gateway, file] = await Promise.all([
      startNode({ services: 'gateway,account', iso, env: { CDN_BASE_URL: cdn } }),
      startNode({
        services: 'file',
        iso,
        env: { CDN_BASE_URL: cdn, REDIS_URL: `redis://127.0.0.1:${deadPort}` },
      }),
    ]);
    try {
      const ready = await request(file.opsUrl, 'GET', '/health/ready');
      expect(ready.status).toBe(200);
      expect(ready.body).toMatchObject({
        ready: true,
        checks: { s3: true, 'file-redis': false },
        degraded: ['file-redis'],
      });
      const { key, userId } = await createUserWithKey(gateway.url);
      const form = new FormData();
      form.append('upload-file', new Blob([Buffer.from('%PDF-1.7\n')]), 'a.pdf');
      const uploaded = await eventually(async () => {
        const res = await fetch(`${gateway.url}/file/single-upload`, {
          method: 'POST',
          headers: { 'api-key': key },
          body: form,
        });
        const reply = { status: res.status, headers: res.headers, text: await res.text() };
        // Until the gateway has found the file service, its answer is another 503.
        expect(reply.text).toMatch(/upload allowance cannot be read/);
        return { ...reply, body: JSON.parse(reply.text) };
      });
      expectErrorEnvelope(
        uploaded,
        503,
        'The upload allowance cannot be read; retry in a few seconds',
      );
      // A download needs no count: a file that is not there is 404, not 503.
      const missing = await request(gateway.url, 'POST', '/file/download', {
        headers: { 'api-key': key },
        json: { url: `${cdn}/uploads/${userId}/3f1c2a9e-7a0b-4c1d-9e2f-0a1b2c3d4e5f.pdf` },
      });
      expectErrorEnvelope(missing, 404);
    } finally {
      await Promise.all([gateway.stop(), file.stop()]);
    }
  });

  it('keep a gateway cut off from NATS ready, answering 503 until it is back', async () => {
    const nats = await tcpProxy(process.env.NATS_URL as string);
    await nats.open();
    const account = await startNode({ services: 'account', iso });
    const gateway = await startNode({
      services: 'gateway',
      iso,
      env: { NATS_URL: `nats://127.0.0.1:${nats.port}` },
    });
    try {
      const users = () => request(gateway.url, 'GET', '/admin/users', { headers: adminHeaders });
      expect((await users()).status).toBe(200);

      await nats.cut();
      const ops = await eventually(async () => {
        const reply = await request(gateway.opsUrl, 'GET', '/health/ready');
        expect(reply.body.checks.transporter).toBe(false);
        return reply;
      });
      expect(ops.status).toBe(200);
      expect(ops.body).toMatchObject({ ready: true, degraded: ['transporter'] });
      expectErrorEnvelope(await users(), 503, /temporarily unavailable/);
      const up = await samples(gateway.opsUrl, 'waybill_dependency_up');
      expect(count(up, { dependency: 'transporter' })).toBe(0);

      await nats.open();
      await eventually(async () => expect((await users()).status).toBe(200), {
        timeout: 15_000,
        interval: 200,
      });
    } finally {
      await nats.cut();
      await Promise.all([gateway.stop(), account.stop()]);
    }
  });

  it('answers 503, not 500 or an unlimited pass, when the quota store is down', async () => {
    const deadPort = await freePort();
    const node = await startNode({
      services: 'all',
      iso,
      env: { REDIS_URL: `redis://127.0.0.1:${deadPort}` },
      waitReady: false,
    });
    try {
      // The admin API needs no Redis; wait until the account service has started.
      const user = await eventually(
        async () => {
          const reply = await request(node.url, 'POST', '/admin/users', {
            headers: adminHeaders,
            json: { name: 'No Redis', email: 'no-redis@example.com', phone: '+2348011111111' },
          });
          if (reply.status === 503) {
            throw new Error(`create user: 503 ${reply.text}\n${node.output()}`);
          }
          return reply;
        },
        { timeout: 10_000, interval: 200 },
      );
      if (user.status !== 201) {
        throw new Error(`create user: ${user.status} ${user.text}\n${node.output()}`);
      }
      const key = await request(node.url, 'POST', `/admin/users/${user.body.data.id}/api-keys`, {
        headers: adminHeaders,
        json: {},
      });
      const reply = await request(node.url, 'GET', '/api/me', {
        headers: { 'api-key': key.body.data.key },
      });
      expectErrorEnvelope(reply, 503, /quota store is unavailable/);
      // Failed authentications are counted there too: a malformed key and an unknown one get
      // the same 503, never a free 401 or a database lookup. No key at all guessed nothing,
      // and is told what to send.
      expectErrorEnvelope(
        await request(node.url, 'GET', '/api/me', {}),
        401,
        /API key is required/,
      );
      const failures: Record<string, string>[] = [
        { 'api-key': 'wb_staging_nothex' },
        { 'api-key': `wb_staging_${'ab'.repeat(32)}` },
      ];
      for (const headers of failures) {
        const refused = await request(node.url, 'GET', '/api/me', { headers });
        expectErrorEnvelope(refused, 503, /quota store is unavailable/);
      }
    } finally {
      await node.stop();
    }
  });
});
