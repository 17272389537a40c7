/**
 * Growth benchmark: whether a merchant's reads and a wallet debit cost the same when the
 * platform stores ten thousand deliveries, packages and ledger entries as when it stores a
 * million. Every service runs in one process over NATS (the gateway's requests and the debit's
 * call cross NATS as in production); the load generator runs here.
 *
 *   scripts/infra up && eval "$(scripts/infra env)"
 *   npm run bench:growth                           (or: scripts/tsx scripts/bench-growth.ts)
 *   npm run bench:growth -- --small 10000 --big 1000000 --seed-minutes 10 --duration 8
 *
 * One merchant is made through the API (a wallet credit, a package, a delivery request); their
 * stored documents are the templates every seeded document is cloned from, so that the seeds
 * are what the stores write. The measured merchant then gets a realistic history (--user-*),
 * and the collections are filled, spread over many users (--per-user each), to --small
 * deliveries, packages and ledger entries each (each delivery with its transitions and two
 * messages sent); the four paths and the two reads the order service makes on its own every
 * few seconds (its sweep's, its notification sender's) are measured; the collections grow to
 * --big, or as far as --seed-minutes allows (the size reached is printed); all are measured
 * again. A reference that reads nothing stored (`GET /api/fleet-types`) is
 * measured with each size: its ratio is the machine's drift between the two. Every database
 * the run created is dropped at the end.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import autocannon from 'autocannon';
import type { ServiceBroker } from 'moleculer';
import type mongoose from 'mongoose';
import { ownerListClaimId, ownerListEntryId } from '../libs/owner-list';
import { OrderStore, defineOrderModels } from '../services/order/store';
import { percentile } from '../test/support/load';
import { createUserWithKey, request } from '../test/support/http';
import { credit, requestDelivery, savePackage } from '../test/support/deliveries';
import {
  dropDatabases,
  isolation,
  openServiceDatabase,
  startClient,
  startNode,
  type NodeProcess,
} from '../test/support/stack';
import {
  measureCalls,
  option,
  requireInfrastructure,
  runMain,
  showHelpIfAsked,
} from './bench-support';

showHelpIfAsked(`
npm run bench:growth [-- --flag N ...]   (each flag also reads BENCH_<FLAG>)
  --small N           documents of each kind at the first size (default 10000)
  --big N             documents of each kind at the second size (default 1000000)
  --seed-minutes N    stop growing to --big after this long and measure there (default 10)
  --duration N        seconds each path is measured (default 6)
  --connections N     concurrent HTTP connections, and debit callers (default 8)
  --per-user N        deliveries, packages and ledger entries of each seeded user (default 20)
  --user-deliveries N the measured merchant's deliveries (default 200)
  --user-packages N   the measured merchant's packages, a third still open (default 60)
  --user-entries N    the measured merchant's ledger entries (default 500)
Needs MONGO_URL, NATS_URL and REDIS_URL (scripts/infra env).`);

const SMALL = option('small', 10_000);
const BIG = option('big', 1_000_000);
const SEED_MINUTES = option('seed-minutes', 10);
const DURATION_S = option('duration', 6);
const CONNECTIONS = option('connections', 8);
const PER_USER = option('per-user', 20);
const USER_DELIVERIES = option('user-deliveries', 200);
const USER_PACKAGES = option('user-packages', 60);
const USER_ENTRIES = option('user-entries', 500);

requireInfrastructure(['MONGO_URL', 'NATS_URL', 'REDIS_URL']);

const BATCH = 1000;
const FUNDS_KOBO = 1_000_000_000_000;

type Doc = Record<string, unknown>;

/** A copy of `value` with every string passed through `rewrite`; dates stay dates. */
function cloneWith(value: unknown, rewrite: (s: string) => string): unknown {
  if (typeof value === 'string') return rewrite(value);
  if (Array.isArray(value)) return value.map((v) => cloneWith(v, rewrite));
  if (value instanceof Date || value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, cloneWith(v, rewrite)]));
}

