import type Joi from 'joi';
import joiToJson from 'joi-to-json';
import type { ServiceDefinition } from '../../libs/service';
import { IDEMPOTENCY_KEY_DOC, REPLAYED_HEADER } from './idempotency';
import { collectRoutes, type RouteEntry } from './routes';

type JsonSchema = Record<string, unknown> & {
  properties?: Record<string, JsonSchema>;
  required?: string[];
};

const toSchema = (schema: Joi.Schema): JsonSchema =>
  joiToJson(schema, 'open-api-3.1') as JsonSchema;

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid input; `errors` lists each field',
  401: 'Missing, malformed, unknown, revoked or other-environment credentials',
  403: 'Not allowed for this key or token',
  404: 'Not found',
  413: 'Body too large',
  429: 'API quota exceeded; see `Retry-After`',
  500: 'Unexpected failure, logged on our side',
  503: 'A service or dependency is temporarily unavailable; retry',
  504: 'A service did not answer in time; retry',
};

const errorRef = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } },
});

const openApiPath = (fullPath: string) => fullPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
const pathParams = (fullPath: string) =>
  [...fullPath.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]);

function operation(entry: RouteEntry, definitions: ServiceDefinition[]) {
  const [serviceName, actionName] = entry.actionName.split('.');
  const action = definitions.find((d) => d.name === serviceName)?.actions?.[actionName];
  const { http } = entry;
  const params = action?.params ? toSchema(action.params) : { properties: {} };
  const properties = params.properties ?? {};
  const required = new Set(params.required ?? []);
  const inPath = pathParams(entry.fullPath);
  const hasBody = http.method !== 'GET' && http.method !== 'DELETE';

  const parameters: unknown[] = inPath.map((name) => ({
    name,
    in: 'path',
    required: true,
    schema: properties[name] ?? { type: 'string' },
  }));
  const idempotent = http.group === 'api' && http.method === 'POST' && http.body !== 'stream';
  if (idempotent) parameters.push(IDEMPOTENCY_KEY_DOC.parameter);
  const bodyProperties: Record<string, JsonSchema> = {};
  for (const [name, schema] of Object.entries(properties)) {
    if (inPath.includes(name)) continue;
    if (hasBody) bodyProperties[name] = schema;
    else parameters.push({ name, in: 'query', required: required.has(name), schema });
  }

  const status = http.status ?? 200;
  const responses: Record<string, unknown> = {};
  if (status === 204) {
    responses['204'] = { description: http.message };
  } else if (http.binary) {
    responses[String(status)] = {
      description: http.message,
      headers: {
        'Content-Disposition': {
          description: 'attachment, with the file name',
          schema: { type: 'string' },
        },
      },
      content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
    };
  } else {
    responses[String(status)] = {
      description: http.message,
      content: {
        'application/json': {
          schema: {
            allOf: [
              { $ref: '#/components/schemas/SuccessEnvelope' },
              {
                type: 'object',
                properties: { data: http.response ? toSchema(http.response) : {} },
              },
            ],
          },
        },
      },
    };
  }
  const errorStatuses = new Set([
    400,
    500,
    503,
    504,
    ...Object.keys(http.errors ?? {}).map(Number),
  ]);
  if (http.group === 'admin') [401, 403].forEach((s) => errorStatuses.add(s));
  else [401, 429].forEach((s) => errorStatuses.add(s));
  if (inPath.length > 0) errorStatuses.add(404);
  if (hasBody) errorStatuses.add(413);
  const descriptions = { ...ERROR_DESCRIPTIONS, ...(idempotent ? IDEMPOTENCY_KEY_DOC.errors : {}) };
  if (idempotent) Object.keys(IDEMPOTENCY_KEY_DOC.errors).forEach((s) => errorStatuses.add(+s));
  for (const s of [...errorStatuses].sort()) {
    responses[String(s)] = errorRef(http.errors?.[s] ?? descriptions[s] ?? 'Error');
  }

  for (const [code, response] of Object.entries(responses)) {
    (response as { headers?: Record<string, unknown> }).headers = {
      ...(response as { headers?: Record<string, unknown> }).headers,
      ...responseHeaders(Number(code), http.group !== 'admin', idempotent),
    };
  }

  const op: Record<string, unknown> = {
    operationId: entry.actionName,
    summary: http.summary,
    tags: [http.group],
    security: http.group === 'admin' ? [{ AdminToken: [] }] : [{ ApiKey: [] }],
    parameters,
    responses,
  };
  if (http.description) op.description = http.description;
  if (hasBody && http.body === 'stream') {
    op.requestBody = {
      required: true,
      content: { 'multipart/form-data': { schema: { type: 'object' } } },
    };
  } else if (hasBody) {
    op.requestBody = {
      required: [...required].some((r) => !inPath.includes(r)),
      content: {
        'application/json': {
          schema: {
            type: 'object',
            properties: bodyProperties,
            required: [...required].filter((r) => !inPath.includes(r)),
            additionalProperties: false,
          },
        },
      },
    };
  }
  return op;
}

const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });

/** Which documented headers an answer carries (components.headers). */
function responseHeaders(status: number, quota: boolean, idempotent: boolean) {
  const headers: Record<string, unknown> = { 'X-Request-ID': headerRef('RequestId') };
  if (quota && status < 400) {
    for (const name of ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']) {
      headers[name] = headerRef(name.replace(/-/g, ''));
    }
  }
  if (status === 429) headers['Retry-After'] = headerRef('RetryAfter');
  if (idempotent && status < 300) headers[REPLAYED_HEADER] = headerRef('IdempotentReplayed');
  return headers;
}

const integerHeader = (description: string) => ({ description, schema: { type: 'integer' } });

/** The OpenAPI 3.1 document of every routed action, from the same joi schemas that validate. */
export function buildOpenApi(definitions: ServiceDefinition[], version: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const entry of collectRoutes(definitions)) {
    const path = openApiPath(entry.fullPath);
    paths[path] ??= {};
    paths[path][entry.http.method.toLowerCase()] = operation(entry, definitions);
  }
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
      { name: 'api', description: 'Places, routes, pricing, deliveries and packages (`api-key`)' },
      { name: 'file', description: 'Uploads and downloads (`api-key`)' },
      { name: 'admin', description: 'Operators only (`Authorization: Bearer <ADMIN_TOKEN>`)' },
    ],
    paths,
    components: {
      headers: {
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
      },
      securitySchemes: {
        ApiKey: { type: 'apiKey', in: 'header', name: 'api-key' },
        AdminToken: { type: 'http', scheme: 'bearer' },
      },
      schemas: {
        SuccessEnvelope: {
          type: 'object',
          required: ['success', 'message', 'data'],
          properties: {
            success: { type: 'boolean', const: true },
            message: { type: 'string' },
            data: {},
          },
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
            environment: { type: 'string', enum: ['staging', 'live'] },
            errors: {
              type: 'array',
              items: {
                type: 'object',
                required: ['field', 'message'],
                properties: { field: { type: 'string' }, message: { type: 'string' } },
              },
            },
          },
        },
      },
    },
  };
}
