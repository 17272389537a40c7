import type { ServerResponse } from 'node:http';
import { PassThrough, Readable } from 'node:stream';
import { Errors } from 'moleculer';
import { SAFE_RETRIES, type Retry } from '../../../libs/contracts';
import {
  BODY_TOO_LARGE_WHEN_READ,
  badRequest,
  conflict,
  serviceBusy,
  toHttpError,
  upstreamTimeout,
} from '../../../libs/errors';
import type { HttpRoute } from '../../../libs/service';
import { TransferDesk, transferAgent } from '../../../libs/transfer';
import type { Claim, IdempotencyStore } from '../../../services/gateway/idempotency';
import {
  afterCall,
  beforeHandling,
  callAction,
  responseHeaders,
  sendResponse,
  unsentCall,
  webOverrides,
  writeError,
  type CallDeps,
} from '../../../services/gateway/web-overrides';
import { cutStatus, sendJson, UNREAD_BODY_GRACE_MS } from '../../../services/gateway/http';
import { rejectionOf } from '../helpers';
import { FakeResponse, fakeRequest } from './fake-http';

const agent = transferAgent();
afterAll(() => agent.destroy());

describe('responseHeaders', () => {
  it("takes the service's headers and Location, leaving meta alone", () => {
    const meta = { $responseHeaders: { 'X-Total': '3' }, $location: '/api/package/p-1' };
    expect(responseHeaders(meta)).toEqual({ 'X-Total': '3', Location: '/api/package/p-1' });
    expect(meta.$responseHeaders).toEqual({ 'X-Total': '3' });
  });

  it('is empty without them, and ignores a Location that is not text', () => {
    expect(responseHeaders({})).toEqual({});
    expect(responseHeaders({ $location: 42 })).toEqual({});
  });
});

describe('afterCall', () => {
  const routes: Record<string, { status?: 200 | 201 | 204; message: string }> = {
    'package.save': { status: 201, message: 'Package saved' },
    'package.remove': { status: 204, message: 'Gone' },
    'file.upload': { message: 'Uploaded' },
  };
  const hook = afterCall((name) => routes[name]);
  const run = (action: string | undefined, data: unknown, meta: Record<string, unknown> = {}) => {
    const res = new FakeResponse();
    const req = fakeRequest({ alias: action ? { action } : undefined });
    const out = hook({ meta }, {}, req, res.asServerResponse(), data);
    return { out, status: res.statusCode };
  };

  it("wraps data in the success envelope with the route's status and message", () => {
    expect(run('package.save', { id: 'p-1' })).toEqual({
      out: { success: true, message: 'Package saved', data: { id: 'p-1' } },
      status: 201,
    });
  });

  it("takes the status a service set in meta over the route's", () => {
    expect(run('package.save', {}, { $statusCode: 200 }).status).toBe(200);
  });

  it('answers nothing for a 204', () => {
    expect(run('package.remove', { ignored: true })).toEqual({ out: null, status: 204 });
  });

  it('lets bytes and streams through as they are', () => {
    const bytes = Buffer.from('png');
    const stream = Readable.from([bytes]);
    expect(run('file.upload', bytes).out).toBe(bytes);
    expect(run('file.upload', stream).out).toBe(stream);
  });

  it('finds the route of a stream alias, and defaults to 200 OK without one', () => {
    expect(run('stream:file.upload', {}).out).toMatchObject({ message: 'Uploaded' });
    expect(run(undefined, [1])).toEqual({
      out: { success: true, message: 'OK', data: [1] },
      status: 200,
    });
  });
});

