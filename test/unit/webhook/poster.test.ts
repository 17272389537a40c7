import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ERROR_BYTES, EXCERPT_BYTES } from '../../../services/webhook/dispatch-rules';
import { describeFailure, post } from '../../../services/webhook/poster';
import {
  ENDLESS_BYTES,
  redirectTo,
  streamedTooLarge,
  useFakeServers,
} from '../../support/fake-server';

/** A local endpoint that counts what reaches it and answers as told. */
let server: Server;
let reached = 0;
let answer: (res: ServerResponse) => void = (res) => res.end('ok');

beforeAll(async () => {
  server = createServer((req, res) => {
    reached += 1;
    req.resume();
    req.on('end', () => answer(res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const url = () => `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
const input = (allowPrivate: boolean) => ({
  url: url(),
  body: '{"id":"e"}',
  headers: { 'waybill-signature': 't=1,v1=00' },
  timeoutMs: 500,
  policy: { requireHttps: false, allowPrivate },
});

describe('post', () => {
  it('never connects to a loopback address unless private targets are allowed', async () => {
    reached = 0;
    const refused = await post(input(false));
    expect(refused).toMatchObject({ statusCode: null });
    expect(refused.error).toMatch(/^url points to/);
    expect(reached).toBe(0);
    expect(await post(input(true))).toMatchObject({
      statusCode: 200,
      error: null,
      responseExcerpt: 'ok',
    });
    expect(reached).toBe(1);
  });

  it('refuses http where https is required', async () => {
    const refused = await post({
      ...input(true),
      policy: { requireHttps: true, allowPrivate: true },
    });
    expect(refused.error).toMatch(/https/);
  });

  it('keeps the status of any answer, an excerpt of its body, and gives up at the deadline', async () => {
    answer = (res) => {
      res.statusCode = 500;
      res.end('x'.repeat(10_000));
    };
    const failed = await post(input(true));
    expect(failed.statusCode).toBe(500);
    expect(failed.responseExcerpt).toBe(`${'x'.repeat(EXCERPT_BYTES - 3)}…`);
    answer = () => undefined; // never answers
    const hung = await post(input(true));
    expect(hung).toMatchObject({ statusCode: null, error: 'no answer within 500 ms' });
    answer = (res) => res.end('ok');
  });

  it('counts an answer whose status came before the deadline by its status, its body cut there', async () => {
    // Taken in and answered 200, then the body trickles past the deadline: sent again, it
    // would be a duplicate.
    answer = (res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('accepted');
    };
    const slow = await post(input(true));
    expect(slow).toMatchObject({ statusCode: 200, error: null, responseExcerpt: 'accepted' });
    expect(slow.durationMs).toBeGreaterThanOrEqual(450);
    // Reset mid-body, the same.
    answer = (res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('taken', () => setTimeout(() => res.socket?.destroy(), 20));
    };
    expect(await post(input(true))).toMatchObject({
      statusCode: 200,
      error: null,
      responseExcerpt: 'taken',
    });
    answer = (res) => res.end('ok');
  });

  it('keeps an excerpt of a binary answer in its bytes as sent, and characters split between chunks whole', async () => {
    const binary = Buffer.from(Array.from({ length: 4096 }, (_, i) => i % 256));
    answer = (res) => res.end(binary);
    const { responseExcerpt } = await post(input(true));
    expect(Buffer.byteLength(JSON.stringify(responseExcerpt)) - 2).toBeLessThanOrEqual(
      EXCERPT_BYTES,
    );
    expect(responseExcerpt).toMatch(/^␀␁␂/);
    expect(responseExcerpt).toMatch(/…$/);
    const split = Buffer.from('漢字 error');
    answer = (res) => {
      res.write(split.subarray(0, 1));
      res.end(split.subarray(1));
    };
    expect(await post(input(true))).toMatchObject({ responseExcerpt: '漢字 error' });
    answer = (res) => res.end('ok');
  });
});

describe('post against a receiver that misbehaves', () => {
  const servers = useFakeServers();
  const send = () => post({ ...input(true), url: `${servers.server.url}/hook`, timeoutMs: 5000 });

  it('keeps the excerpt of an answer declaring 64 MB and closes the connection, not waiting for the rest', async () => {
    servers.server.handle((_req, res) => {
      res.writeHead(200, { 'content-length': ENDLESS_BYTES });
      res.write('x'.repeat(4096)); // and nothing more: reading on would wait for the deadline
    });
    expect(await send()).toMatchObject({
      statusCode: 200,
      error: null,
      responseExcerpt: `${'x'.repeat(EXCERPT_BYTES - 3)}…`,
    });
  });

  it('stops reading an answer without a length once the excerpt is full', async () => {
    const { handler, result } = streamedTooLarge();
    servers.server.handle(handler);
    expect(await send()).toMatchObject({ statusCode: 200, error: null });
    const { sent, finished } = await result;
    expect(finished).toBe(false);
    expect(sent).toBeLessThan(ENDLESS_BYTES);
  });

  it.each([301, 302, 307, 308])(
    'does not follow a %p to another server: a failure naming where it pointed',
    async (status) => {
      servers.server.handle(redirectTo(status, servers.elsewhere.url));
      expect(await send()).toMatchObject({
        statusCode: status,
        error: `HTTP ${status}: redirect not followed (to ${servers.elsewhere.url}/hook)`,
        responseExcerpt: null,
      });
      expect(servers.elsewhere.paths).toEqual([]);
    },
  );
  it('names where a redirect pointed without its query, which may hold the endpoint’s token', async () => {
    servers.server.handle((_req, res) => {
      res.writeHead(301, { location: '/hook/?token=s3cret#top' });
      res.end();
    });
    expect(await send()).toMatchObject({
      statusCode: 301,
      error: `HTTP 301: redirect not followed (to ${servers.server.url}/hook/)`,
    });
  });
});

describe('describeFailure', () => {
  const failure = (code: string, hostname: string, message = `${code} ${hostname}`) =>
    Object.assign(new Error(message), { code, hostname });

  it('tells a name that does not resolve as one that resolves only to private addresses', () => {
    const told =
      'webhook target hooks.internal has no public address now; use a host name with a public DNS record';
    expect(
      describeFailure(
        failure('ENOTFOUND', 'hooks.internal', 'getaddrinfo ENOTFOUND hooks.internal'),
      ),
    ).toBe(told);
    expect(describeFailure(failure('EAI_AGAIN', 'hooks.internal'))).toBe(told);
    expect(describeFailure(failure('EUNSAFETARGET', 'hooks.internal', 'anything'))).toBe(told);
  });

  it('keeps the code and message of other failures, and of an IP literal refused', () => {
    expect(
      describeFailure(failure('ECONNREFUSED', 'hooks.example.com', 'connect ECONNREFUSED')),
    ).toBe('ECONNREFUSED: connect ECONNREFUSED');
    expect(
      describeFailure(failure('EUNSAFETARGET', '10.0.0.1', 'webhook target is 10.0.0.1')),
    ).toBe('EUNSAFETARGET: webhook target is 10.0.0.1');
  });

  it("cuts a failure naming all of a certificate's names, or a long host name", () => {
    const altnames = `Hostname/IP does not match certificate's altnames: ${'DNS:a.example.com, '.repeat(500)}`;
    const told = describeFailure(
      failure('ERR_TLS_CERT_ALTNAME_INVALID', 'hooks.example.com', altnames),
    );
    expect(told).toMatch(/^ERR_TLS_CERT_ALTNAME_INVALID: Hostname\/IP does not match .*…$/);
    expect(Buffer.byteLength(told)).toBeLessThanOrEqual(ERROR_BYTES);
    const host = `${'a'.repeat(60)}.`.repeat(30);
    expect(Buffer.byteLength(describeFailure(failure('ENOTFOUND', host)))).toBeLessThanOrEqual(
      ERROR_BYTES,
    );
  });
});
