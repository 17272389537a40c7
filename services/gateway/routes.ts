import { escapeRegExp } from '../../libs/text';
import type { Retry } from '../../libs/contracts';
import type { HttpRoute, RouteGroup, ServiceDefinition } from '../../libs/service';

export const GROUP_BASE: Record<RouteGroup, string> = {
  api: '/api',
  file: '/file',
  admin: '/admin',
  courier: '/courier',
  checkout: '/checkout',
  track: '/track',
  webhooks: '/webhooks',
};

/**
 * The groups of JSON and streamed calls (route-table makes a route per body kind of each): the
 * gateway reads their JSON bodies itself (body-parser).
 */
export const BACKEND_GROUPS: RouteGroup[] = ['api', 'file', 'admin', 'courier'];

/** Which route groups a gateway serves (the sandbox's pages, a provider's webhooks: by config). */
export type MountedGroups = (group: RouteGroup) => boolean;

export const ALL_GROUPS: MountedGroups = () => true;

export interface RouteEntry {
  /** Fully qualified action name, `service.action`. */
  actionName: string;
  http: HttpRoute;
  retry: Retry;
  /** Path including the group base, moleculer-web style (`/admin/users/:userId`). */
  fullPath: string;
}

/**
 * The HTTP routes the given services declare in the mounted groups; throws on two actions
 * claiming one route.
 */
export function collectRoutes(
  definitions: ServiceDefinition[],
  mounted: MountedGroups = ALL_GROUPS,
): RouteEntry[] {
  const entries: RouteEntry[] = [];
  const seen = new Map<string, string>();
  for (const definition of definitions) {
    for (const [name, action] of Object.entries(definition.actions ?? {})) {
      if (!action.http || !mounted(action.http.group)) continue;
      const actionName = `${definition.name}.${name}`;
      const fullPath = `${GROUP_BASE[action.http.group]}${action.http.path}`;
      const routeKey = `${action.http.method} ${fullPath}`;
      const previous = seen.get(routeKey);
      if (previous) throw new Error(`${routeKey} is claimed by both ${previous} and ${actionName}`);
      seen.set(routeKey, actionName);
      entries.push({ actionName, http: action.http, retry: action.retry, fullPath });
    }
  }
  return entries;
}

/** moleculer-web aliases of one group and body kind: `{"POST /users": "account.createUser"}`. */
export function aliasesFor(
  entries: RouteEntry[],
  group: RouteGroup,
  body: NonNullable<HttpRoute['body']>,
): Record<string, string> {
  const aliases: Record<string, string> = {};
  for (const entry of entries) {
    if (entry.http.group !== group || (entry.http.body ?? 'json') !== body) continue;
    const target = body === 'stream' ? `stream:${entry.actionName}` : entry.actionName;
    aliases[`${entry.http.method} ${entry.http.path}`] = target;
  }
  return aliases;
}

/**
 * The regular expression of a path template, as moleculer-web (path-to-regexp) reads it: a
 * `:param` is one segment, anything else is literal, a trailing slash is optional. Pass `i`
 * to match as moleculer-web does, regardless of case.
 */
function templatePattern(fullPath: string, flags: string): RegExp {
  const parts = fullPath
    .split('/')
    .map((part) => (part.startsWith(':') ? '[^/]+' : escapeRegExp(part)));
  return new RegExp(`^${parts.join('/')}/?$`, flags);
}

/** Segments of a path or template, the leading empty one included, and one trailing slash left out. */
function segmentsOf(path: string): string[] {
  return (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path).split('/');
}

/** Where a template or a path is filed: its number of segments and its first two, in lower case. */
const shelfOf = (segments: string[]) =>
  `${segments.length} ${segments.slice(1, 3).join('/').toLowerCase()}`;

/**
 * The templates a path may match, in the order given: only those with the path's number of
 * segments and first two segments (regardless of case), and those with a `:param` among the
 * first two. Every request asks, and testing each of the gateway's ~100 templates was a
 * measurable part of its cost; what is left is tested by the caller.
 */
export function templateCandidates<Template extends { fullPath: string }>(
  templates: Template[],
): (path: string) => Template[] {
  const filed = templates.map((template) => {
    const segments = segmentsOf(template.fullPath);
    // `/docs/` (its own slash, then the optional one) also matches `/docs//`, a segment more.
    const lengths = [segments.length];
    if (template.fullPath.length > 1 && template.fullPath.endsWith('/'))
      lengths.push(segments.length + 1);
    const loose =
      lengths.length > 1 || segments.slice(1, 3).some((segment) => segment.startsWith(':'));
    return { template, shelf: shelfOf(segments), lengths, loose };
  });
  // A template may match a path of `length` segments filed on `shelf`: a loose one by its
  // length alone. Candidates keep the order given (a literal before a `:param` one).
  const candidatesFor = (length: number, shelf?: string) =>
    filed
      .filter((t) => t.lengths.includes(length) && (t.loose || t.shelf === shelf))
      .map((t) => t.template);
  const lengths = new Set(filed.flatMap((t) => t.lengths));
  const looseByLength = new Map([...lengths].map((length) => [length, candidatesFor(length)]));
  const shelves = new Map(
    filed
      .filter((t) => !t.loose)
      .map((t) => [t.shelf, candidatesFor(t.lengths[0], t.shelf)] as const),
  );
  return (path) => {
    const segments = segmentsOf(path);
    return shelves.get(shelfOf(segments)) ?? looseByLength.get(segments.length) ?? [];
  };
}

/**
 * The templates a path matches, in the order given, as moleculer-web matches them (`i`:
 * regardless of case).
 */
export function templateMatcher<Route extends { fullPath: string }>(
  routes: Route[],
  flags = '',
): (path: string) => Route[] {
  const candidates = templateCandidates(
    routes.map((route) => ({
      fullPath: route.fullPath,
      route,
      regexp: templatePattern(route.fullPath, flags),
    })),
  );
  return (path) => {
    const matched: Route[] = [];
    for (const candidate of candidates(path))
      if (candidate.regexp.test(path)) matched.push(candidate.route);
    return matched;
  };
}
