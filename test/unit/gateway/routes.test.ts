import { thrownBy } from '../helpers';
import type { Retry } from '../../../libs/contracts';
import type { ActionDefinition, HttpRoute, ServiceDefinition } from '../../../libs/service';
import fc from 'fast-check';
import { escapeRegExp } from '../../../libs/text';
import {
  GROUP_BASE,
  aliasesFor,
  collectRoutes,
  templateMatcher,
} from '../../../services/gateway/routes';
import { loadConfig } from '../../../libs/config';
import { backendDefinitions } from '../../../services/catalog';

const handler = () => null;

function route(
  method: HttpRoute['method'],
  path: string,
  group: HttpRoute['group'],
  extra: Partial<HttpRoute> = {},
): HttpRoute {
  return { method, path, group, message: 'OK', summary: `${method} ${path}`, ...extra };
}

const withHttp = (http: HttpRoute, retry: Retry = 'never'): ActionDefinition => ({
  http,
  retry,
  handler,
});

const users: ServiceDefinition = {
  name: 'account',
  actions: {
    createUser: withHttp(route('POST', '/users', 'admin')),
    getUser: withHttp(route('GET', '/users/:userId', 'admin'), 'safe'),
    resolveApiKey: { retry: 'safe', handler },
  },
};

const deliveries: ServiceDefinition = {
  name: 'delivery',
  actions: {
    create: withHttp(route('POST', '/deliveries', 'api')),
    get: withHttp(route('GET', '/deliveries/:deliveryId', 'api'), 'safe'),
    cancel: withHttp(route('DELETE', '/deliveries/:deliveryId', 'api')),
  },
};

const files: ServiceDefinition = {
  name: 'files',
  actions: {
    upload: withHttp(route('POST', '/uploads', 'file', { body: 'stream' })),
    describe: withHttp(route('POST', '/uploads/describe', 'file', { body: 'json' })),
    download: withHttp(route('GET', '/uploads/:fileId', 'file')),
    importCsv: withHttp(route('POST', '/imports', 'api', { body: 'stream' })),
  },
};

describe('GROUP_BASE', () => {
  it('maps each group to its base path', () => {
    expect(GROUP_BASE).toEqual({
      api: '/api',
      file: '/file',
      admin: '/admin',
      courier: '/courier',
      checkout: '/checkout',
      track: '/track',
      webhooks: '/webhooks',
    });
  });
});

describe('collectRoutes of the mounted groups', () => {
  it('leaves out the routes of groups this gateway does not serve', () => {
    const payment: ServiceDefinition = {
      name: 'payment',
      actions: {
        page: withHttp(route('GET', '/:reference', 'checkout', { page: true })),
        hook: withHttp(route('POST', '/paystack', 'webhooks', { body: 'raw' })),
        fund: withHttp(route('POST', '/wallet/fund', 'api')),
      },
    };
    const paths = (mounted: (g: HttpRoute['group']) => boolean) =>
      collectRoutes([payment], mounted).map((e) => e.fullPath);
    expect(paths(() => true)).toEqual([
      '/checkout/:reference',
      '/webhooks/paystack',
      '/api/wallet/fund',
    ]);
    expect(paths((g) => g !== 'webhooks')).toEqual(['/checkout/:reference', '/api/wallet/fund']);
    expect(paths((g) => g !== 'checkout')).toEqual(['/webhooks/paystack', '/api/wallet/fund']);
  });
});

