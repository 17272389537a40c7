import type Joi from '../../libs/joi';
import { APP_ENVIRONMENTS, type AppEnvironment } from '../../libs/config';
import { MAX_LISTED_PROBLEMS } from '../../libs/errors';
import type { HttpRoute, RouteGroup, ServiceDefinition } from '../../libs/service';
import { IDEMPOTENCY_KEY_DOC, REPLAYED_HEADER, takesIdempotencyKey } from './idempotency';
import { MAX_JSON_DEPTH } from './json-body';
import { ComponentSchemas, type JsonSchema } from './json-schema';
import {
  ALL_GROUPS,
  BACKEND_GROUPS,
  collectRoutes,
  type MountedGroups,
  type RouteEntry,
} from './routes';

/**
 * The OpenAPI 3.1 document of every routed action, built from the same joi schemas that
 * validate (gateway/json-schema) and the actions' `http` declarations. Each part of an
 * operation is a small pure function below; `buildOpenApi` puts them together.
 */

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: `Invalid input; \`errors\` lists the fields (the first 20; the message says how many more). Also malformed JSON, a JSON body that is not an object, or JSON nested more than ${MAX_JSON_DEPTH} levels deep`,
  401: 'Missing, malformed, unknown, revoked or other-environment credentials',
  403: 'Not allowed for this key or token',
  404: 'Not found',
  413: 'Body too large',
  415: 'A body sent without `Content-Type: application/json`, or a JSON body in a `Content-Encoding` other than gzip, deflate or br, or in a charset that is not a UTF (send UTF-8)',
  429: 'API quota exceeded, or too many failed authentications from your address; see `Retry-After`',
  500: 'Unexpected failure, logged on our side',
  503: 'A service or dependency is temporarily unavailable, or the database too busy to take a write; retry in a few seconds, after `Retry-After` when given (a `POST` with the same `Idempotency-Key`)',
  504: 'A service did not answer in time; retry (a `POST` with the same `Idempotency-Key`)',
};

const PAGE_REQUESTS_429 =
  'Too many requests of the pages from your address (`PAGE_REQUEST_LIMIT`); see `Retry-After`';

/** What a status means in one group, where the groups differ. */
const GROUP_ERROR_DESCRIPTIONS: Partial<Record<RouteGroup, Record<number, string>>> = {
  api: { 403: 'A client-app (publishable) key: it may call /file only; use a server-only key' },
  file: {
    403: 'A server-only key sent from a browser (`Origin`); browsers need a client-app key (`serverOnly: false`)',
  },
  admin: {
    429: 'Too many failed admin-token checks from your address; see `Retry-After`',
  },
  courier: {
    401: 'Missing, malformed, unknown or revoked courier token, or its courier is retired',
    403: 'The courier is retired (inactive), or the call came from a browser',
    429: 'Too many requests from this courier (`COURIER_QUOTA_LIMIT`), or too many failed authentications from your address; see `Retry-After`',
  },
  checkout: { 429: PAGE_REQUESTS_429 },
  track: { 429: PAGE_REQUESTS_429 },
};

/** The statuses of a group's credentials checks: its key or token, its quota, a signature. */
const GROUP_STATUSES: Record<RouteGroup, number[]> = {
  api: [401, 403, 429],
  file: [401, 403, 429],
  admin: [401, 403, 429],
  courier: [401, 403, 429],
  checkout: [429],
  track: [429],
  webhooks: [401],
};

/** The groups whose calls count against a quota (an API key's, a courier's): `RateLimit-*`. */
const hasQuota = (http: HttpRoute) =>
  http.group === 'api' || http.group === 'file' || http.group === 'courier';

/** How each group authenticates, in the document's terms. */
const SECURITY: Record<RouteGroup, Record<string, string[]>[]> = {
  api: [{ ApiKey: [] }],
  file: [{ ApiKey: [] }],
  admin: [{ AdminToken: [] }],
  courier: [{ CourierToken: [] }],
  checkout: [],
  track: [],
  webhooks: [],
};

const ERROR_ENVELOPE_REF = { $ref: '#/components/schemas/ErrorEnvelope' };

/** `/admin/users/:userId` → `/admin/users/{userId}`. */
const openApiPath = (fullPath: string) => fullPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

