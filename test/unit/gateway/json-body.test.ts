import { createServer } from 'node:http';
import { gzipSync } from 'node:zlib';
import { connect, type AddressInfo, type Socket } from 'node:net';
import fc from 'fast-check';
import ApiGateway from 'moleculer-web';
import type { Middleware } from '../../../services/gateway/edge';
import type { GatewayRequest } from '../../../services/gateway/http';
import {
  MAX_JSON_DEPTH,
  PROTOTYPE_KEYS,
  bodyArrived,
  cleanJsonBody,
  jsonBodyGuard,
} from '../../../services/gateway/json-body';
import { FakeResponse, fakeRequest } from './fake-http';

/** Arrays nested `depth` deep, the outermost included, around `inner`. */
const nested = (depth: number, inner: unknown = 0): unknown =>
  JSON.parse(`${'['.repeat(depth)}${JSON.stringify(inner)}${']'.repeat(depth)}`);

/** Every own key of every object in a value, at any depth. */
function allKeys(value: unknown): string[] {
  if (value === null || typeof value !== 'object') return [];
  const own = Array.isArray(value) ? [] : Object.keys(value);
  return [...own, ...Object.values(value).flatMap(allKeys)];
}

/** JSON values as JSON.parse makes them, with prototype keys (own keys) among their keys. */
const { parsedJson } = fc.letrec((tie) => ({
  parsedJson: fc.oneof(
    { depthSize: 'small' },
    fc.jsonValue({ maxDepth: 0 }),
    fc.array(tie('parsedJson'), { maxLength: 3 }),
    tie('object'),
  ),
  object: fc
    .array(
      fc.tuple(
        fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom(...PROTOTYPE_KEYS)),
        tie('parsedJson'),
      ),
      { maxLength: 4 },
    )
    // Through JSON text, as the body parser makes them: `__proto__` becomes an own key.
    .map((entries) =>
      JSON.parse(
        `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`,
      ),
    ),
}));

describe('cleanJsonBody', () => {
  it('drops __proto__, constructor and prototype keys at every depth, as own keys', () => {
    const body = JSON.parse(
      '{"__proto__":{"admin":true},"a":{"constructor":{"prototype":{"x":1}},"b":[{"prototype":1,"c":2}]}}',
    );
    cleanJsonBody(body);
    expect(body).toEqual({ a: { b: [{ c: 2 }] } });
    expect(Object.getPrototypeOf(body)).toBe(Object.prototype);
    expect(Object.assign({}, body).admin).toBeUndefined();
  });

  it('leaves every other key and value as it was (property)', () => {
    fc.assert(
      fc.property(parsedJson, (value) => {
        const expected = JSON.stringify(value, (k, v) =>
          PROTOTYPE_KEYS.includes(k) ? undefined : v,
        );
        cleanJsonBody(value);
        expect(allKeys(value).filter((k) => PROTOTYPE_KEYS.includes(k))).toEqual([]);
        expect(JSON.stringify(value)).toBe(expected);
      }),
      { numRuns: 1000 },
    );
  });

  it('refuses a number JSON reads as Infinity, at any depth (it would reach a service as null)', () => {
    for (const text of ['{"r":1e400}', '{"a":{"b":[1,-1e999]}}']) {
      expect(() => cleanJsonBody(JSON.parse(text))).toThrow(
        expect.objectContaining({
          code: 400,
          message:
            'The JSON body holds a number too large to read; send numbers within ±1.7976931348623157e308',
        }),
      );
    }
    expect(() =>
      cleanJsonBody(JSON.parse('{"r":1.7976931348623157e308,"s":5e-324}')),
    ).not.toThrow();
  });

  it(`accepts ${MAX_JSON_DEPTH} levels and refuses one more with a 400 that says the limit`, () => {
    expect(() => cleanJsonBody(nested(MAX_JSON_DEPTH))).not.toThrow();
    expect(() => cleanJsonBody({ a: nested(MAX_JSON_DEPTH - 1) })).not.toThrow();
    for (const deep of [nested(MAX_JSON_DEPTH + 1), { a: nested(MAX_JSON_DEPTH) }]) {
      expect(() => cleanJsonBody(deep)).toThrow(
        expect.objectContaining({
          code: 400,
          message: `The JSON body is nested more than ${MAX_JSON_DEPTH} levels deep; send at most ${MAX_JSON_DEPTH} levels of objects and arrays`,
        }),
      );
    }
  });

  it('reads any nesting without overflowing the stack (a 256 KB body of arrays)', () => {
    expect(() => cleanJsonBody(nested(131_000))).toThrow(expect.objectContaining({ code: 400 }));
    expect(() => cleanJsonBody(nested(131_000), Infinity)).not.toThrow();
  });

  it('leaves what is not an object alone', () => {
    for (const value of [undefined, null, 1, 'text', true]) {
      expect(() => cleanJsonBody(value)).not.toThrow();
    }
  });
});

