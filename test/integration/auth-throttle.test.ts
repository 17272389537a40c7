import { randomBytes } from 'node:crypto';
import { courierWithToken } from '../support/couriers';
import { eventually } from '../support/eventually';
import { adminHeaders, createUserWithKey, expectErrorEnvelope, request } from '../support/http';
import { expireOperatorToken } from '../support/operator-tokens';
import { dropDatabases, isolation, startNode, type NodeProcess } from '../support/stack';

const iso = isolation();
let node: NodeProcess;
const LIMIT = 4;
const PAGE_LIMIT = 5;
/**
 * A gateway throttling at LIMIT failures a minute, trusting one proxy hop, keeping answers of
 * keys `apiKeyCacheSeconds`.
 */
const throttled = (apiKeyCacheSeconds: string) => ({
  AUTH_FAILURE_LIMIT: String(LIMIT),
  AUTH_FAILURE_WINDOW_SECONDS: '60',
  TRUST_PROXY_HOPS: '1',
  API_KEY_CACHE_SECONDS: apiKeyCacheSeconds,
});
const THROTTLED = /^Too many failed authentications from your address; retry in \d+ seconds/;

beforeAll(async () => {
  // Every test request comes from 127.0.0.1: the gateway trusts one proxy hop, so that each
  // test speaks for its own client address through X-Forwarded-For. Keys are looked up on
  // every request (no cache), which makes each database lookup visible in the metrics.
  node = await startNode({
    services: 'all',
    iso,
    env: { ...throttled('0'), PAGE_REQUEST_LIMIT: String(PAGE_LIMIT) },
  });
});

afterAll(async () => {
  await node?.stop();
  await dropDatabases(iso);
});

const unknownKey = () => `wb_staging_${randomBytes(32).toString('hex')}`;

const me = (client: string | undefined, key?: string) =>
  request(node.url, 'GET', '/api/me', {
    headers: {
      ...(client ? { 'x-forwarded-for': client } : {}),
      ...(key === undefined ? {} : { 'api-key': key }),
    },
  });

const admin = (client: string, authorization: string) =>
  request(node.url, 'GET', '/admin/users', {
    headers: { 'x-forwarded-for': client, authorization },
  });

/** How many times the gateway has asked the account service about a key. */
async function lookups(): Promise<number> {
  const text = await (await fetch(`${node.opsUrl}/metrics`)).text();
  return text
    .split('\n')
    .filter(
      (l) => l.startsWith('moleculer_request_total{') && l.includes('"account.resolveApiKey"'),
    )
    .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0);
}

/** A courier of the directory and a token of theirs, made through the admin API. */
async function useUpFailures(client: string | undefined): Promise<void> {
  for (let i = 0; i < LIMIT; i++) expectErrorEnvelope(await me(client, unknownKey()), 401);
}

