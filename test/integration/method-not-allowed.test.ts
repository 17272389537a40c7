import { adminHeaders, expectErrorEnvelope, request, type Reply } from '../support/http';
import { useMerchantStack } from '../support/merchant-stack';

const stack = useMerchantStack({ internal: [] });

const ID = '0a1b2c3d-0000-4000-8000-000000000000';
const BAD_KEY = `wb_staging_${'0'.repeat(64)}`;

function expect405(reply: Reply, method: string, path: string, allow: string, use: string) {
  expectErrorEnvelope(reply, 405, `${method} is not allowed on ${path}; use ${use}`);
  expect(reply.headers.get('allow')).toBe(allow);
  expect(reply.body).toMatchObject({ method, path, environment: 'staging' });
}

describe('a known path called with a method it does not have', () => {
  it.each<[string, string, string, string]>([
    ['DELETE', '/api/pricing', 'POST', 'POST'],
    ['PUT', '/api/countries', 'GET', 'GET'],
    ['GET', `/api/package/${ID}`, 'DELETE', 'DELETE'],
    ['POST', `/api/package/${ID}`, 'DELETE', 'DELETE'],
    ['GET', '/file/single-upload', 'POST', 'POST'],
    ['PUT', '/file/download', 'POST', 'POST'],
    ['DELETE', '/admin/users', 'GET, POST', 'GET or POST'],
    ['PUT', `/admin/users/${ID}`, 'GET', 'GET'],
    ['POST', `/admin/pricing/courier-rules/${ID}`, 'DELETE, PATCH', 'DELETE or PATCH'],
    ['POST', '/health/live', 'GET, HEAD', 'GET'],
    ['DELETE', '/openapi.json', 'GET, HEAD', 'GET'],
  ])('%s %s → 405, Allow: %s', async (method, path, allow, use) => {
    expect405(await request(stack.node.url, method, path), method, path, allow, use);
  });

  it('answers 405 whatever the credentials: none, wrong or valid', async () => {
    const api = { 'api-key': stack.alice.key };
    for (const headers of [{}, { 'api-key': BAD_KEY }, api]) {
      const reply = await request(stack.node.url, 'DELETE', '/api/pricing', { headers });
      expect405(reply, 'DELETE', '/api/pricing', 'POST', 'POST');
    }
    for (const headers of [{}, { authorization: 'Bearer wrong-token-0123456789' }, adminHeaders]) {
      const reply = await request(stack.node.url, 'PATCH', '/admin/users', { headers });
      expect405(reply, 'PATCH', '/admin/users', 'GET, POST', 'GET or POST');
    }
    const upload = await request(stack.node.url, 'GET', '/file/bulk-upload', { headers: api });
    expect405(upload, 'GET', '/file/bulk-upload', 'POST', 'POST');
  });

  it('keeps the query in url and matches a trailing slash like the route does', async () => {
    const reply = await request(stack.node.url, 'GET', '/api/pricing/?from=docs');
    expectErrorEnvelope(reply, 405);
    expect(reply.headers.get('allow')).toBe('POST');
    expect(reply.body.url).toMatch(/\/api\/pricing\/\?from=docs$/);
  });

  it('answers 405 to a wrong method that carries a JSON body', async () => {
    const reply = await request(stack.node.url, 'PUT', '/api/pricing', {
      headers: { 'api-key': stack.alice.key },
      json: { totalWeight: '1', totalValue: '1' },
    });
    expect405(reply, 'PUT', '/api/pricing', 'POST', 'POST');
  });
});

