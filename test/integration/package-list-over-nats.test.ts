import { LONGEST_NEW_FILE_KEY } from '../../libs/contracts/file';
import { PACKAGE_TEXT_LIMITS } from '../../services/package/schemas';
import { eventually } from '../support/eventually';
import { createUserWithKey, expectErrorEnvelope, request } from '../support/http';
import { LARGEST_PACKAGE_TEXTS } from '../support/largest-package';
import { dropDatabases, isolation, startNode, type NodeProcess } from '../support/stack';

/**
 * The package service in its own process, so its answers cross NATS (1 MB per message): a
 * user at the saved-package limit, every package as large as validation allows, still gets
 * the whole list.
 */
/** The longest key the file service makes, under a base that makes the longest image URL allowed. */
const CDN_HOST = 'https://cdn.waybill.test/';
const CDN = `${CDN_HOST}${'a'.repeat(PACKAGE_TEXT_LIMITS.image - CDN_HOST.length - LONGEST_NEW_FILE_KEY.length - 1)}`;
const iso = isolation();
const env = { CDN_BASE_URL: CDN, QUOTA_LIMIT: '100000' };
let gateway: NodeProcess;
let packages: NodeProcess;

beforeAll(async () => {
  [gateway, packages] = await Promise.all([
    startNode({ services: 'gateway,account,geo,pricing,file', iso, env }),
    startNode({ services: 'package', iso, env }),
  ]);
});

afterAll(async () => {
  await Promise.all([gateway?.stop(), packages?.stop()]);
  await dropDatabases(iso);
});

const largest = {
  ...LARGEST_PACKAGE_TEXTS,
  quantity: 10_000,
  size: 'LARGE',
  value: 99_999_999,
  image: `${CDN}/${LONGEST_NEW_FILE_KEY}`,
};

it('answers the largest list there may be, and refuses one package more', async () => {
  const merchant = await createUserWithKey(gateway.url);
  const headers = { 'api-key': merchant.key };
  const save = () => request(gateway.url, 'POST', '/api/package', { headers, json: largest });

  // The gateway learns of the other process's services within moments.
  await eventually(async () => expect((await save()).status).toBe(201), {
    timeout: 10_000,
    interval: 100,
  });
  const limit = 400;
  for (let saved = 1; saved < limit; saved += 25) {
    const replies = await Promise.all(Array.from({ length: Math.min(25, limit - saved) }, save));
    for (const reply of replies) expect(reply.status).toBe(201);
  }

  const list = await request(gateway.url, 'GET', '/api/packages', { headers });
  expect(list.status).toBe(200);
  expect(list.body.data).toHaveLength(limit);
  expect(list.body.data[0]).toMatchObject({ name: largest.name, image: largest.image });
  expectErrorEnvelope(await save(), 400, /at most 400/);
});