describe('sendResponse', () => {
  it('writes JSON with its length, the status set before, and the headers from meta', () => {
    const res = new FakeResponse();
    res.statusCode = 201;
    const req = fakeRequest({
      meta: { $location: '/api/package/p-1', $responseHeaders: { 'X-Extra': 'yes' } },
    });
    sendResponse(req, res.asServerResponse(), { success: true });
    expect(res.statusCode).toBe(201);
    expect(res.getHeader('content-type')).toBe('application/json; charset=utf-8');
    expect(res.getHeader('content-length')).toBe(res.body.length);
    expect(res.getHeader('location')).toBe('/api/package/p-1');
    expect(res.getHeader('x-extra')).toBe('yes');
    expect(res.json()).toEqual({ success: true });
  });

  it('ends without a body for null', () => {
    const res = new FakeResponse();
    res.statusCode = 204;
    sendResponse(fakeRequest(), res.asServerResponse(), null);
    expect(res.writableEnded).toBe(true);
    expect(res.body.length).toBe(0);
    expect(res.hasHeader('content-type')).toBe(false);
  });

  it('writes a Buffer as octet-stream unless the service named its type', () => {
    const plain = new FakeResponse();
    sendResponse(fakeRequest(), plain.asServerResponse(), Buffer.from('abc'));
    expect(plain.getHeader('content-type')).toBe('application/octet-stream');
    expect(plain.getHeader('content-length')).toBe(3);
    expect(plain.body.toString()).toBe('abc');

    const typed = new FakeResponse();
    const req = fakeRequest({ meta: { $responseHeaders: { 'Content-Type': 'image/png' } } });
    sendResponse(req, typed.asServerResponse(), Buffer.from('png'));
    expect(typed.getHeader('content-type')).toBe('image/png');
  });

  it('pipes a stream through', async () => {
    const res = new FakeResponse();
    const data = Readable.from([Buffer.from('one '), Buffer.from('two')]);
    sendResponse(fakeRequest(), res.asServerResponse(), data);
    await res.done();
    expect(res.getHeader('content-type')).toBe('application/octet-stream');
    expect(res.body.toString()).toBe('one two');
  });

  it('closes the source when the client leaves mid-download', async () => {
    const res = new FakeResponse();
    const source = new PassThrough();
    sendResponse(fakeRequest(), res.asServerResponse(), source);
    source.write('first chunk');
    res.destroy();
    await res.done();
    await new Promise((r) => setImmediate(r));
    expect(source.destroyed).toBe(true);
  });

  it('closes the source at once when the client left before the answer, or one is under way', () => {
    // Its 'close' came while S3 answered: a listener added now would never hear it.
    const gone = new FakeResponse();
    gone.destroy();
    const source = new PassThrough();
    sendResponse(fakeRequest(), gone.asServerResponse(), source);
    expect(source.destroyed).toBe(true);

    const begun = new FakeResponse();
    begun.write('already');
    const late = new PassThrough();
    sendResponse(fakeRequest(), begun.asServerResponse(), late);
    expect(late.destroyed).toBe(true);
    expect(begun.body.toString()).toBe('already');
  });

  it('answers the error envelope when the source fails before its first byte, and cuts the answer after', async () => {
    const errors: unknown[] = [];
    const onError = (_req: unknown, res: ServerResponse, err: unknown) => {
      errors.push(err);
      res.end('{"error":true}');
    };
    const req = fakeRequest();
    (req as { $ctx?: unknown }).$ctx = {
      meta: { $responseHeaders: { 'Content-Disposition': 'attachment', 'Content-Length': '9' } },
    };
    const early = new FakeResponse();
    early.setHeader('X-Request-Id', 'r-1');
    const broken = new PassThrough();
    sendResponse(req, early.asServerResponse(), broken, onError);
    broken.destroy(new Error('socket hang up'));
    await early.done();
    expect(errors).toEqual([
      expect.objectContaining({
        code: 502,
        message: 'The file could not be read to the end; retry',
      }),
    ]);
    // The download's headers gave way to the error's.
    expect(early.getHeader('content-disposition')).toBeUndefined();
    expect(early.getHeader('content-length')).toBeUndefined();
    expect(early.getHeader('content-type')).toBeUndefined();
    expect(early.getHeader('x-request-id')).toBe('r-1');
    // A deadline's own error is answered as itself.
    const timed = new FakeResponse();
    const slow = new PassThrough();
    sendResponse(fakeRequest(), timed.asServerResponse(), slow, onError);
    slow.destroy(upstreamTimeout('The download took longer than FILE_TIMEOUT_MS; it was cut'));
    await timed.done();
    expect(errors[1]).toMatchObject({ code: 504 });

    // Begun: the answer is cut, recorded as the source's failure.
    const late = new FakeResponse();
    const source = new PassThrough();
    sendResponse(fakeRequest(), late.asServerResponse(), source, onError);
    source.write('first chunk');
    await new Promise((r) => setImmediate(r));
    source.destroy(new Error('socket hang up'));
    await late.done();
    expect(errors).toHaveLength(2);
    expect(late.destroyed).toBe(true);
    expect(cutStatus(late.asServerResponse())).toBe(502);
  });

  it('does nothing once the headers are out', () => {
    const res = new FakeResponse();
    res.write('already');
    sendResponse(fakeRequest(), res.asServerResponse(), { late: true });
    expect(res.body.toString()).toBe('already');
  });
});