describe('jsonBodyGuard', () => {
  it('cleans req.body and goes on, or hands the refusal to next', () => {
    const req = Object.assign(fakeRequest(), { body: JSON.parse('{"__proto__":{"x":1},"a":1}') });
    const calls: unknown[][] = [];
    jsonBodyGuard(req, new FakeResponse().asServerResponse(), (...args) => calls.push(args));
    expect(calls).toEqual([[]]);
    expect(req.body).toEqual({ a: 1 });

    const deep = Object.assign(fakeRequest(), { body: { a: nested(MAX_JSON_DEPTH) } });
    jsonBodyGuard(deep, new FakeResponse().asServerResponse(), (...args) => calls.push(args));
    expect(calls[1][0]).toMatchObject({ code: 400, message: expect.stringMatching(/nested/) });
  });

  it.each([
    [[], 'an array'],
    [[{ name: 'box' }], 'an array'],
    [5, 'a number'],
    ['name', 'a string'],
    [true, 'a boolean'],
    [null, 'null'],
  ])(
    'refuses a JSON body that is not an object (%j): the fields are an object’s keys',
    (body, sent) => {
      const req = Object.assign(fakeRequest(), { body });
      const calls: unknown[][] = [];
      jsonBodyGuard(req, new FakeResponse().asServerResponse(), (...args) => calls.push(args));
      expect(calls).toEqual([
        [
          expect.objectContaining({
            code: 400,
            message: `The JSON body must be an object of the operation's fields, like {"name": "..."}; got ${sent}`,
          }),
        ],
      ]);
    },
  );

  it('goes on with an object, or without a body (none was read)', () => {
    for (const body of [{}, { a: [1] }, undefined]) {
      const calls: unknown[][] = [];
      const req = Object.assign(fakeRequest(), { body });
      jsonBodyGuard(req, new FakeResponse().asServerResponse(), (...args) => calls.push(args));
      expect(calls).toEqual([[]]);
    }
  });
});

