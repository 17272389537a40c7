import { launchChromium } from '../support/checkout';
import { randomUUID } from 'node:crypto';
import Joi from '../../libs/joi';
import { ServiceBroker } from 'moleculer';
import { createBrokerOptions } from '../../moleculer.config';
import { loadConfig } from '../../libs/config';
import type { Retry } from '../../libs/contracts';
import { badRequest } from '../../libs/errors';
import { fromUrl } from '../../libs/schemas';
import { action, toServiceSchema, type ServiceDefinition } from '../../libs/service';
import { createAccountService } from '../../services/account/account.service';
import { createGatewayService } from '../../services/gateway/gateway.service';
import { routeHandler } from '../../services/gateway/web-routing';
import { READINESS_REUSE_MS } from '../../services/gateway/ops-routes';
import { registerHealthCheck, unregisterHealthCheck } from '../../libs/health';
import ApiGateway from 'moleculer-web';
import { ENVELOPE_KEYS, createUserWithKey, expectErrorEnvelope, request } from '../support/http';
import { connect } from 'node:net';
import { eventually } from '../support/eventually';
import { ADMIN_TOKEN, dropDatabases, freePort, isolation } from '../support/stack';

/**
 * The gateway on a broker in this process (no transporter), with the real account service
 * and Redis, and a fixture service whose actions fail in each way a service can.
 */
/** How often each slow action (by its path) has started. */
const slowRuns = new Map<string, number>();

/** An action at `path` (`/fixture/slow`) that answers after 3 s. */
const slowly = (retry: Retry, method: 'GET' | 'POST', path = '/fixture/slow') =>
  action({
    retry,
    http: { group: 'api', method, path, message: 'x', summary: 'x' },
    params: Joi.object({}),
    async handler() {
      slowRuns.set(path, (slowRuns.get(path) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, 3_000));
      return { late: true };
    },
  });

const fixture: ServiceDefinition = {
  name: 'fixture',
  actions: {
    crash: action({
      retry: 'never',
      http: { group: 'api', method: 'GET', path: '/fixture/crash', message: 'x', summary: 'x' },
      params: Joi.object({}),
      handler() {
        throw new Error('connection string mongodb://secret@db leaked');
      },
    }),
    // A read and a write that outlast REQUEST_TIMEOUT_MS: the write's 504 says how to retry.
    slow: slowly('never', 'GET'),
    slowWrite: slowly('keyed', 'POST'),
    // A write a second run would do again (a cancel, a code issued): never run twice under a key.
    slowOnce: slowly('never', 'POST', '/fixture/slow-once'),
    caller: action({
      retry: 'safe',
      http: { group: 'api', method: 'GET', path: '/fixture/caller', message: 'x', summary: 'x' },
      params: Joi.object({}),
      handler(ctx) {
        return ctx.meta.user;
      },
    }),
    refuse: action({
      retry: 'never',
      http: { group: 'api', method: 'POST', path: '/fixture/refuse', message: 'x', summary: 'x' },
      params: Joi.object({}).unknown(true),
      handler() {
        throw badRequest('Origin and destination cannot be the same');
      },
    }),
    echo: action({
      retry: 'never',
      http: {
        group: 'api',
        method: 'POST',
        path: '/fixture/echo/:id',
        status: 201,
        message: 'Echoed',
        summary: 'x',
      },
      params: Joi.object({
        id: fromUrl(Joi.number().integer().required()),
        note: Joi.string().max(5),
      }),
      handler(ctx) {
        return { ...ctx.params, user: ctx.meta.user?.id, apiKeyId: ctx.meta.apiKeyId };
      },
    }),
    nothing: action({
      retry: 'never',
      http: {
        group: 'api',
        method: 'DELETE',
        path: '/fixture/nothing',
        status: 204,
        message: 'Gone',
        summary: 'x',
      },
      params: Joi.object({}),
      handler() {
        return { ignored: true };
      },
    }),
  },
};

const iso = isolation();
let broker: ServiceBroker;
let base: string;
let key: string;
let keyId: string;
let userId: string;