describe('writeError', () => {
  const logger = () => {
    const errors: unknown[][] = [];
    return { errors, logger: () => ({ error: (...args: unknown[]) => errors.push(args) }) };
  };

  it('writes the error envelope with the status, the request and field errors', () => {
    const log = logger();
    const res = new FakeResponse();
    const req = fakeRequest({ method: 'POST', url: '/api/pricing?x=1' });
    const err = badRequest('Validation failed', [{ field: 'a', message: 'a is required' }]);
    writeError({ environment: 'staging', logger: log.logger }, req, res.asServerResponse(), err);
    expect(res.statusCode).toBe(400);
    expect(res.getHeader('content-type')).toMatch(/application\/json/);
    expect(res.json()).toEqual({
      statusCode: 400,
      method: 'POST',
      timestamp: expect.any(String),
      path: '/api/pricing',
      url: 'http://gateway.test/api/pricing?x=1',
      message: 'Validation failed',
      environment: 'staging',
      errors: [{ field: 'a', message: 'a is required' }],
    });
    expect(log.errors).toEqual([]);
  });

  it('cuts a body its answer did not wait for, refused or not, that goes on arriving long after it, and only such a body', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    try {
      const refuse = (headers: Record<string, string>) => {
        const res = new FakeResponse();
        const req = fakeRequest({ method: 'POST', url: '/file/upload/bulk', headers });
        const cut = jest.spyOn(req, 'destroy');
        expect(beforeHandling(req, res.asServerResponse())).toBeUndefined();
        writeError(
          { environment: 'live', logger: logger().logger },
          req,
          res.asServerResponse(),
          badRequest('The first part must be a file'),
        );
        return Object.assign(req as unknown as PassThrough, { cut });
      };
      // A probe answered 200 while its client streams a body it never reads: cut all the same.
      const probeRes = new FakeResponse();
      const probe = fakeRequest({ url: '/health/live', headers: { 'content-length': '1e10' } });
      const probeCut = jest.spyOn(probe, 'destroy');
      beforeHandling(probe, probeRes.asServerResponse());
      sendJson(probeRes.asServerResponse(), 200, { status: 'ok' });
      (probe as unknown as PassThrough).resume();
      await new Promise((resolve) => setImmediate(resolve));
      jest.advanceTimersByTime(UNREAD_BODY_GRACE_MS);
      expect(probeCut).toHaveBeenCalledTimes(1);
      // An upload refused at its first part whose client goes on sending: read and passed
      // over for a while (a client that reads the answer only once it has sent its body must
      // not lose it to a reset), then cut.
      const streaming = refuse({ 'transfer-encoding': 'chunked' });
      streaming.resume();
      await new Promise((resolve) => setImmediate(resolve));
      jest.advanceTimersByTime(UNREAD_BODY_GRACE_MS - 1);
      expect(streaming.cut).not.toHaveBeenCalled();
      jest.advanceTimersByTime(1);
      expect(streaming.cut).toHaveBeenCalledTimes(1);
      // One whose body ends within the grace keeps its connection for the next request.
      const finishing = refuse({ 'content-length': '5000000' });
      finishing.resume();
      await new Promise((resolve) => setImmediate(resolve));
      // Its last bytes read (the stream's own end would destroy it: a fake's autoDestroy).
      finishing.emit('end');
      jest.advanceTimersByTime(UNREAD_BODY_GRACE_MS);
      expect(finishing.cut).not.toHaveBeenCalled();
      // A request without a body is nothing to cut.
      const bodiless = refuse({});
      await new Promise((resolve) => setImmediate(resolve));
      jest.advanceTimersByTime(UNREAD_BODY_GRACE_MS);
      expect(bodiless.cut).not.toHaveBeenCalled();
    } finally {
      jest.useRealTimers();
    }
  });

  it('reads a target in absolute form as its path, the host it names as the Host', () => {
    for (const [target, path] of [
      ['http://api.example.com/api/countries?limit=2', '/api/countries?limit=2'],
      ['HTTPS://api.example.com', '/'],
      ['http://api.example.com?x=1', '/?x=1'],
      ['/api/countries', '/api/countries'],
    ]) {
      const req = fakeRequest({ url: target });
      expect(beforeHandling(req, new FakeResponse().asServerResponse())).toBeUndefined();
      expect(req.url).toBe(path);
      expect(req.headers.host).toBe(target.startsWith('/') ? 'gateway.test' : 'api.example.com');
    }
  });

  it('refuses (400) an HTTP/1.1 request that names no host, not an HTTP/1.0 one', () => {
    const req = fakeRequest();
    delete req.headers.host;
    Object.assign(req, { httpVersion: '1.1' });
    expect(beforeHandling(req, new FakeResponse().asServerResponse())).toMatchObject({
      code: 400,
      message: 'The request names no host: send the Host header, as every HTTP/1.1 request must',
    });
    Object.assign(req, { httpVersion: '1.0' });
    expect(beforeHandling(req, new FakeResponse().asServerResponse())).toBeUndefined();
  });

  it('sends Retry-After when the error says when to retry', () => {
    const res = new FakeResponse();
    const err = conflict('held', { retryAfter: 30 });
    writeError(
      { environment: 'live', logger: logger().logger },
      fakeRequest(),
      res.asServerResponse(),
      err,
    );
    expect(res.statusCode).toBe(409);
    expect(res.getHeader('retry-after')).toBe('30');
    const plain = new FakeResponse();
    writeError(
      { environment: 'live', logger: logger().logger },
      fakeRequest(),
      plain.asServerResponse(),
      conflict('taken'),
    );
    expect(plain.hasHeader('retry-after')).toBe(false);
  });

  it("says how to retry a request whose outcome is unknown, by its action's retry kind", () => {
    const target = { action: 'order.request', nodeID: 'order-1' };
    /** `claimed`: the request claimed an Idempotency-Key (`claimForRequest` named its token). */
    const messageOf = (err: unknown, kind: Retry | undefined, claimed = false) => {
      const res = new FakeResponse();
      const headers = claimed ? { 'idempotency-key': 'k-1' } : undefined;
      const meta = claimed ? { idempotencyToken: 'token-1' } : {};
      writeError(
        { environment: 'live', logger: logger().logger, retryOf: () => kind },
        fakeRequest({ method: 'POST', headers, meta, alias: { action: 'order.request' } }),
        res.asServerResponse(),
        err,
      );
      return { status: res.statusCode, message: (res.json() as { message: string }).message };
    };
    const timeout = new Errors.RequestTimeoutError(target);
    const unknown = 'The request timed out; it may have completed or may still complete.';
    // A safe action, or a request no alias matched: retrying is harmless.
    expect(messageOf(timeout, 'safe')).toEqual({
      status: 504,
      message: 'The request timed out; retry it',
    });
    expect(messageOf(timeout, undefined).message).toBe('The request timed out; retry it');
    expect(messageOf(timeout, 'keyed')).toEqual({
      status: 504,
      message: `${unknown} Check before sending it again, and send an Idempotency-Key with such requests so that a retry gets the first outcome instead of repeating it`,
    });
    expect(messageOf(timeout, 'keyed', true).message).toBe(
      `${unknown} Retry with the same Idempotency-Key to get its outcome without repeating it`,
    );
    // A key cannot make an action that does not name its records after it safe to repeat: it
    // is not run again under that key.
    expect(messageOf(timeout, 'never').message).toBe(`${unknown} Check before sending it again`);
    expect(messageOf(timeout, 'never', true).message).toBe(
      `${unknown} Check before sending it again: it is not run again under this Idempotency-Key, so send a new key to run it again`,
    );
    const rejected = messageOf(new Errors.RequestRejectedError(target), 'keyed');
    expect(rejected.status).toBe(503);
    expect(rejected.message).toMatch(
      /^The service answering the request went away before it answered; it may have completed/,
    );
    // Refusals, a service that never started the work, and a service's own 504 keep their message.
    expect(messageOf(badRequest('no'), 'never').message).toBe('no');
    expect(messageOf(new Errors.ServiceNotAvailableError(target), 'never').message).toMatch(
      /temporarily unavailable; retry in a few seconds/,
    );
    expect(messageOf(upstreamTimeout('The payment provider did not answer'), 'never').message).toBe(
      'The payment provider did not answer',
    );
  });

  it('logs a failure of ours and answers a generic 500', () => {
    const log = logger();
    const res = new FakeResponse();
    const err = new Error('mongodb://secret@db is down');
    writeError(
      { environment: 'live', logger: log.logger },
      fakeRequest(),
      res.asServerResponse(),
      err,
    );
    expect(res.statusCode).toBe(500);
    expect(res.body.toString()).not.toMatch(/secret/);
    expect(log.errors).toHaveLength(1);
    expect(log.errors[0][1]).toMatchObject({ requestId: 'req-1', error: err });
  });

  it('does not log a refusal for load that says when to come back', () => {
    const log = logger();
    const res = new FakeResponse();
    const err = serviceBusy('The file service is busy with other uploads; retry in 5 seconds', 5);
    // As it arrives from another node: a plain object.
    const wire = JSON.parse(JSON.stringify({ ...err, message: err.message }));
    writeError(
      { environment: 'live', logger: log.logger },
      fakeRequest(),
      res.asServerResponse(),
      wire,
    );
    expect(res.statusCode).toBe(503);
    expect(res.getHeader('retry-after')).toBe('5');
    expect(res.json()).toMatchObject({ statusCode: 503, message: err.message });
    expect(log.errors).toEqual([]);
  });

  it('cuts the connection when the headers were already sent', () => {
    const res = new FakeResponse();
    res.write('half a download');
    writeError(
      { environment: 'live', logger: logger().logger },
      fakeRequest(),
      res.asServerResponse(),
      new Error('S3 went away'),
    );
    expect(res.destroyed).toBe(true);
    expect(res.body.toString()).toBe('half a download');
  });
});

