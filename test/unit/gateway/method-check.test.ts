import { toHttpError } from '../../../libs/errors';
import { aliasRoutes, allowedMethods, methodGuard } from '../../../services/gateway/method-check';
import { FakeResponse, fakeRequest } from './fake-http';

const routes = [
  { method: 'POST', fullPath: '/api/pricing' },
  { method: 'GET', fullPath: '/api/countries' },
  { method: 'POST', fullPath: '/api/package' },
  { method: 'DELETE', fullPath: '/api/package/:packageId' },
  { method: 'GET', fullPath: '/admin/fleet-types' },
  { method: 'POST', fullPath: '/admin/fleet-types' },
  { method: 'PATCH', fullPath: '/admin/fleet-types/:fleetTypeId' },
  { method: 'GET', fullPath: '/admin/pricing/tiers/:tierId' },
  { method: 'PUT', fullPath: '/admin/pricing/tiers/:tierId' },
  { method: 'DELETE', fullPath: '/admin/pricing/tiers/:tierId' },
  { method: 'GET', fullPath: '/admin/pricing/tiers/history' },
  { method: 'POST', fullPath: '/file/single-upload' },
  ...aliasRoutes({ 'GET /': null, 'GET /health/live': null, 'GET /docs/assets/:file': null }),
];
const methodsOf = allowedMethods(routes);

describe('aliasRoutes', () => {
  it('reads method and path from alias keys', () => {
    expect(aliasRoutes({ 'GET /docs': 1, 'POST  /x/:id': 2 })).toEqual([
      { method: 'GET', fullPath: '/docs' },
      { method: 'POST', fullPath: '/x/:id' },
    ]);
  });
});

describe('allowedMethods', () => {
  it('lists the methods declared for a path, sorted', () => {
    expect(methodsOf('/api/pricing')).toEqual(['POST']);
    expect(methodsOf('/admin/fleet-types')).toEqual(['GET', 'POST']);
    expect(methodsOf('/admin/pricing/tiers/t-1')).toEqual(['DELETE', 'GET', 'PUT']);
  });

  it('matches :param templates one segment at a time, as moleculer-web does', () => {
    expect(methodsOf('/api/package/0a1b2c3d-0000-4000-8000-000000000000')).toEqual(['DELETE']);
    expect(methodsOf('/api/package/a%2Fb')).toEqual(['DELETE']);
    expect(methodsOf('/api/package/a/b')).toEqual([]);
    expect(methodsOf('/docs/assets/app.js')).toEqual(['GET']);
  });

  it('joins the methods of every template a path matches', () => {
    expect(methodsOf('/admin/pricing/tiers/history')).toEqual(['DELETE', 'GET', 'PUT']);
  });

  it('ignores case and a trailing slash, like the alias lookup', () => {
    expect(methodsOf('/API/Pricing')).toEqual(['POST']);
    expect(methodsOf('/api/pricing/')).toEqual(['POST']);
  });

  it('knows no methods for an unknown path or a near miss', () => {
    for (const path of ['/api/nowhere', '/api/pricingx', '/apipricing', '/file/single_upload']) {
      expect(methodsOf(path)).toEqual([]);
    }
    expect(methodsOf('/')).toEqual(['GET']);
  });
});

describe('methodGuard', () => {
  const guard = methodGuard(methodsOf);
  function run(method: string, url: string, headers: Record<string, string> = {}) {
    const res = new FakeResponse();
    let passed: unknown = 'not called';
    guard(fakeRequest({ method, url, headers }), res.asServerResponse(), (err) => {
      passed = err;
    });
    return { err: passed, allow: res.getHeader('allow') };
  }

  it('refuses a method the path does not have with 405, Allow and what to do', () => {
    const { err, allow } = run('DELETE', '/api/pricing?x=1');
    expect(toHttpError(err)).toMatchObject({
      status: 405,
      message: 'DELETE is not allowed on /api/pricing; use POST',
    });
    expect(allow).toBe('POST');
  });

  it('names every allowed method', () => {
    const { err, allow } = run('POST', '/admin/pricing/tiers/t-1');
    expect(allow).toBe('DELETE, GET, PUT');
    expect((err as Error).message).toBe(
      'POST is not allowed on /admin/pricing/tiers/t-1; use DELETE, GET or PUT',
    );
    expect(run('PUT', '/api/countries').allow).toBe('GET');
    expect(run('GET', '/file/single-upload').allow).toBe('POST');
    expect(run('HEAD', '/health/live').allow).toBe('GET');
  });

  it('lets declared methods and unknown paths through', () => {
    for (const [method, url] of [
      ['POST', '/api/pricing'],
      ['DELETE', '/api/package/p-1'],
      ['DELETE', '/api/nowhere'],
      ['GET', '/nowhere'],
    ]) {
      expect(run(method, url)).toEqual({ err: undefined, allow: undefined });
    }
  });

  it('leaves preflights alone, and answers a plain OPTIONS itself: 204 with what the path allows', () => {
    const preflight = { origin: 'https://shop.example', 'access-control-request-method': 'PUT' };
    expect(run('OPTIONS', '/file/single-upload', preflight).err).toBeUndefined();
    for (const [url, allowed] of [
      ['/api/countries', 'GET, OPTIONS'],
      ['/api/pricing', 'OPTIONS, POST'],
      ['/admin/pricing/tiers/t-1', 'DELETE, GET, OPTIONS, PUT'],
    ]) {
      const res = new FakeResponse();
      let passed = false;
      guard(fakeRequest({ method: 'OPTIONS', url }), res.asServerResponse(), () => {
        passed = true;
      });
      // Never passed on: the GET it would be routed as does not run.
      expect(passed).toBe(false);
      expect(res.statusCode).toBe(204);
      expect(res.getHeader('allow')).toBe(allowed);
    }
    expect(run('OPTIONS', '/api/nowhere')).toEqual({ err: undefined, allow: undefined });
  });
});
