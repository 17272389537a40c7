import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { connect as netConnect, createServer, type Server, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import {
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  type S3Client,
} from '@aws-sdk/client-s3';
import { connect } from 'nats';
import { cuttingS3, directS3, S3_BUCKET } from '../support/s3';
import { eventually } from '../support/eventually';
import { fileTopologies, type FileTopologyStack } from '../support/file-stack';
import { createUserWithKey, expectErrorEnvelope, request, type Reply } from '../support/http';
import {
  HEADS,
  boundary,
  fileOf,
  generatedFile,
  multipartBuffer,
  multipartStream,
  multipartType,
  type Part,
} from '../support/multipart';
import {
  dropDatabases,
  freePort,
  isolation,
  rssKb,
  startNode,
  type NodeProcess,
} from '../support/stack';

const CDN = 'https://cdn.waybill.test';
/** FILE_MAX_BYTES of these servers: small, so that oversize bodies are cheap. */
const MAX = 1024 * 1024;
const ORIGIN = 'https://shop.example.com';
const FILE_ENV = { CDN_BASE_URL: CDN, FILE_MAX_BYTES: String(MAX) };
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

const s3: S3Client = directS3();
const BUCKET = S3_BUCKET;

afterAll(() => s3.destroy());

// ---------------------------------------------------------------- helpers

interface Upload {
  field: string;
  data: Buffer;
  filename?: string;
  type?: string;
}

function form(files: Upload[], fields: Record<string, string> = {}): FormData {
  const body = new FormData();
  for (const f of files) {
    body.append(f.field, new Blob([f.data], { type: f.type ?? '' }), f.filename ?? 'file');
  }
  for (const [name, value] of Object.entries(fields)) body.append(name, value);
  return body;
}

async function post(
  base: string,
  path: string,
  key: string,
  body: FormData | ReadableStream | string,
  headers: Record<string, string> = {},
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
): Promise<Reply<any>> {
  const init: RequestInit & { duplex?: 'half' } = {
    method: 'POST',
    headers: { 'api-key': key, ...headers },
    body,
  };
  if (body instanceof ReadableStream) init.duplex = 'half';
  const res = await fetch(`${base}/file${path}`, init);
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, text, body: parsed };
}

/** A multipart body streamed without Content-Length, built as it is sent. */
function streamed(parts: Part[]): { body: ReadableStream; headers: Record<string, string> } {
  const b = boundary();
  return {
    body: Readable.toWeb(multipartStream(parts, b)) as ReadableStream,
    headers: { 'content-type': multipartType(b) },
  };
}

const keyOf = (url: string) => url.slice(CDN.length + 1);

async function objectBytes(key: string): Promise<Buffer> {
  const object = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  return Buffer.from(
    await (object.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray(),
  );
}

async function objectType(key: string): Promise<string | undefined> {
  return (await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }))).ContentType;
}

/** Every object stored for a user: `uploads/<userId>/`. */
async function storedFor(userId: string): Promise<string[]> {
  const list = await s3.send(
    new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `uploads/${userId}/` }),
  );
  return (list.Contents ?? []).map((o) => o.Key as string);
}

/** Objects are deleted after the answer is settled; give the last delete a moment. */
async function expectNothingStored(userId: string): Promise<void> {
  await eventually(async () => expect(await storedFor(userId)).toEqual([]), {
    timeout: 2_000,
    interval: 100,
  });
}

async function download(base: string, key: string, url: string, headers = {}) {
  const res = await fetch(`${base}/file/download`, {
    method: 'POST',
    headers: { 'api-key': key, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ url }),
  });
  return { res, bytes: Buffer.from(await res.arrayBuffer()) };
}

/**
 * Sends an upload's head with `Expect: 100-continue`, its body only once told to go on, as
 * curl does: the gateway's answers, in order, as one text.
 */
