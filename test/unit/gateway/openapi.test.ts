import Joi from '../../../libs/joi';
import { loadConfig } from '../../../libs/config';
import { errorEnvelope, successEnvelope } from '../../../libs/envelope';
import { PACKAGES_ONCE, packageIds } from '../../../libs/contracts/package';
import { EMAIL_PATTERN } from '../../../libs/schemas';
import { validate } from '../../../libs/validation';
import type { HttpRoute, ServiceDefinition } from '../../../libs/service';
import { createAccountService } from '../../../services/account/account.service';
import { backendDefinitions } from '../../../services/catalog';
import { ComponentSchemas } from '../../../services/gateway/json-schema';
import {
  acceptsEmpty,
  buildOpenApi,
  errorDescription,
  errorStatuses,
  links,
  placeParams,
  QUERY_OBJECT_PARAM,
  type Parameter,
} from '../../../services/gateway/openapi';
import { collectRoutes } from '../../../services/gateway/routes';

type Json = Record<string, unknown>;
interface Operation {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  security: Record<string, string[]>[];
  parameters: Parameter[];
  responses: Record<
    string,
    {
      description: string;
      headers?: Record<string, { $ref?: string }>;
      content?: Record<string, { schema: Json }>;
    }
  >;
  requestBody?: {
    required: boolean;
    content: Record<string, { schema: Json & { properties?: Json; required?: string[] } }>;
  };
}

const ERROR_REF = { $ref: '#/components/schemas/ErrorEnvelope' };
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

const account = createAccountService(loadConfig({}));
const doc = buildOpenApi([account], '1.2.3');

function op(path: string, method: string): Operation {
  const operation = (doc.paths[path] as Record<string, Operation> | undefined)?.[method];
  if (!operation) throw new Error(`no ${method.toUpperCase()} ${path} in the document`);
  return operation;
}

function allOperations(document: { paths: Record<string, Record<string, unknown>> }) {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item as Record<string, Operation>).map(([method, operation]) => ({
      path,
      method,
      operation,
    })),
  );
}

const param = (operation: Operation, name: string) =>
  operation.parameters.find((p) => p.name === name);

describe('buildOpenApi document', () => {
  it('is an OpenAPI 3.1.0 document with the given version', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('1.2.3');
    expect(doc.info.title).toBe('Waybill API');
  });

  it('is plain JSON (no joi objects or functions)', () => {
    expect(JSON.parse(JSON.stringify(doc))).toEqual(doc);
  });

  it('has the admin paths of the account service, in OpenAPI path syntax', () => {
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/admin/users',
        '/admin/users/{userId}',
        '/admin/users/{userId}/api-keys',
        '/admin/api-keys/{keyId}',
      ]),
    );
    for (const path of Object.keys(doc.paths)) expect(path).not.toContain(':');
  });

  it('documents every routed action once, by its action name', () => {
    const routed = collectRoutes([account]);
    const operations = allOperations(doc);
    expect(operations).toHaveLength(routed.length);
    expect(operations.map((o) => o.operation.operationId).sort()).toEqual(
      routed.map((r) => r.actionName).sort(),
    );
    for (const { method } of operations) expect(METHODS).toContain(method);
  });

  it('declares the three security schemes, and what each kind of API key may call', () => {
    expect(doc.components.securitySchemes).toEqual({
      ApiKey: { type: 'apiKey', in: 'header', name: 'api-key', description: expect.any(String) },
      AdminToken: { type: 'http', scheme: 'bearer', description: expect.any(String) },
      CourierToken: { type: 'http', scheme: 'bearer', description: expect.any(String) },
    });
    expect(doc.components.securitySchemes.CourierToken.description).toMatch(
      /`wbc_`.*POST \/admin\/couriers\/\{courierId\}\/tokens/s,
    );
    const { description } = doc.components.securitySchemes.ApiKey;
    expect(description).toMatch(/server-only.*`\/api` and `\/file`/s);
    expect(description).toMatch(/client-app.*serverOnly: false.*`\/file` endpoints only/s);
  });

  it('describes the error envelope libs/envelope builds', () => {
    const schema = doc.components.schemas.ErrorEnvelope as { required: string[]; properties: Json };
    const bare = errorEnvelope({
      statusCode: 404,
      method: 'GET',
      path: '/p',
      url: '/p',
      message: 'm',
      environment: 'staging',
    });
    expect([...schema.required].sort()).toEqual(Object.keys(bare).sort());
    const full = errorEnvelope({ ...bare, errors: [{ field: 'f', message: 'm' }] });
    expect(Object.keys(schema.properties).sort()).toEqual(Object.keys(full).sort());
  });

  it('describes the success envelope libs/envelope builds', () => {
    const schema = doc.components.schemas.SuccessEnvelope as { required: string[] };
    expect([...schema.required].sort()).toEqual(Object.keys(successEnvelope('m', 1)).sort());
  });
});