/** Replaces each template id found in a string by the clone's. */
function renamer(ids: Map<string, string>) {
  const pattern = new RegExp([...ids.keys()].join('|'), 'g');
  return (s: string) => s.replace(pattern, (id) => ids.get(id) as string);
}

/** Inserts in batches of BATCH. */
async function insertAll(collection: mongoose.mongo.Collection, docs: Doc[]): Promise<void> {
  for (let i = 0; i < docs.length; i += BATCH) {
    await collection.insertMany(docs.slice(i, i + BATCH) as mongoose.mongo.Document[], {
      ordered: false,
    });
  }
}

interface Templates {
  delivery: Doc;
  addresses: Doc[];
  trackingRef: Doc;
  openPackage: Doc;
  takenPackage: Doc;
}

/** The measured merchant's first delivery and packages, as the stores wrote them. */
async function readTemplates(
  order: mongoose.Connection,
  pkg: mongoose.Connection,
  deliveryId: string,
  openPackageId: string,
): Promise<Templates> {
  const delivery = (await order
    .collection('deliveries')
    .findOne({ _id: deliveryId as never })) as Doc;
  const addresses = await Promise.all(
    [delivery.originId, delivery.destinationId].map((id) =>
      order.collection('addresses').findOne({ _id: id as never }),
    ),
  );
  const trackingRef = await order
    .collection('tracking_refs')
    .findOne({ _id: delivery.trackingId as never });
  const packages = pkg.collection('packages');
  const openPackage = await packages.findOne({ _id: openPackageId as never });
  const takenPackage = await packages.findOne({ p2pDeliveryId: deliveryId });
  if (!trackingRef || !openPackage || !takenPackage || addresses.some((a) => !a)) {
    throw new Error('the template delivery was not stored whole');
  }
  return {
    delivery,
    addresses: addresses as Doc[],
    trackingRef,
    openPackage,
    takenPackage,
  };
}

/** Changes of a delivery after its creation, each done (no work left): a run's usual count. */
const TRANSITIONS_PER_DELIVERY = 4;
const doneTransitions = (deliveryId: string, lifecycle: unknown, at: Date): Doc[] =>
  Array.from({ length: TRANSITIONS_PER_DELIVERY }, (_, i) => ({
    _id: `${deliveryId}:${i + 2}`,
    deliveryId,
    version: i + 2,
    event: { kind: 'CANCEL' },
    lifecycle,
    step: null,
    effects: [],
    at,
  }));

/** The SMS and the e-mail that told a delivery's recipient it was on its way, sent. */
const sentMessages = (deliveryId: string, at: Date): Doc[] =>
  (['SMS', 'EMAIL'] as const).map((channel) => ({
    _id: `${deliveryId}:COURIER_ON_THE_WAY:${channel}`,
    deliveryId,
    channel,
    purpose: 'COURIER_ON_THE_WAY',
    recipient: channel === 'SMS' ? '+2348012345678' : 'recipient@example.com',
    secret: false,
    status: 'SENT',
    text: null,
    attempts: 1,
    createdAt: at,
    sentAt: at,
  }));

/** One owner's share of a batch: `count` documents of theirs. */
type Share = [ownerId: string, count: number];

/** Writes seeded documents straight into the services' databases, as their stores would. */
class Seeder {
  deliveries = 0;
  packages = 0;
  entries = 0;
  /** What the sweeps would read, were they to ask the collections themselves. */
  transitions = 0;
  notifications = 0;
  /** How long each list (`<collection>/<ownerId>`) is so far. */
  private readonly listed = new Map<string, number>();

  constructor(
    private readonly order: mongoose.Connection,
    private readonly pkg: mongoose.Connection,
    private readonly payment: mongoose.Connection,
    private readonly t: Templates,
  ) {}

  /** Continues the lists an owner already has (one made through the API). */
  async adopt(ownerId: string): Promise<void> {
    for (const [db, name] of [
      [this.order, 'user_deliveries'],
      [this.pkg, 'user_packages'],
    ] as const) {
      const head = await db.collection(`${name}_heads`).findOne({ _id: ownerId as never });
      this.listed.set(`${name}/${ownerId}`, (head?.n as number | undefined) ?? 0);
    }
  }