describe('failed authentications per client address', () => {
  it(`answers the ${LIMIT + 1}th failure 429 with Retry-After, without a lookup`, async () => {
    const client = '198.51.100.1';
    const counted = await lookups();
    await useUpFailures(client);
    expect(await lookups()).toBe(counted + LIMIT);

    const refused = await me(client, unknownKey());
    expectErrorEnvelope(refused, 429, THROTTLED);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(refused.body.message).toContain(`retry in ${retryAfter} seconds`);
    // Every kind of guess is refused alike once the address is throttled; a request without
    // a key guessed nothing, and is told what to send.
    expectErrorEnvelope(await me(client), 401, /API key is required/);
    expectErrorEnvelope(await me(client, 'wb_staging_nothex'), 429, THROTTLED);
    expectErrorEnvelope(await me(client, `wb_live_${'ab'.repeat(32)}`), 429, THROTTLED);
    expect(await lookups()).toBe(counted + LIMIT);
  });

  it('still accepts a key it accepted before from a throttled address', async () => {
    const client = '198.51.100.2';
    const { key } = await createUserWithKey(node.url);
    expect((await me(client, key)).status).toBe(200);
    await useUpFailures(client);
    expectErrorEnvelope(await me(client, unknownKey()), 429, THROTTLED);

    const counted = await lookups();
    const again = await me(client, key);
    expect(again.status).toBe(200);
    expect(again.headers.get('ratelimit-remaining')).not.toBeNull();
    // Looked up again (API_KEY_CACHE_SECONDS is 0): a revocation would still be seen.
    expect(await lookups()).toBe(counted + 1);
  });

  it('refuses, until the window ends, a key it has not accepted before', async () => {
    const client = '198.51.100.3';
    await useUpFailures(client);
    const { key } = await createUserWithKey(node.url);
    const counted = await lookups();
    expectErrorEnvelope(await me(client, key), 429, THROTTLED);
    expect(await lookups()).toBe(counted);
    // From an address with no failures, the same key works.
    expect((await me('198.51.100.4', key)).status).toBe(200);
  });

  it('refuses a revoked key from a throttled address without a lookup', async () => {
    const client = '198.51.100.5';
    const { key, keyId } = await createUserWithKey(node.url);
    expect((await me(client, key)).status).toBe(200);
    const revoke = await request(node.url, 'DELETE', `/admin/api-keys/${keyId}`, {
      headers: adminHeaders,
    });
    expect(revoke.status).toBe(204);
    await useUpFailures(client);
    expectErrorEnvelope(await me(client, key), 429, THROTTLED);
  });

  it('counts per address: one client throttled leaves the others alone', async () => {
    await useUpFailures('198.51.100.6');
    expectErrorEnvelope(await me('198.51.100.6', unknownKey()), 429, THROTTLED);
    expectErrorEnvelope(await me('198.51.100.7', unknownKey()), 401, /Unknown API key/);
    // The socket's address when no proxy named a client (here 127.0.0.1).
    expectErrorEnvelope(await me(undefined, unknownKey()), 401, /Unknown API key/);
  });

  it('counts IPv6 clients per /64', async () => {
    await useUpFailures('2001:db8:1:2::1');
    expectErrorEnvelope(await me('2001:db8:1:2:ffff::9', unknownKey()), 429, THROTTLED);
    expectErrorEnvelope(await me('2001:db8:1:3::1', unknownKey()), 401, /Unknown API key/);
  });

  it('believes only the entry the trusted proxy wrote, not what the client prepended', async () => {
    const client = '198.51.100.8';
    for (let i = 0; i < LIMIT; i++) {
      const spoofed = `203.0.113.${i}, ${client}`;
      expectErrorEnvelope(await me(spoofed, unknownKey()), 401);
    }
    expectErrorEnvelope(await me(`203.0.113.99, ${client}`, unknownKey()), 429, THROTTLED);
  });

  it('does not count successes, nor refusals of a valid key', async () => {
    const client = '198.51.100.9';
    const { key } = await createUserWithKey(node.url);
    const { key: publishable } = await createUserWithKey(node.url, { serverOnly: false });
    for (let i = 0; i < LIMIT * 3; i++) {
      expect((await me(client, key)).status).toBe(200);
      expectErrorEnvelope(await me(client, publishable), 403);
    }
    expectErrorEnvelope(await me(client, unknownKey()), 401, /Unknown API key/);
  });

  it('counts no request that sent no credential: any web page can make a browser send one', async () => {
    const client = '198.51.100.12';
    const { key } = await createUserWithKey(node.url);
    for (let i = 0; i < LIMIT * 3; i++) {
      expectErrorEnvelope(await me(client), 401, /API key is required/);
      const noToken = await request(node.url, 'GET', '/admin/users', {
        headers: { 'x-forwarded-for': client },
      });
      expectErrorEnvelope(noToken, 401, /Admin token is required/);
      const courierless = await request(node.url, 'GET', '/courier/offers', {
        headers: { 'x-forwarded-for': client },
      });
      expectErrorEnvelope(courierless, 401);
      // A browser asking whether a page may send the token: refused, not counted.
      const preflight = await request(node.url, 'OPTIONS', '/admin/users', {
        headers: {
          'x-forwarded-for': client,
          origin: 'https://elsewhere.example',
          'access-control-request-method': 'GET',
          'access-control-request-headers': 'authorization',
        },
      });
      expectErrorEnvelope(preflight, 403, /^Browsers may not call \/admin/);
    }
    expect((await me(client, key)).status).toBe(200);
    expectErrorEnvelope(await me(client, unknownKey()), 401, /Unknown API key/);
    expect((await admin(client, adminHeaders.authorization)).status).toBe(200);
  });

  it("counts a page's made-up keys sent to /file apart: the servers behind its address are not shut out", async () => {
    const client = '198.51.100.13';
    const fromPage = () =>
      request(node.url, 'POST', '/file/single-upload', {
        headers: {
          'x-forwarded-for': client,
          origin: 'https://elsewhere.example',
          'api-key': unknownKey(),
        },
      });
    for (let i = 0; i < LIMIT; i++) expectErrorEnvelope(await fromPage(), 401);
    expectErrorEnvelope(await fromPage(), 429, THROTTLED);
    // A server at the same address: its guesses are its own count's, its keys still looked up.
    const { key } = await createUserWithKey(node.url);
    expect((await me(client, key)).status).toBe(200);
    expectErrorEnvelope(await me(client, unknownKey()), 401, /Unknown API key/);
  });

  it('counts a retired courier’s token once, however often its app sends it: the others behind the address go on', async () => {
    const client = '198.51.100.14';
    const courierCall = (token: string) =>
      request(node.url, 'GET', '/courier/offers', {
        headers: { 'x-forwarded-for': client, authorization: `Bearer ${token}` },
      });
    const retired = await courierWithToken(node.url);
    expect((await courierCall(retired.token)).status).toBe(200);
    const retire = await request(node.url, 'PATCH', `/admin/couriers/${retired.id}`, {
      headers: adminHeaders,
      json: { active: false },
    });
    expect(retire.status).toBe(200);
    // The app keeps reporting: refused each time, counted once (its lookup).
    for (let i = 0; i < LIMIT * 3; i++) expectErrorEnvelope(await courierCall(retired.token), 401);
    // A courier this gateway has never seen, behind the same address, is still looked up.
    const working = await courierWithToken(node.url);
    expect((await courierCall(working.token)).status).toBe(200);
    // Made-up tokens still count, each one.
    const madeUp = () => `wbc_${randomBytes(32).toString('base64url')}`;
    for (let i = 0; i < LIMIT - 1; i++) expectErrorEnvelope(await courierCall(madeUp()), 401);
    expectErrorEnvelope(await courierCall(madeUp()), 429, THROTTLED);
  });

  it('counts no failure for an expired operator token looked up again and again: a script still sending it guesses nothing', async () => {
    const client = '198.51.100.15';
    const created = await request(node.url, 'POST', '/admin/operator-tokens', {
      headers: adminHeaders,
      json: { name: 'bola@ops.example.com' },
    });
    expect(created.status).toBe(201);
    const { token, id } = created.body.data;
    await expireOperatorToken(iso, id);
    // Looked up each time (no cache here), refused each time as expired, never throttled.
    for (let i = 0; i < LIMIT * 3; i++) {
      expectErrorEnvelope(await admin(client, `Bearer ${token}`), 401, /expired at/);
    }
    // Made-up tokens from the same address still count, each one, from none.
    const madeUp = () => `Bearer wbo_${randomBytes(32).toString('base64url')}`;
    for (let i = 0; i < LIMIT; i++) expectErrorEnvelope(await admin(client, madeUp()), 401);
    expectErrorEnvelope(await admin(client, madeUp()), 429, THROTTLED);
  });

  it('throttles wrong admin tokens too, and then refuses even the right one from that address', async () => {
    const client = '198.51.100.10';
    expect((await admin(client, adminHeaders.authorization)).status).toBe(200);
    for (let i = 0; i < LIMIT; i++) {
      expectErrorEnvelope(await admin(client, `Bearer guess-${i}`), 401, /Invalid admin token/);
    }
    expectErrorEnvelope(await admin(client, 'Bearer guess-last'), 429, /valid admin token/);
    expectErrorEnvelope(await admin(client, adminHeaders.authorization), 429, THROTTLED);
    expect((await admin('198.51.100.11', adminHeaders.authorization)).status).toBe(200);
  });
});

