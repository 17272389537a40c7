import ApiGateway from 'moleculer-web';
import { sizeInBytes, type Config } from '../../libs/config';
import type { HttpRoute, RouteGroup } from '../../libs/service';
import type { Middleware } from './edge';
import type { GatewayRequest } from './http';
import { bodyArrived, jsonBodyGuard } from './json-body';
import { BACKEND_GROUPS, GROUP_BASE, aliasesFor, type RouteEntry } from './routes';
import type { AfterCall } from './web-overrides';

const BODY_KINDS = ['json', 'stream'] as const;

/**
 * The groups whose bodies are not JSON: the sandbox's pages (form posts, whose bodies are
 * not read: the path says everything), the public tracking page (GETs only) and providers'
 * webhooks (raw bytes, read by their own middleware). Routed only when an action is mounted
 * there.
 */
const EDGE_GROUPS: { group: RouteGroup; body: 'json' | 'raw' }[] = [
  { group: 'checkout', body: 'json' },
  { group: 'track', body: 'json' },
  { group: 'webhooks', body: 'raw' },
];

type BodyKind = NonNullable<HttpRoute['body']>;

export interface RouteTableOptions {
  config: Pick<Config, 'requestTimeoutMs' | 'bodyLimit' | 'files'>;
  entries: RouteEntry[];
  onAfterCall: AfterCall;
  /**
   * Middlewares of a group's routes of a body kind, in order (access log, authentication, ...).
   * `readBody` reads and cleans a JSON route's body (none for other kinds): placed after the
   * credential's check and before anything held for the call's length (a download's lease).
   */
  use: (group: RouteGroup, body: BodyKind, readBody: Middleware[]) => Middleware[];
  /**
   * Aliases the gateway answers itself in a group whose actions are mounted (the tracking
   * page's event stream, next to the page), by group: `{"GET /:id/events": handler}`.
   */
  ownAliases?: Partial<Record<RouteGroup, Record<string, unknown>>>;
  /** The routes without credentials (`opsAliases`) and their middlewares. */
  ops: { aliases: Record<string, unknown>; use: Middleware[] };
}

/** A route's raw body goes to the service as a stream, with the headers that describe it. */
export function describeStreamBody(
  ctx: { meta: Record<string, unknown> },
  _route: unknown,
  req: GatewayRequest,
): void {
  ctx.meta.contentType = req.headers['content-type'];
  const length = Number(req.headers['content-length']);
  if (Number.isSafeInteger(length) && length >= 0) ctx.meta.contentLength = length;
}

/**
 * moleculer-web's `routes`: one per group and body kind (`api-json`, `file-stream`, ...),
 * then `ops` at `/`. Only declared aliases exist (`mappingPolicy: restrict`).
 */
export function gatewayRoutes(options: RouteTableOptions) {
  const { config } = options;
  const common = {
    mappingPolicy: 'restrict',
    autoAliases: false,
    logging: false,
    // `retries` is set per call, by the action's retry kind (web-overrides' callAction).
    callOptions: { timeout: config.requestTimeoutMs },
    onAfterCall: options.onAfterCall,
  };
  // Read where the group's middlewares place it, not before them as moleculer-web's
  // `bodyParsers` would: a request without a good credential is answered 401 before its body
  // is read (however large or malformed it is), and every refusal of a body is in the access
  // log. Cleaned after it is read, before params are built. Any JSON is read (`strict: false`),
  // so that a body that is not an object is refused as that (jsonBodyGuard), not as malformed.
  const readJson = [
    bodyArrived(
      ApiGateway.bodyParser.json({ strict: false, limit: config.bodyLimit }),
      sizeInBytes(config.bodyLimit),
    ),
    jsonBodyGuard,
  ];

  const backendRoutes = BACKEND_GROUPS.flatMap((group) =>
    BODY_KINDS.map((body) => ({
      ...common,
      // Files take longer than JSON calls: an upload's timeout covers its whole body.
      callOptions:
        group === 'file'
          ? { ...common.callOptions, timeout: config.files.timeoutMs }
          : common.callOptions,
      name: `${group}-${body}`,
      path: GROUP_BASE[group],
      aliases: aliasesFor(options.entries, group, body),
      bodyParsers: false,
      use: options.use(group, body, body === 'json' ? readJson : []),
      ...(body === 'stream' ? { onBeforeCall: describeStreamBody } : {}),
    })),
  );

  const edgeRoutes = EDGE_GROUPS.map(({ group, body }) => ({
    ...common,
    name: group,
    path: GROUP_BASE[group],
    aliases: { ...aliasesFor(options.entries, group, body), ...options.ownAliases?.[group] },
    bodyParsers: false,
    use: options.use(group, body, []),
  })).filter((route) => Object.keys(route.aliases).length > 0);

  const opsRoute = {
    ...common,
    name: 'ops',
    path: '/',
    bodyParsers: false,
    use: options.ops.use,
    aliases: options.ops.aliases,
  };

  return [...backendRoutes, ...edgeRoutes, opsRoute];
}
