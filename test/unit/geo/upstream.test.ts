import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { redirectServer } from '../../../libs/outbound-fetch';
import { createUpstream, type Outcome, type UpstreamOptions } from '../../../services/geo/upstream';
import { ENDLESS_BYTES, pump } from '../../support/fake-server';

/** A stand-in external server whose behaviour each test sets. */
let handler: (req: IncomingMessage, res: ServerResponse) => void;
const paths: string[] = [];
const server: Server = createServer((req, res) => {
  paths.push(req.url ?? '');
  handler(req, res);
});
let base: string;

/** Speaks HTTP/1.0 by hand: an answer with no length, ended by closing the connection. */
const sockets = new Set<Socket>();
let rawServerSent = 0;
const rawServer = createTcpServer((socket) => {
  sockets.add(socket);
  socket.on('error', () => undefined);
  socket.once('data', () => {
    socket.write('HTTP/1.0 200 OK\r\ncontent-type: application/json\r\n\r\n');
    pump(socket, (n) => (rawServerSent = n));
  });
});
let rawBase: string;

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await new Promise<void>((resolve) => rawServer.listen(0, '127.0.0.1', resolve));
  rawBase = `http://127.0.0.1:${(rawServer.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => server.close(resolve));
  await new Promise((resolve) => rawServer.close(resolve));
});

beforeEach(() => {
  paths.length = 0;
});

/** Any answer taken as it is: the body's length. */
const length = (_status: number, text: string): Outcome<number> => ({
  ok: true,
  value: text.length,
});

function upstream(overrides: Partial<UpstreamOptions> = {}) {
  const reasons: string[] = [];
  let clock = 0;
  const client = createUpstream('Test', {
    baseUrl: base,
    timeoutMs: 5000,
    maxAnswerBytes: 1024,
    failureThreshold: 1,
    now: () => clock,
    onFailure: (reason) => reasons.push(reason),
    ...overrides,
  });
  return { client, reasons, advance: (ms: number) => (clock += ms) };
}

describe('createUpstream answer size', () => {
  it('reads an answer of exactly maxAnswerBytes', async () => {
    handler = (_req, res) => res.end('x'.repeat(1024));
    const { client, reasons } = upstream();
    await expect(client.get('/a', {}, length)).resolves.toEqual({ ok: true, value: 1024 });
    expect(reasons).toEqual([]);
  });

  it('refuses an answer whose Content-Length is over the limit without reading it', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-length': String(ENDLESS_BYTES) });
      res.write('['); // and nothing more: reading on would wait for the timeout
    };
    const { client, reasons } = upstream();
    await expect(client.get('/a', {}, length)).resolves.toMatchObject({ ok: false });
    expect(reasons).toEqual([
      `HTTP 200: answer over the 1024-byte limit (Content-Length ${ENDLESS_BYTES}); circuit open for 30000 ms after 1 consecutive failures`,
    ]);
  });

  it('stops reading a chunked answer (no Content-Length) once it passes the limit', async () => {
    let sent = 0;
    let finished = true;
    const closed = new Promise<void>((resolve) => {
      handler = (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.once('close', () => {
          finished = res.writableFinished;
          resolve();
        });
        pump(res, (n) => (sent = n));
      };
    });
    const { client, reasons } = upstream();
    await expect(client.get('/a', {}, length)).resolves.toMatchObject({ ok: false });
    await closed;
    expect(finished).toBe(false); // the connection was dropped before the server was done
    expect(sent).toBeLessThan(ENDLESS_BYTES);
    expect(reasons[0]).toMatch(/^HTTP 200: answer over the 1024-byte limit;/);
  });

  it('stops reading an answer ended by closing the connection (no length at all)', async () => {
    rawServerSent = 0;
    const { client, reasons } = upstream({ baseUrl: rawBase });
    await expect(client.get('/a', {}, length)).resolves.toMatchObject({ ok: false });
    expect(reasons[0]).toMatch(/^HTTP 200: answer over the 1024-byte limit;/);
    expect(rawServerSent).toBeLessThan(ENDLESS_BYTES);
  });
});

describe('createUpstream redirects', () => {
  it.each([301, 302, 307, 308])(
    'does not follow a %p, and counts it as a failure',
    async (status) => {
      handler = (req, res) => {
        if (req.url === '/a') res.writeHead(status, { location: '/elsewhere' });
        res.end('{}');
      };
      const { client, reasons } = upstream();
      await expect(client.get('/a', {}, length)).resolves.toMatchObject({ ok: false });
      expect(paths).toEqual(['/a']);
      expect(reasons[0]).toMatch(
        // Its own server, the path it named left out.
        new RegExp(
          `^HTTP ${status}: redirect not followed \\(to http://127\\.0\\.0\\.1:\\d+\\); circuit open`,
        ),
      );
    },
  );
});

describe('createUpstream circuit breaker', () => {
  it('skips the server during the cool-down after an oversized answer, then probes it', async () => {
    handler = (_req, res) => res.end('x'.repeat(2000));
    const { client, reasons, advance } = upstream({ coolDownMs: 1000 });
    await client.get('/a', {}, length);
    handler = (_req, res) => res.end('ok');
    await expect(client.get('/b', {}, length)).resolves.toMatchObject({ ok: false });
    expect(paths).toEqual(['/a']);
    expect(reasons).toHaveLength(1); // skipped, counted for the next report
    advance(1000);
    await expect(client.get('/c', {}, length)).resolves.toEqual({ ok: true, value: 2 });
    expect(paths).toEqual(['/a', '/c']);
  });

  it.each<[string, Partial<UpstreamOptions>]>([
    ['a zero answer limit', { maxAnswerBytes: 0 }],
    ['a fractional answer limit', { maxAnswerBytes: 1.5 }],
  ])('refuses %s at creation', (_name, overrides) => {
    expect(() => upstream(overrides)).toThrow(RangeError);
  });
});

describe('redirectServer', () => {
  it('names the server a redirect points to, never its path or query', () => {
    const asked = 'https://geo.example/search?q=12+Adeola+Odeku';
    expect(redirectServer(asked, '/search?q=12+Adeola+Odeku&page=2')).toBe('https://geo.example');
    expect(redirectServer(asked, 'https://other.example:8443/x?lat=6.4')).toBe(
      'https://other.example:8443',
    );
    expect(redirectServer(asked, 'mailto:ops@geo.example')).toBe('an address that names no server');
    expect(redirectServer(asked, 'http://[::1')).toBe('an unreadable address');
    expect(redirectServer(asked, null)).toBeNull();
  });
});