beforeAll(async () => {
  const port = await freePort();
  const config = loadConfig({
    ...process.env,
    NATS_URL: '',
    PORT: String(port),
    HOST: '127.0.0.1',
    OPS_PORT: '0',
    NAMESPACE: iso.namespace,
    MONGO_DB_PREFIX: iso.dbPrefix,
    ADMIN_TOKEN,
    REQUEST_TIMEOUT_MS: '500',
    BODY_LIMIT: '1kb',
    LOG_LEVEL: 'fatal',
  });
  broker = new ServiceBroker({ ...createBrokerOptions(config), logger: false });
  const account = createAccountService(config);
  for (const def of [createGatewayService(config, [account, fixture]), account, fixture]) {
    broker.createService(toServiceSchema(def));
  }
  await broker.start();
  base = `http://127.0.0.1:${port}`;
  // The gateway starts before its Redis connection is up (it answers 503 until then).
  await eventually(async () =>
    expect((await request(base, 'GET', '/health/ready')).status).toBe(200),
  );
  ({ key, keyId, userId } = await createUserWithKey(base));
});

afterAll(async () => {
  await broker?.stop();
  await dropDatabases(iso);
});

const auth = () => ({ 'api-key': key });

describe('the way in', () => {
  it("carries each request in through moleculer-web's rest action, an entry point", () => {
    // libs/entry-points: the call middlewares leave it alone, the tracker does not.
    const rest = broker.getLocalService('gateway')?.schema.actions?.rest as
      { entryPoint?: boolean; handler?: unknown } | undefined;
    expect(rest?.entryPoint).toBe(true);
    expect(typeof rest?.handler).toBe('function');
  });

  it("finds routes and runs them with the gateway's own alias lookup and route handler", () => {
    // gateway/web-routing, bound with the other replaced methods in web-overrides.
    const methods = broker.getLocalService('gateway')?.schema.methods ?? {};
    const moleculerWeb = ApiGateway.methods ?? {};
    expect(methods.routeHandler).toBe(routeHandler);
    expect(methods.resolveAlias).toBeDefined();
    expect(methods.resolveAlias).not.toBe(moleculerWeb.resolveAlias);
  });
});

describe('success envelope', () => {
  it('wraps data with the route status and message, path params converted', async () => {
    const reply = await request(base, 'POST', '/api/fixture/echo/42', {
      headers: auth(),
      json: { note: 'hi' },
    });
    expect(reply.status).toBe(201);
    // Never cached on the way, never read as anything but JSON.
    expect(reply.headers.get('cache-control')).toBe('no-store');
    expect(reply.headers.get('x-content-type-options')).toBe('nosniff');
    expect(reply.body).toEqual({
      success: true,
      message: 'Echoed',
      data: { id: 42, note: 'hi', user: userId, apiKeyId: keyId },
    });
  });

  it("gives services the caller's id, name, email, phone and profile, no more of the user", async () => {
    const reply = await request(base, 'GET', '/api/fixture/caller', { headers: auth() });
    expect(reply.status).toBe(200);
    const caller = (reply.body as { data: Record<string, unknown> }).data;
    expect(Object.keys(caller).sort()).toEqual(['email', 'id', 'name', 'phone', 'profileId']);
    expect(caller.id).toBe(userId);
  });

  it('answers 204 with an empty body', async () => {
    const reply = await request(base, 'DELETE', '/api/fixture/nothing', { headers: auth() });
    expect(reply.status).toBe(204);
    expect(reply.text).toBe('');
  });
});

