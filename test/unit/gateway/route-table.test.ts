import type { HttpRoute } from '../../../libs/service';
import type { Middleware } from '../../../services/gateway/edge';
import { jsonBodyGuard } from '../../../services/gateway/json-body';
import { describeStreamBody, gatewayRoutes } from '../../../services/gateway/route-table';
import { GROUP_BASE, type RouteEntry } from '../../../services/gateway/routes';
import { fakeRequest } from './fake-http';

const entry = (actionName: string, http: Partial<HttpRoute> & Pick<HttpRoute, 'group'>) => {
  const full: HttpRoute = { method: 'GET', path: '/x', message: 'OK', summary: 'x', ...http };
  return {
    actionName,
    http: full,
    retry: 'never',
    fullPath: `${GROUP_BASE[full.group]}${full.path}`,
  } satisfies RouteEntry;
};

const entries = [
  entry('geo.countries', { group: 'api', path: '/countries' }),
  entry('package.save', { group: 'api', method: 'POST', path: '/package' }),
  entry('file.upload', { group: 'file', method: 'POST', path: '/single-upload', body: 'stream' }),
  entry('file.download', { group: 'file', method: 'POST', path: '/download' }),
  entry('account.getUser', { group: 'admin', path: '/users/:userId' }),
];

const named = (name: string): Middleware => Object.assign(() => undefined, { label: name });
const labels = (use: Middleware[]) => use.map((m) => (m as unknown as { label: string }).label);
const onAfterCall = () => null;

const routes = gatewayRoutes({
  config: { requestTimeoutMs: 5_000, bodyLimit: '100kb', files: { timeoutMs: 120_000 } } as never,
  entries,
  onAfterCall,
  use: (group, body, readBody) => [
    named('log'),
    named(`auth-${group}`),
    ...readBody,
    ...(body === 'stream' ? [named('stream')] : [named('lease')]),
  ],
  ops: { aliases: { 'GET /health/live': () => undefined }, use: [named('log')] },
});
const byName = Object.fromEntries(routes.map((r) => [r.name, r]));

describe('gatewayRoutes', () => {
  it('has a JSON and a stream route per group, then ops', () => {
    expect(routes.map((r) => `${r.name} ${r.path}`)).toEqual([
      'api-json /api',
      'api-stream /api',
      'file-json /file',
      'file-stream /file',
      'admin-json /admin',
      'admin-stream /admin',
      'courier-json /courier',
      'courier-stream /courier',
      'ops /',
    ]);
  });

  it('routes only declared aliases, each to its body kind', () => {
    expect(byName['api-json'].aliases).toEqual({
      'GET /countries': 'geo.countries',
      'POST /package': 'package.save',
    });
    expect(byName['api-stream'].aliases).toEqual({});
    expect(byName['file-stream'].aliases).toEqual({ 'POST /single-upload': 'stream:file.upload' });
    expect(byName['admin-json'].aliases).toEqual({ 'GET /users/:userId': 'account.getUser' });
    for (const route of routes) {
      expect(route).toMatchObject({
        mappingPolicy: 'restrict',
        autoAliases: false,
        logging: false,
      });
      expect(route.onAfterCall).toBe(onAfterCall);
    }
  });

  it("parses JSON in the routes' own middlewares, not moleculer-web's, and leaves stream bodies alone", () => {
    for (const route of routes) expect(route.bodyParsers).toBe(false);
    expect(byName['file-stream']).toMatchObject({ onBeforeCall: describeStreamBody });
    expect(byName['file-json']).not.toHaveProperty('onBeforeCall');
  });

  it('gives /file calls the file timeout and the others the request timeout', () => {
    expect(byName['file-json'].callOptions).toEqual({ timeout: 120_000 });
    expect(byName['file-stream'].callOptions).toEqual({ timeout: 120_000 });
    expect(byName['api-json'].callOptions).toEqual({ timeout: 5_000 });
    expect(byName.ops.callOptions).toEqual({ timeout: 5_000 });
  });

  it("runs each group's and body kind's middlewares, and only the access log on ops", () => {
    expect(labels(byName['api-json'].use.slice(0, 2))).toEqual(['log', 'auth-api']);
    expect(labels(byName['file-json'].use.slice(0, 2))).toEqual(['log', 'auth-file']);
    expect(labels(byName['file-stream'].use)).toEqual(['log', 'auth-file', 'stream']);
    expect(labels(byName['admin-stream'].use)).toEqual(['log', 'auth-admin', 'stream']);
    expect(labels(byName.ops.use)).toEqual(['log']);
    expect(Object.keys(byName.ops.aliases)).toEqual(['GET /health/live']);
  });

  it('hands JSON routes their body readers to place (read, then cleaned), stream routes none', () => {
    for (const name of ['api-json', 'file-json', 'admin-json']) {
      const use = byName[name].use;
      expect(labels(use.slice(0, 2))).toEqual(['log', `auth-${name.split('-')[0]}`]);
      expect(use).toHaveLength(5);
      expect(use[3]).toBe(jsonBodyGuard);
      expect(labels(use.slice(4))).toEqual(['lease']);
    }
    expect(byName['file-stream'].use).toHaveLength(3);
  });
});