/** Names of the path parameters, in order. */
const pathParams = (fullPath: string) =>
  [...fullPath.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]);

const hasBody = (method: HttpRoute['method']) => method !== 'GET' && method !== 'DELETE';

/**
 * Whether the gateway reads the operation's body as JSON (body-parser, in the backend groups;
 * the others' bodies are raw bytes or not read), so that its size, encoding or charset may be
 * refused with 413 or 415: a GET's or a DELETE's too, though its fields are in its query.
 */
const readsJsonBody = (http: HttpRoute) =>
  (http.body ?? 'json') === 'json' && BACKEND_GROUPS.includes(http.group);

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  schema: JsonSchema;
  description?: string;
  /** `form` and exploded: an object parameter whose fields are sent as `name=value` each. */
  style?: 'form';
  explode?: true;
}

/** Keywords of a params object that say nothing across its fields. */
const FIELD_BY_FIELD = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'description',
]);

/** The name of the one query parameter of an operation whose fields depend on each other. */
export const QUERY_OBJECT_PARAM = 'query';

/** An action's params, as the document places them. */
interface PlacedParams {
  path: Parameter[];
  query: Parameter[];
  /** The JSON body, when the method has one. */
  body?: JsonSchema;
}

/**
 * Splits the JSON Schema of an action's params (the object the gateway makes of the path's
 * params and the body's or, without a body, the query's fields: `paramsOf` in web-routing)
 * into path parameters, query parameters and the body. A body that is not one object (`oneOf`
 * of two shapes) is taken whole; it then owns every param.
 */