describe('collectRoutes', () => {
  it('returns one entry per routed action, with the group base prefixed and its retry kind', () => {
    expect(collectRoutes([users, deliveries])).toEqual([
      {
        actionName: 'account.createUser',
        http: users.actions!.createUser.http,
        fullPath: '/admin/users',
        retry: 'never',
      },
      {
        actionName: 'account.getUser',
        http: users.actions!.getUser.http,
        fullPath: '/admin/users/:userId',
        retry: 'safe',
      },
      {
        actionName: 'delivery.create',
        http: deliveries.actions!.create.http,
        fullPath: '/api/deliveries',
        retry: 'never',
      },
      {
        actionName: 'delivery.get',
        http: deliveries.actions!.get.http,
        fullPath: '/api/deliveries/:deliveryId',
        retry: 'safe',
      },
      {
        actionName: 'delivery.cancel',
        http: deliveries.actions!.cancel.http,
        fullPath: '/api/deliveries/:deliveryId',
        retry: 'never',
      },
    ]);
  });

  it('skips actions without http', () => {
    const names = collectRoutes([users]).map((e) => e.actionName);
    expect(names).not.toContain('account.resolveApiKey');
    expect(names).toHaveLength(2);
  });

  it('applies the file base', () => {
    expect(collectRoutes([files]).map((e) => e.fullPath)).toEqual([
      '/file/uploads',
      '/file/uploads/describe',
      '/file/uploads/:fileId',
      '/api/imports',
    ]);
  });

  it('accepts services without actions, and no services', () => {
    expect(collectRoutes([{ name: 'empty' }])).toEqual([]);
    expect(collectRoutes([{ name: 'empty', actions: {} }])).toEqual([]);
    expect(collectRoutes([])).toEqual([]);
  });

  it('lets one path serve several methods', () => {
    const entries = collectRoutes([deliveries]);
    const onPath = entries.filter((e) => e.fullPath === '/api/deliveries/:deliveryId');
    expect(onPath.map((e) => e.http.method)).toEqual(['GET', 'DELETE']);
  });

  it('lets one path under different groups coexist', () => {
    const a: ServiceDefinition = {
      name: 'a',
      actions: { list: withHttp(route('GET', '/things', 'api')) },
    };
    const b: ServiceDefinition = {
      name: 'b',
      actions: { list: withHttp(route('GET', '/things', 'admin')) },
    };
    expect(collectRoutes([a, b]).map((e) => e.fullPath)).toEqual(['/api/things', '/admin/things']);
  });

  it('throws when two actions of two services claim one METHOD and path, naming both', () => {
    const clash: ServiceDefinition = {
      name: 'people',
      actions: { add: withHttp(route('POST', '/users', 'admin')) },
    };
    const err = thrownBy(() => collectRoutes([users, clash])) as Error;
    expect(err).toBeInstanceOf(Error);
    expect(err.message).toBe(
      'POST /admin/users is claimed by both account.createUser and people.add',
    );
  });

  it('throws when two actions of one service claim one route', () => {
    const twice: ServiceDefinition = {
      name: 'svc',
      actions: {
        first: withHttp(route('GET', '/x', 'api')),
        second: withHttp(route('GET', '/x', 'api')),
      },
    };
    expect(() => collectRoutes([twice])).toThrow(/svc\.first.*svc\.second/);
  });
});

describe('aliasesFor', () => {
  const entries = collectRoutes([users, deliveries, files]);

  it('lists the json routes of a group with paths under its base', () => {
    expect(aliasesFor(entries, 'admin', 'json')).toEqual({
      'POST /users': 'account.createUser',
      'GET /users/:userId': 'account.getUser',
    });
    expect(aliasesFor(entries, 'api', 'json')).toEqual({
      'POST /deliveries': 'delivery.create',
      'GET /deliveries/:deliveryId': 'delivery.get',
      'DELETE /deliveries/:deliveryId': 'delivery.cancel',
    });
  });

  it('treats routes without a body kind as json', () => {
    expect(aliasesFor(entries, 'file', 'json')).toEqual({
      'POST /uploads/describe': 'files.describe',
      'GET /uploads/:fileId': 'files.download',
    });
  });

  it('lists stream routes apart, with the stream: prefix', () => {
    expect(aliasesFor(entries, 'file', 'stream')).toEqual({
      'POST /uploads': 'stream:files.upload',
    });
    expect(aliasesFor(entries, 'api', 'stream')).toEqual({
      'POST /imports': 'stream:files.importCsv',
    });
    expect(aliasesFor(entries, 'admin', 'stream')).toEqual({});
  });

  it('puts every routed action in exactly one group and body kind', () => {
    const all = (['api', 'file', 'admin'] as const).flatMap((group) =>
      (['json', 'stream'] as const).flatMap((body) =>
        Object.values(aliasesFor(entries, group, body)),
      ),
    );
    expect(all.map((t) => t.replace(/^stream:/, '')).sort()).toEqual(
      entries.map((e) => e.actionName).sort(),
    );
  });
});

