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