export function placeParams(
  params: JsonSchema | undefined,
  fullPath: string,
  method: HttpRoute['method'],
): PlacedParams {
  const inPath = pathParams(fullPath);
  const withBody = hasBody(method);
  const properties = (params?.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((params?.required ?? []) as string[]);
  const path = inPath.map((name) => ({
    name,
    in: 'path' as const,
    required: true,
    schema: properties[name] ?? { type: 'string' },
  }));
  if (params && !params.properties) {
    if (!withBody || inPath.length > 0) {
      throw new Error(`params of ${method} ${fullPath} must be one joi object`);
    }
    return { path, query: [], body: params };
  }
  const outside = Object.keys(properties).filter((name) => !inPath.includes(name));
  const outsideRequired = outside.filter((name) => required.has(name));
  // The fields outside the path as one object: a body, or a query whose fields depend on each
  // other (joi's `with`: `city` needs `state`), a rule that holds of one parameter only.
  const fields: JsonSchema = {
    type: 'object',
    ...Object.fromEntries(
      Object.entries(params ?? {}).filter(([key]) => key !== 'properties' && key !== 'required'),
    ),
    properties: Object.fromEntries(outside.map((name) => [name, properties[name]])),
    required: outsideRequired,
    additionalProperties: params?.additionalProperties ?? false,
  };
  if (withBody) return { path, query: [], body: fields };
  if (Object.keys(params ?? {}).some((key) => !FIELD_BY_FIELD.has(key))) {
    // Each field still its own `name=value`, as sent before.
    const query: Parameter = {
      name: QUERY_OBJECT_PARAM,
      in: 'query',
      required: outsideRequired.length > 0,
      style: 'form',
      explode: true,
      schema: fields,
    };
    return { path, query: [query] };
  }
  const query = outside.map((name) => ({
    name,
    in: 'query' as const,
    required: required.has(name),
    schema: properties[name],
  }));
  return { path, query };
}

/** Header parameters a `body: 'raw'` route reads (a signature). */
const rawHeaderParams = (http: HttpRoute): Parameter[] =>
  (http.headers ?? []).map((name) => ({
    name,
    in: 'header' as const,
    required: true,
    schema: { type: 'string' },
  }));

/** Optional headers of a few allowed values (`Waybill-Simulate`) offered in `environment`. */
const optionHeaderParams = (
  http: HttpRoute,
  environment: AppEnvironment | undefined,
): Parameter[] =>
  (http.optionHeaders ?? [])
    .filter(
      (option) => !environment || !option.environments || option.environments.includes(environment),
    )
    .map((option) => ({
      name: option.name,
      in: 'header' as const,
      required: false,
      description: option.description,
      schema: { type: 'string', enum: [...option.values] },
    }));

/** Path, query and header parameters of an operation. */
function parameters(
  http: HttpRoute,
  placed: PlacedParams,
  environment: AppEnvironment | undefined,
): Parameter[] {
  return [
    ...placed.path,
    ...rawHeaderParams(http),
    ...optionHeaderParams(http, environment),
    ...(takesIdempotencyKey(http) ? [IDEMPOTENCY_KEY_DOC.parameter as Parameter] : []),
    ...placed.query,
  ];
}

/** Whether a JSON body may be left out (`{}`): nothing required, no choice to make. */
export function acceptsEmpty(body: JsonSchema): boolean {
  if (!body.properties) return false;
  if (((body.required as string[] | undefined) ?? []).length > 0) return false;
  return !body.anyOf && !body.oneOf && !body.minProperties;
}

/** The request body: multipart for streamed uploads, else the JSON body if any. */
function requestBody(http: HttpRoute, placed: PlacedParams) {
  if (!hasBody(http.method)) return undefined;
  if (http.body === 'raw') {
    const schema = { type: 'object', description: 'The sender’s JSON document, signed as sent' };
    return { required: true, content: { 'application/json': { schema } } };
  }
  if (http.body === 'stream') {
    return {
      required: true,
      content: { 'multipart/form-data': { schema: http.multipart ?? { type: 'object' } } },
    };
  }
  // placeParams gives every method that has a body one.
  const body = placed.body as JsonSchema;
  return { required: !acceptsEmpty(body), content: { 'application/json': { schema: body } } };
}

/** The success answer: nothing (204), raw bytes, or `data` in the success envelope. */
function successResponse(http: HttpRoute, data: JsonSchema | undefined) {
  if (http.status === 204) return { description: http.message };
  if (http.binary) {
    return {
      description: http.message,
      headers: {
        'Content-Disposition': {
          description: 'attachment, with the file name',
          schema: { type: 'string' },
        },
      },
      content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
    };
  }
  return {
    description: http.message,
    content: {
      'application/json': {
        schema: {
          allOf: [
            { $ref: '#/components/schemas/SuccessEnvelope' },
            { type: 'object', properties: { data: data ?? {} } },
          ],
        },
      },
    },
  };
}

/** Every error status an operation can answer, ascending. */
export function errorStatuses(http: HttpRoute, fullPath: string): number[] {
  const statuses = new Set([400, 500, 503, 504, ...Object.keys(http.errors ?? {}).map(Number)]);
  const groupStatuses = GROUP_STATUSES[http.group];
  groupStatuses.forEach((s) => statuses.add(s));
  if (pathParams(fullPath).length > 0) statuses.add(404);
  if (hasBody(http.method) || readsJsonBody(http)) statuses.add(413);
  if (readsJsonBody(http)) statuses.add(415);
  if (takesIdempotencyKey(http))
    Object.keys(IDEMPOTENCY_KEY_DOC.errors).forEach((s) => statuses.add(+s));
  return [...statuses].sort((a, b) => a - b);
}

/** What an error status means for this operation: its own words first. */
export function errorDescription(http: HttpRoute, status: number): string {
  const idempotency = takesIdempotencyKey(http) ? IDEMPOTENCY_KEY_DOC.errors : {};
  return (
    http.errors?.[status] ??
    idempotency[status] ??
    GROUP_ERROR_DESCRIPTIONS[http.group]?.[status] ??
    ERROR_DESCRIPTIONS[status] ??
    'Error'
  );
}

const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });

/** Which documented headers an answer carries (components.headers). */
function documentedHeaders(status: number, http: HttpRoute) {
  const quota = hasQuota(http);
  const idempotent = takesIdempotencyKey(http);
  const headers: Record<string, unknown> = { 'X-Request-ID': headerRef('RequestId') };
  if (quota && status < 400) {
    for (const name of ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']) {
      headers[name] = headerRef(name.replace(/-/g, ''));
    }
  }
  // A 409 of a held Idempotency-Key says when the key is released at the latest, and every
  // 503 when to come back (an upload's when the file service has room again).
  if (status === 429 || status === 503 || (idempotent && status === 409)) {
    headers['Retry-After'] = headerRef('RetryAfter');
  }
  if (idempotent && status < 300) headers[REPLAYED_HEADER] = headerRef('IdempotentReplayed');
  return headers;
}

