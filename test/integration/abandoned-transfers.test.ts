import { request as httpRequest, type ClientRequest } from 'node:http';
import { connectRedis, createRedis } from '../../libs/redis';
import { DOWNLOADS_ACTIVE_METRIC, UPLOADS_ACTIVE_METRIC } from '../../services/file/slots';
import { eventually } from '../support/eventually';
import { fileTopologies, type FileTopologyStack as Stack } from '../support/file-stack';
import { createUserWithKey } from '../support/http';
import { count, samples } from '../support/metrics';
import { HEADS, boundary, fileOf, multipartBuffer, multipartType } from '../support/multipart';
import { OBJECT_READS, holdingS3, type HoldingS3 } from '../support/s3';
import { dropDatabases, isolation } from '../support/stack';
import { tcpProxy, type TcpProxy } from '../support/tcp-proxy';

/**
 * Uploads and downloads whose client leaves early: what they hold in the file service (a slot,
 * an S3 connection) is never held without the key's lease at the gateway, so that the per-key
 * cap bounds what one key holds, and is let go as soon as the call is over, not at
 * FILE_TIMEOUT_MS, a ticket's end or the idle timeout. A client that is gone by the time its
 * lease is taken gets nothing started. Each topology runs every check: the file service in the
 * gateway's process (the request is the action's stream), and on its own node (tickets and the
 * transfer port).
 */
type Kind = 'upload' | 'download';
const ROUTE: Record<Kind, string> = { upload: '/file/single-upload', download: '/file/download' };
const ACTIVE: Record<Kind, string> = {
  upload: UPLOADS_ACTIVE_METRIC.replace(/\./g, '_'),
  download: DOWNLOADS_ACTIVE_METRIC.replace(/\./g, '_'),
};

const active = async (stack: Stack, kind: Kind) =>
  count(await samples(stack.fileOps, ACTIVE[kind]));

/** How many of `kind` the gateway counted as left by their client (499). */
const abandoned = async (stack: Stack, kind: Kind) =>
  count(await samples(stack.gatewayOps, 'waybill_http_requests_total'), {
    route: ROUTE[kind],
    status: '499',
  });

/** A whole request of `kind`, sent at once; the test destroys it to leave. */
async function send(stack: Stack, kind: Kind, key: string, url?: string) {
  const b = boundary();
  const body =
    kind === 'download'
      ? Buffer.from(JSON.stringify({ url }))
      : await multipartBuffer(
          [{ name: 'upload-file', filename: 'left.png', data: fileOf(HEADS.png, 5000) }],
          b,
        );
  const target = new URL(`${stack.url}${ROUTE[kind]}`);
  const req: ClientRequest = httpRequest({
    host: target.hostname,
    port: target.port,
    path: target.pathname,
    method: 'POST',
    headers: {
      'api-key': key,
      'content-type': kind === 'download' ? 'application/json' : multipartType(b),
      'content-length': body.length,
    },
  });
  const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
    req.once('error', reject);
    req.once('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      // The envelope of an error; a file's bytes are only counted off.
      res.on('data', (chunk: string) => (text = (text + chunk).slice(0, 64 * 1024)));
      res.once('error', reject);
      res.once('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
  });
  answer.catch(() => undefined); // a request the test destroys rejects, as it asked
  req.end(body);
  return { answer, leave: () => req.destroy() };
}

/** A transfer of `kind` carried out whole: its status. */
async function transfer(stack: Stack, kind: Kind, key: string, url?: string) {
  return (await (await send(stack, kind, key, url)).answer).status;
}

