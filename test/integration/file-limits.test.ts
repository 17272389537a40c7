import { request as httpRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { finished } from 'node:stream';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import Redis from 'ioredis';
import { FILE_RETRY_AFTER_SECONDS } from '../../libs/contracts/file';
import { GC_HEADROOM_BYTES, UPLOAD_MEMORY_BYTES } from '../../services/file/memory';
import { DOWNLOADS_ACTIVE_METRIC, UPLOADS_ACTIVE_METRIC } from '../../services/file/slots';
import { clearOfDayEnd } from '../support/day-edge';
import { eventually } from '../support/eventually';
import {
  fileTopologies,
  startFileStack,
  type FileTopology,
  type FileTopologyStack,
} from '../support/file-stack';
import {
  adminHeaders,
  createUserWithKey,
  expectErrorEnvelope,
  request,
  type Reply,
} from '../support/http';
import { count, samples } from '../support/metrics';
import { HEADS, fileOf } from '../support/multipart';
import { directS3, holdingS3, OBJECT_WRITES, S3_BUCKET, type HoldingS3 } from '../support/s3';
import { stalledUpload, type StalledUpload } from '../support/stalled-upload';
import { dropDatabases, isolation, rssKb, type NodeProcess } from '../support/stack';

/** Longer than any test here that counts a day's upload bytes runs. */
const DAY_END_MARGIN_MS = 30_000;

/** What each stalled client sends before it goes quiet: just under one 5 MB part. */
const STALL_BYTES = Math.round(4.9 * 1024 * 1024);
const ACTIVE = UPLOADS_ACTIVE_METRIC.replace(/\./g, '_');

type Key = { userId: string; key: string; keyId: string };

/** Uploads the file service of `opsUrl` is receiving now. */
const activeUploads = async (opsUrl: string) => count(await samples(opsUrl, ACTIVE));

async function waitForActive(opsUrl: string, expected: number): Promise<void> {
  await eventually(async () => expect(await activeUploads(opsUrl)).toBe(expected), {
    timeout: 20_000,
    interval: 100,
  });
}

/**
 * The answer to a stalled upload that must be refused. A service that takes it instead
 * would never answer: that shows as one more upload in progress than `max`, and fails here.
 */
async function refusal(upload: StalledUpload, opsUrl: string, max: number): Promise<Reply> {
  const answered = new AbortController();
  const taken = eventually(async () => expect(await activeUploads(opsUrl)).toBeGreaterThan(max), {
    timeout: 60_000,
    interval: 100,
    signal: answered.signal,
  }).then(
    () => Promise.reject(new Error(`the upload was taken: more than ${max} in progress`)),
    () => new Promise<never>(() => undefined), // answered first: the race is decided
  );
  try {
    return await Promise.race([upload.answer, taken]);
  } finally {
    answered.abort();
  }
}

/** A small single upload that sends its whole body at once. */
async function upload(base: string, key: string): Promise<Reply> {
  const form = new FormData();
  form.append('upload-file', new Blob([fileOf(HEADS.png, 5000)]), 'ok.png');
  const res = await fetch(`${base}/file/single-upload`, {
    method: 'POST',
    headers: { 'api-key': key },
    body: form,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: JSON.parse(text) };
}

/** Until the gateway has discovered the file service, uploads answer 503. */
async function waitForFiles(base: string, key: string): Promise<void> {
  await eventually(async () => expect((await upload(base, key)).status).toBe(200), {
    timeout: 15_000,
    interval: 100,
  });
}

// ---------------------------------------------------------------- caps

describe('upload caps (gateway and file service in their own processes)', () => {
  const MAX_UPLOADS = 3;
  const PER_KEY = 2;
  const iso = isolation();
  let file: NodeProcess;
  let gateway: NodeProcess;
  let nodes: NodeProcess[] = [];
  const stalled: StalledUpload[] = [];

  beforeAll(async () => {
    const stack = await startFileStack(iso, {
      common: {
        FILE_MAX_UPLOADS: String(MAX_UPLOADS),
        FILE_MAX_UPLOADS_PER_KEY: String(PER_KEY),
        FILE_IDLE_TIMEOUT_MS: '60000',
      },
    });
    ({ file, all: nodes } = stack);
    [gateway] = stack.gateways;
  });

  afterAll(async () => {
    for (const upload of stalled) upload.drop();
    await Promise.all(nodes.map((n) => n.stop()));
    await dropDatabases(iso);
  });

  it('refuses uploads beyond FILE_MAX_UPLOADS with 503, stays within its memory bound, and takes uploads again once the stalled ones are gone', async () => {
    const [a, b, ...others] = await Promise.all(
      Array.from({ length: 8 }, () => createUserWithKey(gateway.url)),
    );
    await waitForFiles(gateway.url, a.key);
    await waitForActive(file.opsUrl, 0);

    const pid = file.child.pid as number;
    const baseline = rssKb(pid);
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, rssKb(pid))), 25);
    try {
      // Every slot taken by clients that send 4.9 MB and go quiet: two keys, within their cap.
      for (const { key } of [a, a, b]) stalled.push(stalledUpload(gateway.url, key, STALL_BYTES));
      await Promise.all(stalled.map((s) => s.sent));
      await waitForActive(file.opsUrl, MAX_UPLOADS);

      // The next, from another key, is refused by the file service at once.
      const next = stalledUpload(gateway.url, others[0].key, STALL_BYTES);
      stalled.push(next);
      const busy = await refusal(next, file.opsUrl, MAX_UPLOADS);
      expectErrorEnvelope(
        busy,
        503,
        `The file service is busy with other uploads; retry in ${FILE_RETRY_AFTER_SECONDS} seconds`,
      );
      expect(busy.headers.get('retry-after')).toBe(String(FILE_RETRY_AFTER_SECONDS));

      // A flood of stalled uploads from keys within their own cap: all refused, none held.
      const flood = others
        .flatMap(({ key }) => [key, key])
        .map((key) => {
          const upload = stalledUpload(gateway.url, key, STALL_BYTES);
          stalled.push(upload);
          return refusal(upload, file.opsUrl, MAX_UPLOADS);
        });
      for (const reply of await Promise.all(flood)) expectErrorEnvelope(reply, 503, /busy/);

      // A key with PER_KEY uploads in progress is refused by the gateway, before any byte.
      const third = stalledUpload(gateway.url, a.key, STALL_BYTES);
      stalled.push(third);
      const tooMany = await refusal(third, file.opsUrl, MAX_UPLOADS);
      expectErrorEnvelope(
        tooMany,
        429,
        `This API key already has ${PER_KEY} uploads in progress; wait for one to finish, or retry in ${FILE_RETRY_AFTER_SECONDS} seconds`,
      );
      expect(tooMany.headers.get('retry-after')).toBe(String(FILE_RETRY_AFTER_SECONDS));
      expect(await activeUploads(file.opsUrl)).toBe(MAX_UPLOADS);
    } finally {
      clearInterval(sampler);
    }
    const growthMb = (peak - baseline) / 1024;
    const boundMb = (MAX_UPLOADS * UPLOAD_MEMORY_BYTES + GC_HEADROOM_BYTES) / 1024 / 1024;
    console.log(
      `file service RSS ${Math.round(baseline / 1024)} → peak ${Math.round(peak / 1024)} MB ` +
        `(+${Math.round(growthMb)} MB, bound +${boundMb} MB) with ${stalled.length} stalled uploads`,
    );
    expect(growthMb).toBeLessThanOrEqual(boundMb);

    // The clients leave: their slots and leases are given back.
    for (const upload of stalled.splice(0)) upload.drop();
    await waitForActive(file.opsUrl, 0);
    for (const { key } of [a, a, b, others[0]]) {
      expect((await upload(gateway.url, key)).status).toBe(200);
    }
  });

  it("holds an account's publishable keys to half of the account's part of a process, so that its servers still upload", async () => {
    const owner = await createUserWithKey(gateway.url);
    const made = await request(gateway.url, 'POST', `/admin/users/${owner.userId}/api-keys`, {
      headers: adminHeaders,
      json: { serverOnly: false },
    });
    expect(made.status).toBe(201);
    const app = made.body.data.key as string;
    await waitForFiles(gateway.url, app);
    await waitForActive(file.opsUrl, 0);
    // Of 3 slots the account may hold 2, its publishable keys 1 of them.
    const leaked = stalledUpload(gateway.url, app, STALL_BYTES);
    stalled.push(leaked);
    await leaked.sent;
    await waitForActive(file.opsUrl, 1);
    const more = stalledUpload(gateway.url, app, STALL_BYTES);
    stalled.push(more);
    expectErrorEnvelope(
      await refusal(more, file.opsUrl, 1),
      503,
      `This account's publishable keys' uploads hold 1 of this file-service process's ${MAX_UPLOADS}, as many as they may (half the account's 2), so that its servers find room; wait for one to finish, or retry in ${FILE_RETRY_AFTER_SECONDS} seconds`,
    );
    expect((await upload(gateway.url, owner.key)).status).toBe(200);
    for (const held of stalled.splice(0)) held.drop();
    await waitForActive(file.opsUrl, 0);
    expect((await upload(gateway.url, app)).status).toBe(200);
  });
});