describe('bodyArrived', () => {
  /**
   * A real server whose JSON body is read a moment after the request arrived (as the gateway
   * reads it once the key is checked), by body-parser with or without `bodyArrived`.
   */
  async function readLate(guarded: boolean, send: (socket: Socket, body: string) => void) {
    const parse = ApiGateway.bodyParser.json() as Middleware;
    const read = guarded ? bodyArrived(parse, 256 * 1024) : parse;
    const seen = new Promise<{ err: unknown; body: unknown }>((resolve) => {
      const server = createServer((req, res) => {
        setTimeout(() => {
          read(req as GatewayRequest, res, (err?: unknown) => {
            resolve({ err, body: (req as { body?: unknown }).body });
            res.end();
            server.close();
          });
        }, 50);
      });
      server.listen(0, '127.0.0.1', () => {
        const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
        socket.on('error', () => undefined);
        const body = JSON.stringify({ note: 'hi' });
        socket.on('connect', () => send(socket, body));
      });
    });
    return seen;
  }
  const head = (body: string) =>
    `POST /x HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`;

  it('refuses a body its client half-closed after, which body-parser passes over', async () => {
    const halfClosed = (socket: Socket, body: string) => socket.end(head(body) + body);
    expect((await readLate(false, halfClosed)).body).toBeUndefined();
    expect((await readLate(true, halfClosed)).err).toMatchObject({
      code: 400,
      message: expect.stringMatching(/could not be read/),
    });
  });

  it('reads a body that arrived on an open connection', async () => {
    const open = (socket: Socket, body: string) => socket.write(head(body) + body);
    expect(await readLate(true, open)).toEqual({ err: undefined, body: { note: 'hi' } });
  });

  it('refuses (415) a body of another type or none, but passes an empty chunked one of none', async () => {
    const sent = (headers: string, body: string) => (socket: Socket) =>
      socket.write(`POST /x HTTP/1.1\r\nHost: x\r\n${headers}\r\n${body}`);
    const form = 'a=1';
    for (const headers of [
      `content-type: application/x-www-form-urlencoded\r\ncontent-length: ${form.length}\r\n`,
      `content-length: ${form.length}\r\n`,
      'content-type: text/plain\r\ntransfer-encoding: chunked\r\n',
    ]) {
      expect((await readLate(true, sent(headers, form))).err).toMatchObject({
        code: 415,
        message:
          'The body was not read: send it as JSON, with the header Content-Type: application/json',
      });
    }
    // A client streaming a bodiless POST (its length unknown): nothing to refuse.
    const empty = sent('transfer-encoding: chunked\r\n', '0\r\n\r\n');
    expect((await readLate(true, empty)).err).toBeUndefined();
  });

  /**
   * What the guarded parser (limit `LIMIT` bytes) answers a request `send` writes and never
   * ends: its error, or `still reading` when nothing came within a second.
   */
  const LIMIT = 1024;
  async function answerOf(send: (socket: Socket) => void) {
    return (await answersOf(send))[0] ?? 'still reading';
  }

  /**
   * Every answer the guarded parser gives a request `send` writes, in the second after it
   * connects: its error, or `read` with the body parsed (`{read: body}`).
   */
  async function answersOf(send: (socket: Socket) => void) {
    const read = bodyArrived(ApiGateway.bodyParser.json({ limit: LIMIT }) as Middleware, LIMIT);
    const answers: unknown[] = [];
    const server = createServer((req, res) => {
      read(req as GatewayRequest, res, (err?: unknown) => {
        answers.push(err ?? { read: (req as { body?: unknown }).body });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.on('connect', () => send(socket));
    try {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      return answers;
    } finally {
      socket.destroy();
      server.closeAllConnections();
      server.close();
    }
  }
  const chunk = (text: string) => `${text.length.toString(16)}\r\n${text}\r\n`;

  it('refuses (413) a body over the limit at once, by its Content-Length or its bytes as they come, not at its end', async () => {
    const declared = await answerOf((socket) =>
      socket.write(
        `POST /x HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: ${LIMIT + 1}\r\n\r\n{"a":`,
      ),
    );
    expect(declared).toMatchObject({
      code: 413,
      message: `Request body is too large; at most ${LIMIT} bytes are accepted here`,
    });
    const streamed = await answerOf((socket) =>
      socket.write(
        `POST /x HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n` +
          chunk(`{"a":"${'x'.repeat(LIMIT)}`),
      ),
    );
    expect(streamed).toMatchObject({ code: 413 });
    // Within the limit, the body is read when it ends, not before.
    const within = await answerOf((socket) =>
      socket.write(
        `POST /x HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n` +
          chunk(`{"a":"${'x'.repeat(LIMIT - 20)}`),
      ),
    );
    expect(within).toBe('still reading');
  });

  it('refuses (415) a chunked body of no type that holds bytes, whose fields would be passed over', async () => {
    const untyped = await answerOf((socket) =>
      socket.write(
        'POST /x HTTP/1.1\r\nHost: x\r\ntransfer-encoding: chunked\r\n\r\n' +
          chunk('{"serverOnly":false}'),
      ),
    );
    expect(untyped).toMatchObject({
      code: 415,
      message: expect.stringMatching(/^The body was not read/),
    });
  });

  it('reads a chunked body within the limit, as sent or gzipped, whole; refuses one over it once, though it then ends', async () => {
    const head = (encoding = '') =>
      `POST /x HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n${encoding}transfer-encoding: chunked\r\n\r\n`;
    const body = { note: 'x'.repeat(LIMIT - 40) };
    const text = JSON.stringify(body);
    const halves = [text.slice(0, 300), text.slice(300)];
    expect(
      await answersOf((socket) => socket.write(`${head()}${halves.map(chunk).join('')}0\r\n\r\n`)),
    ).toEqual([{ read: body }]);
    const zipped = gzipSync(Buffer.from(text));
    expect(
      await answersOf((socket) => {
        socket.write(`${head('content-encoding: gzip\r\n')}${zipped.length.toString(16)}\r\n`);
        socket.write(zipped);
        socket.write('\r\n0\r\n\r\n');
      }),
    ).toEqual([{ read: body }]);
    const over = await answersOf((socket) =>
      socket.write(`${head()}${chunk(`{"a":"${'x'.repeat(LIMIT)}"}`)}0\r\n\r\n`),
    );
    expect(over).toEqual([expect.objectContaining({ code: 413 })]);
  });
});
