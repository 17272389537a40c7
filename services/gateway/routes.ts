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
export function templatePattern(fullPath: string, flags = ''): RegExp {
  const parts = fullPath
    .split('/')
    .map((part) => (part.startsWith(':') ? '[^/]+' : escapeRegExp(part)));
  return new RegExp(`^${parts.join('/')}/?$`, flags);
}