  /** Appends each owner's items to their list (libs/owner-list): entries, claims, heads. */
  private async writeLists(
    db: mongoose.Connection,
    name: string,
    items: [ownerId: string, itemIds: string[]][],
    at: Date,
  ): Promise<void> {
    const entries: Doc[] = [];
    const claims: Doc[] = [];
    const heads: mongoose.mongo.AnyBulkWriteOperation[] = [];
    for (const [ownerId, itemIds] of items) {
      const from = this.listed.get(`${name}/${ownerId}`) ?? 0;
      itemIds.forEach((itemId, i) => {
        const n = from + i + 1;
        entries.push({ _id: ownerListEntryId(ownerId, n), ownerId, n, itemId, at });
        claims.push({ _id: ownerListClaimId(ownerId, itemId), from: n });
      });
      const n = from + itemIds.length;
      this.listed.set(`${name}/${ownerId}`, n);
      heads.push({
        updateOne: { filter: { _id: ownerId as never }, update: { $max: { n } }, upsert: true },
      });
    }
    await insertAll(db.collection(name), entries);
    await insertAll(db.collection(`${name}_claims`), claims);
    for (let i = 0; i < heads.length; i += BATCH) {
      await db.collection(`${name}_heads`).bulkWrite(heads.slice(i, i + BATCH), { ordered: false });
    }
  }

  /**
   * Each owner's deliveries, each with its addresses, tracking id and transitions (done), and
   * two messages sent about it.
   */
  async addDeliveries(shares: Share[]): Promise<void> {
    const { delivery, addresses, trackingRef } = this.t;
    const deliveries: Doc[] = [];
    const addressDocs: Doc[] = [];
    const refs: Doc[] = [];
    const changes: Doc[] = [];
    const messages: Doc[] = [];
    const lists: [string, string[]][] = [];
    const at = new Date();
    const trackingLength = String(delivery.trackingId).length;
    for (const [userId, count] of shares) {
      const ids = Array.from({ length: count }, () => randomUUID());
      lists.push([userId, ids]);
      for (const id of ids) {
        const rename = renamer(
          new Map([
            [delivery._id as string, id],
            [delivery.userId as string, userId],
            [
              delivery.trackingId as string,
              randomBytes(trackingLength).toString('hex').slice(0, trackingLength),
            ],
            ...addresses.map((a) => [a._id as string, randomUUID()] as [string, string]),
          ]),
        );
        deliveries.push({ ...(cloneWith(delivery, rename) as Doc), createdAt: at });
        addressDocs.push(...addresses.map((a) => cloneWith(a, rename) as Doc));
        refs.push(cloneWith(trackingRef, rename) as Doc);
        changes.push(...doneTransitions(id, delivery.lifecycle, at));
        messages.push(...sentMessages(id, at));
      }
      this.deliveries += count;
      this.transitions += count * TRANSITIONS_PER_DELIVERY;
      this.notifications += count * 2;
    }
    // As the store does: on the list first, then stored.
    await this.writeLists(this.order, 'user_deliveries', lists, at);
    await insertAll(this.order.collection('deliveries'), deliveries);
    await insertAll(this.order.collection('addresses'), addressDocs);
    await insertAll(this.order.collection('tracking_refs'), refs);
    await insertAll(this.order.collection('delivery_transitions'), changes);
    await insertAll(this.order.collection('notifications'), messages);
  }

  /** Each owner's packages: every third open, the others taken by a delivery. */
  async addPackages(shares: Share[]): Promise<void> {
    const docs: Doc[] = [];
    const lists: [string, string[]][] = [];
    const at = new Date();
    for (const [userId, count] of shares) {
      const ids: string[] = [];
      for (let i = 0; i < count; i++) {
        const template = i % 3 === 0 ? this.t.openPackage : this.t.takenPackage;
        const _id = randomUUID();
        ids.push(_id);
        docs.push({
          ...template,
          _id,
          userId,
          ...(template.p2pDeliveryId ? { p2pDeliveryId: randomUUID() } : {}),
          createdAt: at,
          updatedAt: at,
        });
      }
      lists.push([userId, ids]);
      this.packages += count;
    }
    await this.writeLists(this.pkg, 'user_packages', lists, at);
    await insertAll(this.pkg.collection('packages'), docs);
  }