/** Stores a file of `size` bytes with `key`: its hosted URL. */
async function stored(stack: Stack, key: string, size: number): Promise<string> {
  const form = new FormData();
  form.append('upload-file', new Blob([fileOf(HEADS.png, size)]), 'kept.png');
  const res = await fetch(`${stack.url}/file/single-upload`, {
    method: 'POST',
    headers: { 'api-key': key },
    body: form,
  });
  if (res.status !== 200) throw new Error(`upload: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { data: { url: string } }).data.url;
}

describe.each(fileTopologies)('transfers whose client left, %s', (_name, start) => {
  const iso = isolation();
  const leasesOf = (kind: Kind, keyId: string) => `${iso.namespace}:${kind}s:${keyId}`;
  const redis = createRedis(
    process.env.REDIS_URL as string,
    'abandoned-transfers',
    () => undefined,
  );
  const leases = (kind: Kind, keyId: string) => redis.zcard(leasesOf(kind, keyId));
  let s3: HoldingS3;
  let gatewayRedis: TcpProxy;
  let stack: Stack;
  /**
   * A stored file larger than the socket buffers between S3, the file service and the
   * gateway: a download nobody reads stalls, and holds its slot, instead of fitting in them.
   */
  let url: string;

  beforeAll(async () => {
    await connectRedis(redis);
    s3 = await holdingS3(process.env.S3_ENDPOINT as string, OBJECT_READS);
    gatewayRedis = await tcpProxy(process.env.REDIS_URL as string);
    await gatewayRedis.open();
    stack = await start(iso, {
      common: {
        // Far beyond every wait here: what is held until then was never let go.
        FILE_TIMEOUT_MS: '60000',
        FILE_IDLE_TIMEOUT_MS: '60000',
      },
      file: {
        S3_ENDPOINT: s3.url,
        // A read held by the test is not S3 timing out.
        S3_TIMEOUT_MS: '60000',
        FILE_MAX_UPLOADS: '1',
        FILE_MAX_DOWNLOADS: '3',
      },
      gateway: {
        REDIS_URL: `redis://127.0.0.1:${gatewayRedis.port}`,
        FILE_MAX_DOWNLOADS_PER_KEY: '2',
      },
    });
    url = await stored(stack, (await createUserWithKey(stack.url)).key, 18 * 1024 * 1024);
  }, 90_000);

  afterAll(async () => {
    await Promise.all(stack?.nodes.map((n) => n.stop()) ?? []);
    await s3?.close();
    await gatewayRedis?.cut();
    redis.disconnect();
    await dropDatabases(iso);
  });

  it('keeps a key’s download lease while S3 answers the download its client left (429 past the cap), then gives back the slot and the lease', async () => {
    const { key, keyId } = await createUserWithKey(stack.url);
    const other = await createUserWithKey(stack.url);
    expect(await transfer(stack, 'download', key, url)).toBe(200);
    const left = await abandoned(stack, 'download');

    s3.hold();
    const before = s3.held();
    const downloads = await Promise.all([1, 2].map(() => send(stack, 'download', key, url)));
    await eventually(() => expect(s3.held()).toBe(before + 2), { timeout: 20_000 });
    expect(await active(stack, 'download')).toBe(2);
    for (const download of downloads) download.leave();
    await eventually(async () => expect(await abandoned(stack, 'download')).toBe(left + 2), {
      timeout: 10_000,
    });

    // Their calls are not over: the key still holds its two leases, and its third is refused
    // before it reaches the file service. Taken, it would wait on S3 like the others.
    const third = await send(stack, 'download', key, url);
    const answered = new AbortController();
    const taken = eventually(() => expect(s3.held()).toBe(before + 3), {
      timeout: 60_000,
      signal: answered.signal,
    }).then(
      () => Promise.reject(new Error('the key’s third download was taken')),
      () => new Promise<never>(() => undefined), // answered first: the race is decided
    );
    const reply = await Promise.race([third.answer, taken]).finally(() => answered.abort());
    expect(reply.status).toBe(429);
    expect(reply.text).toMatch(/already has 2 downloads in progress/);
    expect(await leases('download', keyId)).toBe(2);

    // S3 answers to nobody: the slots and the leases come back, long before FILE_TIMEOUT_MS.
    s3.release();
    await eventually(async () => expect(await active(stack, 'download')).toBe(0), {
      timeout: 20_000,
      interval: 100,
    });
    await eventually(async () => expect(await leases('download', keyId)).toBe(0));
    for (const k of [key, key, other.key]) {
      expect(await transfer(stack, 'download', k, url)).toBe(200);
    }
  }, 120_000);

  it.each<Kind>(['upload', 'download'])(
    'starts no %s for a client that left while its lease was taken: the slot stays free',
    async (kind) => {
      const a = await createUserWithKey(stack.url);
      const b = await createUserWithKey(stack.url);
      // Both keys known to the gateway, the file service to both.
      for (const { key } of [a, b]) expect(await transfer(stack, kind, key, url)).toBe(200);
      const left = await abandoned(stack, kind);

      // The gateway's Redis holds the lease's script until the client is gone.
      const caught = gatewayRedis.holdFrom(leasesOf(kind, a.keyId));
      const request = await send(stack, kind, a.key, url);
      await caught;
      request.leave();
      await eventually(async () => expect(await abandoned(stack, kind)).toBe(left + 1), {
        timeout: 10_000,
      });
      gatewayRedis.release();
      await eventually(async () => expect(await leases(kind, a.keyId)).toBe(0));

      // Had the call gone ahead, it would have reached the file service before the next
      // request (ahead of it on every connection): its slot would be taken now, and kept until
      // FILE_TIMEOUT_MS (a download piped to nobody), the idle timeout (a body nobody sends) or
      // the ticket's end (a push never made). The only upload slot takes another key's upload.
      expect(await transfer(stack, kind, b.key, url)).toBe(200);
      await eventually(async () => expect(await active(stack, kind)).toBe(0), {
        timeout: 20_000,
        interval: 100,
      });
    },
    60_000,
  );
});
