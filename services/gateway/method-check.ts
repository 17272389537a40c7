import { methodNotAllowed } from '../../libs/errors';
import type { Middleware } from './edge';
import { describeRequest, isPreflight } from './http';
import { templateMatcher } from './routes';

/** A declared route: its method and its full path template (`/api/package/:packageId`). */
export interface DeclaredRoute {
  method: string;
  fullPath: string;
}

/** The routes of an alias map at `/` (`{"GET /docs/assets/:file": handler}`). */
export function aliasRoutes(aliases: Record<string, unknown>): DeclaredRoute[] {
  return Object.keys(aliases).map((key) => {
    const [method, fullPath] = key.split(/\s+/);
    return { method, fullPath };
  });
}

/**
 * The methods declared for a path, sorted, by the templates it matches the way moleculer-web
 * matches them (case-insensitive, `:param` one segment); none for an unknown path.
 */
export function allowedMethods(routes: DeclaredRoute[]): (path: string) => string[] {
  const matching = templateMatcher(routes, 'i');
  return (path) => [...new Set(matching(path).map((route) => route.method))].sort();
}

const spell = (methods: string[]) =>
  methods.length === 1 ? methods[0] : `${methods.slice(0, -1).join(', ')} or ${methods.at(-1)}`;

/**
 * 405 with `Allow` for a known path called with a method it does not have. It runs before
 * authentication, so a wrong method is never mistaken for a missing key or route (the routes
 * are public: /openapi.json). A plain OPTIONS of a known path is answered 204 with its `Allow`
 * (moleculer-web would look it up as a GET, and run the GET, its params read from the body).
 * Preflights (each group's guard answers them) and matched methods pass untouched.
 */
export function methodGuard(methodsOf: (path: string) => string[]): Middleware {
  return (req, res, next) => {
    if (isPreflight(req)) return next();
    const { method, path } = describeRequest(req);
    const allowed = methodsOf(req.parsedUrl ?? path);
    if (allowed.length === 0 || allowed.includes(method)) return next();
    if (method === 'OPTIONS') {
      res.statusCode = 204;
      res.setHeader('Allow', [...allowed, 'OPTIONS'].sort().join(', '));
      res.end();
      return;
    }
    res.setHeader('Allow', allowed.join(', '));
    // HEAD goes with GET (the probes'): the one to name is GET.
    const use = allowed.filter((m) => m !== 'HEAD');
    next(methodNotAllowed(`${method} is not allowed on ${path}; use ${spell(use)}`));
  };
}
