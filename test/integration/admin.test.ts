import { randomUUID } from 'node:crypto';
import { MAX_ACTIVE_KEYS_PER_USER } from '../../services/account/account.service';
import { adminHeaders, expectErrorEnvelope, request } from '../support/http';
import {
  dropDatabases,
  isolation,
  startNode,
  type NodeProcess,
  openServiceDatabase,
} from '../support/stack';

const iso = isolation();
let node: NodeProcess;

beforeAll(async () => {
  node = await startNode({ services: 'all', iso });
});

afterAll(async () => {
  await node?.stop();
  await dropDatabases(iso);
});

const newUser = (email = `ops-${randomUUID()}@example.com`) => ({
  name: 'Ada Obi',
  email,
  phone: '+2348031234567',
});

describe('admin token', () => {
  it('is required', async () => {
    const reply = await request(node.url, 'GET', '/admin/users');
    expectErrorEnvelope(reply, 401, /Admin token is required/);
  });

  it('must match', async () => {
    const reply = await request(node.url, 'GET', '/admin/users', {
      headers: { authorization: 'Bearer not-the-token' },
    });
    expectErrorEnvelope(reply, 401, 'Invalid admin token');
  });

  it('is not an API key', async () => {
    const reply = await request(node.url, 'GET', '/admin/users', {
      headers: { 'api-key': `wb_staging_${'a'.repeat(64)}` },
    });
    expectErrorEnvelope(reply, 401, /Admin token is required/);
  });
});

describe('users', () => {
  it('creates, finds and reads a user', async () => {
    const input = newUser();
    const created = await request(node.url, 'POST', '/admin/users', {
      headers: adminHeaders,
      json: { ...input, email: input.email.toUpperCase() },
    });
    expect(created.status).toBe(201);
    expect(created.body.success).toBe(true);
    expect(created.body.message).toBe('User created');
    const user = created.body.data;
    expect(user).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: input.name,
      email: input.email,
      phone: input.phone,
      profileId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(created.headers.get('location')).toBe(`/admin/users/${user.id}`);

    const read = await request(node.url, 'GET', `/admin/users/${user.id}`, {
      headers: adminHeaders,
    });
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual(user);

    const found = await request(node.url, 'GET', `/admin/users?email=${input.email}`, {
      headers: adminHeaders,
    });
    expect(found.body.data).toEqual([user]);
  });

  it('refuses a second user with the same e-mail', async () => {
    const input = newUser();
    await request(node.url, 'POST', '/admin/users', { headers: adminHeaders, json: input });
    const again = await request(node.url, 'POST', '/admin/users', {
      headers: adminHeaders,
      json: input,
    });
    expectErrorEnvelope(again, 409, new RegExp(`${input.email} already exists`));
  });

  it('validates every field and names each problem', async () => {
    const reply = await request(node.url, 'POST', '/admin/users', {
      headers: adminHeaders,
      json: { name: '', email: 'not-an-email', phone: '08012345678', role: 'admin' },
    });
    expectErrorEnvelope(reply, 400, /^Validation failed: /);
    expect(reply.body.errors.map((e: { field: string }) => e.field).sort()).toEqual([
      'email',
      'name',
      'phone',
      'role',
    ]);
    expect(reply.body.errors.find((e: { field: string }) => e.field === 'phone').message).toMatch(
      /E\.164/,
    );
  });

  it.each(['+2341234', '+99912345678', '+2342000000000', '+23408012345678', ' +2348012345678'])(
    'refuses the phone %j that no numbering plan has, saying what to send',
    async (phone) => {
      const reply = await request(node.url, 'POST', '/admin/users', {
        headers: adminHeaders,
        json: { ...newUser(), phone },
      });
      expectErrorEnvelope(reply, 400, /^Validation failed: /);
      expect(reply.body.errors).toEqual([
        {
          field: 'phone',
          message: 'phone must be a valid phone number in E.164 form, like +2348012345678',
        },
      ]);
    },
  );

  it.each(['+447911123456', '+12015550123', '+2349031234567'])(
    'accepts the phone %s as sent',
    async (phone) => {
      const reply = await request(node.url, 'POST', '/admin/users', {
        headers: adminHeaders,
        json: { ...newUser(), phone },
      });
      expect(reply.status).toBe(201);
      expect(reply.body.data.phone).toBe(phone);
    },
  );

  it('answers 404 for an unknown user and 400 for a malformed id', async () => {
    expectErrorEnvelope(
      await request(node.url, 'GET', `/admin/users/${randomUUID()}`, { headers: adminHeaders }),
      404,
      /not found/,
    );
    const bad = await request(node.url, 'GET', '/admin/users/12', { headers: adminHeaders });
    expectErrorEnvelope(bad, 400);
    expect(bad.body.errors[0].field).toBe('userId');
  });
});