// ---------------------------------------------------------------- per key, across replicas

describe('the per-key cap across gateway replicas', () => {
  const iso = isolation();
  let file: NodeProcess;
  let first: NodeProcess;
  let second: NodeProcess;
  let nodes: NodeProcess[] = [];
  const stalled: StalledUpload[] = [];

  beforeAll(async () => {
    const stack = await startFileStack(
      iso,
      {
        common: {
          FILE_MAX_UPLOADS_PER_KEY: '2',
          FILE_IDLE_TIMEOUT_MS: '60000',
          // The leases of a gateway that dies expire after they began (transferLeaseMs:
          // FILE_TIMEOUT_MS, six S3_TIMEOUT_MS, two REDIS_COMMAND_TIMEOUT_MS and 5 s, 48 s
          // here): long enough for the uploads to be still in progress when the replica is
          // killed.
          FILE_TIMEOUT_MS: '15000',
          S3_TIMEOUT_MS: '3000',
        },
      },
      2,
    );
    ({ file, all: nodes } = stack);
    [first, second] = stack.gateways;
  });

  afterAll(async () => {
    for (const upload of stalled) upload.drop();
    await Promise.all(nodes.map((n) => n.stop()));
    await dropDatabases(iso);
  });

  it('counts a key’s uploads on every replica, and a crashed replica’s leases expire', async () => {
    const owner: Key = await createUserWithKey(second.url);
    await waitForFiles(first.url, owner.key);
    await waitForFiles(second.url, owner.key);

    for (let i = 0; i < 2; i++) stalled.push(stalledUpload(first.url, owner.key, STALL_BYTES));
    await Promise.all(stalled.map((s) => s.sent));
    await waitForActive(file.opsUrl, 2);

    const third = stalledUpload(second.url, owner.key, STALL_BYTES);
    stalled.push(third);
    expectErrorEnvelope(
      await refusal(third, file.opsUrl, 2),
      429,
      /already has 2 uploads in progress/,
    );

    // The replica holding both uploads dies without giving its leases back.
    await first.stop('SIGKILL');
    for (const upload of stalled.splice(0)) upload.drop();
    // The file service lets go of the dead node's streams...
    await waitForActive(file.opsUrl, 0);
    // ...and the leases expire: the key uploads again through the other replica.
    await eventually(async () => expect((await upload(second.url, owner.key)).status).toBe(200), {
      timeout: 55_000,
      interval: 500,
    });
  }, 100_000);
});