describe('buildOpenApi operations of the account service', () => {
  it('declares every path parameter in: path, required', () => {
    for (const { path, operation } of allOperations(doc)) {
      const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      const inPath = operation.parameters.filter((p) => p.in === 'path');
      expect(inPath.map((p) => p.name)).toEqual(names);
      for (const p of inPath) expect(p.required).toBe(true);
    }
  });

  it('takes path parameter schemas from joi', () => {
    expect(param(op('/admin/users/{userId}', 'get'), 'userId')).toEqual({
      name: 'userId',
      in: 'path',
      required: true,
      schema: expect.objectContaining({ type: 'string', format: 'uuid' }),
    });
    expect(param(op('/admin/api-keys/{keyId}', 'delete'), 'keyId')).toMatchObject({
      in: 'path',
      required: true,
    });
  });

  it('turns the joi params of GET /admin/users into optional query parameters', () => {
    const list = op('/admin/users', 'get');
    expect(param(list, 'email')).toEqual({
      name: 'email',
      in: 'query',
      required: false,
      schema: expect.objectContaining({ type: 'string', pattern: EMAIL_PATTERN.source }),
    });
    expect(param(list, 'limit')).toEqual({
      name: 'limit',
      in: 'query',
      required: false,
      schema: expect.objectContaining({ type: 'integer', default: 50, minimum: 1, maximum: 100 }),
    });
    expect(list.requestBody).toBeUndefined();
  });

  it('gives POST /admin/users a JSON body requiring name, email and phone', () => {
    const create = op('/admin/users', 'post');
    expect(create.parameters).toEqual([]);
    expect(create.requestBody?.required).toBe(true);
    const schema = create.requestBody?.content['application/json'].schema;
    expect(schema).toMatchObject({ type: 'object', additionalProperties: false });
    expect([...(schema?.required ?? [])].sort()).toEqual(['email', 'name', 'phone']);
    expect(Object.keys(schema?.properties ?? {}).sort()).toEqual(['email', 'name', 'phone']);
    expect(Object.keys(create.requestBody?.content ?? {})).toEqual(['application/json']);
  });

  it('keeps path parameters out of the body of POST /admin/users/{userId}/api-keys', () => {
    const create = op('/admin/users/{userId}/api-keys', 'post');
    expect(create.parameters.map((p) => [p.name, p.in])).toEqual([['userId', 'path']]);
    const schema = create.requestBody?.content['application/json'].schema;
    expect(Object.keys(schema?.properties ?? {}).sort()).toEqual([
      'environment',
      'quota',
      'serverOnly',
    ]);
    expect(schema?.required).toEqual([]);
    expect(create.requestBody?.required).toBe(false);
    expect(create.description).toMatch(/SHA-256/);
  });

  it('documents 204 without content for DELETE /admin/api-keys/{keyId}', () => {
    const revoke = op('/admin/api-keys/{keyId}', 'delete');
    expect(revoke.responses['204']).toEqual({
      description: 'API key revoked',
      headers: { 'X-Request-ID': { $ref: '#/components/headers/RequestId' } },
    });
    expect(revoke.responses['200']).toBeUndefined();
    expect(revoke.requestBody).toBeUndefined();
    expect(revoke.responses['404'].content?.['application/json'].schema).toEqual(ERROR_REF);
  });

  it('wraps success data in the success envelope with the declared status', () => {
    const created = op('/admin/users', 'post').responses['201'];
    expect(created.description).toBe('User created');
    const schema = created.content?.['application/json'].schema as { allOf: Json[] };
    expect(schema.allOf[0]).toEqual({ $ref: '#/components/schemas/SuccessEnvelope' });
    expect(schema.allOf[1]).toEqual({
      type: 'object',
      properties: { data: { $ref: '#/components/schemas/User' } },
    });
    expect(op('/admin/users', 'get').responses['200']).toBeDefined();
  });

  it('references the error envelope from every error response', () => {
    for (const { operation } of allOperations(doc)) {
      const errorStatuses = Object.keys(operation.responses).filter((s) => Number(s) >= 400);
      expect(errorStatuses).toEqual(expect.arrayContaining(['400', '401', '500', '503', '504']));
      for (const status of errorStatuses) {
        const response = operation.responses[status];
        expect(response.description).toEqual(expect.any(String));
        expect(response.content).toEqual({ 'application/json': { schema: ERROR_REF } });
      }
    }
  });

  it('documents the extra errors an action declares', () => {
    expect(op('/admin/users', 'post').responses['409'].description).toBe(
      'A user with this e-mail already exists',
    );
  });

  it('documents 404 only where the path has parameters, 413 and 415 wherever a JSON body is read', () => {
    expect(op('/admin/users', 'get').responses['404']).toBeUndefined();
    expect(op('/admin/users/{userId}', 'get').responses['404']).toBeDefined();
    expect(op('/admin/users', 'post').responses['413']).toBeDefined();
    // body-parser refuses a JSON body's encoding or charset (libs/errors) with 415.
    expect(op('/admin/users', 'post').responses['415'].description).toMatch(
      /Content-Encoding.*UTF/,
    );
    // A GET's body is read too (its fields are its query): too large, or oddly encoded, refused.
    expect(op('/admin/users', 'get').responses['413']).toBeDefined();
    expect(op('/admin/users', 'get').responses['415']).toBeDefined();
  });

  it('secures admin routes with the admin token, with 401, 403 and the 429 of too many failed checks', () => {
    const admin = allOperations(doc).filter(({ path }) => path.startsWith('/admin/'));
    expect(admin.length).toBeGreaterThanOrEqual(6);
    for (const { operation } of admin) {
      expect(operation.security).toEqual([{ AdminToken: [] }]);
      expect(operation.tags).toEqual(['admin']);
      expect(operation.responses['401']).toBeDefined();
      expect(operation.responses['403']).toBeDefined();
      expect(operation.responses['429'].description).toMatch(/failed admin-token checks/);
      expect(operation.responses['429'].headers?.['Retry-After']).toBeDefined();
    }
  });

  it('secures every non-admin route with an API key', () => {
    for (const { path, operation } of allOperations(doc)) {
      if (path.startsWith('/admin/')) continue;
      expect(operation.security).toEqual([{ ApiKey: [] }]);
      expect(operation.responses['429']).toBeDefined();
    }
  });
});

