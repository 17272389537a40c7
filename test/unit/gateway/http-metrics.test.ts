import { UNMATCHED_ROUTE, routeTemplates } from '../../../services/gateway/http-metrics';

describe('routeTemplates', () => {
  const templateOf = routeTemplates([
    { method: 'GET', fullPath: '/api/packages' },
    { method: 'DELETE', fullPath: '/api/package/:packageId' },
    { method: 'POST', fullPath: '/api/package' },
    { method: 'GET', fullPath: '/admin/users/:userId/api-keys' },
    { method: 'POST', fullPath: '/file/single-upload' },
  ]);

  it('names the template a path matches, for its method', () => {
    expect(templateOf('GET', '/api/packages')).toBe('/api/packages');
    expect(templateOf('GET', '/api/packages/')).toBe('/api/packages');
    expect(templateOf('DELETE', '/api/package/0a1b2c3d')).toBe('/api/package/:packageId');
    expect(templateOf('GET', '/admin/users/u-1/api-keys')).toBe('/admin/users/:userId/api-keys');
  });

  it('names the path’s template for a method it does not have (a 405, a refused preflight)', () => {
    expect(templateOf('GET', '/api/package/0a1b2c3d')).toBe('/api/package/:packageId');
    expect(templateOf('OPTIONS', '/api/packages')).toBe('/api/packages');
    // With its trailing slash, the path of the POST.
    expect(templateOf('DELETE', '/api/package/')).toBe('/api/package');
    // Not a method of HTTP's usual few: no series of its own for each path.
    expect(templateOf('PROPFIND', '/api/packages')).toBe(UNMATCHED_ROUTE);
    expect(templateOf('MKCOL', '/api/package/0a1b2c3d')).toBe(UNMATCHED_ROUTE);
  });

  it('answers unmatched for a longer path or a near miss', () => {
    expect(templateOf('DELETE', '/api/package/a/b')).toBe(UNMATCHED_ROUTE);
    expect(templateOf('POST', '/file/single_upload')).toBe(UNMATCHED_ROUTE);
    expect(templateOf('POST', '/fileXsingle-upload')).toBe(UNMATCHED_ROUTE);
  });
});
