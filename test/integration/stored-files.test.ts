import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { PUBLISHABLE_KEY_REFUSED } from '../../services/gateway/edge';
import { FILE_LIST_MAX } from '../../services/file/schemas';
import { forEachAtOnce } from '../../libs/at-once';
import { eventually } from '../support/eventually';
import { startFileStack } from '../support/file-stack';
import {
  adminHeaders,
  createUserWithKey,
  expectErrorEnvelope,
  request,
  type Reply,
} from '../support/http';
import { HEADS, fileOf } from '../support/multipart';
import { ROOT, runTypeScript } from '../support/node-run';
import { directS3, S3_BUCKET } from '../support/s3';
import { dropDatabases, isolation, type NodeProcess } from '../support/stack';

/**
 * A user's uploaded files, listed and deleted by their owner (`/api/files`) and by operators
 * (`/admin/users/:userId/files`, `waybill files`), with the file service on a node of its own.
 */
const CDN = 'https://cdn.waybill.test';
const iso = isolation();
const s3 = directS3();
const CLI = join(ROOT, 'bin', 'waybill.ts');

let nodes: NodeProcess[] = [];
let base: string;

type Key = { userId: string; key: string; keyId: string };
let alice: Key;
let bob: Key;

beforeAll(async () => {
  const stack = await startFileStack(iso, { common: { CDN_BASE_URL: CDN } });
  nodes = stack.all;
  base = stack.gateways[0].url;
  [alice, bob] = await Promise.all([createUserWithKey(base), createUserWithKey(base)]);
  // Until the gateway has discovered the file service, uploads answer 503.
  await eventually(async () => expect((await upload(alice)).status).toBe(200), {
    timeout: 15_000,
    interval: 100,
  });
});

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()));
  await dropDatabases(iso);
  s3.destroy();
});

async function upload(user: Key, bytes = 5000): Promise<Reply> {
  const form = new FormData();
  form.append('upload-file', new Blob([fileOf(HEADS.png, bytes)]), 'photo.png');
  const res = await fetch(`${base}/file/single-upload`, {
    method: 'POST',
    headers: { 'api-key': user.key },
    body: form,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: JSON.parse(text) };
}

/** Uploads `count` files for `user`; their URLs. */
async function uploaded(user: Key, count: number): Promise<string[]> {
  const urls: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const reply = await upload(user, 5000 + i);
    expect(reply.status).toBe(200);
    urls.push((reply.body as { data: { url: string } }).data.url);
  }
  return urls;
}

const nameOf = (url: string) => url.slice(url.lastIndexOf('/') + 1);
const keyOf = (url: string) => url.slice(CDN.length + 1);

async function stored(url: string): Promise<boolean> {
  try {
    await s3.send(new HeadObjectCommand({ Bucket: S3_BUCKET, Key: keyOf(url) }));
    return true;
  } catch {
    return false;
  }
}

const api = (user: Key, method: string, path: string) =>
  request(base, method, path, { headers: { 'api-key': user.key } });

const download = (user: Key, url: string) =>
  request(base, 'POST', '/file/download', { headers: { 'api-key': user.key }, json: { url } });

async function listAll(user: Key, limit = 100): Promise<string[]> {
  const names: string[] = [];
  for (let after: string | undefined; ;) {
    const query = `limit=${limit}${after ? `&after=${after}` : ''}`;
    const page = await api(user, 'GET', `/api/files?${query}`);
    expect(page.status).toBe(200);
    const files = page.body.data as { fileName: string }[];
    names.push(...files.map((f) => f.fileName));
    if (files.length < limit) return names;
    after = files[files.length - 1].fileName;
  }
}

/** A command with services of its own, beside the stack: S3 is the record. */
function cli(args: string[]) {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NAMESPACE: iso.namespace,
    MONGO_DB_PREFIX: iso.dbPrefix,
    MONGO_TIMEOUT_MS: '1000',
    CDN_BASE_URL: CDN,
    LOG_LEVEL: 'warn',
  };
  delete env.NATS_URL;
  return runTypeScript(CLI, args, { env });
}