  /** Each owner's wallet, its entries and their references' claims as `post` writes them. */
  async addWallets(shares: Share[]): Promise<void> {
    const entries: Doc[] = [];
    const references: Doc[] = [];
    const heads: Doc[] = [];
    const at = new Date();
    for (const [walletId, count] of shares) {
      for (let s = 1; s <= count; s++) {
        const reference = `seed:${walletId}:${s}`;
        const amountKobo = s === 1 ? FUNDS_KOBO : 1;
        entries.push({
          _id: `${walletId}:${s}`,
          walletId,
          sequence: s,
          type: 'CREDIT',
          amountKobo,
          balanceKobo: FUNDS_KOBO + (s - 1),
          reference,
          description: null,
          createdAt: at,
        });
        references.push({
          _id: reference,
          walletId,
          type: 'CREDIT',
          amountKobo,
          fromSequence: s,
          checkedThrough: s,
          entrySequence: s,
          description: null,
          createdAt: at,
          updatedAt: at,
        });
      }
      heads.push({ _id: walletId, sequence: count, createdAt: at, updatedAt: at });
      this.entries += count;
    }
    await insertAll(this.payment.collection('ledger_entries'), entries);
    await insertAll(this.payment.collection('ledger_references'), references);
    await insertAll(this.payment.collection('wallets'), heads);
  }

  /**
   * Other users' documents, `perUser` of each kind a user, until each kind holds `target` or
   * the clock passes `until` (false then).
   */
  async growTo(target: number, perUser: number, until: number): Promise<boolean> {
    const users = Math.max(1, Math.floor((5 * BATCH) / perUser));
    const shares = (done: number): Share[] => {
      const out: Share[] = [];
      for (let left = target - done; left > 0 && out.length < users; left -= perUser) {
        out.push([randomUUID(), Math.min(perUser, left)]);
      }
      return out;
    };
    while (Math.min(this.deliveries, this.packages, this.entries) < target) {
      if (Date.now() > until) return false;
      await this.addDeliveries(shares(this.deliveries));
      await this.addPackages(shares(this.packages));
      await this.addWallets(shares(this.entries));
    }
    return true;
  }
}

interface Measured {
  /** Median time of a request sent alone, the server otherwise idle. */
  alone: number;
  rps: number;
  p50: number;
  p99: number;
  failures: number;
}

const median = (values: number[]) => percentile(values, 50);

/** Times `once` alone, a few times in a row; the first call (warming caches) is left out. */
async function timeAlone(once: () => Promise<unknown>, times = 15): Promise<number> {
  await once();
  const ms: number[] = [];
  for (let i = 0; i < times; i++) {
    const t0 = performance.now();
    await once();
    ms.push(performance.now() - t0);
  }
  return median(ms);
}

async function load(url: string, key: string, paths: string[], seconds: number) {
  let next = 0;
  return autocannon({
    url,
    connections: CONNECTIONS,
    duration: seconds,
    headers: { 'api-key': key },
    requests: [
      {
        setupRequest: (req) => ({ ...req, path: paths[next++ % paths.length] }),
      },
    ],
  });
}

async function measureHttp(url: string, key: string, paths: string[]): Promise<Measured> {
  let failures = 0;
  const get = async (path: string) => {
    const res = await fetch(`${url}${path}`, { headers: { 'api-key': key } });
    await res.arrayBuffer();
    if (res.status !== 200) failures++;
    return res.status;
  };
  let at = 0;
  const alone = await timeAlone(() => get(paths[at++ % paths.length]));
  const r = await load(url, key, paths, DURATION_S);
  // Requests autocannon gave up on may still be running: the next path must not pay for them.
  for (let tries = 0; tries < 10 && (await get(paths[0])) !== 200; tries++);
  return {
    alone,
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    failures: failures + r.errors + r.timeouts + r.non2xx,
  };
}