/** Every answer of an operation, success and errors, each with its headers. */
function responses(entry: RouteEntry, data: JsonSchema | undefined) {
  const { http } = entry;
  const all: Record<string, Record<string, unknown> & { headers?: Record<string, unknown> }> = {
    [String(http.status ?? 200)]: successResponse(http, data),
  };
  for (const status of errorStatuses(http, entry.fullPath)) {
    all[String(status)] = {
      description: errorDescription(http, status),
      content: { 'application/json': { schema: ERROR_ENVELOPE_REF } },
    };
  }
  for (const [code, response] of Object.entries(all)) {
    response.headers = {
      ...response.headers,
      ...documentedHeaders(Number(code), http),
    };
  }
  return all;
}

/** One operation of the document. */
function operation(
  entry: RouteEntry,
  params: Joi.Schema | undefined,
  components: ComponentSchemas,
  environment: AppEnvironment | undefined,
) {
  const { http } = entry;
  // A raw body's params (its bytes, its headers) are the gateway's making, not the sender's.
  const converted = params && http.body !== 'raw' ? components.convert(params) : undefined;
  const placed = placeParams(converted, entry.fullPath, http.method);
  const body = requestBody(http, placed);
  return {
    operationId: entry.actionName,
    summary: http.summary,
    ...(http.description ? { description: http.description } : {}),
    tags: [http.group],
    security: SECURITY[http.group],
    parameters: parameters(http, placed, environment),
    ...(body ? { requestBody: body } : {}),
    responses: responses(entry, http.response && components.convert(http.response)),
  };
}

type Operation = ReturnType<typeof operation> & { requestBody?: { content: object } };

/** Names of the top-level properties a JSON body may have, through `oneOf` and `$ref`s. */
function bodyProperties(schema: JsonSchema | undefined, components: ComponentSchemas): string[] {
  if (!schema) return [];
  const ref = schema.$ref as string | undefined;
  if (ref) return bodyProperties(components.schemas[ref.split('/').at(-1) as string], components);
  const own = Object.keys((schema.properties ?? {}) as object);
  const branches = [...((schema.oneOf ?? []) as JsonSchema[]), ...((schema.anyOf ?? []) as [])];
  return [...new Set([...own, ...branches.flatMap((b) => bodyProperties(b, components))])];
}

/**
 * OpenAPI links from each creation to the operations that take the created resource's id
 * (`http.creates` names the parameter, `http.createdIdField` the field of `data` that holds
 * it): as a path parameter, as a field of the JSON body (editing through the same POST), or as
 * the one item of a list of such ids in the body (`http.listedAs`: the packages a delivery
 * takes). Stateful testing follows them.
 */
export function links(
  entries: { entry: RouteEntry; op: Operation }[],
  components: ComponentSchemas,
): void {
  for (const { entry: source, op: created } of entries) {
    const { creates: param, createdIdField = 'id', listedAs } = source.http;
    if (!param) continue;
    const success = created.responses[String(source.http.status ?? 200)] as { links?: object };
    const found: Record<string, unknown> = {};
    const value = `$response.body#/data/${createdIdField}`;
    for (const { entry: target, op } of entries) {
      const body = (
        op.requestBody?.content as Record<string, { schema: JsonSchema }> | undefined
      )?.['application/json']?.schema;
      const fields = bodyProperties(body, components);
      if (pathParams(target.fullPath).includes(param)) {
        found[target.actionName] = {
          operationId: target.actionName,
          parameters: { [param]: value },
        };
      } else if (fields.includes(param)) {
        found[target.actionName] = {
          operationId: target.actionName,
          requestBody: { [param]: value },
        };
      } else if (listedAs && fields.includes(listedAs)) {
        found[target.actionName] = {
          operationId: target.actionName,
          requestBody: { [listedAs]: [value] },
        };
      }
    }
    if (Object.keys(found).length > 0) success.links = found;
  }
}

function findParams(definitions: ServiceDefinition[], actionName: string) {
  const [serviceName, name] = actionName.split('.');
  return definitions.find((d) => d.name === serviceName)?.actions?.[name]?.params;
}

