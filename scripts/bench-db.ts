/**
 * The embedded database: FerretDB 1.24 on its SQLite handler against its PostgreSQL handler,
 * each started here by scripts/infra in a temporary folder on free ports, in one run.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import mongoose from 'mongoose';
import { percentile } from '../test/support/load';
import { freePort } from '../test/support/stack';
import { option, runMain, showHelpIfAsked } from './bench-support';

showHelpIfAsked(`
npm run bench:db [-- --small N --large N --seconds S --rounds N --racers N --backends LIST]

Starts FerretDB on SQLite and on PostgreSQL (scripts/infra up mongo, in a temporary folder on
free ports; no other infrastructure is needed) and prints, for each:
  (a) list latency: find({userId}).sort({createdAt: -1, _id: 1}).limit(20), the query of
      GET /api/deliveries, on a user of 50 documents in a collection of --small (10,000) then
      --large (100,000) documents indexed by {userId, createdAt}; next to it, the same
      collection's find by _id, the reference of the same run;
  (b) atomicity: --rounds (20) rounds of --racers (8) concurrent updateOne and
      findOneAndUpdate calls, filtered on {_id, owner: null}, that set owner: how many rounds
      had more than one winner; and concurrent inserts of one _id as the reference;
  (c) fields kept: --rounds rounds of --racers concurrent updateOne({_id}) calls on one
      document, each $set of a field of its own: how many rounds lost a field (an update that
      writes the whole document from the copy it read undoes the others', decision 99);
  (d) what explain answers for the list query and for a find by _id.
Each list phase runs for at most --seconds (10) and at least 3 queries.

  --small N      BENCH_SMALL      documents of the first size (10000)
  --large N      BENCH_LARGE      documents of the second size (100000)
  --seconds S    BENCH_SECONDS    time given to each list phase (10)
  --rounds N     BENCH_ROUNDS     atomicity rounds (20)
  --racers N     BENCH_RACERS     concurrent writers per round (8)
  --backends L   BENCH_BACKENDS   comma-separated: sqlite,postgresql (both)
`);

const SMALL = option('small', 10_000);
const LARGE = option('large', 100_000);
const SECONDS = option('seconds', 10);
const ROUNDS = option('rounds', 20);
const RACERS = option('racers', 8);
const BACKENDS = backendsWanted();

const INFRA = join(__dirname, 'infra');
/** The user whose list is read: as many documents at either size, so only the rest grows. */
const TARGET_USER = 'user-target';
const TARGET_DOCS = 50;
const OTHER_USERS = 2_000;
const PAGE = 20;
const BATCH = 1_000;

type Backend = 'sqlite' | 'postgresql';

function backendsWanted(): Backend[] {
  const at = process.argv.indexOf('--backends');
  const given = (at >= 0 ? process.argv[at + 1] : process.env.BENCH_BACKENDS) ?? '';
  const names = given === '' ? ['sqlite', 'postgresql'] : given.split(',');
  for (const name of names) {
    if (name !== 'sqlite' && name !== 'postgresql') {
      throw new Error(`--backends takes sqlite and/or postgresql, not '${name}'`);
    }
  }
  return names as Backend[];
}

/** One FerretDB (and, for PostgreSQL, its server) that scripts/infra started for this run. */
interface Server {
  backend: Backend;
  url: string;
  env: NodeJS.ProcessEnv;
  local: string;
}

function infra(env: NodeJS.ProcessEnv, ...args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [INFRA, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`scripts/infra ${args.join(' ')}: ${stderr}`)),
    );
  });
}

async function startServer(backend: Backend): Promise<Server> {
  const local = mkdtempSync(join(tmpdir(), `waybill-bench-db-${backend}-`));
  // PostgreSQL runs as its own user when we are root: it must be able to reach its folder.
  chmodSync(local, 0o755);
  const mongoPort = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    WAYBILL_LOCAL: local,
    WAYBILL_FERRETDB: backend,
    WAYBILL_MONGO_PORT: String(mongoPort),
    WAYBILL_PG_PORT: String(await freePort()),
  };
  const server = { backend, url: `mongodb://127.0.0.1:${mongoPort}`, env, local };
  started.push(server);
  await infra(env, 'up', 'mongo');
  return server;
}

const started: Server[] = [];

async function stopAll(): Promise<void> {
  for (const server of started.splice(0)) {
    await infra(server.env, 'down').catch((err: unknown) => console.error(err));
    rmSync(server.local, { recursive: true, force: true });
  }
}

interface Timing {
  count: number;
  p50: number;
  p95: number;
  mean: number;
}