describe('the public pages per client address', () => {
  const page = (client: string, path: string) =>
    fetch(`${node.url}${path}`, { headers: { 'x-forwarded-for': client } });

  it(`answers the ${PAGE_LIMIT + 1}th request of tracking and checkout pages 429, each address apart`, async () => {
    const client = '203.0.113.40';
    const paths = ['/track/P2P-000000000000', '/track/P2P-000000000000/events', '/checkout/ck-x'];
    const statuses: number[] = [];
    for (let i = 0; i < PAGE_LIMIT; i++) statuses.push((await page(client, paths[i % 3])).status);
    expect(statuses).toEqual(statuses.map(() => 404));
    const refused = await page(client, paths[0]);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await refused.text()).toMatch(
      /Too many requests from your address; retry in \d+ seconds/,
    );
    expect((await page('203.0.113.41', paths[0])).status).toBe(404);
  });
});

describe('a burst of concurrent requests from one address', () => {
  const BURST = 60;
  const statusesOf = async (replies: Promise<{ status: number }>[]) =>
    (await Promise.all(replies)).map((reply) => reply.status);
  const howMany = (statuses: number[], status: number) =>
    statuses.filter((s) => s === status).length;

  it(`has at most ${LIMIT} made-up API keys looked up, the rest answered 429`, async () => {
    const client = '198.51.100.20';
    const counted = await lookups();
    const statuses = await statusesOf(
      Array.from({ length: BURST }, () => me(client, unknownKey())),
    );
    expect(howMany(statuses, 401)).toBeLessThanOrEqual(LIMIT);
    expect(howMany(statuses, 429)).toBe(BURST - howMany(statuses, 401));
    expect((await lookups()) - counted).toBeLessThanOrEqual(LIMIT);
  });

  it(`answers at most ${LIMIT} wrong admin tokens 401, and refuses the right one sent among them`, async () => {
    const client = '198.51.100.21';
    // Every fourth of the last third is the right token, each sent after ten times LIMIT
    // wrong ones or more: however the connections interleave, LIMIT of those came first.
    const isRight = (i: number) => i >= 10 * LIMIT && i % 4 === 3;
    const statuses = await statusesOf(
      Array.from({ length: BURST }, (_, i) =>
        admin(client, isRight(i) ? adminHeaders.authorization : `Bearer burst-${i}`),
      ),
    );
    expect(howMany(statuses, 401)).toBeLessThanOrEqual(LIMIT);
    const rights = statuses.filter((_, i) => isRight(i));
    expect(rights).toHaveLength(5);
    expect(rights).toEqual(rights.map(() => 429));
    expect(howMany(statuses, 429)).toBe(BURST - howMany(statuses, 401));
  });

  it("lets an operator's burst of admin calls through, counting none of it", async () => {
    const client = '198.51.100.23';
    const statuses = await statusesOf(
      Array.from({ length: BURST }, () => admin(client, adminHeaders.authorization)),
    );
    expect(statuses).toEqual(Array(BURST).fill(200));
    expectErrorEnvelope(await admin(client, 'Bearer guess'), 401, /Invalid admin token/);
  });

  it('holds no address back once a burst of good keys new to the gateway has passed', async () => {
    const client = '198.51.100.24';
    const keys = await Promise.all(
      Array.from({ length: 3 * LIMIT }, async () => (await createUserWithKey(node.url)).key),
    );
    // All at once, more than the limit: some may be asked to wait, none is a failure.
    const first = await statusesOf(keys.map((key) => me(client, key)));
    expect(first.every((s) => s === 200 || s === 429)).toBe(true);
    // Sent again one by one, every one is answered (no more than LIMIT new ones are looked
    // up at once), and the address may still fail LIMIT times.
    for (const key of keys) expect((await me(client, key)).status).toBe(200);
    for (let i = 0; i < LIMIT; i++) {
      expectErrorEnvelope(await me(client, unknownKey()), 401, /Unknown API key/);
    }
  });

  it('lets a burst of one good key through, however many, counting none of it', async () => {
    const client = '198.51.100.22';
    const { key } = await createUserWithKey(node.url);
    // New to the gateway: looked up once for the whole burst, which never reaches the limit.
    const statuses = await statusesOf(Array.from({ length: BURST }, () => me(client, key)));
    expect(statuses).toEqual(Array(BURST).fill(200));
    await useUpFailures(client);
    expectErrorEnvelope(await me(client, unknownKey()), 429, THROTTLED);
  });
});