describe('callAction', () => {
  const ROUTES: Record<string, Pick<HttpRoute, 'group' | 'method' | 'body' | 'binary'>> = {
    'package.save': { group: 'api', method: 'POST' },
    'file.download': { group: 'file', method: 'POST', binary: true },
  };
  function deps(overrides: Partial<CallDeps> = {}) {
    const sent: unknown[] = [];
    const warnings: unknown[] = [];
    const store = { claim: async () => undefined } as unknown as IdempotencyStore;
    const d: CallDeps = {
      transfers: agent,
      idempotency: store,
      httpOf: (name) => ROUTES[name],
      retryOf: () => undefined,
      logger: () => ({ warn: (...args: unknown[]) => warnings.push(args) }),
      send: (_req, _res, data) => sent.push(data),
      ...overrides,
    };
    return { deps: d, sent, warnings };
  }
  const route = {
    callOptions: { timeout: 500 },
    onAfterCall: (_ctx: unknown, _route: unknown, _req: unknown, res: { statusCode: number }) => {
      res.statusCode = 201;
      return { wrapped: true };
    },
  };

  it('calls the endpoint with the params and a copy of the call options, then sends', async () => {
    const seen: unknown[][] = [];
    const endpoint = { local: true, action: {} };
    const req = fakeRequest({ endpoint, call: (...args) => seen.push(args) });
    const { deps: d, sent } = deps();
    const res = new FakeResponse();
    expect(await callAction(d, route, req, res.asServerResponse(), { a: 1 }, false)).toBe(true);
    expect(seen).toEqual([[endpoint, { a: 1 }, { timeout: 500, retries: 0 }]]);
    expect(seen[0][2]).not.toBe(route.callOptions);
    expect(sent).toEqual([{ wrapped: true }]);
    expect(res.statusCode).toBe(201);
  });

  it("asks moleculer to repeat a lost call as often as the action's retry kind allows", async () => {
    const kinds: Record<string, Retry> = {
      'geo.countries': 'safe',
      'package.save': 'keyed',
      'account.createUser': 'never',
    };
    const retriesOf = async (action: string, meta: Record<string, unknown> = {}) => {
      const seen: Record<string, unknown>[] = [];
      const req = fakeRequest({
        alias: { action },
        meta,
        endpoint: { local: true },
        call: (_e, _p, opts) => seen.push(opts),
      });
      const { deps: d } = deps({ retryOf: (name) => kinds[name] });
      await callAction(d, route, req, new FakeResponse().asServerResponse(), {}, false);
      return seen[0].retries;
    };
    expect(await retriesOf('geo.countries')).toBe(SAFE_RETRIES);
    expect(await retriesOf('package.save', { idempotencyToken: 'token-1' })).toBe(SAFE_RETRIES);
    expect(await retriesOf('package.save')).toBe(0);
    expect(await retriesOf('account.createUser', { idempotencyToken: 'token-1' })).toBe(0);
    expect(await retriesOf('gateway.unknown')).toBe(0);
  });

  it('hands a local service the request itself as the stream', async () => {
    const seen: Record<string, unknown>[] = [];
    const req = fakeRequest({ endpoint: { local: true }, call: (_e, _p, opts) => seen.push(opts) });
    await callAction(deps().deps, {}, req, new FakeResponse().asServerResponse(), {}, true);
    expect(seen[0].stream).toBe(req);
  });

  describe('with a service on another node', () => {
    const desk = new TransferDesk({ host: '127.0.0.1', port: 0, fallbackHost: '127.0.0.1' });
    beforeAll(() => desk.listen());
    afterAll(() => desk.close());

    it('sends a body over a transfer, not the call, and answers what the service answered', async () => {
      const seen: unknown[][] = [];
      let received = '';
      const req = fakeRequest({
        endpoint: { local: false, id: 'file-node', action: { name: 'file.singleUpload' } },
        call: (...args) => {
          seen.push(args);
          return desk.expectBody(
            async (body) => {
              for await (const chunk of body) received += String(chunk);
              return { url: 'stored' };
            },
            () => undefined,
          );
        },
      });
      (req as unknown as PassThrough).end('the bytes');
      const { deps: d, sent } = deps();
      await callAction(d, route, req, new FakeResponse().asServerResponse(), {}, true);
      expect(seen).toEqual([
        [
          'file.openUpload',
          { action: 'file.singleUpload' },
          { timeout: 500, retries: 0, nodeID: 'file-node' },
        ],
      ]);
      expect(received).toBe('the bytes');
      expect(sent).toEqual([{ wrapped: true }]);
    });

    it("throws the service's error, and drains what the service left unread", async () => {
      const req = fakeRequest({
        endpoint: { local: false, id: 'file-node', action: { name: 'file.singleUpload' } },
        call: () =>
          desk.expectBody(
            async () => {
              throw serviceBusy('busy', 5);
            },
            () => undefined,
          ),
      });
      (req as unknown as PassThrough).write(Buffer.alloc(1024));
      const err = await rejectionOf(() =>
        callAction(deps().deps, {}, req, new FakeResponse().asServerResponse(), {}, true),
      );
      expect(err).toMatchObject({ message: 'busy', code: 503, data: { retryAfter: 5 } });
      expect(req.readableFlowing).toBe(true);
    });

    it('pulls bytes a service offers from another node, and sends them on', async () => {
      const req = fakeRequest({
        alias: { action: 'file.download' },
        endpoint: { local: false, id: 'file-node' },
        call: () => {
          req.$ctx!.meta.$transferTicket = desk.offer(Readable.from([Buffer.from('file bytes')]));
          return null;
        },
      });
      const { deps: d, sent } = deps();
      await callAction(d, {}, req, new FakeResponse().asServerResponse(), {}, false);
      expect(req.$ctx?.meta.$transferTicket).toBeUndefined();
      const [body] = sent as Readable[];
      let text = '';
      for await (const chunk of body) text += String(chunk);
      expect(text).toBe('file bytes');
    });

    it('refuses a ticket that is presented twice, or with another token', async () => {
      const ticket = desk.offer(Readable.from([Buffer.from('once')]));
      const forged = await fetch(ticket.url, { headers: { 'x-waybill-transfer-token': 'AAAA' } });
      expect(forged.status).toBe(404);
      const first = await fetch(ticket.url, {
        headers: { 'x-waybill-transfer-token': ticket.token },
      });
      expect(await first.text()).toBe('once');
      const again = await fetch(ticket.url, {
        headers: { 'x-waybill-transfer-token': ticket.token },
      });
      expect(again.status).toBe(404);
    });
  });

  function claiming(claim: Claim) {
    const calls: unknown[][] = [];
    const store = {
      claim: async (...args: unknown[]) => {
        calls.push(args);
        return claim;
      },
    } as unknown as IdempotencyStore;
    return { store, calls };
  }
  const keyed = (call: () => unknown, action = 'package.save') =>
    fakeRequest({
      method: 'POST',
      url: action === 'package.save' ? '/api/package' : '/file/download',
      headers: { 'idempotency-key': 'k-1' },
      meta: { user: { id: 'u-1' } },
      alias: { action },
      endpoint: { local: true },
      call,
    });

  it('replays a stored answer without calling the service', async () => {
    const { store } = claiming({
      kind: 'replay',
      response: { status: 201, headers: { Location: '/api/package/p-1' }, body: { id: 'p-1' } },
    });
    let called = false;
    const req = keyed(() => (called = true));
    const res = new FakeResponse();
    const { deps: d, sent } = deps({ idempotency: store });
    await callAction(d, route, req, res.asServerResponse(), {}, false);
    expect(called).toBe(false);
    expect(res.statusCode).toBe(201);
    expect(res.getHeader('idempotent-replayed')).toBe('true');
    expect(req.$ctx?.meta.$responseHeaders).toEqual({ Location: '/api/package/p-1' });
    expect(sent).toEqual([{ id: 'p-1' }]);
  });

  it('stores the answer of a first request, and warns when it could not', async () => {
    const completed: unknown[] = [];
    const { store } = claiming({
      kind: 'first',
      complete: async (response) => {
        completed.push(response);
        return false;
      },
      fail: async () => undefined,
    });
    const req = keyed(() => ({ id: 'p-1' }));
    req.$ctx!.meta.$location = '/api/package/p-1';
    const { deps: d, sent, warnings } = deps({ idempotency: store });
    await callAction(d, route, req, new FakeResponse().asServerResponse(), {}, false);
    expect(completed).toEqual([
      { status: 201, headers: { Location: '/api/package/p-1' }, body: { wrapped: true } },
    ]);
    expect(sent).toEqual([{ wrapped: true }]);
    expect(warnings).toHaveLength(1);
  });

  it('reports a failed call to the claim and rethrows', async () => {
    const failed: unknown[] = [];
    const { store } = claiming({
      kind: 'first',
      complete: async () => true,
      fail: async (...args) => {
        failed.push(args);
      },
    });
    const refusal = conflict('taken');
    const req = keyed(() => {
      throw refusal;
    });
    const { deps: d, sent } = deps({ idempotency: store });
    const err = await rejectionOf(() =>
      callAction(d, route, req, new FakeResponse().asServerResponse(), {}, false),
    );
    expect(err).toBe(refusal);
    expect(failed).toEqual([[refusal, 'package.save', false]]);
    expect(sent).toEqual([]);
  });

  it('claims no key on a route that does not take one: a download streams, nothing is kept', async () => {
    const { store, calls } = claiming({
      kind: 'first',
      complete: async () => true,
      fail: async () => undefined,
    });
    const file = Readable.from(['bytes']);
    const req = keyed(() => file, 'file.download');
    const { deps: d, sent } = deps({ idempotency: store });
    await callAction(d, {}, req, new FakeResponse().asServerResponse(), {}, false);
    expect(calls).toEqual([]);
    expect(sent).toEqual([file]);
    expect(req.$ctx?.meta.idempotencyToken).toBeUndefined();
  });
});