const integerHeader = (description: string) => ({ description, schema: { type: 'integer' } });

const ENVELOPE_SCHEMAS = {
  SuccessEnvelope: {
    type: 'object',
    required: ['success', 'message', 'data'],
    properties: {
      success: { type: 'boolean', const: true },
      message: { type: 'string' },
      data: {},
    },
  },
  FieldError: {
    type: 'object',
    required: ['field', 'message'],
    properties: { field: { type: 'string' }, message: { type: 'string' } },
  },
  ErrorEnvelope: {
    type: 'object',
    required: ['statusCode', 'method', 'timestamp', 'path', 'url', 'message', 'environment'],
    properties: {
      statusCode: { type: 'integer' },
      method: { type: 'string' },
      timestamp: { type: 'string', format: 'date-time' },
      path: { type: 'string' },
      url: { type: 'string' },
      message: { type: 'string' },
      environment: { type: 'string', enum: [...APP_ENVIRONMENTS] },
      errors: {
        type: 'array',
        maxItems: MAX_LISTED_PROBLEMS,
        items: { $ref: '#/components/schemas/FieldError' },
      },
    },
  },
};

const COMPONENT_HEADERS = {
  RequestId: {
    description:
      'Names the request in our logs: your own `X-Request-ID`/`X-Correlation-ID` (1-128 visible ASCII) or a UUID',
    schema: { type: 'string' },
  },
  RateLimitLimit: integerHeader('Requests allowed in the quota window'),
  RateLimitRemaining: integerHeader('Requests left in the quota window'),
  RateLimitReset: integerHeader('Seconds until the quota window resets'),
  RetryAfter: integerHeader('Seconds to wait before retrying'),
  IdempotentReplayed: {
    description: '`true` when this is the stored answer to an earlier request with the key',
    schema: { type: 'string', enum: ['true'] },
  },
};

const API_KEY_KINDS =
  '`<prefix>_<live|staging>_<64 hex>`, of the environment it is sent to. A **server-only** key ' +
  '(the default) is a secret for your servers: it may call `/api` and `/file`, but not from a ' +
  'browser. A **client-app** key (created with `serverOnly: false`) is publishable, like a ' +
  'Stripe publishable key: it may be shipped in a mobile app or a web page, and may call the ' +
  '`/file` endpoints only (from a browser or not); `/api` answers it 403.';

const TRACKING_ID_PARAM = {
  name: 'trackingId',
  in: 'path',
  required: true,
  schema: { type: 'string', pattern: '^[Pp]2[Pp]-[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{12}$' },
  description: 'The delivery’s `trackingId` (letters in either case)',
};

/**
 * The tracking page and its event stream: not envelopes, so written here rather than built
 * from schemas. The page is for people; integrators link to it
 * (`<PUBLIC_BASE_URL>/track/<trackingId>`) and may follow the stream. See docs/deliveries.md.
 */
function trackingPaths(definitions: ServiceDefinition[], mounted: MountedGroups) {
  const page = collectRoutes(definitions, mounted).find(
    (e) => e.http.group === 'track' && e.http.page,
  );
  if (!page) return {};
  const envelope = (description: string) => ({
    description,
    content: { 'application/json': { schema: ERROR_ENVELOPE_REF } },
  });
  return {
    [openApiPath(page.fullPath)]: {
      get: {
        operationId: 'trackingPage',
        tags: ['track'],
        summary: page.http.summary,
        description:
          'An HTML page for the recipient: status, steps with times, the courier’s first name and vehicle, their position on a map drawing, the expected arrival; it updates itself from `/track/{trackingId}/events`. It shows first names and place names only: no phone, e-mail, last name or street address. Its CSP loads nothing from elsewhere.',
        parameters: [TRACKING_ID_PARAM],
        responses: {
          200: {
            description: 'The page',
            content: { 'text/html': { schema: { type: 'string' } } },
          },
          404: {
            description: 'No delivery has this tracking id (an HTML page saying what to do)',
            content: { 'text/html': { schema: { type: 'string' } } },
          },
          429: {
            description: `${PAGE_REQUESTS_429} (an HTML page saying when to come back)`,
            content: { 'text/html': { schema: { type: 'string' } } },
          },
        },
      },
    },
    [`${openApiPath(page.fullPath)}/events`]: {
      get: {
        operationId: 'trackingEvents',
        tags: ['track'],
        summary: 'The tracking page’s live updates (server-sent events)',
        description:
          'A `text/event-stream`: at once, and whenever something shown changes, `event: state` whose `data` is JSON `{view, regions}` (`view`: the redacted state; `regions`: the page’s markup by region). A comment line `: heartbeat` every TRACKING_HEARTBEAT_MS. Once the delivery is over, `event: end` with `{status}`, and the stream closes: do not reconnect. A courier’s position is refreshed every TRACKING_REFRESH_MS while under way.',
        parameters: [TRACKING_ID_PARAM],
        responses: {
          200: {
            description: 'The stream',
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          },
          404: envelope('No delivery has this tracking id'),
          429: envelope(
            'Too many streams open from your address (TRACKING_MAX_STREAMS_PER_ADDRESS), or too many requests of the pages from it (`PAGE_REQUEST_LIMIT`); see `Retry-After`',
          ),
          503: envelope('Too many streams open on the server; retry after `Retry-After`'),
        },
      },
    },
  };
}

