import { randomBytes } from 'node:crypto';
import mongoose from 'mongoose';

/**
 * The data of one schemathesis run (scripts/schemathesis):
 *
 *   seed <baseUrl>   through the admin API (ADMIN_TOKEN): a user and a staging API key, one
 *                    uploaded image and a package that shows it, and a courier pricing rule,
 *                    so that lists answer more than `[]`; prints `export NAME=value` lines
 *   drop <dbPrefix>  deletes every database of the run (MONGO_URL)
 */

const TINY_PNG = Buffer.from(
  '89504e470d0a1a0a0000000d4948445200000001000000010806000000' +
    '1f15c4890000000d49444154789c6360f8cfc0f01f0005000201e2a1e8' +
    '6b0000000049454e44ae426082',
  'hex',
);

interface Envelope<T> {
  data: T;
}

async function call<T>(
  baseUrl: string,
  path: string,
  init: RequestInit & { headers: Record<string, string> },
): Promise<T> {
  const res = await fetch(`${baseUrl}${path}`, init);
  const text = await res.text();
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${path} answered ${res.status}: ${text}`);
  return (JSON.parse(text) as Envelope<T>).data;
}

const json = (body: unknown) => ({
  body: JSON.stringify(body),
  headers: { 'content-type': 'application/json' },
});

async function seed(baseUrl: string) {
  const adminToken = process.env.ADMIN_TOKEN;
  if (!adminToken) throw new Error('ADMIN_TOKEN is not set');
  const admin = (body: unknown) => {
    const request = json(body);
    return {
      method: 'POST',
      body: request.body,
      headers: { ...request.headers, authorization: `Bearer ${adminToken}` },
    };
  };
  const suffix = randomBytes(4).toString('hex');
  const user = await call<{ id: string }>(
    baseUrl,
    '/admin/users',
    admin({
      name: 'Schemathesis',
      email: `schemathesis-${suffix}@waybill.local`,
      phone: '+2348000000001',
    }),
  );
  const key = await call<{ id: string; key: string }>(
    baseUrl,
    `/admin/users/${user.id}/api-keys`,
    admin({ environment: 'staging' }),
  );
  const form = new FormData();
  form.append('upload-file', new Blob([TINY_PNG], { type: 'image/png' }), 'dot.png');
  const upload = await call<{ url: string }>(baseUrl, '/file/single-upload', {
    method: 'POST',
    body: form,
    headers: { 'api-key': key.key },
  });
  const pkg = await call<{ id: string }>(baseUrl, '/api/package', {
    method: 'POST',
    ...json({
      packageType: 'Documents',
      name: 'Seeded package',
      image: upload.url,
      quantity: 1,
      size: 'SMALL',
      value: 5000,
    }),
    headers: { 'content-type': 'application/json', 'api-key': key.key },
  });
  await call(
    baseUrl,
    '/admin/pricing/courier-rules',
    admin({
      courierId: user.id,
      from: 'Lagos',
      to: 'Ikeja, Lagos',
      amountKobo: 150000,
    }),
  );
  const lines = {
    WAYBILL_ST_USER_ID: user.id,
    WAYBILL_ST_API_KEY: key.key,
    WAYBILL_ST_FILE_URL: upload.url,
    WAYBILL_ST_PACKAGE_ID: pkg.id,
  };
  for (const [name, value] of Object.entries(lines)) console.log(`export ${name}='${value}'`);
}

async function drop(prefix: string) {
  if (!/^[a-z0-9_]+_$/.test(prefix)) throw new Error(`refusing to drop databases of "${prefix}"`);
  const conn = await mongoose.createConnection(process.env.MONGO_URL as string).asPromise();
  try {
    const { databases } = await conn.listDatabases();
    for (const db of databases) {
      if (db.name.startsWith(prefix)) await conn.useDb(db.name).dropDatabase();
    }
  } finally {
    await conn.close();
  }
}

async function main() {
  const [command, argument] = process.argv.slice(2);
  if (command === 'seed' && argument) return seed(argument);
  if (command === 'drop' && argument) return drop(argument);
  throw new Error('usage: schemathesis-data.ts seed <baseUrl> | drop <dbPrefix>');
}

main().catch((err: unknown) => {
  console.error(`schemathesis-data: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