describe('a user’s own files (/api/files)', () => {
  it('lists exactly the caller’s files, a page at a time, each with its URL, size and time', async () => {
    const user = await createUserWithKey(base);
    const urls = await uploaded(user, 5);
    await uploaded(bob, 1);

    const page = await api(user, 'GET', '/api/files');
    expect(page.status).toBe(200);
    expect(page.body.message).toBe('Files retrieved');
    const byName = new Map(
      (page.body.data as { fileName: string }[]).map((file) => [file.fileName, file]),
    );
    expect([...byName.keys()].sort()).toEqual(urls.map(nameOf).sort());
    urls.forEach((url, i) =>
      expect(byName.get(nameOf(url))).toEqual({
        fileName: nameOf(url),
        url,
        size: fileOf(HEADS.png, 5000 + i).length,
        uploadedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      }),
    );
    // Pages of 2 give the same five, each once.
    expect((await listAll(user, 2)).sort()).toEqual(urls.map(nameOf).sort());
    // An object not of our layout, listed first, is read past: a page is full unless it is
    // the last, so a client paging until a short page sees every file.
    await s3.send(
      new PutObjectCommand({ Bucket: S3_BUCKET, Key: `uploads/${user.userId}/!stray`, Body: 'x' }),
    );
    const full = await api(user, 'GET', '/api/files?limit=5');
    expect((full.body.data as { fileName: string }[]).map((f) => f.fileName).sort()).toEqual(
      urls.map(nameOf).sort(),
    );
  });

  it('deletes the caller’s file: 204, gone from S3, downloads and the list; again 404', async () => {
    const [url, kept] = await uploaded(alice, 2);
    const deleted = await api(alice, 'DELETE', `/api/files/${nameOf(url)}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');

    expect(await stored(url)).toBe(false);
    expectErrorEnvelope(await download(alice, url), 404, 'File not found');
    const names = await listAll(alice);
    expect(names).not.toContain(nameOf(url));
    expect(names).toContain(nameOf(kept));
    expect((await download(alice, kept)).status).toBe(200);

    expectErrorEnvelope(
      await api(alice, 'DELETE', `/api/files/${nameOf(url)}`),
      404,
      `File ${nameOf(url)} not found`,
    );
  });

  it('never touches another user’s file: 404, and the file stays', async () => {
    const [url] = await uploaded(alice, 1);
    expectErrorEnvelope(
      await api(bob, 'DELETE', `/api/files/${nameOf(url)}`),
      404,
      `File ${nameOf(url)} not found`,
    );
    expect(await stored(url)).toBe(true);
    expect(await listAll(bob)).not.toContain(nameOf(url));
  });

  it('refuses a publishable key: one shipped in an app could delete its account’s files', async () => {
    const [url] = await uploaded(alice, 1);
    const { key } = await clientKeyOf(alice.userId);
    const client = { ...alice, key };
    expectErrorEnvelope(
      await api(client, 'DELETE', `/api/files/${nameOf(url)}`),
      403,
      PUBLISHABLE_KEY_REFUSED,
    );
    expectErrorEnvelope(await api(client, 'GET', '/api/files'), 403, PUBLISHABLE_KEY_REFUSED);
    expect(await stored(url)).toBe(true);
  });

  it.each([
    ['a path outside the folder', '..%2Fx.png'],
    ['a name that is no UUID', 'photo.png'],
    ['upper case', `${randomUUID().toUpperCase()}.png`],
    ['no extension', randomUUID()],
  ])('refuses %s as fileName with 400', async (_what, fileName) => {
    const reply = await api(alice, 'DELETE', `/api/files/${fileName}`);
    expectErrorEnvelope(reply, 400);
    expect(reply.body.errors).toEqual([
      { field: 'fileName', message: expect.stringContaining('the last segment of its URL') },
    ]);
  });

  it.each([
    ['limit=0', 'limit'],
    [`limit=${FILE_LIST_MAX + 1}`, 'limit'],
    ['after=x.png', 'after'],
  ])('refuses %s with 400 naming %s', async (query, field) => {
    const reply = await api(alice, 'GET', `/api/files?${query}`);
    expectErrorEnvelope(reply, 400);
    expect(reply.body.errors).toEqual([{ field, message: expect.any(String) }]);
  });
});

/** A client-app (publishable) key of `userId`. */
async function clientKeyOf(userId: string): Promise<{ key: string }> {
  const created = await request(base, 'POST', `/admin/users/${userId}/api-keys`, {
    headers: adminHeaders,
    json: { serverOnly: false },
  });
  expect(created.status).toBe(201);
  return { key: created.body.data.key };
}

describe('users’ files, for operators (/admin/users/:userId/files and waybill files)', () => {
  const admin = (method: string, path: string) =>
    request(base, method, path, { headers: adminHeaders });

  it('lists a user’s files and takes one down; only with the admin token', async () => {
    const user = await createUserWithKey(base);
    const [url, kept] = await uploaded(user, 2);
    const listed = await admin('GET', `/admin/users/${user.userId}/files`);
    expect(listed.status).toBe(200);
    expect((listed.body.data as { url: string }[]).map((f) => f.url).sort()).toEqual(
      [url, kept].sort(),
    );

    const path = `/admin/users/${user.userId}/files/${nameOf(url)}`;
    expectErrorEnvelope(await request(base, 'DELETE', path), 401);
    expectErrorEnvelope(
      await request(base, 'DELETE', path, { headers: { 'api-key': user.key } }),
      401,
    );
    expect(await stored(url)).toBe(true);

    expect((await admin('DELETE', path)).status).toBe(204);
    expect(await stored(url)).toBe(false);
    expect(await stored(kept)).toBe(true);
    expectErrorEnvelope(await admin('DELETE', path), 404, `File ${nameOf(url)} not found`);
  });

  it('purges everything in a user’s folder, a page at a time, and no one else’s', async () => {
    const user = await createUserWithKey(base);
    const urls = await uploaded(user, 3);
    const [bobs] = await uploaded(bob, 1);
    // More than a page of objects, one of them not of our layout: the folder is the user's.
    const extra = Array.from(
      { length: FILE_LIST_MAX },
      (_, i) => `uploads/${user.userId}/${randomUUID()}.png${i === 0 ? '.stray' : ''}`,
    );
    await forEachAtOnce(extra, 16, async (Key) => {
      await s3.send(new PutObjectCommand({ Bucket: S3_BUCKET, Key, Body: 'x' }));
    });

    const first = await admin('POST', `/admin/users/${user.userId}/purge-files`);
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual({ deleted: FILE_LIST_MAX, more: true });
    const second = await admin('POST', `/admin/users/${user.userId}/purge-files`);
    expect(second.body.data).toEqual({ deleted: urls.length, more: false });
    const third = await admin('POST', `/admin/users/${user.userId}/purge-files`);
    expect(third.body.data).toEqual({ deleted: 0, more: false });

    for (const url of urls) expect(await stored(url)).toBe(false);
    expect(await listAll(user)).toEqual([]);
    expect(await stored(bobs)).toBe(true);
  });

  it('waybill files list, delete by URL and purge', async () => {
    const user = await createUserWithKey(base);
    const urls = await uploaded(user, 3);

    const listed = await cli(['files', 'list', user.userId, '--limit', '2']);
    expect({ code: listed.code, stderr: listed.stderr }).toEqual({ code: 0, stderr: '' });
    const page = JSON.parse(listed.stdout) as { fileName: string }[];
    expect(page).toHaveLength(2);
    const rest = await cli(['files', 'list', user.userId, '--after', page[1].fileName]);
    expect(
      [...page, ...(JSON.parse(rest.stdout) as { fileName: string }[])].map((f) => f.fileName),
    ).toEqual(urls.map(nameOf).sort());

    const deleted = await cli(['files', 'delete', urls[0]]);
    expect({ code: deleted.code, stderr: deleted.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(deleted.stdout)).toEqual({ deleted: urls[0] });
    expect(await stored(urls[0])).toBe(false);

    const again = await cli(['files', 'delete', urls[0]]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`File ${nameOf(urls[0])} not found`);
    const foreign = await cli(['files', 'delete', `https://elsewhere.test/${keyOf(urls[1])}`]);
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toContain('<url> is not a file hosted here');

    // An object in the user's folder not named as a file is (an older layout, an operator's
    // copy): listed by nobody, deleted by the purge all the same, so counted by its dry run.
    const stray = `uploads/${user.userId}/notes.txt`;
    await s3.send(new PutObjectCommand({ Bucket: S3_BUCKET, Key: stray, Body: 'x' }));

    // Without --yes: counted, nothing deleted.
    const counted = await cli(['files', 'purge', user.userId]);
    expect(counted.code).toBe(1);
    expect(counted.stderr).toContain('nothing was deleted');
    expect(counted.stderr).toContain('--yes');
    expect(JSON.parse(counted.stdout)).toEqual({
      userId: user.userId,
      wouldDelete: 3,
      more: false,
    });
    for (const url of urls.slice(1)) expect(await stored(url)).toBe(true);

    const purged = await cli(['files', 'purge', user.userId, '--yes']);
    expect(JSON.parse(purged.stdout)).toEqual({ userId: user.userId, deleted: 3, more: false });
    for (const url of urls) expect(await stored(url)).toBe(false);
    // Nothing left: counted so, and not an error.
    const empty = await cli(['files', 'purge', user.userId]);
    expect({ code: empty.code, stderr: empty.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(empty.stdout)).toEqual({ userId: user.userId, wouldDelete: 0, more: false });
  });
});