describe('error envelope', () => {
  it('validation → 400 with field errors', async () => {
    const reply = await request(base, 'POST', '/api/fixture/echo/x', {
      headers: auth(),
      json: { note: 'too long', other: 1 },
    });
    expectErrorEnvelope(reply, 400, /^Validation failed/);
    expect(reply.body.errors).toEqual([
      { field: 'id', message: 'id must be a number' },
      { field: 'note', message: expect.stringMatching(/note length must be/) },
      { field: 'other', message: 'other is not allowed' },
    ]);
  });

  it('fields where the document does not place them → 400 naming each: a POST’s query string, a path param in its body', async () => {
    // The query's value used to win over the body's, and the path's over the body's, unsaid.
    const reply = await request(base, 'POST', '/api/fixture/echo/42?note=hi', {
      headers: auth(),
      json: { note: 'yo', id: 7 },
    });
    expectErrorEnvelope(reply, 400, /^Validation failed/);
    expect(reply.body.errors).toEqual([
      { field: 'note', message: 'note is not allowed in the query string; send it in the body' },
      { field: 'id', message: 'id is in the path; leave it out of the body' },
    ]);
  });

  it("a service's own 400 keeps its message", async () => {
    const reply = await request(base, 'POST', '/api/fixture/refuse', { headers: auth(), json: {} });
    expectErrorEnvelope(reply, 400, 'Origin and destination cannot be the same');
  });

  it('keeps an idle connection longer than a proxy in front does (HTTP_KEEP_ALIVE_MS), and says so', async () => {
    // Node's 5 s: a proxy keeping its connections 60 s reused one just closed, and answered 502.
    const reply = await request(base, 'GET', '/api/fixture/caller', { headers: auth() });
    expect(reply.status).toBe(200);
    expect(reply.headers.get('keep-alive')).toBe('timeout=65');
  });

  it('a crash → 500 without internals', async () => {
    const reply = await request(base, 'GET', '/api/fixture/crash', { headers: auth() });
    expectErrorEnvelope(reply, 500, /Internal server error/);
    expect(reply.text).not.toMatch(/secret|mongodb/);
  });

  it('a timeout → 504', async () => {
    const reply = await request(base, 'GET', '/api/fixture/slow', { headers: auth() });
    expectErrorEnvelope(reply, 504, /timed out/);
  });

  it('a timeout of a request that may change something → 504 that tells how to retry it safely', async () => {
    const bare = await request(base, 'POST', '/api/fixture/slow', { headers: auth(), json: {} });
    expectErrorEnvelope(
      bare,
      504,
      /^The request timed out; it may have completed or may still complete. Check before sending it again, and send an Idempotency-Key/,
    );
    const keyed = await request(base, 'POST', '/api/fixture/slow', {
      headers: { ...auth(), 'Idempotency-Key': randomUUID() },
      json: {},
    });
    expectErrorEnvelope(
      keyed,
      504,
      /^The request timed out; it may have completed or may still complete. Retry with the same Idempotency-Key/,
    );
  });

  it('a timeout of a request a second run would do again → 504, and its key never runs it again', async () => {
    const key = randomUUID();
    const send = () =>
      request(base, 'POST', '/api/fixture/slow-once', {
        headers: { ...auth(), 'Idempotency-Key': key },
        json: {},
      });
    expectErrorEnvelope(
      await send(),
      504,
      /Check before sending it again: it is not run again under this Idempotency-Key, so send a new key to run it again$/,
    );
    const retry = await send();
    expectErrorEnvelope(retry, 409, /its outcome is unknown. It is not run again under this key/);
    expect(retry.headers.get('retry-after')).toBeNull();
    await new Promise((r) => setTimeout(r, 3_200)); // the first run ends, unanswered
    expectErrorEnvelope(await send(), 409, /its outcome is unknown/);
    expect(slowRuns.get('/fixture/slow-once')).toBe(1);
  });

  it.each([
    ['application/json; charset=utf-8', 201],
    ['application/json; charset=UTF8', 201],
    ['application/json;charset="utf8"', 201],
    ['application/json; charset=utf-8x', 415],
    ['application/json; charset=latin1', 415],
  ])(
    'a JSON body typed %s → %s: any UTF, and UTF-8 as some clients spell it',
    async (type, status) => {
      const reply = await request(base, 'POST', '/api/fixture/echo/42', {
        headers: { ...auth(), 'content-type': type },
        raw: JSON.stringify({ note: 'héllo' }),
      });
      if (status === 415) expectErrorEnvelope(reply, 415, 'Unsupported charset; send UTF-8 JSON');
      else expect(reply.body.data).toMatchObject({ note: 'héllo' });
      // An empty body of that type is read as one too.
      const empty = await request(base, 'POST', '/api/fixture/echo/42', {
        headers: { ...auth(), 'content-type': type },
        raw: '',
      });
      expect(empty.status).toBe(status);
    },
  );

  it('malformed JSON → 400', async () => {
    const reply = await request(base, 'POST', '/api/fixture/refuse', {
      headers: { ...auth(), 'content-type': 'application/json' },
      raw: '{"origin": ',
    });
    expectErrorEnvelope(reply, 400, /Malformed JSON/);
  });

  it.each([['[]'], ['[{"note": "hi"}]'], ['5'], ['"hi"'], ['null']])(
    'a JSON body that is not an object (%s) → 400, never an empty one',
    async (raw) => {
      const reply = await request(base, 'POST', '/api/fixture/echo/42', {
        headers: { ...auth(), 'content-type': 'application/json' },
        raw,
      });
      expectErrorEnvelope(reply, 400, /^The JSON body must be an object of the operation's fields/);
    },
  );

  it('a body over the limit → 413, a GET’s as well (as the document states)', async () => {
    const reply = await request(base, 'POST', '/api/fixture/refuse', {
      headers: auth(),
      json: { blob: 'x'.repeat(4096) },
    });
    expectErrorEnvelope(reply, 413, /too large/);
    const blob = JSON.stringify({ blob: 'x'.repeat(4096) });
    const get = await rawExchange(
      base,
      `GET /api/fixture/caller HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\ncontent-type: application/json\r\n` +
        `content-length: ${blob.length}\r\nconnection: close\r\n\r\n${blob}`,
    );
    expect(get).toMatch(/^HTTP\/1\.1 413 /);
  });

  it('a body over the limit → 413 as soon as that is known, while the client still sends it', async () => {
    const head = (framing: string) =>
      `POST /api/fixture/refuse HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\ncontent-type: application/json\r\n${framing}\r\n`;
    const part = `{"blob":"${'x'.repeat(1100)}`;
    for (const raw of [
      `${head('content-length: 100000\r\n')}{"blob":"`,
      `${head('transfer-encoding: chunked\r\n')}${part.length.toString(16)}\r\n${part}\r\n`,
    ]) {
      const answer = await firstAnswer(base, raw);
      expect(answer).toMatch(/^HTTP\/1\.1 413 /);
      expect(answer).toMatch(
        /"message":"Request body is too large; at most 1024 bytes are accepted here"/,
      );
    }
  });

  it('a body without a key, malformed or over the limit → 401: the key is checked before the body is read', async () => {
    for (const raw of ['{"origin": ', JSON.stringify({ blob: 'x'.repeat(4096) })]) {
      const reply = await request(base, 'POST', '/api/fixture/refuse', {
        headers: { 'content-type': 'application/json' },
        raw,
      });
      expectErrorEnvelope(reply, 401, 'API key is required');
    }
  });

  it.each([
    [
      'headers over 16 KB → 431',
      `GET /api/countries?q=a HTTP/1.1\r\nHost: x\r\nX-Pad: ${'p'.repeat(20_000)}\r\n\r\n`,
      431,
      /^The request headers are too large/,
      { method: 'GET', path: '/api/countries', url: '/api/countries?q=a' },
    ],
    [
      'a malformed request → 400',
      'GET /api/countries HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n',
      400,
      /^The HTTP request is malformed/,
      { method: 'GET', path: '/api/countries' },
    ],
  ])(
    '%s, refused by Node before it is a request, in the envelope',
    async (_what, raw, status, message, where) => {
      const reply = await rawExchange(base, raw);
      const [head, body] = [
        reply.slice(0, reply.indexOf('\r\n\r\n')),
        reply.slice(reply.indexOf('\r\n\r\n') + 4),
      ];
      expect(head).toMatch(new RegExp(`^HTTP/1.1 ${status} `));
      expect(head).toMatch(/content-type: application\/json/i);
      const envelope = JSON.parse(body);
      expect(Object.keys(envelope).sort()).toEqual(ENVELOPE_KEYS);
      expect(envelope).toMatchObject({ statusCode: status, ...where });
      expect(envelope.message).toMatch(message);
    },
  );

  it('a request without Host → 400 in the envelope; a target in absolute form is read as its path', async () => {
    const hostless = await rawExchange(
      base,
      `GET /api/fixture/echo/1 HTTP/1.1\r\napi-key: ${key}\r\nconnection: close\r\n\r\n`,
    );
    expect(hostless).toMatch(/^HTTP\/1\.1 400 /);
    const envelope = JSON.parse(hostless.slice(hostless.indexOf('\r\n\r\n') + 4));
    expect(Object.keys(envelope).sort()).toEqual(ENVELOPE_KEYS);
    expect(envelope.message).toBe(
      'The request names no host: send the Host header, as every HTTP/1.1 request must',
    );
    const absolute = await rawExchange(
      base,
      `GET ${base}/health/live HTTP/1.1\r\nHost: x\r\nconnection: close\r\n\r\n`,
    );
    expect(absolute).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('a body whose client half-closed while its key was looked up is not run without it', async () => {
    const { key } = await createUserWithKey(base); // new to the gateway: looked up
    const idempotencyKey = randomUUID();
    const body = JSON.stringify({ note: 'hi' });
    await rawExchange(
      base,
      `POST /api/fixture/echo/1 HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\n` +
        `idempotency-key: ${idempotencyKey}\r\ncontent-type: application/json\r\n` +
        `content-length: ${body.length}\r\n\r\n${body}`,
      { halfClose: true },
    );
    // Had the call run with no body, the key would be bound to that empty request, and its
    // retry with the real body refused (422).
    const retried = await eventually(async () => {
      const reply = await request(base, 'POST', '/api/fixture/echo/1', {
        headers: { 'api-key': key, 'Idempotency-Key': idempotencyKey },
        json: { note: 'hi' },
      });
      expect(reply.status).not.toBe(409);
      return reply;
    });
    expect(retried.status).toBe(201);
    expect(retried.body.data).toMatchObject({ id: 1, note: 'hi' });
  });

  it('Expect: 100-continue → told to go on only once the body is read: refused on its headers, answered before the body is sent', async () => {
    const body = JSON.stringify({ note: 'hi' });
    const head = (auth: string) =>
      `POST /api/fixture/echo/1 HTTP/1.1\r\nHost: x\r\n${auth}expect: 100-continue\r\n` +
      `content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`;
    // Without a key: its 401 is the first answer, and no body was asked for.
    expect(await firstAnswer(base, head(''))).toMatch(/^HTTP\/1\.1 401 /);
    // With one: told to go on, then the body is read and run.
    const { hostname, port } = new URL(base);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), hostname, () =>
        socket.write(head(`api-key: ${key}\r\n`)),
      );
      let text = '';
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('utf8');
        if (text === 'HTTP/1.1 100 Continue\r\n\r\n') socket.write(body);
        if (/\r\n\r\nHTTP\/1\.1 201 [\s\S]*\r\n\r\n[\s\S]*\}$/.test(text)) {
          socket.destroy();
          resolve(text);
        }
      });
      socket.on('error', reject);
      socket.on('close', () => resolve(text));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 /);
    expect(JSON.parse(answer.slice(answer.lastIndexOf('\r\n\r\n') + 4)).data).toMatchObject({
      id: 1,
      note: 'hi',
    });
  });

  it('Expect: 100-continue refused, its body sent all the same (curl, after its wait): read and passed over, the connection closed gently, never reset', async () => {
    const size = 2 * 1024 * 1024;
    const { hostname, port } = new URL(base);
    const outcome = await new Promise<{ answer: string; error?: string }>((resolve) => {
      const socket = connect(Number(port), hostname, () =>
        socket.write(
          `POST /api/fixture/echo/1 HTTP/1.1\r\nHost: x\r\nexpect: 100-continue\r\n` +
            `content-type: application/json\r\ncontent-length: ${size}\r\n\r\n`,
        ),
      );
      let answer = '';
      let sent = false;
      socket.on('data', (chunk: Buffer) => {
        answer += chunk.toString('utf8');
        // The refusal came first: the body goes all the same, in pieces, as a client's would.
        if (!sent && /\}$/.test(answer)) {
          sent = true;
          const piece = Buffer.alloc(64 * 1024, 0x20);
          let left = size / piece.length;
          const next = () => {
            if (left-- > 0 && !socket.destroyed) socket.write(piece, () => setImmediate(next));
          };
          next();
        }
      });
      socket.on('error', (err) => resolve({ answer, error: err.message }));
      socket.on('end', () => {
        socket.end();
        resolve({ answer });
      });
    });
    expect(outcome.error).toBeUndefined();
    expect(outcome.answer).toMatch(/^HTTP\/1\.1 401 /);
  });

  it('Expect: 100-continue refused: a request sent behind its body on that closing connection is not run', async () => {
    const body = JSON.stringify({ note: 'hi' });
    const behind = `GET /api/fixture/slow HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\n\r\n`;
    const runsBefore = slowRuns.get('/fixture/slow') ?? 0;
    const { hostname, port } = new URL(base);
    await new Promise<void>((resolve) => {
      const socket = connect(Number(port), hostname, () =>
        socket.write(
          `POST /api/fixture/echo/1 HTTP/1.1\r\nHost: x\r\nexpect: 100-continue\r\n` +
            `content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`,
        ),
      );
      let answer = '';
      socket.on('data', (chunk: Buffer) => {
        answer += chunk.toString('utf8');
        // Refused (no key): its body all the same, and another request behind it at once.
        if (/^HTTP\/1\.1 401 [\s\S]*\}$/.test(answer)) socket.write(body + behind);
      });
      socket.on('error', () => resolve());
      socket.on('close', () => resolve());
    });
    // It would have started at once: it never does.
    await new Promise((r) => setTimeout(r, 500));
    expect(slowRuns.get('/fixture/slow') ?? 0).toBe(runsBefore);
  });

  it('an Expect other than 100-continue is ignored, the request answered as without it', async () => {
    const body = JSON.stringify({ note: 'hi' });
    const answer = await rawExchange(
      base,
      `POST /api/fixture/echo/1 HTTP/1.1\r\nHost: x\r\napi-key: ${key}\r\nexpect: something-else\r\n` +
        `content-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 201 /);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).data).toMatchObject({
      id: 1,
      note: 'hi',
    });
  });

  it('a path param that is not percent-encoded UTF-8 → 400 saying how to encode it, after the key is checked', async () => {
    const exchange = async (headers: string) => {
      const answer = await rawExchange(
        base,
        `POST /api/fixture/echo/%E0%A4%A HTTP/1.1\r\nHost: x\r\n${headers}content-type: application/json\r\n` +
          'content-length: 2\r\nconnection: close\r\n\r\n{}',
      );
      return {
        status: Number(answer.slice(9, 12)),
        envelope: JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)),
      };
    };
    expect((await exchange('')).status).toBe(401);
    const { status, envelope } = await exchange(`api-key: ${key}\r\n`);
    expect(status).toBe(400);
    expect(Object.keys(envelope).sort()).toEqual(ENVELOPE_KEYS);
    expect(envelope.message).toBe(
      "The path's %E0%A4%A is not percent-encoded UTF-8: encode each path segment with encodeURIComponent",
    );
  });

  it('an unknown route → 404, with or without a key, and the query is kept in url', async () => {
    expectErrorEnvelope(
      await request(base, 'GET', '/nowhere?x=1'),
      404,
      /No route for GET \/nowhere/,
    );
    const reply = await request(base, 'GET', '/api/nowhere', { headers: auth() });
    expectErrorEnvelope(reply, 404, /No route/);
    // A path that only begins with a route's base is not under it: no guard of the route's
    // answers it (a 401 asking for a key there would say the path exists).
    for (const path of ['/apix', '/api-docs?x=1', '/filez', '/administer', '/couriers']) {
      expectErrorEnvelope(await request(base, 'GET', path), 404, /No route/);
      expectErrorEnvelope(await request(base, 'GET', path, { headers: auth() }), 404, /No route/);
    }
    expectErrorEnvelope(await request(base, 'GET', '/api'), 401);
  });

  it('internal actions and $node are not reachable', async () => {
    for (const path of [
      '/api/account/resolveApiKey',
      '/api/$node/list',
      '/$node/services',
      '/api/~node/list',
    ]) {
      expectErrorEnvelope(await request(base, 'GET', path, { headers: auth() }), 404);
    }
  });

  it('a route whose service is not running → 503', async () => {
    await broker.destroyService('fixture');
    try {
      const reply = await request(base, 'GET', '/api/fixture/crash', { headers: auth() });
      expectErrorEnvelope(reply, 503, /temporarily unavailable/);
    } finally {
      broker.createService(toServiceSchema(fixture));
      await broker.waitForServices('fixture');
    }
  });
});

describe('docs', () => {
  it('serves OpenAPI 3.1 with every routed action, including ones added later', async () => {
    const reply = await request(base, 'GET', '/openapi.json');
    expect(reply.status).toBe(200);
    expect(reply.body.openapi).toBe('3.1.0');
    expect(Object.keys(reply.body.paths)).toEqual(
      expect.arrayContaining(['/api/me', '/admin/users', '/api/fixture/echo/{id}']),
    );
    expect(reply.body.paths['/api/fixture/echo/{id}'].post.responses['201']).toBeDefined();
  });

  it('renders the docs page offline from local assets', async () => {
    const page = await request(base, 'GET', '/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const scripts = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(scripts.every((s) => s.startsWith('/'))).toBe(true);
    for (const asset of scripts) {
      const res = await fetch(`${base}${asset}`);
      expect(res.status).toBe(200);
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(0);
    }
    expectErrorEnvelope(await request(base, 'GET', '/docs/assets/..%2Fpackage.json'), 404);
  });

  it('keeps the docs page to its own scripts and unframed, and it still renders in Chromium', async () => {
    const page = await request(base, 'GET', '/docs');
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toMatch(/default-src 'none'/);
    expect(csp).toMatch(/script-src 'self' 'sha256-[A-Za-z0-9+/=]+'(;|$)/);
    expect(csp).toMatch(/frame-ancestors 'none'/);
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    // The API's documentation, unlike a delivery's page, may be found by search engines.
    expect(page.headers.get('x-robots-tag')).toBeNull();

    const browser = await launchChromium();
    try {
      const tab = await browser.context.newPage();
      const refused: string[] = [];
      tab.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) refused.push(message.text());
      });
      expect((await tab.goto(`${base}/docs`))?.status()).toBe(200);
      await tab.locator('.swagger-ui .info .title').waitFor({ timeout: 20_000 });
      expect(await tab.locator('.swagger-ui .info .title').innerText()).toContain('Waybill API');
      expect(await tab.locator('.opblock').count()).toBeGreaterThan(0);
      expect(refused).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 60_000);
});

describe('readiness on the public port', () => {
  it('shares one reading of every dependency among the probes of a second', async () => {
    let readings = 0;
    registerHealthCheck(broker, 'counted', () => {
      readings += 1;
      return true;
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, READINESS_REUSE_MS));
      const replies = await Promise.all(
        Array.from({ length: 20 }, () => request(base, 'GET', '/health/ready')),
      );
      expect(replies.map((r) => r.status)).toEqual(Array(20).fill(200));
      expect(readings).toBe(1);
    } finally {
      unregisterHealthCheck(broker, 'counted');
    }
  });
});

/**
 * Writes `raw` on a connection of its own (then closes its side, with `halfClose`) and reads
 * all that comes back until the connection closes.
 */
function rawExchange(baseUrl: string, raw: string, { halfClose = false } = {}): Promise<string> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () =>
      halfClose ? socket.end(raw) : socket.write(raw),
    );
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

/**
 * Writes `raw` on a connection of its own, never ending what it sends, and answers the first
 * bytes the gateway writes back (its answer's head, and its body when it came with it).
 */
function firstAnswer(baseUrl: string, raw: string): Promise<string> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(raw));
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      if (/\r\n\r\n[\s\S]*\}$/.test(text)) {
        socket.destroy();
        resolve(text);
      }
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(text));
  });
}