function uploadOnContinue(base: string, apiKey: string, body: Buffer, b: string): Promise<string> {
  const { hostname, port } = new URL(base);
  const head =
    `POST /file/single-upload HTTP/1.1\r\nHost: x\r\n${apiKey ? `api-key: ${apiKey}\r\n` : ''}` +
    `expect: 100-continue\r\ncontent-type: ${multipartType(b)}\r\ncontent-length: ${body.length}\r\n\r\n`;
  return new Promise((resolve, reject) => {
    const socket = netConnect(Number(port), hostname, () => socket.write(head));
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      if (text === 'HTTP/1.1 100 Continue\r\n\r\n') socket.write(body);
      else if (/\r\n\r\n\{[\s\S]*\}$/.test(text)) {
        socket.destroy();
        resolve(text);
      }
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(text));
  });
}

/** Until the gateway has discovered the file service, its routes answer 503. */
async function waitForFiles(base: string, key: string): Promise<void> {
  await eventually(
    async () => {
      const probe = await post(base, '/download', key, '{}', {
        'content-type': 'application/json',
      });
      expect(probe.status).not.toBe(503);
    },
    { timeout: 15_000, interval: 100 },
  );
}

// ---------------------------------------------------------------- both topologies

describe.each(fileTopologies)('files, %s', (_name, start) => {
  const iso = isolation();
  let top: FileTopologyStack;
  let user: { userId: string; key: string };

  beforeAll(async () => {
    top = await start(iso, { common: FILE_ENV });
    user = await createUserWithKey(top.url);
    await waitForFiles(top.url, user.key);
  });

  afterAll(async () => {
    await Promise.all(top?.nodes.map((n) => n.stop()) ?? []);
    await dropDatabases(iso);
  });

  const uploadPng = (png: Buffer) =>
    post(
      top.url,
      '/single-upload',
      user.key,
      form([{ field: 'upload-file', data: png, filename: 'photo.png', type: 'image/png' }]),
    );

  it('single upload: 200 with the hosted URL; S3 holds the same bytes, with the sniffed type', async () => {
    const png = fileOf(HEADS.png, 300_000);
    const reply = await uploadPng(png);
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      success: true,
      message: 'File uploaded',
      data: {
        url: expect.stringMatching(new RegExp(`^${CDN}/uploads/${user.userId}/${UUID}\\.png$`)),
      },
    });
    const key = keyOf(reply.body.data.url);
    expect((await objectBytes(key)).equals(png)).toBe(true);
    expect(await objectType(key)).toBe('image/png');

    const { res, bytes } = await download(top.url, user.key, reply.body.data.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/octet-stream');
    expect(res.headers.get('content-disposition')).toBe(
      `attachment; filename="${key.split('/').pop()}"`,
    );
    expect(res.headers.get('content-length')).toBe(String(png.length));
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(bytes.equals(png)).toBe(true);
  });

  it('an upload sent with Expect: 100-continue is told to go on once read, and stored; one refused on its headers is answered before its body is sent', async () => {
    const b = boundary();
    const png = fileOf(HEADS.png, 300_000);
    const body = await multipartBuffer(
      [{ name: 'upload-file', filename: 'photo.png', contentType: 'image/png', data: png }],
      b,
    );
    const stored = await uploadOnContinue(top.url, user.key, body, b);
    expect(stored).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
    const { url } = JSON.parse(stored.slice(stored.lastIndexOf('\r\n\r\n') + 4)).data;
    expect((await objectBytes(keyOf(url))).equals(png)).toBe(true);
    // Without a key, or declaring more than a file may be: answered first, no body asked for.
    expect(await uploadOnContinue(top.url, '', body, b)).toMatch(/^HTTP\/1\.1 401 /);
    const tooLarge = await multipartBuffer(
      [{ name: 'upload-file', filename: 'big.png', data: fileOf(HEADS.png, 2 * MAX) }],
      b,
    );
    expect(await uploadOnContinue(top.url, user.key, tooLarge, b)).toMatch(/^HTTP\/1\.1 413 /);
  });

  it('bulk upload of 7 files: URLs in the order sent, each readable from S3 and downloadable', async () => {
    const files = [
      fileOf(HEADS.png, 2000),
      fileOf(HEADS.jpeg, 150_000),
      fileOf(HEADS.gif, 10),
      fileOf(HEADS.webp, 5000),
      fileOf(HEADS.pdf, 400_000),
      fileOf(HEADS.png, 1),
      fileOf(HEADS.jpeg, MAX - HEADS.jpeg.length), // exactly the limit
    ];
    const exts = ['png', 'jpg', 'gif', 'webp', 'pdf', 'png', 'jpg'];
    const reply = await post(
      top.url,
      '/bulk-upload',
      user.key,
      form(files.map((data, i) => ({ field: 'files', data, filename: `f${i}` }))),
    );
    expect(reply.status).toBe(200);
    const urls: string[] = reply.body.data.urls;
    expect(urls).toHaveLength(7);
    for (const [i, url] of urls.entries()) {
      expect(url).toMatch(new RegExp(`^${CDN}/uploads/${user.userId}/${UUID}\\.${exts[i]}$`));
      expect((await objectBytes(keyOf(url))).equals(files[i])).toBe(true);
      const { res, bytes } = await download(top.url, user.key, url);
      expect(res.status).toBe(200);
      expect(bytes.equals(files[i])).toBe(true);
    }
  });

  it('ignores Idempotency-Key on downloads: each one streams the file, none is stored or replayed', async () => {
    const png = fileOf(HEADS.png, 3000);
    const reply = await uploadPng(png);
    expect(reply.status).toBe(200);
    const idempotencyKey = randomUUID();
    for (let i = 0; i < 3; i++) {
      const { res, bytes } = await download(top.url, user.key, reply.body.data.url, {
        'idempotency-key': idempotencyKey,
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('idempotent-replayed')).toBeNull();
      expect(res.headers.get('content-type')).toBe('application/octet-stream');
      expect(bytes.equals(png)).toBe(true);
    }
    // Not read at all outside /api: even an unusable value is no reason to refuse a download.
    const { res, bytes } = await download(top.url, user.key, reply.body.data.url, {
      'idempotency-key': 'two words',
    });
    expect(res.status).toBe(200);
    expect(bytes.equals(png)).toBe(true);
  });

  it('an 8th file fails the bulk upload with 400 and leaves nothing in the bucket', async () => {
    const fresh = await createUserWithKey(top.url);
    const files = Array.from({ length: 8 }, (_, i) => ({
      field: 'files',
      data: fileOf(HEADS.png, 100_000 + i),
      filename: `f${i}.png`,
    }));
    const reply = await post(top.url, '/bulk-upload', fresh.key, form(files));
    expectErrorEnvelope(reply, 400, 'At most 7 files per request; nothing was stored');
    await expectNothingStored(fresh.userId);
  });

  it('an oversize file: 413, and nothing left in the bucket', async () => {
    const fresh = await createUserWithKey(top.url);
    // With Content-Length: refused before reading.
    const known = await post(
      top.url,
      '/single-upload',
      fresh.key,
      form([{ field: 'upload-file', data: fileOf(HEADS.png, MAX + 100_000), filename: 'big.png' }]),
    );
    expectErrorEnvelope(known, 413, 'The file is larger than 1 MB');
    // Streamed without Content-Length: cut off at the limit, the partial upload removed.
    const { body, headers } = streamed([
      {
        name: 'upload-file',
        filename: 'big.png',
        data: () => generatedFile(HEADS.png, MAX + 1),
      },
    ]);
    const chunked = await post(top.url, '/single-upload', fresh.key, body, headers);
    expectErrorEnvelope(chunked, 413, 'The file is larger than 1 MB');
    await expectNothingStored(fresh.userId);
  });

  it('a bulk body larger than all its files could be: 413 once it passes that, not at its end, and nothing kept', async () => {
    const fresh = await createUserWithKey(top.url);
    // One file far over the limit, streamed: busboy would pass over all its bytes to its end.
    const { body, headers } = streamed([
      { name: 'files', filename: 'huge.png', data: () => generatedFile(HEADS.png, 12 * MAX) },
    ]);
    const reply = await post(top.url, '/bulk-upload', fresh.key, body, headers);
    expectErrorEnvelope(
      reply,
      413,
      'The upload is larger than 7 files of 1 MB can be; send fewer or smaller files',
    );
    await expectNothingStored(fresh.userId);
  });

  it('answers a browser key with CORS headers, and refuses a server-only key from a browser', async () => {
    const browser = await createUserWithKey(top.url, { serverOnly: false });
    const png = fileOf(HEADS.png);
    const preflight = await request(top.url, 'OPTIONS', '/file/single-upload', {
      headers: {
        origin: ORIGIN,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'api-key',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(ORIGIN);

    const ok = await post(
      top.url,
      '/single-upload',
      browser.key,
      form([{ field: 'upload-file', data: png, filename: 'a.png' }]),
      { origin: ORIGIN },
    );
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    const { res, bytes } = await download(top.url, browser.key, ok.body.data.url, {
      origin: ORIGIN,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(bytes.equals(png)).toBe(true);

    const serverOnly = await createUserWithKey(top.url, { serverOnly: true });
    const refused = await post(
      top.url,
      '/single-upload',
      serverOnly.key,
      form([{ field: 'upload-file', data: png, filename: 'a.png' }]),
      { origin: ORIGIN },
    );
    expectErrorEnvelope(refused, 403, /server-only/);
    expect(refused.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    const bulkRefused = await post(
      top.url,
      '/bulk-upload',
      serverOnly.key,
      form([{ field: 'files', data: png, filename: 'a.png' }]),
      { origin: ORIGIN },
    );
    expectErrorEnvelope(bulkRefused, 403, /server-only/);
    await expectNothingStored(serverOnly.userId);
    // The same key from a server (no Origin) works.
    const server = await post(
      top.url,
      '/single-upload',
      serverOnly.key,
      form([{ field: 'upload-file', data: png, filename: 'a.png' }]),
    );
    expect(server.status).toBe(200);
    expect(server.headers.get('access-control-allow-origin')).toBeNull();
  });
});

// ---------------------------------------------------------------- uploads in detail

describe('uploads and downloads in detail (file service in its own process)', () => {
  const iso = isolation();
  let gateway: NodeProcess;
  let file: NodeProcess;
  let base: string;
  let user: { userId: string; key: string };

  beforeAll(async () => {
    [gateway, file] = await Promise.all([
      startNode({ services: 'gateway,account', iso, env: FILE_ENV }),
      startNode({ services: 'file', iso, env: FILE_ENV }),
    ]);
    base = gateway.url;
    user = await createUserWithKey(base);
    await waitForFiles(base, user.key);
  });

  afterAll(async () => {
    await Promise.all([gateway?.stop(), file?.stop()]);
    await dropDatabases(iso);
  });

  describe('single upload refusals (400, nothing stored)', () => {
    it.each<[string, () => FormData | string, Record<string, string>, RegExp]>([
      [
        'the wrong field name',
        () => form([{ field: 'file', data: fileOf(HEADS.png), filename: 'a.png' }]),
        {},
        /Unexpected file field "file"; send the file as "upload-file"/,
      ],
      ['no file part', () => form([]), {}, /Missing the file part "upload-file"/],
      [
        'a text field beside the file (the document’s form has none)',
        () =>
          form([{ field: 'upload-file', data: fileOf(HEADS.pdf), filename: 'a.pdf' }], {
            caption: 'sent after the file',
          }),
        {},
        /^Unexpected text field "caption": an upload takes one file part named "upload-file", nothing else; nothing was stored$/,
      ],
      [
        'upload-file as text',
        () => form([], { 'upload-file': 'not a file' }),
        {},
        /must be a file part/,
      ],
      [
        'an empty file',
        () => form([{ field: 'upload-file', data: Buffer.alloc(0), filename: 'a.png' }]),
        {},
        /The file is empty/,
      ],
      [
        'a JSON body',
        () => JSON.stringify({ 'upload-file': 'x' }),
        { 'content-type': 'application/json' },
        /Send files as multipart\/form-data \(got application\/json\)/,
      ],
      [
        'multipart without a boundary',
        () => 'x',
        { 'content-type': 'multipart/form-data' },
        /boundary is missing/,
      ],
    ])('%s', async (_name, body, headers, message) => {
      const fresh = await createUserWithKey(base);
      const reply = await post(base, '/single-upload', fresh.key, body(), headers);
      expectErrorEnvelope(reply, 400, message);
      await expectNothingStored(fresh.userId);
    });
  });

  it('trusts the bytes, never the declared type or name', async () => {
    // A PNG that claims to be an HTML page is stored as the PNG it is.
    const png = fileOf(HEADS.png);
    const disguised = await post(
      base,
      '/single-upload',
      user.key,
      form([{ field: 'upload-file', data: png, filename: 'page.html', type: 'text/html' }]),
    );
    expect(disguised.status).toBe(200);
    expect(disguised.body.data.url).toMatch(/\.png$/);
    expect(await objectType(keyOf(disguised.body.data.url))).toBe('image/png');

    // An HTML page that claims to be a PNG is refused.
    const fresh = await createUserWithKey(base);
    const forged = await post(
      base,
      '/single-upload',
      fresh.key,
      form([
        {
          field: 'upload-file',
          data: Buffer.from('<html><script>document.cookie</script></html>'.repeat(4)),
          filename: 'photo.png',
          type: 'image/png',
        },
      ]),
    );
    expectErrorEnvelope(forged, 415, /File type not accepted; send one of image\/jpeg/);
    await expectNothingStored(fresh.userId);
  });

  it('bulk: a refused file gets an error slot, the others are stored', async () => {
    const png = fileOf(HEADS.png);
    const pdf = fileOf(HEADS.pdf);
    const fresh = await createUserWithKey(base);
    const reply = await post(
      base,
      '/bulk-upload',
      fresh.key,
      form([
        { field: 'files', data: png, filename: 'ok.png' },
        {
          field: 'files',
          data: Buffer.from('MZ\x90\x00 not an image', 'latin1'),
          filename: 'x.png',
          type: 'image/png',
        },
        { field: 'files', data: fileOf(HEADS.jpeg, MAX), filename: 'huge.jpg' },
        { field: 'files', data: pdf, filename: 'ok.pdf' },
      ]),
    );
    expect(reply.status).toBe(200);
    const urls = reply.body.data.urls;
    expect(urls[1]).toEqual({
      error: {
        statusCode: 415,
        message:
          'File type not accepted; send one of image/jpeg, image/png, image/gif, image/webp, application/pdf',
        filename: 'x.png',
      },
    });
    expect(urls[2]).toEqual({
      error: { statusCode: 413, message: 'The file is larger than 1 MB', filename: 'huge.jpg' },
    });
    expect((await objectBytes(keyOf(urls[0]))).equals(png)).toBe(true);
    expect((await objectBytes(keyOf(urls[3]))).equals(pdf)).toBe(true);
    // Only the two accepted files are in the bucket: the oversize one was removed.
    expect((await storedFor(fresh.userId)).sort()).toEqual([keyOf(urls[0]), keyOf(urls[3])].sort());
  });

  it('bulk: files under different field names are refused', async () => {
    const fresh = await createUserWithKey(base);
    const reply = await post(
      base,
      '/bulk-upload',
      fresh.key,
      form([
        { field: 'a', data: fileOf(HEADS.png), filename: 'a.png' },
        { field: 'b', data: fileOf(HEADS.png), filename: 'b.png' },
      ]),
    );
    expectErrorEnvelope(reply, 400, /share one field name/);
    await expectNothingStored(fresh.userId);
  });

  it('a file whose bytes would not fit a JSON packet crosses NATS intact', async () => {
    // 0xFF spelt as JSON numbers is four bytes per byte: 256 KB of it would exceed 1 MB.
    const pdf = Buffer.concat([HEADS.pdf, Buffer.alloc(900_000, 0xff)]);
    const reply = await post(
      base,
      '/single-upload',
      user.key,
      form([{ field: 'upload-file', data: pdf, filename: 'ff.pdf' }]),
    );
    expect(reply.status).toBe(200);
    const { bytes } = await download(base, user.key, reply.body.data.url);
    expect(bytes.equals(pdf)).toBe(true);
  });

  it('moves file bytes over the transfer port, never over NATS, both ways', async () => {
    // Every packet of this namespace, from every node, as NATS carries it.
    const nats = await connect({ servers: process.env.NATS_URL });
    let natsBytes = 0;
    let largest = 0;
    const watch = nats.subscribe(`MOL-${iso.namespace}.>`, {
      callback: (_err, msg) => {
        natsBytes += msg.data.length;
        largest = Math.max(largest, msg.data.length);
      },
    });
    await nats.flush();
    try {
      const files = Array.from({ length: 7 }, (_, i) =>
        Buffer.concat([HEADS.pdf, randomBytes(MAX - 1024 - i)]),
      );
      const reply = await post(
        base,
        '/bulk-upload',
        user.key,
        form(files.map((data, i) => ({ field: 'files', data, filename: `f${i}.pdf` }))),
      );
      expect(reply.status).toBe(200);
      const urls = reply.body.data.urls as string[];
      for (const [i, url] of urls.entries()) {
        expect((await download(base, user.key, url)).bytes.equals(files[i])).toBe(true);
      }
      await nats.flush();
      const moved = files.reduce((sum, f) => sum + f.length, 0) * 2;
      console.log(
        `${(moved / 2 ** 20).toFixed(1)} MB of files up and down; NATS carried ${natsBytes} bytes, largest packet ${largest}`,
      );
      // Calls, answers, heartbeats and node announcements; over NATS the files alone would
      // be `moved` bytes and more.
      expect(natsBytes).toBeLessThan(moved / 20);
    } finally {
      watch.unsubscribe();
      await nats.close();
    }
  });

  describe('download refusals', () => {
    const userPath = '0b6f1c1e-6a7e-4a63-9d6e-1c9f3a8d2b10';
    const filePath = '5d8c2a3e-3f1b-4c47-8d7e-0a1b2c3d4e5f.png';
    const key = `uploads/${userPath}/${filePath}`;

    it.each([
      ['a foreign host', `https://evil.example/${key}`],
      ['our host as user info', `https://cdn.waybill.test@evil.example/${key}`],
      ['http instead of https', `http://cdn.waybill.test/${key}`],
      ['file://', `file:///etc/passwd`],
      ['file:// with our path', `file:///${key}`],
      ['http://127.0.0.1', `http://127.0.0.1/${key}`],
      ['the S3 server itself', `${process.env.S3_ENDPOINT}/${BUCKET}/${key}`],
      ['the metadata service', 'http://169.254.169.254/latest/meta-data/'],
      ['a dot-dot', `${CDN}/uploads/${userPath}/../../${key}`],
      ['%2e%2e', `${CDN}/uploads/%2e%2e/${key}`],
      ['%2f', `${CDN}/uploads%2f${userPath}%2f${filePath}`],
      ['a backslash', `${CDN}/uploads\\${userPath}\\${filePath}`],
      ['a redirect parameter', `${CDN}/${key}?redirect=https://evil.example/`],
      ['a fragment', `${CDN}/${key}#/../../secret`],
      ['a path outside our layout', `${CDN}/secret/config.json`],
      ['an empty string', ''],
    ])('%s → 400', async (_name, url) => {
      const { res, bytes } = await download(base, user.key, url);
      const reply = {
        status: res.status,
        headers: res.headers,
        text: bytes.toString(),
        body: JSON.parse(bytes.toString()),
      };
      expectErrorEnvelope(reply, 400);
      expect(reply.body.message).toMatch(/Not a file hosted here|url/);
    });

    it('refuses a missing or non-string url with 400', async () => {
      for (const json of [{}, { url: 42 }, { url: ['x'] }, { url: CDN, extra: 1 }]) {
        const reply = await request(base, 'POST', '/file/download', {
          headers: { 'api-key': user.key },
          json,
        });
        expectErrorEnvelope(reply, 400);
      }
    });

    it('answers 404 for a well-formed URL of ours that does not exist', async () => {
      const reply = await request(base, 'POST', '/file/download', {
        headers: { 'api-key': user.key },
        json: { url: `${CDN}/${key}` },
      });
      expectErrorEnvelope(reply, 404, 'File not found');
    });
  });

  it('refuses every /file route without an API key', async () => {
    for (const path of ['/single-upload', '/bulk-upload', '/download']) {
      const reply = await request(base, 'POST', `/file${path}`, { json: {} });
      expectErrorEnvelope(reply, 401, 'API key is required');
    }
  });
});

// ---------------------------------------------------------------- S3 failures

describe('S3 failures answer 503, never hang', () => {
  const nodes: NodeProcess[] = [];
  const isos: ReturnType<typeof isolation>[] = [];
  let silent: Server;
  const sockets = new Set<Socket>();

  /** A TCP server that accepts connections and never answers. */
  async function hangingServer(): Promise<number> {
    silent = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const address = silent.address();
    return typeof address === 'object' && address ? address.port : 0;
  }

  async function startBroken(env: Record<string, string>): Promise<NodeProcess> {
    const iso = isolation();
    isos.push(iso);
    const node = await startNode({
      services: 'all',
      iso,
      env: { ...FILE_ENV, S3_TIMEOUT_MS: '500', ...env },
      waitReady: false,
    });
    nodes.push(node);
    // Ready except for S3.
    await eventually(
      async () => {
        const ready = await request(node.opsUrl, 'GET', '/health/ready');
        const checks = (ready.body?.checks ?? {}) as Record<string, boolean>;
        const others = Object.entries(checks).filter(([name]) => name !== 's3');
        expect(others.length).toBeGreaterThan(3);
        expect(others.filter(([, ok]) => !ok)).toEqual([]);
      },
      { timeout: 15_000, interval: 150 },
    );
    return node;
  }

  const cases: [string, () => Promise<Record<string, string>>][] = [
    ['the bucket is missing', async () => ({ S3_BUCKET: `missing-${isolation().namespace}` })],
    [
      'the S3 server is down',
      async () => ({ S3_ENDPOINT: `http://127.0.0.1:${await freePort()}` }),
    ],
    [
      'the S3 server does not answer',
      async () => ({ S3_ENDPOINT: `http://127.0.0.1:${await hangingServer()}` }),
    ],
  ];

  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop()));
    for (const socket of sockets) socket.destroy();
    silent?.close();
    await Promise.all(isos.map((iso) => dropDatabases(iso)));
  });

  it.each(cases)(
    '%s: readiness false, uploads and downloads 503 within seconds',
    async (_name, env) => {
      const node = await startBroken(await env());
      const ready = await request(node.opsUrl, 'GET', '/health/ready');
      expect(ready.status).toBe(503);
      expect(ready.body.checks.s3).toBe(false);
      // The gateway's own, which a load balancer reads: an envelope saying when to come back.
      const publicReady = await request(node.url, 'GET', '/health/ready');
      expectErrorEnvelope(publicReady, 503, /^Not ready: s3 down/);
      expect(publicReady.headers.get('retry-after')).toBe('5');

      const { key, userId } = await createUserWithKey(node.url);
      const started = Date.now();
      const upload = await post(
        node.url,
        '/single-upload',
        key,
        form([{ field: 'upload-file', data: fileOf(HEADS.png), filename: 'a.png' }]),
      );
      expectErrorEnvelope(upload, 503, 'File storage is unavailable; retry in a few seconds');
      const bulk = await post(
        node.url,
        '/bulk-upload',
        key,
        form([
          { field: 'files', data: fileOf(HEADS.png), filename: 'a.png' },
          { field: 'files', data: fileOf(HEADS.pdf), filename: 'b.pdf' },
        ]),
      );
      expectErrorEnvelope(bulk, 503, 'File storage is unavailable; retry in a few seconds');
      const down = await request(node.url, 'POST', '/file/download', {
        headers: { 'api-key': key },
        json: { url: `${CDN}/uploads/${userId}/5d8c2a3e-3f1b-4c47-8d7e-0a1b2c3d4e5f.png` },
      });
      expectErrorEnvelope(down, 503, 'File storage is unavailable; retry in a few seconds');
      expect(Date.now() - started).toBeLessThan(15_000);
    },
  );

  it('answers a download S3 cut before its first byte with the error envelope, in every topology', async () => {
    const cutting = await cuttingS3(process.env.S3_ENDPOINT as string);
    try {
      for (const [, start] of fileTopologies) {
        const iso = isolation();
        isos.push(iso);
        const top = await start(iso, { common: { ...FILE_ENV, S3_ENDPOINT: cutting.url } });
        nodes.push(...top.nodes);
        const { key } = await createUserWithKey(top.url);
        const stored = await eventually(async () => {
          const reply = await post(
            top.url,
            '/single-upload',
            key,
            form([{ field: 'upload-file', data: fileOf(HEADS.png), filename: 'a.png' }]),
          );
          expect(reply.status).toBe(200);
          return reply;
        });
        const down = await request(top.url, 'POST', '/file/download', {
          headers: { 'api-key': key },
          json: { url: stored.body.data.url },
        });
        // Not a reset connection: the client is told to retry.
        expectErrorEnvelope(down, 502, 'The file could not be read to the end; retry');
        expect(down.headers.get('content-disposition')).toBeNull();
      }
    } finally {
      await cutting.close();
    }
  });
});

// ---------------------------------------------------------------- memory

describe('memory while moving 100 MB up and down', () => {
  const iso = isolation();
  let gateway: NodeProcess;
  let file: NodeProcess;

  beforeAll(async () => {
    const env = { CDN_BASE_URL: CDN, FILE_MAX_BYTES: String(150 * 1024 * 1024) };
    [gateway, file] = await Promise.all([
      startNode({ services: 'gateway,account', iso, env }),
      startNode({ services: 'file', iso, env }),
    ]);
  });

  afterAll(async () => {
    await Promise.all([gateway?.stop(), file?.stop()]);
    await dropDatabases(iso);
  });

  it('streams a generated 100 MB file up and twice back down, each process peaking < 48 MB above its start', async () => {
    const { key } = await createUserWithKey(gateway.url);
    await waitForFiles(gateway.url, key);
    const size = 100 * 1024 * 1024;
    const hash = createHash('sha256');
    function* hashed() {
      for (const chunk of generatedFile(HEADS.pdf, size)) {
        hash.update(chunk);
        yield chunk;
      }
    }
    const filePid = file.child.pid as number;
    const gatewayPid = gateway.child.pid as number;
    const baseline = { file: rssKb(filePid), gateway: rssKb(gatewayPid) };
    const peak = { ...baseline };
    const sampler = setInterval(() => {
      peak.file = Math.max(peak.file, rssKb(filePid));
      peak.gateway = Math.max(peak.gateway, rssKb(gatewayPid));
    }, 25);

    try {
      const { body, headers } = streamed([
        { name: 'upload-file', filename: 'big.pdf', data: hashed },
      ]);
      const reply = await post(gateway.url, '/single-upload', key, body, headers);
      expect(reply.status).toBe(200);
      const sent = hash.digest('hex');

      const objectKey = keyOf(reply.body.data.url);
      const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: objectKey }));
      expect(head.ContentLength).toBe(size);
      const object = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: objectKey }));
      const stored = createHash('sha256');
      for await (const chunk of object.Body as Readable) stored.update(chunk as Buffer);
      expect(stored.digest('hex')).toBe(sent);

      // Downloads stream through both processes as well: the bound holds for the whole run,
      // not only for the first transfer.
      for (let i = 0; i < 2; i++) {
        const res = await fetch(`${gateway.url}/file/download`, {
          method: 'POST',
          headers: { 'api-key': key, 'content-type': 'application/json' },
          body: JSON.stringify({ url: reply.body.data.url }),
        });
        expect(res.status).toBe(200);
        const received = createHash('sha256');
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          received.update(chunk);
        }
        expect(received.digest('hex')).toBe(sent);
      }
    } finally {
      clearInterval(sampler);
    }

    const growth = {
      file: Math.round((peak.file - baseline.file) / 1024),
      gateway: Math.round((peak.gateway - baseline.gateway) / 1024),
    };
    console.log(
      `100 MB up, twice down: file service RSS ${Math.round(baseline.file / 1024)} → peak ` +
        `${Math.round(peak.file / 1024)} MB (+${growth.file} MB), gateway RSS ` +
        `${Math.round(baseline.gateway / 1024)} → peak ${Math.round(peak.gateway / 1024)} MB ` +
        `(+${growth.gateway} MB)`,
    );
    // Issue 15's goal is < 64 MB in every process; both stay under 30 MB or so since the part
    // buffers are freed and the scavenges come every 4 MB (+60 and +52 MB before), so a bound
    // of 48 MB shows a regression before the goal is lost.
    expect(growth.file).toBeLessThan(48);
    expect(growth.gateway).toBeLessThan(48);
  });
});