describe('webOverrides', () => {
  it('sends a 404 and any error through the one envelope writer', () => {
    const { methods, onError } = webOverrides({
      environment: 'staging',
      transfers: agent,
      idempotency: {} as IdempotencyStore,
      httpOf: () => undefined,
      retryOf: () => undefined,
      logger: () => ({ error: () => undefined, warn: () => undefined }),
    });
    const missing = new FakeResponse();
    methods.send404(fakeRequest({ method: 'PUT', url: '/nowhere' }), missing.asServerResponse());
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({
      message: 'No route for PUT /nowhere; see /docs for the routes',
    });
    for (const handler of [methods.errorHandler, onError]) {
      const res = new FakeResponse();
      handler(fakeRequest(), res.asServerResponse(), conflict('taken'));
      expect(res.statusCode).toBe(409);
    }
  });
});

describe('a call to another node that NATS would not carry', () => {
  const refused = () =>
    Object.assign(new Error('MAX_PAYLOAD_EXCEEDED'), { code: 'MAX_PAYLOAD_EXCEEDED' });

  it('is the 413 of a body that grew past a message once read, when it was the gateway’s own', () => {
    expect(toHttpError(unsentCall(refused()))).toMatchObject({
      status: 413,
      message: BODY_TOO_LARGE_WHEN_READ,
    });
  });

  it('stays what it is when it comes back from the service’s own call (naming its node)', () => {
    const remote = Object.assign(refused(), { nodeID: 'payment-1' });
    expect(unsentCall(remote)).toBe(remote);
    expect(toHttpError(unsentCall(remote)).status).toBe(500);
    const other = new Error('something else');
    expect(unsentCall(other)).toBe(other);
  });
});