/** Runs `query` one at a time for up to SECONDS (at least 3 times); answers its latencies. */
async function timed(query: () => Promise<unknown>): Promise<Timing> {
  await query(); // warms caches and connections; not counted
  const latencies: number[] = [];
  const until = performance.now() + SECONDS * 1000;
  while (latencies.length < 3 || (performance.now() < until && latencies.length < 1_000)) {
    const t0 = performance.now();
    await query();
    latencies.push(performance.now() - t0);
  }
  const mean = latencies.reduce((a, b) => a + b, 0) / latencies.length;
  return {
    count: latencies.length,
    p50: percentile(latencies, 50),
    p95: percentile(latencies, 95),
    mean,
  };
}

const ms = (value: number) => `${value < 10 ? value.toFixed(2) : value.toFixed(0)} ms`;

function describeTiming(t: Timing): string {
  return `p50 ${ms(t.p50)}, p95 ${ms(t.p95)}, mean ${ms(t.mean)} (${t.count} queries)`;
}

/** Documents keyed by string `_id`s, as Waybill's are. */
type Doc = { _id: string } & Record<string, unknown>;
type Collection = mongoose.mongo.Collection<Doc>;

/** Adds documents until the collection holds `size`, the target user's 50 among them. */
async function seedTo(collection: Collection, size: number): Promise<number> {
  const t0 = performance.now();
  let have = await collection.estimatedDocumentCount();
  const base = Date.UTC(2026, 0, 1);
  while (have < size) {
    const docs: Doc[] = [];
    for (let i = have; i < Math.min(size, have + BATCH); i++) {
      docs.push({
        _id: `doc-${i}`,
        userId: i < TARGET_DOCS ? TARGET_USER : `user-${i % OTHER_USERS}`,
        createdAt: new Date(base + i * 1000),
        lifecycle: { status: 'PENDING', version: 1 },
        pickup: { address: `${i} Marina Road, Lagos`, lat: 6.45, lng: 3.39 },
        dropoff: { address: `${i} Allen Avenue, Ikeja`, lat: 6.6, lng: 3.35 },
        priceKobo: 150_000 + i,
      });
    }
    await collection.insertMany(docs, { ordered: false });
    have += docs.length;
  }
  return (performance.now() - t0) / 1000;
}

const listQuery = (collection: Collection) =>
  collection.find({ userId: TARGET_USER }).sort({ createdAt: -1, _id: 1 }).limit(PAGE).toArray();

interface ListFigures {
  size: number;
  seedSeconds: number;
  list: Timing;
  byId: Timing;
}

async function measureList(collection: Collection, size: number): Promise<ListFigures> {
  const seedSeconds = await seedTo(collection, size);
  const list = await timed(async () => {
    const page = await listQuery(collection);
    if (page.length !== PAGE) throw new Error(`the list answered ${page.length} documents`);
  });
  let next = 0;
  const byId = await timed(() => collection.findOne({ _id: `doc-${(next++ * 7919) % size}` }));
  return { size, seedSeconds, list, byId };
}

interface Race {
  name: string;
  roundsWithManyWinners: number;
  mostWinners: number;
}

/** ROUNDS rounds of RACERS concurrent `attempt`s on a fresh document; counts the winners. */
async function race(
  name: string,
  collection: Collection,
  attempt: (id: string, racer: number) => Promise<boolean>,
  fresh = true,
): Promise<Race> {
  let roundsWithManyWinners = 0;
  let mostWinners = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const id = `${name}-${round}`;
    if (fresh) await collection.insertOne({ _id: id, owner: null });
    const won = await Promise.all(
      Array.from({ length: RACERS }, (_, racer) =>
        attempt(id, racer).catch((err: unknown) => {
          if (isDuplicateKey(err)) return false;
          throw err;
        }),
      ),
    );
    const winners = won.filter(Boolean).length;
    if (winners !== 1) roundsWithManyWinners++;
    mostWinners = Math.max(mostWinners, winners);
  }
  return { name, roundsWithManyWinners, mostWinners };
}

function isDuplicateKey(err: unknown): boolean {
  return (err as { code?: number }).code === 11000;
}

async function measureRaces(collection: Collection): Promise<Race[]> {
  return [
    await race('updateOne', collection, async (id, racer) => {
      const result = await collection.updateOne(
        { _id: id, owner: null },
        { $set: { owner: `racer-${racer}` } },
      );
      return result.modifiedCount === 1;
    }),
    await race('findOneAndUpdate', collection, async (id, racer) => {
      const before = await collection.findOneAndUpdate(
        { _id: id, owner: null },
        { $set: { owner: `racer-${racer}` } },
      );
      return before !== null;
    }),
    await race(
      'insert of one _id',
      collection,
      async (id) => {
        await collection.insertOne({ _id: id, owner: null });
        return true;
      },
      false,
    ),
  ];
}

