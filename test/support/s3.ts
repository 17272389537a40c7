import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { S3Client } from '@aws-sdk/client-s3';
import { createS3Client } from '../../services/file/store';

/** The bucket `scripts/infra` made for the tests and benchmarks. */
export const S3_BUCKET = process.env.S3_BUCKET ?? 'waybill';

/** A client of the S3 server `scripts/infra` runs (S3_* of its environment), straight to it. */
export function directS3(timeoutMs = 10_000): S3Client {
  return createS3Client({
    endpoint: process.env.S3_ENDPOINT as string,
    region: process.env.S3_REGION ?? 'us-east-1',
    bucket: S3_BUCKET,
    accessKeyId: process.env.S3_ACCESS_KEY_ID,
    secretAccessKey: process.env.S3_SECRET_ACCESS_KEY,
    timeoutMs,
  });
}

/** A request to S3 as the holding endpoint sees it. */
export interface S3Request {
  method?: string;
  url?: string;
}

/** Object writes: a PUT of a key under `uploads/` (S3 slow to store). */
export const OBJECT_WRITES = (req: S3Request) =>
  req.method === 'PUT' && /\/uploads\//.test(req.url ?? '');

/** Object reads: a GET of a key under `uploads/` (S3 slow to answer a download). */
export const OBJECT_READS = (req: S3Request) =>
  req.method === 'GET' && /\/uploads\//.test(req.url ?? '');

/** `req` sent on to the real S3 at `upstream` (its body still to write), its answer to `res`. */
function forwarded(
  upstream: URL,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): http.ClientRequest {
  const forward = http.request(
    {
      host: upstream.hostname,
      port: upstream.port,
      method: req.method,
      path: req.url,
      headers: req.headers,
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  forward.on('error', () => res.destroy());
  return forward;
}

/**
 * An S3 endpoint in front of the real one (`target`) that, while told to, holds every request
 * `holds` picks until released, and passes everything else straight on. While refusing deletes,
 * it answers every DELETE with S3's 500 instead.
 */
export async function holdingS3(target: string, holds: (req: S3Request) => boolean) {
  const upstream = new URL(target);
  let release = () => undefined as void;
  let released: Promise<void> | undefined;
  let held = 0;
  let deletes = 0;
  let refused = 0;
  let refusing = false;
  const server = http.createServer((req, res) => {
    if (req.method === 'DELETE' && refusing) {
      refused += 1;
      req.resume();
      res.writeHead(500, { 'content-type': 'application/xml' });
      res.end('<Error><Code>InternalError</Code><Message>refused by the test</Message></Error>');
      return;
    }
    const hold = holds(req) ? released : undefined;
    if (hold) held += 1;
    if (req.method === 'DELETE') deletes += 1;
    const forward = forwarded(upstream, req, res);
    // The body is read at once; only the request's arrival upstream waits.
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (hold ?? Promise.resolve()).then(() => forward.end(Buffer.concat(chunks)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    /** Requests held since the endpoint started. */
    held: () => held,
    /** DELETEs passed on, and DELETEs refused. */
    deletes: () => deletes,
    refusedDeletes: () => refused,
    refuseDeletes: (refuse: boolean) => {
      refusing = refuse;
    },
    hold: () => {
      released = new Promise<void>((resolve) => (release = resolve));
    },
    release: () => {
      released = undefined;
      release();
    },
    close: () => {
      release();
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type HoldingS3 = Awaited<ReturnType<typeof holdingS3>>;

/**
 * An S3 endpoint in front of the real one (`target`) whose object reads (`OBJECT_READS`)
 * answer their headers, then close the connection before the first byte of the object; every
 * other request passes straight on.
 */
export async function cuttingS3(target: string) {
  const upstream = new URL(target);
  const server = http.createServer((req, res) => {
    if (OBJECT_READS(req)) {
      req.resume();
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': '5000' });
      res.flushHeaders();
      setTimeout(() => res.destroy(), 50);
      return;
    }
    req.pipe(forwarded(upstream, req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
