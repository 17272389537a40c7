import { randomBytes, randomUUID } from 'node:crypto';
import type mongoose from 'mongoose';
import { loadConfig } from '../../libs/config';
import { formatApiKey } from '../../libs/contracts/account';
import { credentialHash } from '../../libs/issued-tokens';
import { savePackage } from '../support/deliveries';
import { eventually } from '../support/eventually';
import { createUserWithKey, request, type Reply } from '../support/http';
import {
  dropDatabases,
  isolation,
  openServiceDatabase,
  startNode,
  type NodeProcess,
} from '../support/stack';

/**
 * A rolling update (decision 78): while replicas of the version before still run, they store
 * keys and packages without the records this version finds them by (a key's hash entry, a
 * user's list). Each node passes again over what was stored since its first pass began, after
 * BACKFILL_AFTER_ROLLOUT_MS: from then on the key authenticates and the package is listed,
 * through the gateway; so is a package such a replica took for a delivery already released.
 */
const iso = isolation();
const AFTER_ROLLOUT_MS = 8_000;
let node: NodeProcess;
let startedAt: number;
const connections: mongoose.Connection[] = [];

beforeAll(async () => {
  node = await startNode({
    services: 'gateway,account,package',
    iso,
    env: { BACKFILL_AFTER_ROLLOUT_MS: String(AFTER_ROLLOUT_MS) },
  });
  startedAt = Date.now();
}, 120_000);

afterAll(async () => {
  await Promise.all(connections.map((c) => c.close()));
  await node?.stop();
  await dropDatabases(iso);
});

async function database(service: string) {
  const conn = await openServiceDatabase(iso, service);
  connections.push(conn);
  return conn;
}

const packagesOf = (key: string) =>
  request(node.url, 'GET', '/api/packages', { headers: { 'api-key': key } });
const ids = (reply: Reply) =>
  (reply.body as { data: { id: string }[] }).data.map((p) => p.id).sort();

it('finds, after BACKFILL_AFTER_ROLLOUT_MS, the keys and packages an older replica stored', async () => {
  const merchant = await createUserWithKey(node.url);
  const saved = await savePackage(node.url, merchant);

  // What a replica of the version before writes: the documents alone.
  const packages = (await database('package')).collection('packages');
  // Without this version's mark: its writer did not list it first.
  const stored = await packages.findOne({ _id: saved as never });
  if (!stored) throw new Error(`package ${saved} was not stored`);
  const { recordedFirst, ...copy } = stored;
  expect(recordedFirst).toBe(true);
  const older = randomUUID();
  await packages.insertOne({ ...copy, _id: older as never, createdAt: new Date() });
  const olderKey = formatApiKey(
    loadConfig({}).apiKeyPrefix,
    'staging',
    randomBytes(32).toString('hex'),
  );
  await (await database('account')).collection('api_keys').insertOne({
    _id: randomUUID() as never,
    userId: merchant.userId,
    hash: credentialHash(olderKey),
    environment: 'staging',
    serverOnly: true,
    quota: null,
    lastUsedAt: null,
    revokedAt: null,
    createdAt: new Date(),
  });
  // A rollback's older replica took a package for a delivery this version had released
  // already (decision 136): a claim without this version's mark, and the package's mark.
  const held = await savePackage(node.url, merchant);
  const releasedDelivery = randomUUID();
  const packageDb = await database('package');
  await packageDb.collection('package_selections').insertOne({
    _id: releasedDelivery as never,
    packageIds: [],
    released: true,
    unassigned: true,
    createdAt: new Date(),
  });
  await packageDb.collection('package_claims').insertOne({
    _id: held as never,
    holder: releasedDelivery,
    userId: merchant.userId,
    createdAt: new Date(),
  });
  await packages.updateOne({ _id: held as never }, { $set: { p2pDeliveryId: releasedDelivery } });

  // Not found by this version's reads until the second pass (unless the node was slow to
  // get here: the pass may have run already).
  if (Date.now() - startedAt < AFTER_ROLLOUT_MS - 2_000) {
    expect((await packagesOf(olderKey)).status).toBe(401);
    expect(ids(await packagesOf(merchant.key))).toEqual([saved]);
  }

  // Asked with the key that works (a key that fails over and over is throttled: 429).
  await eventually(
    async () => expect(ids(await packagesOf(merchant.key))).toEqual([saved, older, held].sort()),
    { timeout: AFTER_ROLLOUT_MS + 20_000, interval: 500 },
  );
  await eventually(
    async () => {
      const reply = await packagesOf(olderKey);
      expect(reply.status).toBe(200);
      expect(ids(reply)).toEqual([saved, older, held].sort());
    },
    { timeout: 10_000, interval: 1_000 },
  );
}, 60_000);