describe('API keys', () => {
  async function createUser() {
    const reply = await request(node.url, 'POST', '/admin/users', {
      headers: adminHeaders,
      json: newUser(),
    });
    return reply.body.data.id as string;
  }

  it('creates a key shown once, with defaults, and lists keys without secrets', async () => {
    const userId = await createUser();
    const created = await request(node.url, 'POST', `/admin/users/${userId}/api-keys`, {
      headers: adminHeaders,
      json: {},
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toEqual({
      id: expect.any(String),
      key: expect.stringMatching(/^wb_staging_[0-9a-f]{64}$/),
      environment: 'staging',
      serverOnly: true,
      quota: null,
      createdAt: expect.any(String),
      createdBy: 'admin-token',
      createdByOperatorTokenId: null,
    });

    const withQuota = await request(node.url, 'POST', `/admin/users/${userId}/api-keys`, {
      headers: adminHeaders,
      json: { serverOnly: false, quota: { limit: 10, windowSeconds: 60 }, environment: 'staging' },
    });
    expect(withQuota.body.data).toMatchObject({
      environment: 'staging',
      serverOnly: false,
      quota: { limit: 10, windowSeconds: 60 },
    });

    // A live key would be refused by this staging platform, and by live's, whose database
    // has no record of it: never made.
    const otherEnvironment = await request(node.url, 'POST', `/admin/users/${userId}/api-keys`, {
      headers: adminHeaders,
      json: { environment: 'live' },
    });
    expectErrorEnvelope(otherEnvironment, 400);
    expect(otherEnvironment.body.errors).toEqual([
      {
        field: 'environment',
        message:
          'environment must be staging: this platform runs as staging and accepts its own keys only; make live keys on that platform',
      },
    ]);

    const list = await request(node.url, 'GET', `/admin/users/${userId}/api-keys`, {
      headers: adminHeaders,
    });
    expect(list.status).toBe(200);
    expect(list.body.data).toHaveLength(2);
    for (const key of list.body.data) {
      expect(Object.keys(key).sort()).toEqual(
        [
          'createdAt',
          'createdBy',
          'createdByOperatorTokenId',
          'environment',
          'id',
          'lastUsedAt',
          'quota',
          'revokedAt',
          'serverOnly',
          'userId',
        ].sort(),
      );
    }
    expect(list.text).not.toContain(created.body.data.key);
  });

  it('refuses bad quotas and unknown owners', async () => {
    const userId = await createUser();
    const bad = await request(node.url, 'POST', `/admin/users/${userId}/api-keys`, {
      headers: adminHeaders,
      json: { quota: { limit: 0 }, environment: 'test' },
    });
    expectErrorEnvelope(bad, 400);
    expect(bad.body.errors.map((e: { field: string }) => e.field).sort()).toEqual([
      'environment',
      'quota.limit',
      'quota.windowSeconds',
    ]);
    expectErrorEnvelope(
      await request(node.url, 'POST', `/admin/users/${randomUUID()}/api-keys`, {
        headers: adminHeaders,
        json: {},
      }),
      404,
    );
  });

  it('makes no key of a body sent as anything but JSON (curl -d, fetch with a string): 415', async () => {
    const userId = await createUser();
    // U+00A0 after the type is whitespace to JavaScript, not to HTTP nor to body-parser.
    for (const type of [
      'application/x-www-form-urlencoded',
      'text/plain;charset=UTF-8',
      'application/json\u00a0',
      'application/json\u00a0; charset=utf-8',
      null,
    ]) {
      const refused = await request(node.url, 'POST', `/admin/users/${userId}/api-keys`, {
        headers: { ...adminHeaders, ...(type ? { 'content-type': type } : {}) },
        raw: JSON.stringify({ serverOnly: false, quota: { limit: 10, windowSeconds: 60 } }),
      });
      expectErrorEnvelope(
        refused,
        415,
        'The body was not read: send it as JSON, with the header Content-Type: application/json',
      );
    }
    const keys = await request(node.url, 'GET', `/admin/users/${userId}/api-keys`, {
      headers: adminHeaders,
    });
    expect(keys.body.data).toEqual([]);
  });

  it('revokes idempotently with 204 and an empty body', async () => {
    const userId = await createUser();
    const key = await request(node.url, 'POST', `/admin/users/${userId}/api-keys`, {
      headers: adminHeaders,
      json: {},
    });
    for (let i = 0; i < 2; i++) {
      const reply = await request(node.url, 'DELETE', `/admin/api-keys/${key.body.data.id}`, {
        headers: adminHeaders,
      });
      expect(reply.status).toBe(204);
      expect(reply.text).toBe('');
    }
    const list = await request(node.url, 'GET', `/admin/users/${userId}/api-keys`, {
      headers: adminHeaders,
    });
    expect(list.body.data[0].revokedAt).toEqual(expect.any(String));
    expectErrorEnvelope(
      await request(node.url, 'DELETE', `/admin/api-keys/${randomUUID()}`, {
        headers: adminHeaders,
      }),
      404,
    );
  });

  it('caps active keys per user exactly, however many are created at once, and pages the list of keys', async () => {
    const userId = await createUser();
    const create = () =>
      request(node.url, 'POST', `/admin/users/${userId}/api-keys`, {
        headers: adminHeaders,
        json: {},
      });
    const statuses = (replies: { status: number }[]) => replies.map((r) => r.status).sort();
    const ids: string[] = [];
    for (let batch = 0; batch < MAX_ACTIVE_KEYS_PER_USER / 10 - 1; batch++) {
      for (const reply of await Promise.all(Array.from({ length: 10 }, create))) {
        expect(reply.status).toBe(201);
        ids.push(reply.body.data.id);
      }
    }
    // The last ten places, 16 creations at once: each key takes a place by insert.
    const last = await Promise.all(Array.from({ length: 16 }, create));
    expect(statuses(last)).toEqual([...Array(10).fill(201), ...Array(6).fill(409)]);
    ids.push(...last.filter((r) => r.status === 201).map((r) => r.body.data.id as string));
    expectErrorEnvelope(
      await create(),
      409,
      `User ${userId} already has ${MAX_ACTIVE_KEYS_PER_USER} active API keys (at most ${MAX_ACTIVE_KEYS_PER_USER}); revoke one with DELETE /admin/api-keys/:keyId first`,
    );
    const conn = await openServiceDatabase(iso, 'account');
    const places = () =>
      conn
        .collection('api_key_places')
        .countDocuments({ _id: { $regex: `^${userId}:` } } as object);
    try {
      expect(await places()).toBe(MAX_ACTIVE_KEYS_PER_USER);
      const revoked = await request(node.url, 'DELETE', `/admin/api-keys/${ids[0]}`, {
        headers: adminHeaders,
      });
      expect(revoked.status).toBe(204);
      expect(await places()).toBe(MAX_ACTIVE_KEYS_PER_USER - 1);
      // A revocation that stopped before giving the place back (no release claimed): a repeat
      // gives it back.
      const key = await conn.collection('api_keys').findOne({ _id: ids[0] } as object);
      await conn.collection('api_key_places').deleteMany({ holder: ids[0] } as object);
      const left = { _id: `${userId}:${key?.place}`, holder: ids[0], at: new Date() };
      await conn.collection('api_key_places').insertOne(left as never);
      const again = await request(node.url, 'DELETE', `/admin/api-keys/${ids[0]}`, {
        headers: adminHeaders,
      });
      expect(again.status).toBe(204);
      expect(await places()).toBe(MAX_ACTIVE_KEYS_PER_USER - 1);
    } finally {
      await conn.close();
    }
    expect(statuses(await Promise.all(Array.from({ length: 5 }, create)))).toEqual([
      201, 409, 409, 409, 409,
    ]);

    const page = async (query: string) =>
      (
        await request(node.url, 'GET', `/admin/users/${userId}/api-keys?${query}`, {
          headers: adminHeaders,
        })
      ).body.data.map((k: { id: string }) => k.id) as string[];
    const all = await page('limit=500');
    expect(all).toHaveLength(MAX_ACTIVE_KEYS_PER_USER + 1);
    expect([...(await page('limit=20')), ...(await page('limit=40&offset=20'))]).toEqual(all);
    expect(await page('')).toHaveLength(MAX_ACTIVE_KEYS_PER_USER + 1);
  });

  it('never stores the plaintext key', async () => {
    const userId = await createUser();
    const key = await request(node.url, 'POST', `/admin/users/${userId}/api-keys`, {
      headers: adminHeaders,
      json: {},
    });
    const conn = await openServiceDatabase(iso, 'account');
    try {
      const stored = await conn.collection('api_keys').findOne({ _id: key.body.data.id } as never);
      expect(stored).not.toBeNull();
      expect(JSON.stringify(stored)).not.toContain(key.body.data.key);
      expect(stored?.hash).toMatch(/^[0-9a-f]{64}$/);
    } finally {
      await conn.close();
    }
  });
});

describe('without ADMIN_TOKEN', () => {
  it('keeps the admin API closed', async () => {
    const closed = await startNode({ services: 'all', iso, env: { ADMIN_TOKEN: undefined } });
    try {
      const reply = await request(closed.url, 'GET', '/admin/users', { headers: adminHeaders });
      expectErrorEnvelope(reply, 403, /admin API is disabled/);
    } finally {
      await closed.stop();
    }
  });

  it('refuses to start a live gateway', async () => {
    const live = { APP_ENV: 'live', PUBLIC_BASE_URL: 'https://waybill.example.test' };
    await expect(
      startNode({ services: 'gateway', iso, env: { ...live, ADMIN_TOKEN: undefined } }),
    ).rejects.toThrow(/ADMIN_TOKEN: required when APP_ENV=live by gateway/);
  });
});