describe('buildOpenApi of courier routes', () => {
  const courierApp: ServiceDefinition = {
    name: 'courier-app',
    actions: {
      report: {
        retry: 'safe',
        params: Joi.object({ lat: Joi.number().required() }),
        http: { group: 'courier', method: 'POST', path: '/location', message: 'OK', summary: 'S' },
        handler: () => null,
      },
    },
  };
  const courierDoc = buildOpenApi([courierApp], '1');

  it('secures them with the courier token, its own bearer scheme, and the courier’s quota', () => {
    const operation = (courierDoc.paths['/courier/location'] as Record<string, Operation>).post;
    expect(operation.security).toEqual([{ CourierToken: [] }]);
    expect(operation.tags).toEqual(['courier']);
    expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['401', '403', '429']));
    expect(operation.responses['401'].description).toMatch(/courier token/);
    // Counted per courier (COURIER_QUOTA_LIMIT): its answers say how much is left.
    expect(operation.responses['200'].headers?.['RateLimit-Limit']).toEqual({
      $ref: '#/components/headers/RateLimitLimit',
    });
    expect(operation.responses['429'].description).toMatch(/COURIER_QUOTA_LIMIT/);
  });
});

describe('buildOpenApi of api and file routes', () => {
  const things: ServiceDefinition = {
    name: 'things',
    actions: {
      list: {
        retry: 'safe',
        http: {
          group: 'api',
          method: 'GET',
          path: '/things',
          message: 'Things listed',
          summary: 'List things',
        },
        params: Joi.object({ q: Joi.string().required(), page: Joi.number().integer() }),
        handler: () => [],
      },
      get: {
        retry: 'safe',
        http: {
          group: 'api',
          method: 'GET',
          path: '/things/:thingId',
          message: 'Thing retrieved',
          summary: 'Get a thing',
          description: 'One thing by id.',
        },
        handler: () => ({}),
      },
      update: {
        retry: 'never',
        http: {
          group: 'api',
          method: 'PATCH',
          path: '/things/:thingId',
          status: 202,
          message: 'Update accepted',
          summary: 'Update a thing',
          errors: { 409: 'Thing is locked', 422: 'Thing cannot change now' },
        },
        params: Joi.object({ thingId: Joi.string().required(), name: Joi.string().required() }),
        handler: () => ({}),
      },
      create: {
        retry: 'never',
        http: {
          group: 'api',
          method: 'POST',
          path: '/things',
          status: 201,
          message: 'Thing created',
          summary: 'Create a thing',
        },
        params: Joi.object({ name: Joi.string().required() }),
        handler: () => ({}),
      },
      upload: {
        retry: 'never',
        http: {
          group: 'file',
          method: 'POST',
          path: '/things',
          body: 'stream',
          message: 'Uploaded',
          summary: 'Upload a thing',
        },
        handler: () => ({}),
      },
      fetch: {
        retry: 'safe',
        http: {
          group: 'file',
          method: 'POST',
          path: '/things/fetch',
          binary: true,
          message: 'Thing',
          summary: 'Download a thing',
        },
        params: Joi.object({ url: Joi.string().required() }),
        handler: () => Buffer.alloc(0),
      },
      internal: { retry: 'safe', handler: () => null },
    },
  };
  const apiDoc = buildOpenApi([things], '0.0.1');
  const apiOp = (path: string, method: string) =>
    (apiDoc.paths[path] as Record<string, Operation>)[method];

  it('secures api and file routes with the API key and documents 403 and 429', () => {
    for (const { path, operation } of allOperations(apiDoc)) {
      expect(operation.security).toEqual([{ ApiKey: [] }]);
      expect(operation.responses['429']).toEqual({
        description: expect.stringContaining('Retry-After'),
        headers: {
          'X-Request-ID': { $ref: '#/components/headers/RequestId' },
          'Retry-After': { $ref: '#/components/headers/RetryAfter' },
        },
        content: { 'application/json': { schema: ERROR_REF } },
      });
      expect(operation.responses['429'].description).toMatch(/failed authentications/);
      expect(operation.responses['401']).toBeDefined();
      expect(operation.responses['403'].description).toMatch(
        path.startsWith('/file/')
          ? /server-only key sent from a browser/
          : /client-app.*\/file only/,
      );
    }
  });

  it('documents the headers of each answer, every one of them defined once', () => {
    const names = (response: Operation['responses'][string]) =>
      Object.keys(response.headers ?? {}).sort();
    const create = apiOp('/api/things', 'post');
    expect(names(create.responses['201'])).toEqual(
      [
        'Idempotent-Replayed',
        'RateLimit-Limit',
        'RateLimit-Remaining',
        'RateLimit-Reset',
        'X-Request-ID',
      ].sort(),
    );
    expect(names(create.responses['400'])).toEqual(['X-Request-ID']);
    expect(names(apiOp('/api/things', 'get').responses['200'])).not.toContain(
      'Idempotent-Replayed',
    );
    expect(names(op('/admin/users', 'post').responses['201'])).toEqual(['X-Request-ID']);
    const defined = Object.keys(apiDoc.components.headers);
    for (const { operation } of allOperations(apiDoc)) {
      for (const response of Object.values(operation.responses)) {
        for (const header of Object.values(response.headers ?? {})) {
          if (header.$ref) expect(defined).toContain(header.$ref.split('/').at(-1));
        }
      }
    }
  });

  it('offers Idempotency-Key, with its 409 and 422, on JSON POSTs of /api only', () => {
    const create = apiOp('/api/things', 'post');
    expect(create.parameters).toContainEqual(
      expect.objectContaining({ name: 'Idempotency-Key', in: 'header', required: false }),
    );
    expect(create.responses['409'].description).toMatch(
      /still in progress or its outcome is unknown; retry after the seconds in `Retry-After`/,
    );
    expect(create.responses['409'].headers).toHaveProperty('Retry-After');
    expect(create.responses['422'].description).toMatch(/different request/);
    const others = [
      apiOp('/api/things', 'get'),
      apiOp('/api/things/{thingId}', 'patch'),
      apiOp('/file/things', 'post'),
    ];
    for (const operation of others) {
      expect(operation.parameters.map((p) => p.name)).not.toContain('Idempotency-Key');
    }
    expect(apiOp('/api/things/{thingId}', 'patch').responses['409'].description).toBe(
      'Thing is locked',
    );
    for (const { operation } of allOperations(doc)) {
      expect(operation.parameters.map((p) => p.name)).not.toContain('Idempotency-Key');
    }
  });

  it('tags operations by group and leaves actions without http out', () => {
    expect(Object.keys(apiDoc.paths).sort()).toEqual([
      '/api/things',
      '/api/things/{thingId}',
      '/file/things',
      '/file/things/fetch',
    ]);
    expect(apiOp('/api/things', 'get').tags).toEqual(['api']);
    expect(apiOp('/file/things', 'post').tags).toEqual(['file']);
    expect(allOperations(apiDoc).map((o) => o.operation.operationId)).not.toContain(
      'things.internal',
    );
  });

  it('marks required GET params as required query parameters', () => {
    const list = apiOp('/api/things', 'get');
    expect(list.parameters.map((p) => [p.name, p.in, p.required])).toEqual([
      ['q', 'query', true],
      ['page', 'query', false],
    ]);
  });

  it('declares a path parameter of an action without params as a string', () => {
    const get = apiOp('/api/things/{thingId}', 'get');
    expect(get.parameters).toEqual([
      { name: 'thingId', in: 'path', required: true, schema: { type: 'string' } },
    ]);
    expect(get.description).toBe('One thing by id.');
    expect(apiOp('/api/things', 'get').description).toBeUndefined();
  });

  it('keeps several methods of one path', () => {
    expect(Object.keys(apiDoc.paths['/api/things/{thingId}']).sort()).toEqual(['get', 'patch']);
  });

  it('uses the declared success status and documents declared errors', () => {
    const update = apiOp('/api/things/{thingId}', 'patch');
    expect(update.responses['202']).toBeDefined();
    expect(update.responses['200']).toBeUndefined();
    expect(update.responses['409'].description).toBe('Thing is locked');
    expect(update.responses['422'].description).toBe('Thing cannot change now');
    expect(update.requestBody).toMatchObject({
      required: true,
      content: { 'application/json': { schema: { required: ['name'] } } },
    });
  });

  it('describes a stream upload as a multipart body', () => {
    expect(apiOp('/file/things', 'post').requestBody).toEqual({
      required: true,
      content: { 'multipart/form-data': { schema: { type: 'object' } } },
    });
    expect(apiOp('/file/things', 'post').responses['413']).toBeDefined();
  });

  it('says when to retry after every 503: a refused upload, a service away', () => {
    const retryAfter = { $ref: '#/components/headers/RetryAfter' };
    for (const operation of [
      apiOp('/file/things', 'post'),
      apiOp('/file/things/fetch', 'post'),
      apiOp('/api/things', 'post'),
    ]) {
      expect(operation.responses['503'].headers).toMatchObject({ 'Retry-After': retryAfter });
    }
  });

  it('describes a binary answer as octet-stream with its Content-Disposition, not an envelope', () => {
    const fetch = apiOp('/file/things/fetch', 'post');
    expect(fetch.responses['200']).toEqual({
      description: 'Thing',
      headers: expect.objectContaining({
        'Content-Disposition': expect.objectContaining({ schema: { type: 'string' } }),
      }),
      content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
    });
    expect(fetch.requestBody?.content['application/json'].schema.required).toEqual(['url']);
  });

  it('throws on two actions claiming one route', () => {
    expect(() => buildOpenApi([things, { ...things, name: 'copy' }], '1')).toThrow(
      /claimed by both things\.list and copy\.list/,
    );
  });
});

