import { ADMIN_TOKEN } from './stack';

export interface Reply<T = unknown> {
  status: number;
  headers: Headers;
  text: string;
  body: T;
}

export interface RequestOptions {
  headers?: Record<string, string>;
  json?: unknown;
  raw?: string | Buffer;
}

export async function request<T = any>( // eslint-disable-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
  base: string,
  method: string,
  path: string,
  options: RequestOptions = {},
): Promise<Reply<T>> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | Buffer | undefined = options.raw;
  if (options.json !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = JSON.stringify(options.json);
  }
  const res = await fetch(`${base}${path}`, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, text, body: parsed as T };
}

export const adminHeaders = { authorization: `Bearer ${ADMIN_TOKEN}` };

/** Creates a user and a key through the admin API; returns both. */
export async function createUserWithKey(
  base: string,
  keyOptions: Record<string, unknown> = {},
): Promise<{ userId: string; key: string; keyId: string }> {
  const suffix = Math.random().toString(16).slice(2, 10);
  const user = await request(base, 'POST', '/admin/users', {
    headers: adminHeaders,
    json: {
      name: 'Test Merchant',
      email: `merchant-${suffix}@example.com`,
      phone: '+2348012345678',
    },
  });
  if (user.status !== 201) throw new Error(`create user: ${user.status} ${user.text}`);
  const key = await request(base, 'POST', `/admin/users/${user.body.data.id}/api-keys`, {
    headers: adminHeaders,
    json: keyOptions,
  });
  if (key.status !== 201) throw new Error(`create key: ${key.status} ${key.text}`);
  return { userId: user.body.data.id, key: key.body.data.key, keyId: key.body.data.id };
}

/** The error envelope's exact key set (plus `errors` on validation failures). */
export const ENVELOPE_KEYS = [
  'environment',
  'message',
  'method',
  'path',
  'statusCode',
  'timestamp',
  'url',
];

export function expectErrorEnvelope(reply: Reply, status: number, message?: string | RegExp): void {
  expect(reply.status).toBe(status);
  expect(reply.headers.get('content-type')).toMatch(/application\/json/);
  expect(reply.headers.get('cache-control')).toBe('no-store');
  expect(reply.headers.get('x-content-type-options')).toBe('nosniff');
  const body = reply.body as Record<string, unknown>;
  const keys = Object.keys(body)
    .filter((k) => k !== 'errors')
    .sort();
  expect(keys).toEqual(ENVELOPE_KEYS);
  expect(body.statusCode).toBe(status);
  expect(typeof body.timestamp).toBe('string');
  expect(new Date(body.timestamp as string).toISOString()).toBe(body.timestamp);
  expect(String(body.url)).toMatch(/^http:\/\//);
  expect(
    String(body.url).endsWith(String(body.path)) || String(body.url).includes(`${body.path}?`),
  ).toBe(true);
  expect(reply.text).not.toMatch(/\bat .+\.(ts|js):\d+/); // no stack traces
  if (message instanceof RegExp) expect(body.message).toMatch(message);
  else if (message !== undefined) expect(body.message).toBe(message);
}