// ---------------------------------------------------------------- idle bodies

/** The topology started with `env` before the suite, stopped and its databases dropped after. */
function useTopology(start: FileTopology, env: Record<string, string>) {
  const iso = isolation();
  const started = {} as FileTopologyStack;
  beforeAll(async () => {
    Object.assign(started, await start(iso, { common: env }));
  });
  afterAll(async () => {
    await Promise.all(started.nodes?.map((n) => n.stop()) ?? []);
    await dropDatabases(iso);
  });
  return started;
}

describe.each(fileTopologies)('an upload body that goes quiet, %s', (_name, start) => {
  const top = useTopology(start, {
    FILE_IDLE_TIMEOUT_MS: '1500',
    FILE_MAX_UPLOADS: '1',
    // Well beyond the idle timeout: a 504 after it would be the call's own timeout.
    FILE_TIMEOUT_MS: '20000',
  });

  it('is aborted with 408 after FILE_IDLE_TIMEOUT_MS, and its slot is free again', async () => {
    const { key } = await createUserWithKey(top.url);
    await waitForFiles(top.url, key);

    const quiet = stalledUpload(top.url, key, 1024 * 1024);
    try {
      const reply = await quiet.answer;
      expectErrorEnvelope(
        reply,
        408,
        'No data received for 1.5 s; the upload was cancelled. Send the body without pauses and retry',
      );
    } finally {
      quiet.drop();
    }
    // The only slot is free again.
    await waitForActive(top.fileOps, 0);
    expect((await upload(top.url, key)).status).toBe(200);
  });

  it('is aborted with 408 as well when it sent nothing after its headers', async () => {
    const { key } = await createUserWithKey(top.url);
    await waitForFiles(top.url, key);
    // Across processes the gateway's push must reach the file service with no byte to send
    // yet: held back, the transfer's ticket expired (503) or the call timed out (504).
    const silent = stalledUpload(top.url, key, null);
    try {
      expectErrorEnvelope(await silent.answer, 408, /No data received for 1\.5 s/);
    } finally {
      silent.drop();
    }
    await waitForActive(top.fileOps, 0);
  });
});