/** ROUNDS rounds of RACERS concurrent `$set`s, each of a field of its own, on one document. */
async function measureLostFields(collection: Collection): Promise<number> {
  let roundsThatLost = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const id = `fields-${round}`;
    await collection.insertOne({ _id: id });
    const racers = Array.from({ length: RACERS }, (_, racer) => racer);
    await Promise.all(
      racers.map((racer) => collection.updateOne({ _id: id }, { $set: { [`f${racer}`]: racer } })),
    );
    const kept = await collection.findOne({ _id: id });
    if (racers.some((racer) => kept?.[`f${racer}`] !== racer)) roundsThatLost++;
  }
  return roundsThatLost;
}

/** What explain answers, without what every answer carries (command, server, ok). */
async function explain(db: mongoose.mongo.Db, find: mongoose.mongo.Document): Promise<string> {
  const answer = await db.command({ explain: find, verbosity: 'queryPlanner' });
  const { queryPlanner, ...rest } = answer;
  const pushdown = Object.entries(rest)
    .filter(([key]) => /pushdown/i.test(key))
    .map(([key, value]) => `${key} ${String(value)}`)
    .join(', ');
  return `${pushdown}\n      queryPlanner ${JSON.stringify(planSummary(queryPlanner))}`;
}

/** The parts of a plan that say how rows are found: node types, index names and conditions. */
function planSummary(plan: unknown): unknown {
  if (Array.isArray(plan)) return plan.map(planSummary);
  if (plan === null || typeof plan !== 'object') return plan;
  const wanted = ['Plan', 'Plans', 'Node Type', 'Index Name', 'Index Cond', 'Filter', 'Sort Key'];
  const kept: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(plan)) {
    if (wanted.includes(key)) kept[key] = planSummary(value);
  }
  return kept;
}

async function benchBackend(backend: Backend): Promise<void> {
  const t0 = performance.now();
  const server = await startServer(backend);
  console.log(
    `\n== FerretDB on ${backend} (started in ${((performance.now() - t0) / 1000).toFixed(1)} s)`,
  );
  const client = await new mongoose.mongo.MongoClient(server.url).connect();
  try {
    const db = client.db('bench_db');
    const collection = db.collection<Doc>('deliveries');
    await collection.createIndex({ userId: 1, createdAt: -1 });

    console.log('(a) list latency, the reference is a find by _id in the same collection');
    for (const size of [SMALL, LARGE]) {
      const f = await measureList(collection, size);
      console.log(
        `  ${size.toLocaleString('en')} documents (seeded in ${f.seedSeconds.toFixed(1)} s):`,
      );
      console.log(`    list    ${describeTiming(f.list)}`);
      console.log(
        `    by _id  ${describeTiming(f.byId)}; list/by-_id ${(f.list.p50 / f.byId.p50).toFixed(1)}×`,
      );
    }

    console.log(`(b) ${ROUNDS} rounds of ${RACERS} concurrent writers on one document`);
    for (const r of await measureRaces(db.collection<Doc>('races'))) {
      const verdict = r.roundsWithManyWinners === 0 ? 'atomic' : 'NOT atomic';
      console.log(
        `  ${r.name.padEnd(18)} rounds without exactly one winner: ${r.roundsWithManyWinners}/${ROUNDS}, most winners in a round ${r.mostWinners}: ${verdict}`,
      );
    }

    const lost = await measureLostFields(db.collection<Doc>('fields'));
    console.log(
      `(c) ${ROUNDS} rounds of ${RACERS} concurrent $set of a field each on one document: ${lost} lost a field (${lost === 0 ? 'fields kept' : 'whole-document writes'})`,
    );

    console.log('(d) explain');
    const list = {
      find: 'deliveries',
      filter: { userId: TARGET_USER },
      sort: { createdAt: -1, _id: 1 },
      limit: PAGE,
    };
    console.log(`  list:   ${await explain(db, list)}`);
    console.log(`  by _id: ${await explain(db, { find: 'deliveries', filter: { _id: 'doc-7' } })}`);
  } finally {
    await client.close();
  }
}

async function main(): Promise<number> {
  const load = loadavg().map((l) => l.toFixed(2));
  console.log(`bench:db, load average ${load.join(' ')} on ${cpus().length} cores`);
  try {
    for (const backend of BACKENDS) await benchBackend(backend);
  } finally {
    await stopAll();
  }
  return 0;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void stopAll().finally(() => process.exit(130));
  });
}

runMain(main);
