import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Writable } from 'node:stream';

/**
 * A stand-in for a server we do not run (a provider, a receiver), answering as each test sets,
 * and what misbehaving ones send: answers too large to hold, redirects elsewhere.
 */

/** Far more than any cap; a client that reads it all holds 64 MB. */
export const ENDLESS_BYTES = 64 * 1024 * 1024;

/** Writes up to ENDLESS_BYTES as fast as the reader takes them, reporting the count. */
export function pump(out: Writable, sent: (n: number) => void): void {
  const chunk = Buffer.alloc(16 * 1024, 0x20);
  let total = 0;
  const go = () => {
    while (total < ENDLESS_BYTES && !out.destroyed) {
      total += chunk.length;
      sent(total);
      if (!out.write(chunk)) {
        out.once('drain', go);
        return;
      }
    }
    if (!out.destroyed) out.end();
  };
  go();
}

export type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export interface FakeServer {
  url: string;
  /** The path of every request received, in order. */
  paths: string[];
  /** What the next requests get. */
  handle(handler: Handler): void;
  close(): Promise<void>;
}

export async function startFakeServer(
  handler: Handler = (_req, res) => res.end(),
): Promise<FakeServer> {
  const paths: string[] = [];
  let current = handler;
  const server = createServer((req, res) => {
    paths.push(req.url ?? '');
    req.resume();
    current(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    paths,
    handle: (next) => (current = next),
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * For the enclosing block: `server`, the third party, and `elsewhere`, where its redirects
 * point (nothing may reach it); both paths lists emptied before each test.
 */
export function useFakeServers(): { server: FakeServer; elsewhere: FakeServer } {
  const servers = {} as { server: FakeServer; elsewhere: FakeServer };
  beforeAll(async () => {
    servers.server = await startFakeServer();
    servers.elsewhere = await startFakeServer();
  });
  afterAll(async () => {
    await servers.server?.close();
    await servers.elsewhere?.close();
  });
  beforeEach(() => {
    servers.server.paths.length = 0;
    servers.elsewhere.paths.length = 0;
  });
  return servers;
}

/** An answer declaring ENDLESS_BYTES and sending one byte: reading on waits for the deadline. */
export const declaredTooLarge: Handler = (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': ENDLESS_BYTES });
  res.write('{');
};

/**
 * An answer without Content-Length (chunked) streaming ENDLESS_BYTES; `result` tells, once the
 * connection closed, how much was sent and whether the answer was sent whole.
 */
export function streamedTooLarge(status = 200): {
  handler: Handler;
  result: Promise<{ sent: number; finished: boolean }>;
} {
  let handler: Handler = () => undefined;
  const result = new Promise<{ sent: number; finished: boolean }>((resolve) => {
    handler = (_req, res) => {
      let sent = 0;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.once('close', () => resolve({ sent, finished: res.writableFinished }));
      pump(res, (n) => (sent = n));
    };
  });
  return { handler, result };
}

/** Answers `status` with a Location on `target` (another server, which must get nothing). */
export const redirectTo =
  (status: number, target: string): Handler =>
  (req, res) => {
    res.writeHead(status, { location: `${target}${req.url ?? '/'}` });
    res.end('{}');
  };