const PATHS = [
  'reference',
  'delivery',
  'deliveries',
  'packages',
  'debit',
  'sweep',
  'outbox',
] as const;
type PathName = (typeof PATHS)[number];
const LABELS: Record<PathName, string> = {
  reference: 'reference: GET /api/fleet-types',
  delivery: 'GET /api/deliveries/:id',
  deliveries: 'GET /api/deliveries',
  packages: 'GET /api/packages',
  debit: 'wallet debit (payment.debit)',
  sweep: "order sweep's read (every 10 s)",
  outbox: "notification sender's read (2 s)",
};

/**
 * A read a service makes on its own every few seconds, timed alone from a store on the same
 * database: under load it is the same read, so its "req/s" is one over its time.
 */
async function measureRead(read: () => Promise<unknown>): Promise<Measured> {
  const alone = await timeAlone(read);
  return { alone, rps: 1000 / alone, p50: alone, p99: alone, failures: 0 };
}

async function measureAll(
  node: NodeProcess,
  client: ServiceBroker,
  merchant: { key: string; userId: string },
  deliveryIds: string[],
  wallets: string[],
  orders: OrderStore,
): Promise<Record<PathName, Measured>> {
  const http = (paths: string[]) => measureHttp(node.url, merchant.key, paths);
  const debitOnce = (walletId: string) =>
    client.call('payment.debit', { userId: walletId, amountKobo: 100, reference: randomUUID() });
  const alone = await timeAlone(() => debitOnce(wallets[0]));
  const phase = await measureCalls('debit', CONNECTIONS, DURATION_S, (worker) =>
    debitOnce(wallets[worker]),
  );
  const debit = {
    alone,
    rps: phase.calls / phase.seconds,
    p50: median(phase.latenciesMs),
    p99: percentile(phase.latenciesMs, 99),
    failures: phase.failures,
  };
  return {
    reference: await http(['/api/fleet-types']),
    delivery: await http(deliveryIds.map((id) => `/api/deliveries/${id}`)),
    deliveries: await http(['/api/deliveries']),
    packages: await http(['/api/packages']),
    debit,
    sweep: await measureRead(() => orders.markedWork(new Date(), 100)),
    outbox: await measureRead(() => orders.notifications.due(new Date(), 50)),
  };
}

function printSize(label: string, m: Record<PathName, Measured>): void {
  console.log(`\n${label}`);
  console.log(
    `${'path'.padEnd(34)} ${'alone ms'.padStart(9)} ${'req/s'.padStart(8)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'errors'.padStart(7)}`,
  );
  for (const p of PATHS) {
    const r = m[p];
    console.log(
      `${LABELS[p].padEnd(34)} ${r.alone.toFixed(1).padStart(9)} ${r.rps.toFixed(0).padStart(8)} ${r.p50.toFixed(1).padStart(8)} ${r.p99.toFixed(1).padStart(8)} ${String(r.failures).padStart(7)}`,
    );
  }
}

