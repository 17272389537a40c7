import fc from 'fast-check';
import { Errors } from 'moleculer';
import ApiGateway from 'moleculer-web';
import { loadConfig } from '../../../libs/config';
import { badRequest } from '../../../libs/errors';
import { backendDefinitions } from '../../../services/catalog';
import type { Middleware } from '../../../services/gateway/edge';
import { collectRoutes } from '../../../services/gateway/routes';
import {
  aliasResolver,
  asMoleculerError,
  outsideRoute,
  routeHandler,
  type FoundAlias,
  type WebAlias,
} from '../../../services/gateway/web-routing';
import { UNDECODABLE_BODY } from '../../../libs/errors';
import { FakeResponse, fakeRequest } from './fake-http';

// moleculer-web's own alias, built as its routes build them; its module has no types.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const Alias = require('moleculer-web/src/alias') as new (
  service: unknown,
  route: { path: string; opts: Record<string, unknown> },
  opts: string,
  action: string,
) => WebAlias;

/** What ours must agree with: moleculer-web's resolveAlias, every alias tested in turn. */
const moleculerWebResolve = (ApiGateway.methods as Record<string, unknown>).resolveAlias as (
  this: { aliases: WebAlias[] },
  url: string,
  method?: string,
) => FoundAlias | false;
const everyAlias = (aliases: WebAlias[], url: string, method?: string) =>
  moleculerWebResolve.call({ aliases }, url, method);

/** Aliases `METHOD /path` under a route at `base`, in the order given. */
const aliasesOf = (base: string, keys: string[]) =>
  keys.map((key) => new Alias({}, { path: base, opts: {} }, key, `svc.${key}`));

describe('aliasResolver', () => {
  const templates = aliasesOf('/api', [
    'GET /deliveries/quote',
    'GET /deliveries/:deliveryId',
    'POST /deliveries/:deliveryId/cancel',
    'GET /deliveries',
    'POST /deliveries',
    'GET /:group/list',
    'GET /',
  ]).concat(aliasesOf('/', ['GET /health', 'GET /docs/assets/:file', 'GET /:anything']));

  it('finds the first alias with the method that matches, with its params', () => {
    const resolve = aliasResolver<WebAlias>();
    const found = resolve(templates, '/api/Deliveries/d%2D1', 'GET');
    expect(found && found.alias.fullPath).toBe('/api/deliveries/:deliveryId');
    expect(found && found.params).toEqual({ deliveryId: 'd-1' });
    const quote = resolve(templates, '/api/deliveries/quote', 'GET');
    expect(quote && quote.alias.fullPath).toBe('/api/deliveries/quote');
    expect(resolve(templates, '/api/deliveries/quote', 'DELETE')).toBe(false);
    expect(resolve(templates, '/nowhere/at/all', 'GET')).toBe(false);
  });

  it("agrees with moleculer-web's, on paths made of the templates' parts (property)", () => {
    const segment = fc.constantFrom(
      'api',
      'API',
      'deliveries',
      'quote',
      'cancel',
      'list',
      'health',
      'docs',
      'assets',
      'd-1',
      '%41',
      '',
    );
    const request = fc.record({
      parts: fc.array(segment, { minLength: 0, maxLength: 5 }),
      slash: fc.boolean(),
      method: fc.constantFrom('GET', 'POST', 'DELETE'),
    });
    const resolve = aliasResolver<WebAlias>();
    fc.assert(
      fc.property(request, ({ parts, slash, method }) => {
        // moleculer-web trims one trailing slash before it resolves.
        const url = `/${parts.join('/')}${slash ? '/' : ''}`;
        expect(resolve(templates, url, method)).toEqual(everyAlias(templates, url, method));
      }),
      { numRuns: 3_000 },
    );
  });

  it("agrees with moleculer-web's on every route of the gateway", () => {
    const entries = collectRoutes(backendDefinitions(loadConfig({})));
    const aliases = entries.map(
      (e) => new Alias({}, { path: '', opts: {} }, `${e.http.method} ${e.fullPath}`, e.actionName),
    );
    const resolve = aliasResolver<WebAlias>();
    for (const { fullPath, http } of entries) {
      for (const url of [fullPath.replace(/:[^/]+/g, 'x-1'), fullPath.toUpperCase()]) {
        for (const method of [http.method, 'GET', 'POST']) {
          expect(resolve(aliases, url, method)).toEqual(everyAlias(aliases, url, method));
        }
      }
    }
  });

  it('tests every alias when one is not a plain template, and indexes a list again once it grows', () => {
    const resolve = aliasResolver<WebAlias>();
    const aliases = aliasesOf('/api', ['GET /things']);
    expect(resolve(aliases, '/api/other', 'GET')).toBe(false);
    aliases.push(...aliasesOf('/api', ['GET /other']));
    const other = resolve(aliases, '/api/other', 'GET');
    expect(other && other.alias.fullPath).toBe('/api/other');

    const unusual = aliasesOf('/files', ['GET /{:name}']);
    const found = resolve(unusual, '/files/report', 'GET');
    expect(found && found.params).toEqual({ name: 'report' });
    expect(resolve(unusual, '/files', 'GET')).toEqual(everyAlias(unusual, '/files', 'GET'));
  });
});

