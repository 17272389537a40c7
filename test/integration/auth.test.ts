import { eventually } from '../support/eventually';
import { adminHeaders, createUserWithKey, expectErrorEnvelope, request } from '../support/http';
import { dropDatabases, isolation, startNode, type NodeProcess } from '../support/stack';

const iso = isolation();
let node: NodeProcess;

beforeAll(async () => {
  node = await startNode({ services: 'all', iso, env: { API_KEY_CACHE_SECONDS: '30' } });
});

afterAll(async () => {
  await node?.stop();
  await dropDatabases(iso);
});

const hex64 = 'ab'.repeat(32);

describe('API key authentication', () => {
  it('refuses a request without the api-key header', async () => {
    const reply = await request(node.url, 'GET', '/api/me');
    expectErrorEnvelope(reply, 401, 'API key is required');
    expect(reply.body.environment).toBe('staging');
    expect(reply.body.method).toBe('GET');
    expect(reply.body.path).toBe('/api/me');
  });

  it.each([
    ['no parts', 'hello'],
    ['wrong prefix', `xx_staging_${hex64}`],
    ['unknown environment', `wb_test_${hex64}`],
    ['63 hex digits', `wb_staging_${hex64.slice(1)}`],
    ['non-hex digits', `wb_staging_${'zz'.repeat(32)}`],
  ])('refuses a malformed key (%s)', async (_case, key) => {
    const reply = await request(node.url, 'GET', '/api/me', { headers: { 'api-key': key } });
    expectErrorEnvelope(reply, 401, 'Invalid API key format');
  });

  it('refuses a well-formed key of the other environment', async () => {
    const reply = await request(node.url, 'GET', '/api/me', {
      headers: { 'api-key': `wb_live_${hex64}` },
    });
    expectErrorEnvelope(reply, 401, /live API key.*staging/);
  });

  it('refuses a well-formed key that does not exist', async () => {
    const reply = await request(node.url, 'GET', '/api/me', {
      headers: { 'api-key': `wb_staging_${hex64}` },
    });
    expectErrorEnvelope(reply, 401, /Unknown API key/);
  });

  it("acts as the key's user", async () => {
    const { userId, key, keyId } = await createUserWithKey(node.url);
    const reply = await request(node.url, 'GET', '/api/me', { headers: { 'api-key': key } });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      success: true,
      message: 'Authenticated account retrieved',
      data: {
        user: expect.objectContaining({ id: userId, email: expect.any(String) }),
        apiKey: expect.objectContaining({ id: keyId, userId, environment: 'staging' }),
      },
    });
    expect(JSON.stringify(reply.body)).not.toContain(key);
  });

  it('accepts the key with upper-case hex digits', async () => {
    const { key, keyId } = await createUserWithKey(node.url);
    const upper = key.replace(/_([0-9a-f]{64})$/, (_m, hex: string) => `_${hex.toUpperCase()}`);
    const reply = await request(node.url, 'GET', '/api/me', { headers: { 'api-key': upper } });
    expect(reply.status).toBe(200);
    expect(reply.body.data.apiKey.id).toBe(keyId);
  });

  it('stops accepting a revoked key within seconds, despite the gateway cache', async () => {
    const { key, keyId } = await createUserWithKey(node.url);
    const before = await request(node.url, 'GET', '/api/me', { headers: { 'api-key': key } });
    expect(before.status).toBe(200); // now cached for 30 s

    const revoke = await request(node.url, 'DELETE', `/admin/api-keys/${keyId}`, {
      headers: adminHeaders,
    });
    expect(revoke.status).toBe(204);
    expect(revoke.text).toBe('');

    await eventually(
      async () => {
        const reply = await request(node.url, 'GET', '/api/me', { headers: { 'api-key': key } });
        expectErrorEnvelope(reply, 401, /revoked/);
      },
      { interval: 100 },
    );
  });

  it('records when a key was last used', async () => {
    const { userId, key, keyId } = await createUserWithKey(node.url);
    await request(node.url, 'GET', '/api/me', { headers: { 'api-key': key } });
    // Recorded beside the lookup, not before its answer.
    await eventually(async () => {
      const list = await request(node.url, 'GET', `/admin/users/${userId}/api-keys`, {
        headers: adminHeaders,
      });
      const stored = list.body.data.find((k: { id: string }) => k.id === keyId);
      expect(new Date(stored.lastUsedAt).getTime()).toBeGreaterThan(Date.now() - 60_000);
    });
  });
});