describe('templateMatcher', () => {
  /** What it must agree with: every template tested, in order, as moleculer-web would. */
  const everyTemplate = (templates: { fullPath: string }[], flags: string) => (path: string) =>
    templates.filter(({ fullPath }) => {
      const parts = fullPath.split('/').map((p) => (p.startsWith(':') ? '[^/]+' : escapeRegExp(p)));
      return new RegExp(`^${parts.join('/')}/?$`, flags).test(path);
    });

  const templates = [
    '/',
    '/health',
    '/api/deliveries',
    '/api/deliveries/quote',
    '/api/deliveries/:deliveryId',
    '/api/deliveries/:deliveryId/cancel',
    '/api/:group/list',
    '/:anything',
    '/docs/assets/:file',
    '/admin/pricing/tiers/history',
    '/admin/pricing/tiers/:tierId',
    '/docs/',
    '/track/:id/',
  ].map((fullPath) => ({ fullPath }));

  it('finds the templates a path matches, in their order, literal before a :param one', () => {
    const matching = templateMatcher(templates);
    expect(matching('/api/deliveries/quote').map((t) => t.fullPath)).toEqual([
      '/api/deliveries/quote',
      '/api/deliveries/:deliveryId',
    ]);
    expect(matching('/api/deliveries/').map((t) => t.fullPath)).toEqual(['/api/deliveries']);
    expect(matching('/api/packages/list').map((t) => t.fullPath)).toEqual(['/api/:group/list']);
    expect(matching('/health').map((t) => t.fullPath)).toEqual(['/health', '/:anything']);
    expect(matching('/api//deliveries')).toEqual([]);
    // A template's own trailing slash, then the optional one: a segment more.
    expect(matching('/docs//').map((t) => t.fullPath)).toEqual(['/docs/']);
    expect(matching('/docs/').map((t) => t.fullPath)).toEqual(['/:anything', '/docs/']);
    expect(templateMatcher(templates, 'i')('/API/Deliveries/X1').map((t) => t.fullPath)).toEqual([
      '/api/deliveries/:deliveryId',
    ]);
  });

  it('agrees with testing every template, on paths made of their parts (property)', () => {
    const segment = fc.constantFrom(
      'api',
      'API',
      'deliveries',
      'quote',
      'x1',
      'health',
      'docs',
      'assets',
      'admin',
      'pricing',
      'tiers',
      'history',
      'list',
      'cancel',
      '',
      'a.b',
    );
    const path = fc
      .tuple(fc.array(segment, { minLength: 0, maxLength: 5 }), fc.boolean())
      .map(([parts, slash]) => `/${parts.join('/')}${slash ? '/' : ''}`);
    for (const flags of ['', 'i']) {
      const matching = templateMatcher(templates, flags);
      const expected = everyTemplate(templates, flags);
      fc.assert(
        fc.property(path, (p) => expect(matching(p)).toEqual(expected(p))),
        {
          numRuns: 2_000,
        },
      );
    }
  });

  it("agrees with testing every template on the gateway's own routes", () => {
    const entries = collectRoutes(backendDefinitions(loadConfig({})));
    const matching = templateMatcher(entries, 'i');
    const expected = everyTemplate(entries, 'i');
    for (const { fullPath } of entries) {
      const path = fullPath.replace(/:[^/]+/g, 'x-1');
      expect(matching(path)).toEqual(expected(path));
    }
  });
});