describe('gatewayRoutes of the checkout pages and webhooks', () => {
  const withEdges = gatewayRoutes({
    config: { requestTimeoutMs: 5_000, bodyLimit: '100kb', files: { timeoutMs: 120_000 } } as never,
    entries: [
      ...entries,
      entry('payment.checkoutPage', { group: 'checkout', path: '/:reference', page: true }),
      entry('payment.payCheckout', { group: 'checkout', method: 'POST', path: '/:reference/pay' }),
      entry('payment.paystackWebhook', {
        group: 'webhooks',
        method: 'POST',
        path: '/paystack',
        body: 'raw',
      }),
    ],
    onAfterCall,
    use: (group, body) => [named('log'), named(`${group}-${body}`)],
    ops: { aliases: {}, use: [named('log')] },
  });
  const edge = Object.fromEntries(withEdges.map((r) => [r.name, r]));

  it('routes them after the backend groups, parsing no body (a form post’s is not read)', () => {
    expect(withEdges.map((r) => r.name).slice(-3)).toEqual(['checkout', 'webhooks', 'ops']);
    expect(edge.checkout).toMatchObject({
      path: '/checkout',
      bodyParsers: false,
      aliases: {
        'GET /:reference': 'payment.checkoutPage',
        'POST /:reference/pay': 'payment.payCheckout',
      },
    });
    expect(edge.webhooks).toMatchObject({
      path: '/webhooks',
      bodyParsers: false,
      aliases: { 'POST /paystack': 'payment.paystackWebhook' },
    });
    expect(labels(edge.webhooks.use)).toEqual(['log', 'webhooks-raw']);
    expect(labels(edge.checkout.use)).toEqual(['log', 'checkout-json']);
  });

  it('has no such route when no action is mounted there', () => {
    expect(routes.map((r) => r.name)).not.toContain('checkout');
    expect(routes.map((r) => r.name)).not.toContain('webhooks');
  });
});

describe('describeStreamBody', () => {
  it("puts the body's type and length in meta", () => {
    const meta: Record<string, unknown> = {};
    const req = fakeRequest({
      headers: { 'content-type': 'multipart/form-data; boundary=x', 'content-length': '1234' },
    });
    describeStreamBody({ meta }, {}, req);
    expect(meta).toEqual({ contentType: 'multipart/form-data; boundary=x', contentLength: 1234 });
  });

  it.each([undefined, 'abc', '-1', '1.5'])('leaves out a Content-Length of %p', (length) => {
    const meta: Record<string, unknown> = {};
    const headers: Record<string, string> =
      length === undefined ? {} : { 'content-length': length };
    describeStreamBody({ meta }, {}, fakeRequest({ headers }));
    expect(meta).not.toHaveProperty('contentLength');
  });
});