// ---------------------------------------------------------------- bytes per day

describe.each(fileTopologies)('a user’s uploads of a day, %s', (_name, start) => {
  /** What `upload` stores. */
  const FILE = fileOf(HEADS.png, 5000).length;
  /** Reached with a fourth file: a fifth is refused. */
  const LIMIT = 3 * FILE + 1;
  const top = useTopology(start, { FILE_MAX_UPLOAD_BYTES_PER_USER_PER_DAY: String(LIMIT) });
  let redis: Redis;
  beforeAll(() => {
    redis = new Redis(process.env.REDIS_URL as string);
  });
  afterAll(() => redis?.quit());
  // Each test's uploads are counted on one UTC day, whatever the hour it runs at.
  beforeEach(() => clearOfDayEnd(DAY_END_MARGIN_MS), DAY_END_MARGIN_MS + 10_000);

  /** What the user's count of today says (one key per user and UTC day). */
  async function counted(userId: string): Promise<number> {
    const keys = await redis.keys(`*:upload-bytes:${userId}:*`);
    expect(keys).toHaveLength(1);
    return Number(await redis.get(keys[0]));
  }

  it('stop at FILE_MAX_UPLOAD_BYTES_PER_USER_PER_DAY (429 until midnight UTC), counting stored bytes exactly, for that user alone', async () => {
    const owner = await createUserWithKey(top.url);
    await waitForFiles(top.url, owner.key);
    expect(await counted(owner.userId)).toBe(FILE);
    // A refused file stores nothing and counts nothing.
    const text = new FormData();
    text.append('upload-file', new Blob(['plain text, not an image']), 'note.txt');
    const refused = await fetch(`${top.url}/file/single-upload`, {
      method: 'POST',
      headers: { 'api-key': owner.key },
      body: text,
    });
    expect(refused.status).toBe(415);
    // Two at once, then a third: each adds its size once.
    const [a, b] = await Promise.all([upload(top.url, owner.key), upload(top.url, owner.key)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(await counted(owner.userId)).toBe(3 * FILE);
    expect((await upload(top.url, owner.key)).status).toBe(200);
    expect(await counted(owner.userId)).toBe(4 * FILE);

    const over = await upload(top.url, owner.key);
    expectErrorEnvelope(
      over,
      429,
      `This account stored its ${LIMIT} bytes of uploads for today (FILE_MAX_UPLOAD_BYTES_PER_USER_PER_DAY); uploads open again at 00:00 UTC (see \`Retry-After\`)`,
    );
    const retryAfter = Number(over.headers.get('retry-after'));
    const now = new Date();
    const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(Math.ceil((midnight - now.getTime()) / 1000) + 1);
    expect(await counted(owner.userId)).toBe(4 * FILE);
    // A request no day could take is told what is wrong with it, not to come back tomorrow.
    const notMultipart = await fetch(`${top.url}/file/single-upload`, {
      method: 'POST',
      headers: { 'api-key': owner.key, 'content-type': 'application/json' },
      body: JSON.stringify({ file: 'x' }),
    });
    expect(notMultipart.status).toBe(400);
    // Another account uploads; the owner's files still download.
    const other = await createUserWithKey(top.url);
    expect((await upload(top.url, other.key)).status).toBe(200);
    const download = await fetch(`${top.url}/file/download`, {
      method: 'POST',
      headers: { 'api-key': owner.key, 'content-type': 'application/json' },
      body: JSON.stringify({ url: (a.body as { data: { url: string } }).data.url }),
    });
    expect(download.status).toBe(200);
    expect((await download.arrayBuffer()).byteLength).toBe(FILE);
  });
  it("counts the account's publishable keys apart: once they spent the day, its server key still uploads", async () => {
    const owner = await createUserWithKey(top.url);
    const made = await request(top.url, 'POST', `/admin/users/${owner.userId}/api-keys`, {
      headers: adminHeaders,
      json: { serverOnly: false },
    });
    expect(made.status).toBe(201);
    const app = made.body.data.key as string;
    await waitForFiles(top.url, app);
    for (let i = 0; i < 3; i++) expect((await upload(top.url, app)).status).toBe(200);
    const over = await upload(top.url, app);
    expectErrorEnvelope(
      over,
      429,
      `This account's publishable keys stored their ${LIMIT} bytes of uploads for today (FILE_MAX_UPLOAD_BYTES_PER_USER_PER_DAY); uploads open again at 00:00 UTC (see \`Retry-After\`)`,
    );
    const day = new Date().toISOString().slice(0, 10);
    const stored = async (share: string) =>
      Number(await redis.get((await redis.keys(`*:upload-bytes:${share}:${day}`))[0] ?? 'none'));
    expect(await stored(`${owner.userId}:publishable`)).toBe(4 * FILE);
    // The merchant's servers upload all the same, counted in their own share.
    expect((await upload(top.url, owner.key)).status).toBe(200);
    expect(await stored(owner.userId)).toBe(FILE);
    expect(await stored(`${owner.userId}:publishable`)).toBe(4 * FILE);
  });
});

// ---------------------------------------------------------------- downloads

const DOWNLOADS_ACTIVE = DOWNLOADS_ACTIVE_METRIC.replace(/\./g, '_');
const activeDownloads = async (opsUrl: string) => count(await samples(opsUrl, DOWNLOADS_ACTIVE));

/** A download whose client reads nothing: it holds its slot until dropped or cut. */
function heldDownload(base: string, key: string, url: string) {
  const dropped = new AbortController();
  const answer = fetch(`${base}/file/download`, {
    method: 'POST',
    headers: { 'api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ url }),
    signal: dropped.signal,
  });
  answer.catch(() => undefined);
  return { answer, drop: () => dropped.abort() };
}

describe.each(fileTopologies)('a download whose client pauses, %s', (_name, start) => {
  const top = useTopology(start, { S3_TIMEOUT_MS: '1000', FILE_TIMEOUT_MS: '20000' });

  it('is not cut after S3_TIMEOUT_MS of pause: only FILE_TIMEOUT_MS bounds it', async () => {
    const { key } = await createUserWithKey(top.url);
    await waitForFiles(top.url, key);
    // Larger than the buffers on the way: a pause stalls the S3 connection behind it.
    const bytes = fileOf(HEADS.png, 18 * 1024 * 1024);
    const form = new FormData();
    form.append('upload-file', new Blob([bytes]), 'big.png');
    const stored = await fetch(`${top.url}/file/single-upload`, {
      method: 'POST',
      headers: { 'api-key': key },
      body: form,
    });
    expect(stored.status).toBe(200);
    const { url } = ((await stored.json()) as { data: { url: string } }).data;
    const download = await fetch(`${top.url}/file/download`, {
      method: 'POST',
      headers: { 'api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ url }),
    });
    expect(download.status).toBe(200);
    const reader = (download.body as ReadableStream<Uint8Array>).getReader();
    const chunks: Uint8Array[] = [];
    const first = await reader.read();
    chunks.push(first.value as Uint8Array);
    // Three times S3_TIMEOUT_MS without reading.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
    }
    expect(Buffer.concat(chunks).equals(bytes)).toBe(true);
  }, 60_000);
});

describe.each(fileTopologies)('download caps, %s', (_name, start) => {
  const top = useTopology(start, {
    FILE_MAX_DOWNLOADS: '3',
    FILE_MAX_DOWNLOADS_PER_KEY: '2',
    FILE_TIMEOUT_MS: '12000',
  });
  const held: { drop(): void }[] = [];
  afterAll(() => {
    for (const download of held) download.drop();
  });
  /** Big enough that a client reading nothing stalls the stream behind it. */
  const SIZE = 18 * 1024 * 1024;

  it('holds a key to FILE_MAX_DOWNLOADS_PER_KEY (429) and the process to FILE_MAX_DOWNLOADS (503), uploads going on; a download read by nobody, or a trickle, is cut after FILE_TIMEOUT_MS', async () => {
    const [a, b, c] = await Promise.all([1, 2, 3].map(() => createUserWithKey(top.url)));
    await waitForFiles(top.url, a.key);
    const bytes = fileOf(HEADS.png, SIZE);
    const form = new FormData();
    form.append('upload-file', new Blob([bytes]), 'big.png');
    const stored = await fetch(`${top.url}/file/single-upload`, {
      method: 'POST',
      headers: { 'api-key': a.key },
      body: form,
    });
    expect(stored.status).toBe(200);
    const { url } = ((await stored.json()) as { data: { url: string } }).data;
    const waitForDownloads = (expected: number, timeout = 10_000) =>
      eventually(async () => expect(await activeDownloads(top.fileOps)).toBe(expected), {
        timeout,
        interval: 100,
      });

    for (const { key } of [a, a, b]) {
      const download = heldDownload(top.url, key, url);
      held.push(download);
      expect((await download.answer).status).toBe(200);
    }
    await waitForDownloads(3);
    const refusedForKey = await heldDownload(top.url, a.key, url).answer;
    expect(refusedForKey.status).toBe(429);
    expect(await refusedForKey.json()).toMatchObject({
      message: expect.stringMatching(/already has 2 downloads in progress/),
    });
    const refusedForLoad = await heldDownload(top.url, c.key, url).answer;
    expect(refusedForLoad.status).toBe(503);
    expect(refusedForLoad.headers.get('retry-after')).toBe(String(FILE_RETRY_AFTER_SECONDS));
    expect(await refusedForLoad.json()).toMatchObject({
      message: expect.stringMatching(/busy with other downloads/),
    });
    // Uploads have their own slots and S3 connections.
    expect((await upload(top.url, c.key)).status).toBe(200);

    for (const download of held.splice(0)) download.drop();
    await waitForDownloads(0);
    const whole = await fetch(`${top.url}/file/download`, {
      method: 'POST',
      headers: { 'api-key': c.key, 'content-type': 'application/json' },
      body: JSON.stringify({ url }),
    });
    expect(whole.status).toBe(200);
    expect(Buffer.from(await whole.arrayBuffer()).equals(bytes)).toBe(true);

    // A client that keeps the connection and reads nothing is cut at FILE_TIMEOUT_MS.
    const forgotten = heldDownload(top.url, c.key, url);
    held.push(forgotten);
    expect((await forgotten.answer).status).toBe(200);
    await waitForDownloads(1);
    await waitForDownloads(0, 30_000);

    // One that reads a trickle, never stalling the stream long enough for S3 to give up, is
    // cut at FILE_TIMEOUT_MS as well: its slot comes back long before it would have read it all.
    // Read through node:http, 16 KB at a time: fetch reads ahead of its reader, and the socket
    // buffers it grows on the way (up to tcp_rmem's 32 MB here) held the whole file once, which
    // the file service then handed on in time and nothing was left to cut.
    const trickle = await new Promise<IncomingMessage>((resolve, reject) => {
      const asked = httpRequest(`${top.url}/file/download`, {
        method: 'POST',
        headers: { 'api-key': c.key, 'content-type': 'application/json' },
      });
      asked.once('response', resolve).once('error', reject);
      asked.end(JSON.stringify({ url }));
    });
    expect(trickle.statusCode).toBe(200);
    let read = 0;
    const pace = setInterval(() => {
      read += trickle.read(16 * 1024)?.length ?? 0;
    }, 250);
    await waitForDownloads(1);
    // FILE_TIMEOUT_MS is 12 s; read whole, this would take over four minutes.
    await waitForDownloads(0, 20_000);
    // What was on its way when the transfer was cut is read now, and the answer ends cut.
    clearInterval(pace);
    const reading = new Promise<string>((resolve) =>
      finished(trickle, (err) => resolve(err ? 'cut' : 'whole')),
    );
    trickle.on('data', (chunk: Buffer) => (read += chunk.length));
    const ended = await reading;
    // Cut, unless the buffers on the way (sockets here grow to 32 MB) had taken the whole file
    // before FILE_TIMEOUT_MS (seen once in CI): then its slot came back with nothing left to
    // cut, and every byte arrives. Either way the slot came back in time (above).
    if (ended === 'cut') {
      expect(read).toBeGreaterThan(0);
      expect(read).toBeLessThan(SIZE);
    } else {
      expect(read).toBe(SIZE);
    }
    // Recorded as cut by the deadline (504 in one process) or by the file service that cut its
    // transfer (502 across processes), never as a fault of the gateway's (500).
    const answers = await samples(top.gatewayOps, 'waybill_http_requests_total');
    const cut = (status: string) => count(answers, { route: '/file/download', status });
    expect(cut('500')).toBe(0);
    expect(cut('504') + cut('502')).toBeGreaterThanOrEqual(ended === 'cut' ? 2 : 1);
  }, 120_000);

  it('takes no slot of a key for a download whose body has not come', async () => {
    const a = await createUserWithKey(top.url);
    await waitForFiles(top.url, a.key);
    const stored = await upload(top.url, a.key);
    const { url } = (stored.body as { data: { url: string } }).data;
    // As many requests as the key's cap, their headers sent, their bodies never.
    const { hostname, port } = new URL(top.url);
    const stalled = [1, 2].map(() => {
      const socket = connect(Number(port), hostname);
      socket.on('error', () => undefined);
      socket.write(
        `POST /file/download HTTP/1.1\r\nHost: ${hostname}\r\napi-key: ${a.key}\r\n` +
          'content-type: application/json\r\ncontent-length: 200\r\n\r\n',
      );
      return socket;
    });
    try {
      // Their keys looked up and accepted meanwhile.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const whole = await fetch(`${top.url}/file/download`, {
        method: 'POST',
        headers: { 'api-key': a.key, 'content-type': 'application/json' },
        body: JSON.stringify({ url }),
      });
      expect(whole.status).toBe(200);
      await whole.arrayBuffer();
    } finally {
      for (const socket of stalled) socket.destroy();
    }
  });
});

// ---------------------------------------------------------------- unanswered uploads

describe.each(fileTopologies)(
  'an upload the gateway stopped waiting for (%s)',
  (topology, start) => {
    const inProcess = topology === fileTopologies[0][0];
    const iso = isolation();
    let nodes: NodeProcess[] = [];
    let gateway: { url: string };
    let s3: HoldingS3;
    const direct = directS3();
    const storedFor = async (userId: string) =>
      (
        await direct.send(
          new ListObjectsV2Command({ Bucket: S3_BUCKET, Prefix: `uploads/${userId}/` }),
        )
      ).Contents ?? [];

    /** A user whose warm-up upload (the gateway has found the file service) is stored alone. */
    const warmedUpUser = async () => {
      const user = await createUserWithKey(gateway.url);
      await waitForFiles(gateway.url, user.key);
      expect(await storedFor(user.userId)).toHaveLength(1);
      return user;
    };

    beforeAll(async () => {
      s3 = await holdingS3(process.env.S3_ENDPOINT as string, OBJECT_WRITES);
      const stack = await start(iso, {
        file: { S3_ENDPOINT: s3.url, FILE_UPLOAD_SWEEP_INTERVAL_MS: '300', LOG_LEVEL: 'info' },
        gateway: { FILE_TIMEOUT_MS: '1500', FILE_MAX_UPLOADS_PER_KEY: '1' },
      });
      nodes = stack.nodes;
      gateway = stack;
    });

    afterAll(async () => {
      await s3?.close();
      direct.destroy();
      await Promise.all(nodes.map((n) => n.stop()));
      await dropDatabases(iso);
    });
    // The day's count read before and after is one UTC day's, whatever the hour it runs at.
    beforeEach(() => clearOfDayEnd(DAY_END_MARGIN_MS), DAY_END_MARGIN_MS + 10_000);

    it('answers 504 and keeps nothing of it: what S3 stored after the gateway left is deleted, and uncounted', async () => {
      const { userId, key } = await warmedUpUser();

      // The bytes the user's day counts: the warm-up's.
      const redis = new Redis(process.env.REDIS_URL as string);
      const dayCount = async () =>
        Number(
          await redis.get(
            `${iso.namespace}:upload-bytes:${userId}:${new Date().toISOString().slice(0, 10)}`,
          ),
        );
      try {
        const counted = await dayCount();
        expect(counted).toBeGreaterThan(0);

        s3.hold();
        const answer = await upload(gateway.url, key);
        expectErrorEnvelope(answer, 504);
        expect(s3.held()).toBe(1);
        if (inProcess) {
          // The action still runs in this process: the key's one upload is still in progress.
          expectErrorEnvelope(await upload(gateway.url, key), 429);
        }
        s3.release();
        // Stored once released, then deleted by the file service: only the warm-up's file stays,
        // and only its bytes count toward the day.
        await eventually(async () => expect(s3.deletes()).toBe(1), {
          timeout: 10_000,
          interval: 50,
        });
        expect(await storedFor(userId)).toHaveLength(1);
        await eventually(async () => expect(await dayCount()).toBe(counted), {
          timeout: 10_000,
          interval: 50,
        });
      } finally {
        redis.disconnect();
      }
    }, 60_000);
    it('keeps nothing of an upload whose client left once its body was sent, while S3 stored it', async () => {
      const { userId, key } = await warmedUpUser();
      const deletes = s3.deletes();
      const form = new FormData();
      form.append('upload-file', new Blob([fileOf(HEADS.png, 5000)]), 'left.png');
      const encoded = new Response(form);
      const body = Buffer.from(await encoded.arrayBuffer());
      const heldBefore = s3.held();
      s3.hold();
      const sent = httpRequest(`${gateway.url}/file/single-upload`, {
        method: 'POST',
        headers: {
          'api-key': key,
          'content-type': encoded.headers.get('content-type') as string,
          'content-length': String(body.length),
        },
      });
      sent.on('error', () => undefined); // cut by this test
      sent.end(body);
      await eventually(async () => expect(s3.held() - heldBefore).toBe(1), {
        timeout: 10_000,
        interval: 20,
      });
      sent.destroy();
      // Let the gateway see it go before S3 answers.
      await new Promise((resolve) => setTimeout(resolve, 200));
      s3.release();
      await eventually(async () => expect(s3.deletes() - deletes).toBe(1), {
        timeout: 10_000,
        interval: 50,
      });
      expect(await storedFor(userId)).toHaveLength(1);
    }, 60_000);

    it('deletes again, at the next sweep, what S3 refused to delete when the gateway left', async () => {
      const { userId, key } = await warmedUpUser();
      const passed = s3.deletes();

      const refusedBefore = s3.refusedDeletes();
      s3.refuseDeletes(true);
      s3.hold();
      try {
        expectErrorEnvelope(await upload(gateway.url, key), 504);
        s3.release();
        // Stored once released; its delete refused, the object stays, and the sweep finds S3
        // still refusing. The S3 client sends each delete twice (maxAttempts 2): a third refusal
        // is a sweep's, so the request's own delete has given up. Taking deletes again after
        // fewer, its second attempt could delete the object and leave the sweep nothing to do.
        await eventually(async () => expect(await storedFor(userId)).toHaveLength(2), {
          timeout: 10_000,
          interval: 50,
        });
        await eventually(
          async () => expect(s3.refusedDeletes() - refusedBefore).toBeGreaterThanOrEqual(3),
          { timeout: 10_000, interval: 50 },
        );
        expect(await storedFor(userId)).toHaveLength(2);
      } finally {
        s3.refuseDeletes(false);
      }
      // S3 takes deletes again: the sweep deletes it, once, and keeps nothing more to delete.
      await eventually(async () => expect(await storedFor(userId)).toHaveLength(1), {
        timeout: 10_000,
        interval: 100,
      });
      expect(s3.deletes() - passed).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(s3.deletes() - passed).toBe(1);
      expect(nodes[0].output()).toMatch(/files of failed uploads deleted at last/);
    }, 60_000);
  },
);