describe('the parts of an operation', () => {
  const route = (over: Partial<HttpRoute> = {}): HttpRoute => ({
    group: 'api',
    method: 'POST',
    path: '/things/:thingId',
    message: 'Done',
    summary: 'Do',
    ...over,
  });

  it('placeParams: path, query and body from one params object', () => {
    const params = {
      type: 'object',
      properties: { thingId: { type: 'string' }, a: { type: 'string' }, b: { type: 'number' } },
      required: ['thingId', 'a'],
      additionalProperties: false,
      anyOf: [{ required: ['a'] }],
    };
    const post = placeParams(params, '/api/things/:thingId', 'POST');
    expect(post.path).toEqual([
      { name: 'thingId', in: 'path', required: true, schema: { type: 'string' } },
    ]);
    expect(post.query).toEqual([]);
    expect(post.body).toEqual({
      type: 'object',
      properties: { a: { type: 'string' }, b: { type: 'number' } },
      required: ['a'],
      additionalProperties: false,
      anyOf: [{ required: ['a'] }],
    });
    const fieldByField: Json = { ...params };
    delete fieldByField.anyOf;
    const get = placeParams(fieldByField, '/api/things/:thingId', 'GET');
    expect(get.query.map((p) => [p.name, p.required])).toEqual([
      ['a', true],
      ['b', false],
    ]);
    expect(get.body).toBeUndefined();
  });

  it('placeParams: a query whose fields depend on each other is one exploded object, its rule kept', () => {
    const params = {
      type: 'object',
      properties: { thingId: { type: 'string' }, a: { type: 'string' }, b: { type: 'string' } },
      required: ['thingId'],
      additionalProperties: false,
      dependentRequired: { a: ['b'] },
    };
    const get = placeParams(params, '/api/things/:thingId', 'GET');
    expect(get.path.map((p) => p.name)).toEqual(['thingId']);
    expect(get.query).toEqual([
      {
        name: QUERY_OBJECT_PARAM,
        in: 'query',
        required: false,
        style: 'form',
        explode: true,
        schema: {
          type: 'object',
          properties: { a: { type: 'string' }, b: { type: 'string' } },
          required: [],
          additionalProperties: false,
          dependentRequired: { a: ['b'] },
        },
      },
    ]);
    expect(
      placeParams({ ...params, required: ['thingId', 'b'] }, '/x/:thingId', 'DELETE').query,
    ).toMatchObject([{ required: true, schema: { required: ['b'] } }]);
  });

  it('placeParams: a body of two shapes is taken whole, and only as a body', () => {
    const params = {
      oneOf: [{ $ref: '#/components/schemas/A' }, { $ref: '#/components/schemas/B' }],
    };
    expect(placeParams(params, '/api/things', 'POST').body).toBe(params);
    expect(() => placeParams(params, '/api/things/:thingId', 'POST')).toThrow(/one joi object/);
    expect(() => placeParams(params, '/api/things', 'GET')).toThrow(/one joi object/);
  });

  it('acceptsEmpty: a body is required unless {} would do', () => {
    const body = (extra: Json) => ({ type: 'object', properties: { a: {} }, ...extra });
    expect(acceptsEmpty(body({}))).toBe(true);
    expect(acceptsEmpty(body({ required: ['a'] }))).toBe(false);
    expect(acceptsEmpty(body({ anyOf: [{ required: ['a'] }] }))).toBe(false);
    expect(acceptsEmpty({ oneOf: [] })).toBe(false);
  });

  it('errorStatuses: the common ones, the group, path, body and idempotency statuses', () => {
    expect(errorStatuses(route(), '/api/things/:thingId')).toEqual([
      400, 401, 403, 404, 409, 413, 415, 422, 429, 500, 503, 504,
    ]);
    // 415 is body-parser's, of JSON bodies only: not of uploads nor of raw (signed) bodies.
    expect(errorStatuses(route({ group: 'file', body: 'stream' }), '/file/things')).not.toContain(
      415,
    );
    expect(errorStatuses(route({ group: 'webhooks', body: 'raw' }), '/webhooks/x')).not.toContain(
      415,
    );
    expect(errorStatuses(route({ group: 'admin', method: 'GET' }), '/admin/things')).toEqual([
      400, 401, 403, 413, 415, 429, 500, 503, 504,
    ]);
    expect(
      errorStatuses(route({ method: 'GET', errors: { 404: 'No tariff' } }), '/api/things'),
    ).toEqual([400, 401, 403, 404, 413, 415, 429, 500, 503, 504]);
    // The pages read no body.
    expect(errorStatuses(route({ group: 'track', method: 'GET' }), '/track/x')).not.toContain(413);
  });

  it('errorDescription: the route’s own words first', () => {
    expect(errorDescription(route({ errors: { 409: 'Locked' } }), 409)).toBe('Locked');
    expect(errorDescription(route(), 409)).toMatch(/Idempotency-Key/);
    expect(errorDescription(route(), 404)).toBe('Not found');
  });
});

