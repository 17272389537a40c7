import { Agent, createServer, get as httpGet } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import {
  clientRequestId,
  describeForLog,
  describeRequest,
  drainOnStop,
  requestPath,
  type GatewayRequest,
} from '../../../services/gateway/http';

describe('clientRequestId', () => {
  it('takes a sane X-Request-ID, and X-Correlation-ID over it', () => {
    expect(clientRequestId({ 'x-request-id': 'order-42/try-1' })).toBe('order-42/try-1');
    expect(clientRequestId({ 'x-request-id': 'a', 'x-correlation-id': 'b' })).toBe('b');
    expect(clientRequestId({ 'x-request-id': 'x'.repeat(128) })).toHaveLength(128);
  });

  it.each([
    ['none', {}],
    ['an empty one', { 'x-request-id': '' }],
    ['one with a space', { 'x-request-id': 'a b' }],
    ['one over 128 characters', { 'x-request-id': 'x'.repeat(129) }],
    ['a non-ASCII one', { 'x-request-id': 'zamówienie' }],
  ])('leaves %s to moleculer to make', (_case, headers) => {
    expect(clientRequestId(headers)).toBeUndefined();
  });
});

describe('describeForLog', () => {
  const request = (url: string) =>
    ({ method: 'GET', url, headers: { host: 'api.example.com' } }) as GatewayRequest;

  it('names the page, not the tracking id or checkout reference that opens it', () => {
    expect(describeForLog(request('/track/P2P-7Q4K2M9X/events?since=3'))).toEqual({
      method: 'GET',
      path: '/track/:trackingId/events',
      url: 'http://api.example.com/track/:trackingId/events',
    });
    expect(describeForLog(request('/checkout/ck_0123456789abcdef/pay')).path).toBe(
      '/checkout/:reference/pay',
    );
    // In any case, and however the path was spelled.
    expect(describeForLog(request('/TRACK/P2P-7Q4K2M9X')).path).toBe('/TRACK/:trackingId');
    expect(describeForLog(request('/./track/P2P-7Q4K2M9X?x=1')).url).toBe(
      'http://api.example.com/track/:trackingId',
    );
    // Whatever else is logged as it was asked for; the error envelope keeps the real path.
    expect(describeForLog(request('/api/deliveries/d1')).path).toBe('/api/deliveries/d1');
    expect(describeRequest(request('/track/P2P-7Q4K2M9X')).path).toBe('/track/P2P-7Q4K2M9X');
  });

  it('keeps no query: it may name people, a file or a page again', () => {
    for (const [url, logged] of [
      ['/admin/users?email=ada@example.com', '/admin/users'],
      ['/file/files?after=0b6f1c1e.jpg', '/file/files'],
      ['/track/P2P-7Q4K2M9X?trackingId=P2P-7Q4K2M9X', '/track/:trackingId'],
    ]) {
      expect(describeForLog(request(url))).toEqual({
        method: 'GET',
        path: logged,
        url: `http://api.example.com${logged}`,
      });
    }
  });
});

describe('describeRequest', () => {
  const request = (url: string, headers: Record<string, string> = {}) =>
    ({ method: 'GET', url, headers: { host: 'api.example.com', ...headers } }) as GatewayRequest;

  it('gives method, path without query and full URL', () => {
    expect(
      describeRequest(request('/api/packages?page=2', { 'x-forwarded-proto': 'https' })),
    ).toEqual({
      method: 'GET',
      path: '/api/packages',
      url: 'https://api.example.com/api/packages?page=2',
    });
  });

  it('parses no URL for a plain path, however often it is asked', () => {
    const parse = jest.spyOn(globalThis, 'URL');
    try {
      const req = request('/api/package/0a1b2c?x=1');
      describeRequest(req);
      describeRequest(req);
      expect(parse).not.toHaveBeenCalled();
    } finally {
      parse.mockRestore();
    }
  });

  it('describes with plain data properties, one shape for every request', () => {
    // A getter in the description made V8 give each one its own shape: 14 µs a request.
    const described = describeRequest(request('/api/a?b=1'));
    for (const name of ['method', 'path', 'url']) {
      expect(Object.getOwnPropertyDescriptor(described, name)).toEqual(
        expect.objectContaining({ writable: true, value: expect.any(String) }),
      );
    }
    expect(Object.keys(described)).toEqual(
      Object.keys(describeRequest(request('/api/c', { 'x-forwarded-proto': 'https' }))),
    );
  });

  it('follows a URL moleculer-web rewrote', () => {
    const req = request('/api/a');
    expect(describeRequest(req).path).toBe('/api/a');
    req.originalUrl = '/api/b';
    expect(describeRequest(req).path).toBe('/api/b');
  });

  it('reads every path as new URL does (property)', () => {
    const raw = fc
      .array(
        fc.constantFrom(
          '/',
          'a',
          'Z',
          '0',
          '-',
          '_',
          '~',
          '.',
          '%',
          '2e',
          '\\',
          '?',
          ' ',
          'é',
          '@',
          ':',
        ),
        {
          maxLength: 12,
        },
      )
      .map((parts) => `/${parts.join('')}`);
    fc.assert(
      fc.property(raw, (url) => {
        let expected: string;
        try {
          expected = new URL(url, 'http://x').pathname;
        } catch {
          expected = url.split('?')[0] || '/';
        }
        expect(requestPath(url)).toBe(expected);
      }),
    );
  });
});

describe('drainOnStop', () => {
  it('lets kept-alive connections go as the stop begins: idle ones at once, busy ones once answered', async () => {
    const server = createServer((_req, res) => void setTimeout(() => res.end('ok'), 50));
    server.keepAliveTimeout = 65_000;
    const drain = drainOnStop(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const agent = new Agent({ keepAlive: true, maxSockets: 2 });
    const get = () =>
      new Promise<{ connection?: string }>((resolve, reject) => {
        httpGet({ host: '127.0.0.1', port, agent }, (res) => {
          res.resume();
          res.on('end', () => resolve({ connection: res.headers.connection }));
        }).on('error', reject);
      });
    try {
      // Two connections kept alive: one goes idle, one is answering as the stop begins.
      await Promise.all([get(), get()]);
      const busy = get();
      await new Promise((resolve) => setTimeout(resolve, 10));
      drain();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      expect((await busy).connection).toBe('close');
      // Both gone well within the keep-alive's 65 s: the server's close completes.
      await closed;
    } finally {
      agent.destroy();
      server.closeAllConnections();
    }
  });
});
