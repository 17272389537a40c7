import { createUserWithKey, expectErrorEnvelope, request } from '../support/http';
import { dropDatabases, isolation, startNode, type NodeProcess } from '../support/stack';

const iso = isolation();
let node: NodeProcess;
const origin = 'https://shop.example.com';

beforeAll(async () => {
  node = await startNode({ services: 'all', iso });
});

afterAll(async () => {
  await node?.stop();
  await dropDatabases(iso);
});

describe('browser calls to /file', () => {
  it('answers the preflight for any origin, naming the api-key header', async () => {
    const reply = await request(node.url, 'OPTIONS', '/file/single-upload', {
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'api-key',
      },
    });
    expect(reply.status).toBe(204);
    expect(reply.headers.get('access-control-allow-origin')).toBe(origin);
    expect(reply.headers.get('access-control-allow-headers')).toMatch(/api-key/);
    expect(reply.headers.get('access-control-allow-methods')).toMatch(/POST/);
  });

  it('refuses a serverOnly key with 403, readable by the page', async () => {
    const { key } = await createUserWithKey(node.url, { serverOnly: true });
    const reply = await request(node.url, 'POST', '/file/download', {
      headers: { origin, 'api-key': key },
      json: { url: 'https://cdn.waybill.local/x.png' },
    });
    expectErrorEnvelope(reply, 403, /server-only/);
    expect(reply.headers.get('access-control-allow-origin')).toBe(origin);
  });

  it('lets a browser key through with CORS headers', async () => {
    const { key } = await createUserWithKey(node.url, { serverOnly: false });
    const reply = await request(node.url, 'POST', '/file/download', {
      headers: { origin, 'api-key': key },
      json: { url: 'https://cdn.waybill.local/x.png' },
    });
    // Past auth and CORS: the file service answers (400, not one of our URLs).
    expect(reply.status).not.toBe(403);
    expect(reply.status).not.toBe(401);
    expect(reply.headers.get('access-control-allow-origin')).toBe(origin);
    expect(reply.headers.get('access-control-expose-headers')).toMatch(/RateLimit-Remaining/);
    // A download's file name is the page's to read.
    expect(reply.headers.get('access-control-expose-headers')).toMatch(/Content-Disposition/);
  });

  it.each([
    ['a key that is not one', 'wb_live_nonsense'],
    ['no key', undefined],
  ])('answers %s with a 401 the page can read', async (_what, key) => {
    const reply = await request(node.url, 'POST', '/file/download', {
      headers: { origin, ...(key ? { 'api-key': key } : {}) },
      json: { url: 'https://cdn.waybill.local/x.png' },
    });
    expectErrorEnvelope(reply, 401);
    expect(reply.headers.get('access-control-allow-origin')).toBe(origin);
  });

  it('answers a method a path does not have with a 405 the page can read', async () => {
    const reply = await request(node.url, 'GET', '/file/single-upload', { headers: { origin } });
    expectErrorEnvelope(reply, 405, 'GET is not allowed on /file/single-upload; use POST');
    expect(reply.headers.get('access-control-allow-origin')).toBe(origin);
  });

  it('lets a serverOnly key call /file from a server (no Origin)', async () => {
    const { key } = await createUserWithKey(node.url, { serverOnly: true });
    const reply = await request(node.url, 'POST', '/file/download', {
      headers: { 'api-key': key },
      json: { url: 'https://cdn.waybill.local/x.png' },
    });
    expect(reply.status).not.toBe(403);
    expect(reply.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('browser calls to /api', () => {
  it('refuses the preflight', async () => {
    const reply = await request(node.url, 'OPTIONS', '/api/me', {
      headers: { origin, 'access-control-request-method': 'GET' },
    });
    expectErrorEnvelope(reply, 403, /Browsers may not call \/api/);
    expect(reply.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('client-app (publishable) keys: serverOnly false', () => {
  const PUBLISHABLE =
    /client-app \(publishable\) key; it may call \/file endpoints only.*server-only key/;

  it.each([
    ['GET', '/api/me', undefined],
    ['GET', '/api/packages', undefined],
    ['POST', '/api/package', { packageType: 'Box', name: 'x', size: 'SMALL', quantity: 1 }],
    ['DELETE', '/api/package/00000000-0000-4000-8000-000000000000', undefined],
  ])('refuses %s %s with 403, with or without Origin', async (method, path, json) => {
    const { key } = await createUserWithKey(node.url, { serverOnly: false });
    const variants: Record<string, string>[] = [{ 'api-key': key }, { 'api-key': key, origin }];
    for (const headers of variants) {
      const reply = await request(node.url, method, path, { headers, json });
      expectErrorEnvelope(reply, 403, PUBLISHABLE);
      expect(reply.headers.get('access-control-allow-origin')).toBeNull();
    }
  });

  it('counts nothing against the quota', async () => {
    const { key } = await createUserWithKey(node.url, {
      serverOnly: false,
      quota: { limit: 1, windowSeconds: 60 },
    });
    for (let i = 0; i < 3; i++) {
      const reply = await request(node.url, 'GET', '/api/me', { headers: { 'api-key': key } });
      expectErrorEnvelope(reply, 403, PUBLISHABLE);
      expect(reply.headers.get('ratelimit-remaining')).toBeNull();
    }
    const file = await request(node.url, 'POST', '/file/download', {
      headers: { 'api-key': key },
      json: { url: 'https://cdn.waybill.local/x.png' },
    });
    expect(file.headers.get('ratelimit-remaining')).toBe('0');
  });

  it('lets the key call /file from an app, without Origin', async () => {
    const { key } = await createUserWithKey(node.url, { serverOnly: false });
    const reply = await request(node.url, 'POST', '/file/download', {
      headers: { 'api-key': key },
      json: { url: 'https://cdn.waybill.local/x.png' },
    });
    // Past auth: the file service answers (not one of our files).
    expect([401, 403]).not.toContain(reply.status);
    expect(reply.headers.get('access-control-allow-origin')).toBeNull();
  });
});