describe('links for stateful clients', () => {
  const entry = (actionName: string, http: Partial<HttpRoute>, fullPath: string) => ({
    actionName,
    fullPath,
    retry: 'never' as const,
    http: {
      group: 'api',
      method: 'GET',
      message: 'm',
      summary: 's',
      path: '',
      ...http,
    } as HttpRoute,
  });
  const op = (requestBody?: Json) =>
    ({
      responses: { '201': {}, '200': {}, '204': {} },
      ...(requestBody ? { requestBody } : {}),
    }) as never;

  it('lead from a creation to the routes that take its id, in the path or in the body', () => {
    const components = new ComponentSchemas();
    components.add('Change', { type: 'object', properties: { thingId: {}, name: {} } });
    const create = {
      entry: entry('t.create', { method: 'POST', status: 201, creates: 'thingId' }, '/api/things'),
      op: op(),
    };
    const built = [
      create,
      { entry: entry('t.get', {}, '/api/things/:thingId'), op: op() },
      {
        entry: entry('t.save', { method: 'POST' }, '/api/things'),
        op: op({
          content: {
            'application/json': { schema: { oneOf: [{ $ref: '#/components/schemas/Change' }] } },
          },
        }),
      },
      { entry: entry('t.list', {}, '/api/things'), op: op() },
    ];
    links(built, components);
    expect((create.op as { responses: Record<string, Json> }).responses['201'].links).toEqual({
      't.get': { operationId: 't.get', parameters: { thingId: '$response.body#/data/id' } },
      't.save': { operationId: 't.save', requestBody: { thingId: '$response.body#/data/id' } },
    });
  });

  it('take the id from the field that holds it, and into lists of such ids', () => {
    const components = new ComponentSchemas();
    const create = {
      entry: entry(
        't.create',
        {
          method: 'POST',
          status: 201,
          creates: 'thingId',
          createdIdField: 'thingId',
          listedAs: 'thingsId',
        },
        '/api/things',
      ),
      op: op(),
    };
    const built = [
      create,
      { entry: entry('t.get', {}, '/api/things/:thingId'), op: op() },
      {
        entry: entry('t.ship', { method: 'POST' }, '/api/shipments'),
        op: op({
          content: {
            'application/json': {
              schema: { type: 'object', properties: { thingsId: {}, to: {} } },
            },
          },
        }),
      },
    ];
    links(built, components);
    expect((create.op as { responses: Record<string, Json> }).responses['201'].links).toEqual({
      't.get': { operationId: 't.get', parameters: { thingId: '$response.body#/data/thingId' } },
      't.ship': {
        operationId: 't.ship',
        requestBody: { thingsId: ['$response.body#/data/thingId'] },
      },
    });
  });
});