describe('lookups that fail (the account service away)', () => {
  const lonelyIso = isolation();
  let lonely: NodeProcess;

  beforeAll(async () => {
    // A gateway alone on NATS: every key lookup fails with 503, as in an account outage.
    lonely = await startNode({
      services: 'gateway',
      iso: lonelyIso,
      env: throttled('0'),
    });
  });

  afterAll(() => lonely?.stop());

  it(`still counts each made-up key: no more than ${LIMIT} lookups per window from one address`, async () => {
    const client = '198.51.100.30';
    const ask = () =>
      request(lonely.url, 'GET', '/api/me', {
        headers: { 'x-forwarded-for': client, 'api-key': unknownKey() },
      });
    for (let i = 0; i < LIMIT; i++) expect((await ask()).status).toBe(503);
    expectErrorEnvelope(await ask(), 429, THROTTLED);
  });
});

describe('API keys refused lately, sent again (refusals cached)', () => {
  const cachingIso = isolation();
  let caching: NodeProcess;

  beforeAll(async () => {
    caching = await startNode({
      services: 'all',
      iso: cachingIso,
      env: throttled('60'),
    });
  });

  afterAll(async () => {
    await caching?.stop();
    await dropDatabases(cachingIso);
  });

  const meAt = (client: string, key: string) =>
    request(caching.url, 'GET', '/api/me', {
      headers: { 'x-forwarded-for': client, 'api-key': key },
    });

  it('counts an unknown or revoked key once, however often a server sends it', async () => {
    const client = '198.51.100.40';
    const stale = unknownKey();
    for (let i = 0; i < LIMIT * 3; i++) {
      expectErrorEnvelope(await meAt(client, stale), 401, /Unknown API key/);
    }
    const { key: old, keyId } = await createUserWithKey(caching.url);
    expect((await meAt(client, old)).status).toBe(200);
    const revoke = await request(caching.url, 'DELETE', `/admin/api-keys/${keyId}`, {
      headers: adminHeaders,
    });
    expect(revoke.status).toBe(204);
    await eventually(async () => expectErrorEnvelope(await meAt(client, old), 401, /revoked/));
    for (let i = 0; i < LIMIT * 3; i++) {
      expectErrorEnvelope(await meAt(client, old), 401, /revoked/);
    }
    // A key new to this gateway, at the same address, is looked up and served.
    const { key: fresh } = await createUserWithKey(caching.url);
    expect((await meAt(client, fresh)).status).toBe(200);
    // Made-up keys still count, each one: two counted so far (the unknown key, the revoked one).
    for (let i = 0; i < LIMIT - 2; i++) expectErrorEnvelope(await meAt(client, unknownKey()), 401);
    expectErrorEnvelope(await meAt(client, unknownKey()), 429, THROTTLED);
  });
});