describe('asMoleculerError', () => {
  it("keeps a MoleculerError, and turns another error into one with its status and type, as moleculer-web's compose does", () => {
    const ours = badRequest('no');
    expect(asMoleculerError(ours)).toBe(ours);
    const parser = Object.assign(new Error('Unexpected token'), {
      status: 400,
      type: 'entity.parse.failed',
    });
    const converted = asMoleculerError(parser);
    expect(converted).toBeInstanceOf(Errors.MoleculerError);
    expect(converted).toMatchObject({
      message: 'Unexpected token',
      code: 400,
      type: 'entity.parse.failed',
    });
    expect(asMoleculerError('plain')).toMatchObject({ message: 'plain', code: 500 });
  });

  it('names body-parser’s untyped 400 of a decompression stream, whose string code is no status', () => {
    for (const code of ['Z_DATA_ERROR', 'Z_BUF_ERROR', 'ERR__ERROR_FORMAT_PADDING_2']) {
      const zlib = Object.assign(new Error('incorrect header check'), { status: 400, code });
      expect(asMoleculerError(zlib)).toMatchObject({ code: 400, type: UNDECODABLE_BODY });
    }
    // A system error's string code, without a status, stays a failure of ours.
    const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    expect(asMoleculerError(reset)).toMatchObject({ code: 500, type: undefined });
  });
});

describe('outsideRoute', () => {
  const under = (base: string, parsedUrl: string) =>
    outsideRoute({ middlewares: [], path: base }, { parsedUrl } as never);

  it('tells a path under the route from one that only begins with its letters', () => {
    expect(under('/api', '/api')).toBe(false);
    expect(under('/api', '/api/package')).toBe(false);
    expect(under('/api', '/apix')).toBe(true);
    expect(under('/courier', '/couriers/1')).toBe(true);
    expect(under('', '/anything')).toBe(false);
    expect(under('/', '/anything')).toBe(false);
  });
});