describe('the whole document', () => {
  const full = buildOpenApi(backendDefinitions(loadConfig({})), '1.0.0');
  const text = JSON.stringify(full);
  const schemas = full.components.schemas;

  it('says in words that a selection names each package once, whatever the case of its id', () => {
    const id = '0d4f3f7a-8a0e-4b51-9a43-6c6f3b0a1e21';
    // JSON Schema's uniqueItems compares texts: an id in two cases passes it; joi refuses it.
    expect(validate(packageIds(), [id]).length).toBe(1);
    expect(() => validate(packageIds(), [id, id.toUpperCase()])).toThrow(/duplicate value/);
    for (const path of ['/api/pricing', '/api/request']) {
      const body = (full.paths[path] as Record<string, Operation>).post.requestBody?.content[
        'application/json'
      ].schema as { properties: Record<string, Json> };
      expect(body.properties.packagesId).toMatchObject({ uniqueItems: true });
      expect(body.properties.packagesId.description).toContain(PACKAGES_ONCE);
    }
  });

  it('shows a delivery request as the spec writes it: its defaults, its fee block, its route types', () => {
    const post = (full.paths['/api/request'] as Record<string, Operation>).post;
    const body = post.requestBody?.content['application/json'].schema as {
      properties: Record<string, Json>;
    };
    expect(body.properties.link3rdPartyByContactInfo).toMatchObject({ default: false });
    expect(body.properties.podRemitTo).toMatchObject({ default: 'MY_WALLET' });
    const fee = schemas.FeeBlock as { properties: Record<string, Json> };
    expect(Object.keys(fee.properties)).toEqual(
      expect.arrayContaining(['payer', 'gross', 'creator', 'recipient', 'promotion']),
    );
    // The request's answers name that block, not an object of anything.
    for (const answer of ['DeliveryRequest', 'DeliveryCheckout']) {
      expect(JSON.stringify(schemas[answer])).toMatch(
        /"deliveryFee":\{"\$ref":"#\/components\/schemas\/FeeBlock"/,
      );
    }
    const delivery = JSON.stringify(schemas.Delivery);
    expect(delivery).toMatch(/"routeType":\{[^}]*"enum":\["INTER_CITY"/);
  });

  it('says that an effective tariff’s city needs its state, as its validator does', () => {
    const get = (full.paths['/admin/pricing/tariff'] as Record<string, Operation>).get;
    const [query] = get.parameters.filter((p) => p.in === 'query');
    expect(get.parameters.filter((p) => p.in === 'query')).toHaveLength(1);
    expect(query).toMatchObject({ style: 'form', explode: true });
    expect(query.schema).toMatchObject({ dependentRequired: { city: ['state'] } });
    expect(Object.keys(query.schema.properties as Json)).toEqual(
      expect.arrayContaining(['countryCode', 'state', 'city']),
    );
  });

  it('gives every tracking path the tracking id as a label prints it or as it is typed', () => {
    const pattern = new RegExp(
      (full.paths['/track/{trackingId}'] as Record<string, Operation>).get.parameters[0].schema
        .pattern as string,
    );
    expect(pattern.test('P2P-7K3M9Q2X4W8R')).toBe(true);
    expect(pattern.test('p2p-7k3m9q2x4w8r')).toBe(true);
    expect(pattern.test('P2P-7K3M9Q2X4W8')).toBe(false);
  });

  it('describes the upload forms as their file parts only: the file service refuses a text field', () => {
    const form = (path: string) =>
      (full.paths[path] as Record<string, Operation>).post.requestBody?.content[
        'multipart/form-data'
      ].schema as Json;
    expect(form('/file/single-upload')).toMatchObject({
      required: ['upload-file'],
      additionalProperties: false,
    });
    expect(form('/file/bulk-upload')).toMatchObject({
      minProperties: 1,
      maxProperties: 1,
      additionalProperties: { type: 'array', items: { format: 'binary' }, maxItems: 7 },
    });
    expect(form('/file/bulk-upload')).not.toHaveProperty('properties');
  });

  it('names its resources as component schemas', () => {
    for (const name of [
      'Package',
      'NewPackage',
      'PackageChange',
      'ResolvedAddress',
      'Route',
      'FeeBlock',
      'ErrorEnvelope',
      'Quote',
      'DeliveryCost',
      'Country',
      'State',
      'City',
      'FleetType',
      'FleetTypeDetail',
      'ApiKey',
      'NewApiKey',
      'User',
      'PricingTier',
      'Tariff',
      'TariffOverride',
      'CourierPricingRule',
      'UploadedFile',
    ]) {
      expect(schemas[name]).toEqual(expect.objectContaining({ type: 'object' }));
    }
  });

  it('has a component for every reference', () => {
    const refs = [...text.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]);
    expect(refs.length).toBeGreaterThan(50);
    for (const name of refs) expect(schemas[name]).toBeDefined();
  });

  it('describes the two pricing modes, one of which a body must take', () => {
    const body = (full.paths['/api/pricing'] as Record<string, Operation>).post.requestBody
      ?.content['application/json'].schema as Json & { oneOf: Json[] };
    expect(body.oneOf).toEqual([
      expect.objectContaining({ required: ['packagesId'] }),
      expect.objectContaining({ required: ['totalWeight', 'totalValue'] }),
    ]);
    const answer = (full.paths['/api/pricing'] as Record<string, Operation>).post.responses['200']
      .content?.['application/json'].schema as { allOf: { properties?: { data: Json } }[] };
    expect(answer.allOf[1].properties?.data).toEqual({
      oneOf: [
        { $ref: '#/components/schemas/DeliveryCost' },
        { $ref: '#/components/schemas/Quote' },
      ],
    });
  });

  it('describes saving a package as a new package or a change to one', () => {
    const body = (full.paths['/api/package'] as Record<string, Operation>).post.requestBody;
    expect(body?.content['application/json'].schema).toEqual({
      oneOf: [
        { $ref: '#/components/schemas/PackageChange' },
        { $ref: '#/components/schemas/NewPackage' },
      ],
    });
    expect((schemas.PackageChange as { required: string[] }).required).toEqual(['packageId']);
    expect((schemas.NewPackage as { required: string[] }).required.sort()).toEqual(
      ['name', 'packageType', 'quantity', 'size', 'value'].sort(),
    );
  });

  it('says that deleting a package a delivery has taken is refused', () => {
    const remove = (full.paths['/api/package/{packageId}'] as Record<string, Operation>).delete;
    expect(remove.responses['400'].description).toMatch(/assigned to a delivery/);
    expect(remove.responses['404'].description).toBe('No such package of yours');
  });

  it('answers tiers with rates of any shape a tier has ({} for a removal)', () => {
    const tier = schemas.PricingTier as { properties: Json; required: string[] };
    expect(tier.properties.rates).toEqual({ $ref: '#/components/schemas/TariffRates' });
    expect(tier.required).toContain('rates');
    expect((schemas.TariffRates as Json).required).toBeUndefined();
  });

  it('links every creation to the routes that take what it created', () => {
    const created = (path: string) =>
      (full.paths[path] as Record<string, { responses: Record<string, { links?: Json }> }>).post;
    expect(Object.keys(created('/api/package').responses['201'].links ?? {}).sort()).toEqual([
      'order.request',
      'package.remove',
      'package.save',
      'pricing.price',
    ]);
    const delivery = created('/api/request').responses['201'].links ?? {};
    expect(delivery['order.get']).toEqual({
      operationId: 'order.get',
      parameters: { deliveryId: '$response.body#/data/deliveryId' },
    });
    expect(Object.keys(delivery)).toEqual(expect.arrayContaining(['order.cancel', 'order.get']));
    expect(Object.keys(created('/admin/users').responses['201'].links ?? {})).toContain(
      'account.getUser',
    );
  });
});

describe('buildOpenApi of option headers', () => {
  const orders = backendDefinitions(loadConfig({})).find((d) => d.name === 'order');
  const requestParams = (environment?: 'live' | 'staging') => {
    const document = buildOpenApi(orders ? [orders] : [], '1', undefined, environment);
    const post = (document.paths['/api/request'] as Record<string, Operation>).post;
    return post.parameters.map((p) => p.name);
  };

  it('offers Waybill-Simulate, with its values, only where it is taken: staging, not live', () => {
    expect(requestParams('staging')).toContain('Waybill-Simulate');
    expect(requestParams()).toContain('Waybill-Simulate');
    expect(requestParams('live')).not.toContain('Waybill-Simulate');
    expect(requestParams('live')).toContain('Idempotency-Key');
  });
});
