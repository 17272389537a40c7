import { adminHeaders, createUserWithKey, expectErrorEnvelope, request } from '../support/http';
import { dropDatabases, isolation, startNode, type NodeProcess } from '../support/stack';

/** The same code in its three topologies, each serving an authenticated request end to end. */
describe.each<[string, string[], Record<string, string>]>([
  ['all services in one process, no transporter', ['all'], { NATS_URL: '' }],
  ['all services in one process over NATS', ['all'], {}],
  ['one process per service over NATS', ['account', 'gateway'], {}],
])('%s', (_name, processes, env) => {
  const iso = isolation();
  const nodes: NodeProcess[] = [];

  beforeAll(async () => {
    for (const services of processes) nodes.push(await startNode({ services, iso, env }));
  });

  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop()));
    await dropDatabases(iso);
  });

  it('creates a key through the admin API and uses it', async () => {
    const gateway = nodes[nodes.length - 1];
    const { userId, key } = await createUserWithKey(gateway.url);
    const me = await request(gateway.url, 'GET', '/api/me', { headers: { 'api-key': key } });
    expect(me.status).toBe(200);
    expect(me.body.data.user.id).toBe(userId);
  });

  it('answers a body of 20,000 unknown keys with a 400 of its first problems, small enough for NATS', async () => {
    const gateway = nodes[nodes.length - 1];
    const json: Record<string, unknown> = {
      name: 'Test Merchant',
      email: 'many-keys@example.com',
      phone: '+2348012345678',
    };
    for (let i = 0; i < 20_000; i++) json[`u${i}`] = 0;
    const res = await request(gateway.url, 'POST', '/admin/users', { headers: adminHeaders, json });
    expectErrorEnvelope(res, 400);
    expect(res.body.errors).toHaveLength(20);
    expect(res.body.errors[0]).toEqual({ field: 'u0', message: 'u0 is not allowed' });
    expect(res.body.message).toMatch(/; and 19980 more problems: fix these and send it again$/);
    expect(res.text.length).toBeLessThan(16_000);
  });

  it('reports readiness of every process on its ops port', async () => {
    for (const node of nodes) {
      const ready = await request(node.opsUrl, 'GET', '/health/ready');
      expect(ready.status).toBe(200);
      expect(ready.body.ready).toBe(true);
      expect(ready.body.checks.transporter).toBe(env.NATS_URL === '' ? undefined : true);
      const metrics = await fetch(`${node.opsUrl}/metrics`);
      expect(await metrics.text()).toMatch(/^moleculer_/m);
    }
  });
});

describe('gateways and services in separate processes over NATS', () => {
  const iso = isolation();
  let account: NodeProcess;
  let gateways: NodeProcess[];

  beforeAll(async () => {
    account = await startNode({ services: 'account', iso });
    gateways = await Promise.all(
      [0, 1].map(() =>
        startNode({ services: 'gateway', iso, env: { REQUEST_TIMEOUT_MS: '1500' } }),
      ),
    );
  });

  afterAll(async () => {
    await Promise.all([account, ...gateways].map((n) => n?.stop('SIGKILL')));
    await dropDatabases(iso);
  });

  it('share one quota per key through Redis', async () => {
    const { key } = await createUserWithKey(gateways[0].url, {
      quota: { limit: 5, windowSeconds: 120 },
    });
    const statuses: number[] = [];
    const remaining: (string | null)[] = [];
    for (let i = 0; i < 8; i++) {
      const reply = await request(gateways[i % 2].url, 'GET', '/api/me', {
        headers: { 'api-key': key },
      });
      statuses.push(reply.status);
      remaining.push(reply.headers.get('ratelimit-remaining'));
      if (reply.status === 429) {
        expectErrorEnvelope(reply, 429, 'API quota exceeded');
        expect(reply.headers.get('ratelimit-limit')).toBe('5');
        expect(Number(reply.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(Number(reply.headers.get('ratelimit-reset'))).toBeLessThanOrEqual(120);
      }
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
    expect(remaining.slice(0, 5)).toEqual(['4', '3', '2', '1', '0']);
  });

  it('applies the default quota to keys without their own', async () => {
    const { key } = await createUserWithKey(gateways[0].url);
    const reply = await request(gateways[1].url, 'GET', '/api/me', { headers: { 'api-key': key } });
    expect(reply.headers.get('ratelimit-limit')).toBe('600');
  });

  it('answers 503 once the service is stopped, and 504 when it hangs', async () => {
    const { key } = await createUserWithKey(gateways[0].url);
    account.child.kill('SIGSTOP'); // frozen: still registered, never answers
    try {
      const hung = await request(gateways[0].url, 'GET', '/api/me', {
        headers: { 'api-key': `${key.slice(0, -1)}${key.endsWith('0') ? '1' : '0'}` },
      });
      expectErrorEnvelope(hung, 504, /timed out/);
    } finally {
      account.child.kill('SIGCONT');
    }
    await account.stop('SIGTERM');
    const down = await request(gateways[1].url, 'GET', '/admin/users', {
      headers: { authorization: 'Bearer test-admin-token-0123456789' },
    });
    expectErrorEnvelope(down, 503, /temporarily unavailable/);
  });
});