const COURIER_TOKEN_DOC =
  'A courier token, for `/courier`: `wbc_` and 43 base64url characters, created for one ' +
  'courier by an operator (`POST /admin/couriers/{courierId}/tokens`, shown once). Every call ' +
  'acts as that courier; the token stops working when revoked or when the courier is retired.';

/**
 * The OpenAPI 3.1 document of every routed action in the mounted groups, from the same joi
 * schemas that validate. HTML pages (the sandbox checkout) are for people, not integrators,
 * and are left out (docs/payments.md describes them), except the tracking page that
 * integrators link to (`trackingPaths`).
 */
export function buildOpenApi(
  definitions: ServiceDefinition[],
  version: string,
  mounted: MountedGroups = ALL_GROUPS,
  /** The environment served: an option header offered only elsewhere is left out. */
  environment?: AppEnvironment,
) {
  const components = new ComponentSchemas();
  Object.entries(ENVELOPE_SCHEMAS).forEach(([name, schema]) => components.add(name, schema));
  const paths: Record<string, Record<string, unknown>> = {};
  const built: { entry: RouteEntry; op: Operation }[] = [];
  for (const entry of collectRoutes(definitions, mounted).filter((e) => !e.http.page)) {
    const op = operation(entry, findParams(definitions, entry.actionName), components, environment);
    const path = openApiPath(entry.fullPath);
    paths[path] ??= {};
    paths[path][entry.http.method.toLowerCase()] = op;
    built.push({ entry, op });
  }
  links(built, components);
  Object.assign(paths, trackingPaths(definitions, mounted));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Waybill API',
      version,
      description:
        'Courier-delivery API. Successes are `{success, message, data}`; every error is the error envelope.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    tags: [
      {
        name: 'api',
        description: 'Places, routes, pricing, deliveries and packages (server-only `api-key`)',
      },
      {
        name: 'file',
        description:
          'Uploads and downloads (`api-key` of either kind; from a browser, a client-app key)',
      },
      {
        name: 'admin',
        description:
          'Operators only (`Authorization: Bearer <ADMIN_TOKEN>`, or an operator token made with it)',
      },
      {
        name: 'courier',
        description:
          'The courier app (`Authorization: Bearer <courier token>`, issued per courier by an operator)',
      },
      {
        name: 'track',
        description:
          'The public tracking page for the recipient, and its live updates (no credentials: the tracking id is the capability)',
      },
      {
        name: 'webhooks',
        description: 'Notifications from the payment provider (signed bodies, no API key)',
      },
    ],
    paths,
    components: {
      headers: COMPONENT_HEADERS,
      securitySchemes: {
        ApiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'api-key',
          description: API_KEY_KINDS,
        },
        AdminToken: {
          type: 'http',
          scheme: 'bearer',
          description:
            'For `/admin`: the platform’s `ADMIN_TOKEN`, or an operator’s own token (`wbo_...`, `POST /admin/operator-tokens`), under whose name the call is logged and recorded',
        },
        CourierToken: {
          type: 'http',
          scheme: 'bearer',
          description: COURIER_TOKEN_DOC,
        },
      },
      schemas: components.schemas,
    },
  };
}