describe('what stays as it was', () => {
  it('unknown paths are 404 with a key, and 401 without one under /api', async () => {
    const headers = { 'api-key': stack.alice.key };
    for (const path of ['/api/nowhere', '/api/package/a/b', '/api/pricingx']) {
      expectErrorEnvelope(await request(stack.node.url, 'DELETE', path, { headers }), 404);
    }
    expectErrorEnvelope(await request(stack.node.url, 'GET', '/nowhere'), 404, /No route/);
    expectErrorEnvelope(await request(stack.node.url, 'DELETE', '/api/nowhere'), 401);
    expect((await request(stack.node.url, 'GET', '/nowhere')).headers.get('allow')).toBeNull();
  });

  it('the right method still needs its credentials', async () => {
    expectErrorEnvelope(await request(stack.node.url, 'POST', '/api/pricing', { json: {} }), 401);
    expectErrorEnvelope(await request(stack.node.url, 'GET', '/admin/users'), 401);
  });

  it('a browser preflight to /file is answered, to /api refused, whatever method it asks', async () => {
    const origin = 'https://shop.example.com';
    for (const asked of ['POST', 'DELETE']) {
      const headers = { origin, 'access-control-request-method': asked };
      const file = await request(stack.node.url, 'OPTIONS', '/file/single-upload', { headers });
      expect(file.status).toBe(204);
      expect(file.headers.get('access-control-allow-origin')).toBe(origin);
      const api = await request(stack.node.url, 'OPTIONS', '/api/pricing', { headers });
      expectErrorEnvelope(api, 403, /Browsers may not call \/api/);
    }
  });

  it('a preflight to a page is refused, never run as the call it asks about', async () => {
    const headers = { origin: 'https://evil.example', 'access-control-request-method': 'POST' };
    for (const [path, refused] of [
      [`/checkout/ck-${'0'.repeat(40)}/pay`, /Scripts of other sites may not call \/checkout/],
      ['/track/P2P-7K3M9Q2W5X8Z/events', /Scripts of other sites may not call \/track/],
    ] as const) {
      // The pages answer their errors as pages: the status and the reason, whatever the form.
      const reply = await request(stack.node.url, 'OPTIONS', path, { headers });
      expect(reply.status).toBe(403);
      expect(reply.text).toMatch(refused);
    }
    // A plain OPTIONS is told what the path allows, and runs nothing either.
    const plain = await request(stack.node.url, 'OPTIONS', '/api/countries');
    expect(plain.status).toBe(204);
    expect(plain.headers.get('allow')).toBe('GET, OPTIONS');
  });
});

describe('the routes without credentials', () => {
  it('answer HEAD as GET, headers only: uptime monitors probe with it', async () => {
    for (const path of ['/', '/health/live', '/health/ready', '/openapi.json', '/docs']) {
      const get = await request(stack.node.url, 'GET', path);
      const head = await request(stack.node.url, 'HEAD', path);
      expect([path, head.status]).toEqual([path, get.status]);
      expect(head.text).toBe('');
      expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'));
    }
    // Elsewhere it would cost what the GET does (an action run, a file pulled): 405.
    const api = await request(stack.node.url, 'HEAD', '/api/countries');
    expect(api.status).toBe(405);
    expect(api.headers.get('allow')).toBe('GET');
    const plain = await request(stack.node.url, 'OPTIONS', '/health/live');
    expect(plain.status).toBe(204);
    expect(plain.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
  });

  it('refuse a browser’s preflight, and run nothing for it', async () => {
    const headers = { origin: 'https://evil.example', 'access-control-request-method': 'GET' };
    for (const path of ['/health/ready', '/openapi.json']) {
      const reply = await request(stack.node.url, 'OPTIONS', path, { headers });
      expectErrorEnvelope(
        reply,
        403,
        `Scripts of other sites may not call ${path}; fetch it from your server, or open it`,
      );
      expect(reply.headers.get('access-control-allow-origin')).toBeNull();
    }
  });
});

describe('metrics of 405s', () => {
  it('are counted by the path’s template, without a label per URL', async () => {
    await request(stack.node.url, 'GET', `/api/package/${ID.replace('0a', 'ff')}`);
    const text = await (await fetch(`${stack.node.opsUrl}/metrics`)).text();
    const lines = text.split('\n').filter((l) => l.startsWith('waybill_http_requests_total{'));
    const counted = lines.filter((l) => l.includes('status="405"'));
    expect(counted.length).toBeGreaterThan(0);
    expect(counted.some((l) => l.includes('route="/api/package/:packageId"'))).toBe(true);
    expect(counted.some((l) => l.includes('route="unmatched"'))).toBe(false);
    expect(lines.some((l) => l.includes(ID) || l.includes('ff1b2c3d'))).toBe(false);
  });
});