describe('routeHandler', () => {
  const found = (params: Record<string, string> = {}): FoundAlias =>
    ({ alias: { fullPath: '/api/things/:id', action: 'svc.get' }, params }) as never;

  /** The alias `isLinkedPage` answers true for. */
  let linked: unknown;

  function handle(
    middlewares: Middleware[],
    alias: FoundAlias | undefined,
    setup: (req: ReturnType<typeof fakeRequest>) => void = () => undefined,
  ) {
    const calls: string[] = [];
    const service = {
      aliasHandler: jest.fn(async () => {
        calls.push('alias');
        return 'answered';
      }),
      isLinkedPage: (r: { $alias?: unknown }) => r.$alias === linked,
    };
    const req = fakeRequest({ url: '/api/things/t-1?limit=5' });
    setup(req);
    const res = new FakeResponse();
    const settled = routeHandler.call(
      service,
      req.$ctx,
      { middlewares },
      req,
      res.asServerResponse(),
      alias,
    );
    return { settled, req, res, service, calls };
  }

  it('runs the middlewares in turn as the service, then the alias with the body and path params', async () => {
    const order: string[] = [];
    const seen: unknown[] = [];
    const middlewares: Middleware[] = [
      function (this: unknown, _req, _res, next) {
        seen.push(this);
        order.push('first');
        setImmediate(next);
      },
      (_req, _res, next) => {
        order.push('second');
        next();
      },
    ];
    const { settled, req, service } = handle(middlewares, found({ id: 't-1' }), (r) => {
      Object.assign(r, { method: 'POST', body: { limit: 1, name: 'box' }, query: {} });
    });
    await expect(settled).resolves.toBe('answered');
    expect(order).toEqual(['first', 'second']);
    expect(seen).toEqual([service]);
    expect(req.$params).toEqual({ id: 't-1', limit: 1, name: 'box' });
    expect(req.$alias).toEqual(found().alias);
    expect(service.aliasHandler).toHaveBeenCalledWith(req, expect.anything(), found().alias);
  });

  it('takes a body that was not read (a stream) as no params', async () => {
    const { settled, req } = handle([], found({ id: 't-1' }), (r) => {
      Object.assign(r, { method: 'POST', body: undefined, query: {} });
    });
    await settled;
    expect(req.$params).toEqual({ id: 't-1' });
  });

  it('takes a GET or DELETE’s fields from the query string, with the path params', async () => {
    for (const method of ['GET', 'DELETE']) {
      const { settled, req } = handle([], found({ id: 't-1' }), (r) => {
        Object.assign(r, { method, body: {}, query: { limit: '5' } });
      });
      await settled;
      expect(req.$params).toEqual({ id: 't-1', limit: '5' });
    }
  });

  it.each<[string, Record<string, unknown>, Record<string, unknown>, [string, string][]]>([
    [
      'POST',
      { name: 'box' },
      { name: 'X', limit: '5' },
      [
        ['name', 'name is not allowed in the query string; send it in the body'],
        ['limit', 'limit is not allowed in the query string; send it in the body'],
      ],
    ],
    [
      'PATCH',
      { id: 'other', name: 'box' },
      {},
      [['id', 'id is in the path; leave it out of the body']],
    ],
    [
      'GET',
      { limit: 5 },
      { id: 'other' },
      [
        ['limit', 'limit is not allowed in the body; send it in the query string'],
        ['id', 'id is in the path; leave it out of the query string'],
      ],
    ],
  ])(
    'refuses a %s’s fields where the document does not place them, naming each (400), and calls nothing',
    async (method, body, query, problems) => {
      const { settled, service } = handle([], found({ id: 't-1' }), (r) => {
        Object.assign(r, { method, body, query });
      });
      const refusal = await settled.then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(refusal).toMatchObject({
        code: 400,
        message: `Validation failed: ${problems.map(([, message]) => message).join('; ')}`,
        data: { errors: problems.map(([field, message]) => ({ field, message })) },
      });
      expect(service.aliasHandler).not.toHaveBeenCalled();
    },
  );

  it('lets the path of a page a link opens stand over its query, and refuses it elsewhere', async () => {
    try {
      await pathOverQuery();
    } finally {
      linked = undefined;
    }
  });

  async function pathOverQuery() {
    for (const method of ['GET', 'POST']) {
      const page = found({ id: 't-1' });
      linked = page.alias;
      const { settled, req, service } = handle([], page, (r) => {
        Object.assign(r, { method, body: {}, query: { id: 'other', utm: 'x' } });
      });
      const outcome = await settled.then(
        () => 'called',
        (err: { code?: number }) => err.code,
      );
      // A page's form posts say nothing in the query: what they carry there is still refused.
      expect(outcome).toBe(method === 'GET' ? 'called' : 400);
      if (method === 'GET') {
        expect(req.$params).toEqual({ id: 't-1', utm: 'x' });
        expect(service.aliasHandler).toHaveBeenCalled();
      }
    }
  }

  it('answers null without an alias: only declared aliases are called', async () => {
    const { settled, service } = handle([], undefined);
    await expect(settled).resolves.toBeNull();
    expect(service.aliasHandler).not.toHaveBeenCalled();
  });

  it('rejects with the error a middleware passes on, or throws, and calls nothing after it', async () => {
    const parser: Middleware = (_req, _res, next) =>
      next(Object.assign(new Error('bad json'), { status: 400, type: 'entity.parse.failed' }));
    const after = jest.fn();
    const passed = handle([parser, after], found());
    await expect(passed.settled).rejects.toMatchObject({ code: 400, type: 'entity.parse.failed' });
    expect(after).not.toHaveBeenCalled();

    const thrown = handle(
      [
        () => {
          throw badRequest('thrown');
        },
      ],
      found(),
    );
    await expect(thrown.settled).rejects.toMatchObject({ message: 'thrown' });
  });

  it('settles once a middleware has answered without calling next', async () => {
    const answering: Middleware = (_req, res) => {
      res.statusCode = 204;
      res.end();
    };
    const { settled, service } = handle([answering], found());
    await expect(settled).resolves.toBe(true);
    expect(service.aliasHandler).not.toHaveBeenCalled();
  });
});