async function main(): Promise<number> {
  const iso = isolation();
  let node: NodeProcess | undefined;
  let client: ServiceBroker | undefined;
  const conns: mongoose.Connection[] = [];
  const cleanUp = async () => {
    await Promise.all(conns.map((c) => c.close()));
    await client?.stop();
    await node?.stop();
    await dropDatabases(iso);
  };
  // Stopped early (Ctrl-C), it still stops its server and drops what it seeded.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => void cleanUp().finally(() => process.exit(130)));
  }
  try {
    console.log(
      `bench:growth — every service in one process over NATS; ${CONNECTIONS} connections, ${DURATION_S} s a path`,
    );
    node = await startNode({
      services: 'all',
      iso,
      env: { QUOTA_LIMIT: '100000000', REQUEST_TIMEOUT_MS: '60000', STOP_GRACE_MS: '65000' },
    });
    client = await startClient(iso, ['payment']);
    const merchant = await createUserWithKey(node.url);
    await credit(node.url, merchant, 1_000_000);
    const openPackageId = await savePackage(node.url, merchant);
    const taken = await savePackage(node.url, merchant);
    const created = await requestDelivery(node.url, merchant, [taken]);
    if (created.status !== 201)
      throw new Error(`template delivery: ${created.status} ${created.text}`);
    const templateId = created.body.data.deliveryId as string;

    const [order, pkg, payment] = await Promise.all(
      ['order', 'package', 'payment'].map((s) => openServiceDatabase(iso, s)),
    );
    conns.push(order, pkg, payment);
    const orderModels = defineOrderModels(order);
    const seeder = new Seeder(
      order,
      pkg,
      payment,
      await readTemplates(order, pkg, templateId, openPackageId),
    );

    // The measured merchant's history: the same at both sizes.
    await seeder.adopt(merchant.userId);
    await seeder.addDeliveries([[merchant.userId, USER_DELIVERIES]]);
    await seeder.addPackages([[merchant.userId, USER_PACKAGES]]);
    // Debited as bench:ledger does, over NATS: a wallet with a history for each caller.
    const wallets = Array.from({ length: CONNECTIONS }, () => randomUUID());
    await seeder.addWallets(wallets.map((w) => [w, USER_ENTRIES]));
    const mine = await request(node.url, 'GET', '/api/deliveries?limit=100', {
      headers: { 'api-key': merchant.key },
    });
    const deliveryIds = (mine.body.data as { id: string }[]).map((d) => d.id);
    if (deliveryIds.length === 0)
      throw new Error(`the merchant's deliveries: ${mine.status} ${mine.text}`);

    const started = Date.now();
    await seeder.growTo(SMALL, PER_USER, Infinity);
    console.log(`seeded ${SMALL} of each in ${((Date.now() - started) / 1000).toFixed(0)} s`);
    const orders = new OrderStore(() => orderModels);
    const small = await measureAll(node, client, merchant, deliveryIds, wallets, orders);
    printSize(`${SMALL} deliveries, packages and ledger entries (load ${loadAverage()})`, small);

    const growing = Date.now();
    const reached = await seeder.growTo(BIG, PER_USER, growing + SEED_MINUTES * 60_000);
    const size = Math.min(seeder.deliveries, seeder.packages, seeder.entries);
    console.log(
      `\nseeded to ${seeder.deliveries} deliveries (${seeder.transitions} transitions, ${seeder.notifications} notifications), ${seeder.packages} packages, ${seeder.entries} ledger entries in ${((Date.now() - growing) / 1000).toFixed(0)} s${reached ? '' : ` (stopped after ${SEED_MINUTES} min, short of ${BIG})`}`,
    );
    const big = await measureAll(node, client, merchant, deliveryIds, wallets, orders);
    printSize(`${size} of each (load ${loadAverage()})`, big);

    console.log(
      `\nbig/small (${size}/${SMALL}): a request alone, and the time a request takes under load (1/throughput); goal ≤ 1.5`,
    );
    let missed = false;
    for (const p of PATHS) {
      const alone = big[p].alone / small[p].alone;
      const loaded = big[p].rps > 0 ? small[p].rps / big[p].rps : Infinity;
      const ok = Math.max(alone, loaded) <= 1.5;
      if (p !== 'reference' && !ok) missed = true;
      const verdict = p === 'reference' ? "  (the machine's drift)" : ok ? '  ok' : '  MISSED';
      console.log(
        `${LABELS[p].padEnd(34)} alone ${alone.toFixed(2)}×  under load ${loaded.toFixed(2)}×${verdict}`,
      );
    }
    const failures = PATHS.reduce((n, p) => n + small[p].failures + big[p].failures, 0);
    if (failures > 0) console.error(`FAILED: ${failures} requests did not answer 2xx`);
    return failures > 0 || missed ? 1 : 0;
  } finally {
    await cleanUp();
  }
}

function loadAverage(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
}

runMain(main);
