/**
 * Soak: every service in its own process over NATS under a steady mixed load for minutes,
 * each process's resident memory sampled as it goes, to tell a leak (memory whose floor is
 * still rising at the end of the run: GROWING) from memory that grew to a working size and
 * stayed there (plateau) and memory that did not grow (flat); scripts/lib/memory-trend.ts
 * has the rule. What the memory is made of at the start and end of the load (glibc's heap,
 * the anonymous mappings) tells which part grew. The reference is a bare `node:http` process
 * taking a share of the same load: how far a floor moves in this run without a leak.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describeConfig } from '../libs/config';
import { nairaToKobo } from '../libs/money';
import { QUOTE } from '../test/support/quote';
import { credit, requestDelivery, savePackage } from '../test/support/deliveries';
import { adminHeaders, createUserWithKey, request, type Reply } from '../test/support/http';
import { hasLabels, samplesIn } from '../test/support/metrics';
import { fileOf, HEADS } from '../test/support/multipart';
import { FAST_WEBHOOKS, WebhookReceiver } from '../test/support/webhook-receiver';
import { courierAt } from '../test/support/couriers';
import { startSmsProvider } from '../test/support/receivers';
import {
  cpuTimeMs,
  dropDatabases,
  isolation,
  rssKb,
  startNode,
  type NodeProcess,
} from '../test/support/stack';
import {
  BUILD_RUN,
  FROM_SOURCE,
  buildAsTheImage,
  countOption,
  inParallel,
  option,
  requireInfrastructure,
  runMain,
  showHelpIfAsked,
  startBareServer,
  stringOption,
  withDeployedNodeOptions,
} from './bench-support';
import { CodeBook, CourierRun, nearPickup, shift, type Seen } from './lib/courier-shift';
import { deployedMemoryMb, memoryFit, requestFor } from './lib/manifests';
import {
  GROWTH_MB_PER_MIN,
  memoryTrend,
  memoryVerdict,
  type MemorySample,
} from './lib/memory-trend';
import { memoryParts, type MemoryParts } from './lib/smaps';
import { ledgerSummary, reconcileWhenSettled, sweepEnv } from './lib/wallet-reconcile';

showHelpIfAsked(`
npm run bench:soak [-- --minutes M --interval S --connections C --couriers N --cool-down D --tsx]
  (or: scripts/tsx scripts/bench-soak.ts ...; needs scripts/infra up && eval "$(scripts/infra env)")

Builds the services as the image does (npm run build) and starts each, compiled, in its own
process over NATS, each with its pod's NODE_OPTIONS from deploy/k8s (--tsx: the TypeScript
through tsx instead, as the integration tests run it, which adds tsx's loader, esbuild's
worker thread and every module's source map to each process). Prints each one's resident
memory (RSS) at rest, then runs a mixed load through the gateway for M minutes: Mode B
quotes, package create/list/delete, wallet top-ups (admin credit), debits (delivery
requests, then read) and reads, city searches, small file uploads, webhook registration
(its owner's list read back, to hold the endpoint cap) and removal; meanwhile N couriers
near the pickup work as the courier app does (bench:run): they report every 5 s, poll
their offers every second while free, accept, and take the requested deliveries to the
door with the codes SMS'd to a Termii stand-in the script runs. Every S seconds it
samples each process's RSS and prints the slowest answer since the last sample; at the end
it prints the table and a verdict per process, and each process's RSS at rest and its
highest against the memory its pod requests and is limited to in deploy/k8s (above the
request: the scheduler reserves less than the process uses), with the request the sizing
rule gives for that highest (the next 64 Mi at or above 1.1 times it, decision 88).

The verdict: the samples after the warm-up (the first quarter, and the few the cut leaves
over) are cut into at most 6 windows of equal length, at least 3 samples each, and each
window is read by its floor, its lowest sample (RSS is a saw: it grows until a collection
gives pages back). A window's floor rises when it stands above the highest floor before
it faster than ${GROWTH_MB_PER_MIN} MB/min (over the minutes since the latest window with that floor)
and faster than twice the reference's fastest such rise in the run.
  GROWING  the floor rose into the last window: still rising at the end of the run
  plateau  the floor rose into an earlier window, then stopped (V8's young space and glibc's
           heap grow to a working size and stay there)
  flat     the floor never rose
A plateau reached before the last two windows (at most the last quarter of a run of 21
samples or more) is never GROWING; one reached later cannot be told from a climb.

Each sample also reads every process's young-generation size (from its /metrics: RSS above
the heap in use is mostly that young space, which V8 sizes to the allocation rate, up to a
bound its flags set), printed as a table, and the verdict is given again on RSS less that
young space ("w/o young"), and on V8's heap kept after each full collection ("JS kept",
process_memory_heap_kept: the old space's saw of garbage left out, so that what the process
keeps alive is judged apart from V8's and glibc's working sizes). With the verdicts, each
process's V8 heap in use and young
space at the end of the load, the RSS of glibc's heap ([heap]) and of the anonymous
mappings (V8's pages, other arenas, buffers) at the start and at the end of the load (from
/proc/<pid>/smaps), and the CPU seconds each process used during the load.
Last, after D idle seconds (V8 collects in full and shrinks an idle heap), each RSS again,
to set against the one at rest. A bare node:http process taking a share of the load is
the reference.
Then the ledger is held to the wallet-paid delivery requests' answers: every 201 has its one
debit of the amount it states, every debit of a request shed (503, 504, no answer) was
refunded in full or became a delivery (the order service's sweep, which takes over such a
request 30 s old here, is given time to settle it), every balance adds up, and
GET /admin/ledger/verify is clean.
Exits 1 when an answer is a 5xx other than 503/504 (load shed), a process exits, the
ledger does not match the answers, a merchant's webhook endpoints were listed above
WEBHOOK_MAX_ENDPOINTS, a courier's call is answered other than as the courier app expects,
or a delivery is accepted twice.

  --minutes M       minutes of load                        BENCH_MINUTES      10
  --interval S      seconds between RSS samples            BENCH_INTERVAL     30
  --connections C   requests under way at once             BENCH_CONNECTIONS  8
  --couriers N      couriers at work beside them           BENCH_COURIERS     6
  --cool-down D     idle seconds before the last sample    BENCH_COOL_DOWN    60
  --heap-snapshots S  comma-separated processes (package,order) to take V8 heap snapshots
                    of, once an eighth into the load and once at its end, in a directory
                    printed at the end; compare them with scripts/heap-diff.ts
                                                           BENCH_HEAP_SNAPSHOTS
  --twins T         semicolon-separated NAME:VAR=VALUE[,VAR=VALUE] (package:MALLOC_ARENA_MAX=2):
                    also start a second process of NAME with those variables (NODE_OPTIONS
                    is added to the pod's), which takes its share of the same load, so that
                    a setting is compared with the default in one run
                                                           BENCH_TWINS
  --parts S         comma-separated processes (twins included) whose memory to break down
                    at every sample: RSS, V8's heap (committed), its young space, glibc's
                    heap and other arenas, the anonymous mappings less V8's heap, and the
                    memory of JS objects outside V8's heap (Buffers, ArrayBuffers)
                                                           BENCH_PARTS
`);

const MINUTES = option('minutes', 10);
const COOL_DOWN_S = option('cool-down', 60);
const INTERVAL_S = option('interval', 30);
const CONNECTIONS = option('connections', 8);
const COURIERS = countOption('couriers', 6);
/** As the courier app paces them (bench:run's defaults). */
const COURIER_PACE = { reportEveryMs: 5000, pollMs: 1000 };
const SNAPSHOTTED = new Set(
  (stringOption('heap-snapshots') ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean),
);
/** Delivery requests per merchant before the next merchant takes over (open packages are capped). */
const REQUESTS_PER_MERCHANT = 150;
const GIVE_UP_MS = 30_000;
/** Answers of load, not faults. */
const SHED = new Set([503, 504]);
/**
 * The order service's sweep takes over a delivery request stopped half-way once it is this
 * old (shortened from 120 s so that the ledger is settled soon after the cool-down); it runs
 * at its deployed interval.
 */
const SWEEP = { staleMs: 30_000, intervalMs: 10_000 };

requireInfrastructure(['MONGO_URL', 'NATS_URL', 'REDIS_URL', 'S3_ENDPOINT']);

const SERVICES = [
  'gateway',
  'account',
  'geo',
  'pricing',
  'package',
  'payment',
  'order',
  'courier-matching',
  'file',
  'webhook',
] as const;

const TWINS = (stringOption('twins') ?? '')
  .split(';')
  .map((spec) => spec.trim())
  .filter(Boolean)
  .map(parseTwin);
const BROKEN_DOWN = new Set(
  (stringOption('parts') ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean),
);

const CITY_QUERIES = ['lagos', 'abuja', 'ibadn', 'port', 'kano', 'ikeja', 'lekki', 'sao paulo'];

interface Merchant {
  key: string;
  userId: string;
  requests: number;
}

/**
 * The wallet-paid delivery requests of the run, for the ledger to be held to: the 201s with
 * what each said was charged, and how many were shed (503, 504, no answer) and may still have
 * debited.
 */
class DeliveryBook {
  readonly merchants: Merchant[] = [];
  readonly created = new Map<string, { merchant: Merchant; amountKobo: number }>();
  shed = 0;

  note(merchant: Merchant, reply: Pick<Reply, 'status' | 'text'> | undefined): void {
    if (!reply || reply.status === 0 || SHED.has(reply.status)) {
      this.shed++;
      return;
    }
    if (reply.status !== 201) return;
    const data = JSON.parse(reply.text).data;
    this.created.set(data.deliveryId, {
      merchant,
      amountKobo: nairaToKobo(data.deliveryFee.creator.amount),
    });
  }
}

/**
 * The most webhook endpoints one merchant held, read back right after each registration: the
 * cap (decisions 89 and 90) must hold under the load, as 13 of 10 once showed it did not.
 */
class EndpointWatch {
  readonly cap = Number(
    process.env.WEBHOOK_MAX_ENDPOINTS ??
      describeConfig().find((v) => v.name === 'WEBHOOK_MAX_ENDPOINTS')?.default,
  );
  most = 0;

  note(listed: Reply | undefined): void {
    const data = (listed?.body as { data?: unknown } | undefined)?.data;
    if (Array.isArray(data)) this.most = Math.max(this.most, data.length);
  }
}

/** Answers by operation and status, and the first unexpected one of each kind. */
class Tally {
  readonly counts = new Map<string, Map<number, number>>();
  readonly unexpected: string[] = [];
  /** The slowest answer since the last sample: a stall lines up with a step in memory. */
  private slowest = { ms: 0, op: '' };

  timed(op: string, ms: number): void {
    if (ms > this.slowest.ms) this.slowest = { ms, op };
  }

  /** The slowest answer since the last call, and a fresh start. */
  takeSlowest(): { ms: number; op: string } {
    const slowest = this.slowest;
    this.slowest = { ms: 0, op: '' };
    return slowest;
  }

  note(op: string, reply: Pick<Reply, 'status' | 'text'>, expected: readonly number[]): void {
    const byStatus = this.counts.get(op) ?? new Map<number, number>();
    byStatus.set(reply.status, (byStatus.get(reply.status) ?? 0) + 1);
    this.counts.set(op, byStatus);
    if (
      !expected.includes(reply.status) &&
      !SHED.has(reply.status) &&
      this.unexpected.length < 20
    ) {
      this.unexpected.push(`${op}: ${reply.status} ${reply.text.slice(0, 200)}`);
    }
  }

  get faults(): number {
    let n = 0;
    for (const byStatus of this.counts.values()) {
      for (const [status, count] of byStatus) if (status >= 500 && !SHED.has(status)) n += count;
    }
    return n;
  }

  get total(): number {
    let n = 0;
    for (const byStatus of this.counts.values()) for (const count of byStatus.values()) n += count;
    return n;
  }
}

/** A process the soak starts: a service, as deployed, with variables and V8 flags of its own. */
interface Launch {
  name: string;
  service: (typeof SERVICES)[number];
  env: Record<string, string>;
  /** Added to its pod's NODE_OPTIONS. */
  nodeOptions: string;
}

/** A second process of a service with other variables (`--twins`). */
function parseTwin(spec: string): Launch {
  const [services, assignments = ''] = spec.split(/:(.*)/s);
  if (!(SERVICES as readonly string[]).includes(services))
    throw new Error(`no process ${services}`);
  const env: Record<string, string> = {};
  for (const assignment of assignments.split(',').filter(Boolean)) {
    const [name, value] = assignment.split(/=(.*)/s);
    if (!/^[A-Z_][A-Z0-9_]*$/i.test(name) || value === undefined) {
      throw new Error(`--twins: "${assignment}" is not VAR=VALUE`);
    }
    env[name] = value;
  }
  const { NODE_OPTIONS: nodeOptions = '', ...variables } = env;
  return {
    name: `${services} [${assignments}]`,
    service: services as Launch['service'],
    env: variables,
    nodeOptions,
  };
}

/** A process's V8 heap in MB, read from its metrics (none for the reference). */
interface Heap {
  used: number;
  /** What V8 holds for its heap, used or not: the part of the anonymous mappings that is V8's. */
  committed: number;
  /** The heap in use beside the young space after the latest full collection: what is kept alive. */
  kept: number;
  /** The young generation's size: V8 grows it with the allocation rate, up to twice --max-semi-space-size. */
  young: number;
  /** Memory of JS objects outside V8's heap (Buffers, ArrayBuffers): malloc'd or mapped by Node. */
  external: number;
}

/** One sample of a process whose memory is broken down (`--parts`). */
interface Breakdown {
  rss: number;
  heap: Heap | undefined;
  parts: MemoryParts | undefined;
}

/** What a process's memory is made of now, none once it has exited. */
function partsOf(pid: number): MemoryParts | undefined {
  try {
    return memoryParts(readFileSync(`/proc/${pid}/smaps`, 'utf8'));
  } catch {
    return undefined;
  }
}

/**
 * Asks a process started with `--heapsnapshot-signal=SIGUSR2` for a heap snapshot and waits
 * until V8 has written it (the process does nothing else meanwhile): its path.
 */
async function heapSnapshot(pid: number, dir: string): Promise<string> {
  const before = new Set(readdirSync(dir));
  process.kill(pid, 'SIGUSR2');
  const deadline = Date.now() + 300_000;
  let size = -1;
  for (;;) {
    await sleep(1000);
    const file = readdirSync(dir).find((f) => !before.has(f) && f.endsWith('.heapsnapshot'));
    if (file) {
      const path = join(dir, file);
      const now = statSync(path).size;
      // V8 writes the file in one go and then closes it: complete once it stops growing.
      if (now > 0 && now === size) return path;
      size = now;
    }
    if (Date.now() > deadline) throw new Error(`no heap snapshot of process ${pid} in ${dir}`);
  }
}

async function heapOf(opsUrl: string | undefined): Promise<Heap | undefined> {
  if (!opsUrl) return undefined;
  try {
    const scrape = await (await fetch(`${opsUrl}/metrics`)).text();
    /** The first sample of `name` with `labels`, in MB; NaN when the process has none. */
    const mb = (name: string, labels: Record<string, string> = {}) =>
      (samplesIn(scrape, name).find((s) => hasLabels(s, labels))?.value ?? NaN) / 2 ** 20;
    return {
      used: mb('process_memory_heap_size_used'),
      committed: mb('process_memory_heap_size_total'),
      kept: mb('process_memory_heap_kept'),
      young: mb('process_memory_heap_space_size_total', { space: 'new_space' }),
      external: mb('process_memory_external'),
    };
  } catch {
    return undefined;
  }
}

/** The operations of the mix, one after another on every connection. */
function operations(
  url: string,
  bareUrl: string,
  receiverUrl: string,
  tally: Tally,
  book: DeliveryBook,
  endpoints: EndpointWatch,
  merchantFor: () => Promise<Merchant>,
) {
  const as = (who: Merchant) => ({ 'api-key': who.key });
  const call = async (
    op: string,
    expected: readonly number[],
    run: () => Promise<Reply>,
  ): Promise<Reply | undefined> => {
    const started = performance.now();
    try {
      const reply = await run();
      tally.note(op, reply, expected);
      return reply;
    } catch (error) {
      tally.note(op, { status: 0, text: String(error) }, expected);
      return undefined;
    } finally {
      // A request that failed after a stall is the slowest answer too.
      tally.timed(op, performance.now() - started);
    }
  };
  const png = fileOf(HEADS.png, 20_000);
  return [
    async (who: Merchant) => {
      await call('quote (Mode B)', [200], () =>
        request(url, 'POST', '/api/pricing', { headers: as(who), json: QUOTE }),
      );
    },
    async (who: Merchant) => {
      const created = await call('package create', [201], () =>
        request(url, 'POST', '/api/package', {
          headers: as(who),
          json: { packageType: 'Parcel', name: 'Soak', quantity: 1, size: 'SMALL', value: 5000 },
        }),
      );
      await call('package list', [200], () =>
        request(url, 'GET', '/api/packages', { headers: as(who) }),
      );
      const id = (created?.body as { data?: { id?: string } } | undefined)?.data?.id;
      if (id) {
        await call('package delete', [200, 204], () =>
          request(url, 'DELETE', `/api/package/${id}`, { headers: as(who) }),
        );
      }
    },
    async (who: Merchant) => {
      await call('wallet top-up (admin)', [200, 201], () =>
        request(url, 'POST', `/admin/users/${who.userId}/wallet/credit`, {
          headers: adminHeaders,
          json: { amount: 1000, reference: `soak-${randomUUID()}` },
        }),
      );
      const packageId = await savePackage(url, who).catch(() => undefined);
      if (!packageId) return;
      who.requests++;
      const created = await call('delivery request (debit)', [201], () =>
        requestDelivery(url, who, [packageId]),
      );
      book.note(who, created);
      const deliveryId = (created?.body as { data?: { deliveryId?: string } } | undefined)?.data
        ?.deliveryId;
      if (!deliveryId) return;
      await call('delivery read', [200], () =>
        request(url, 'GET', `/api/deliveries/${deliveryId}`, { headers: as(who) }),
      );
      await call('wallet read', [200], () =>
        request(url, 'GET', '/api/wallet', { headers: as(who) }),
      );
    },
    async (who: Merchant, i: number) => {
      const q = CITY_QUERIES[i % CITY_QUERIES.length];
      await call('city search', [200], () =>
        request(url, 'GET', `/api/cities?search=${encodeURIComponent(q)}`, { headers: as(who) }),
      );
    },
    async (who: Merchant) => {
      await call('file upload (20 kB)', [200], async () => {
        const body = new FormData();
        body.append('upload-file', new Blob([png], { type: 'image/png' }), 'soak.png');
        const res = await fetch(`${url}/file/single-upload`, {
          method: 'POST',
          headers: as(who),
          body,
          signal: AbortSignal.timeout(GIVE_UP_MS),
        });
        return {
          status: res.status,
          text: await res.text(),
          headers: res.headers,
          body: undefined,
        };
      });
    },
    async (who: Merchant) => {
      const created = await call('webhook register', [201], () =>
        request(url, 'POST', '/api/webhooks', {
          headers: as(who),
          json: { url: receiverUrl },
        }),
      );
      const id = (created?.body as { data?: { id?: string } } | undefined)?.data?.id;
      if (id) {
        endpoints.note(
          await call('webhook list', [200], () =>
            request(url, 'GET', '/api/webhooks', { headers: as(who) }),
          ),
        );
        await call('webhook remove', [200, 204], () =>
          request(url, 'DELETE', `/api/webhooks/${id}`, { headers: as(who) }),
        );
      }
    },
    async () => {
      await call('reference (bare node:http)', [200], () => request(bareUrl, 'POST', '/', {}));
    },
  ].map((op) => async (i: number) => op(await merchantFor(), i));
}

async function main(): Promise<number> {
  const iso = isolation();
  const nodes: NodeProcess[] = [];
  const receiver = new WebhookReceiver();
  const sms = await startSmsProvider();
  const bare = await startBareServer();
  let stopping = false;
  const onSignal = () => {
    stopping = true;
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    await receiver.start();
    const env = {
      QUOTA_LIMIT: '100000000',
      LOG_LEVEL: 'warn',
      ...FAST_WEBHOOKS,
      // Staging, with its SMS to the stand-in: couriers need the stops' codes.
      SMS_PROVIDER: 'termii',
      TERMII_BASE_URL: sms.url,
      TERMII_API_KEY: 'termii-soak-key',
      TERMII_SENDER_ID: 'Waybill',
      ...sweepEnv(SWEEP),
    };
    for (const name of [...SNAPSHOTTED, ...BROKEN_DOWN]) {
      if (!(SERVICES as readonly string[]).includes(name)) throw new Error(`no process ${name}`);
    }
    const snapshotDir = SNAPSHOTTED.size > 0 ? mkdtempSync(join(tmpdir(), 'soak-heap-')) : '';
    const launches: Launch[] = [
      ...SERVICES.map((service) => ({
        name: service,
        service,
        env: {},
        nodeOptions: SNAPSHOTTED.has(service)
          ? `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${snapshotDir}`
          : '',
      })),
      ...TWINS,
    ];
    // Each with its pod's NODE_OPTIONS (deploy/k8s), so that its memory is a pod's.
    const entry = FROM_SOURCE ? undefined : buildAsTheImage();
    const starts = await Promise.allSettled(
      launches.map((launch) =>
        startNode({
          iso,
          entry,
          env: withDeployedNodeOptions(
            launch.service,
            { ...env, ...launch.env },
            launch.nodeOptions,
          ),
          services: launch.service,
        }),
      ),
    );
    for (const s of starts) if (s.status === 'fulfilled') nodes.push(s.value);
    for (const s of starts) if (s.status === 'rejected') throw s.reason;
    const nodeOf = starts.map((s) => (s as PromiseFulfilledResult<NodeProcess>).value);
    const url = nodeOf[launches.findIndex((launch) => launch.name === 'gateway')].url;
    const processes: { name: string; service?: string; pid: number; opsUrl?: string }[] = [
      ...launches.map(({ name, service }, i) => ({
        name,
        service,
        pid: nodeOf[i].child.pid as number,
        opsUrl: nodeOf[i].opsUrl,
      })),
      { name: 'reference: bare node:http', pid: bare.child.pid as number, opsUrl: undefined },
    ];

    const load = loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
    console.log(
      `bench:soak — ${availableParallelism()} CPUs, Node ${process.version}, load average ${load}; ${SERVICES.length} services each in its own process over NATS, ${BUILD_RUN}`,
    );
    console.log(
      `${MINUTES} min of mixed load at ${CONNECTIONS} connections, RSS every ${INTERVAL_S} s\n`,
    );
    await sleep(5000); // let start-up garbage go
    const samples = processes.map(() => [] as MemorySample[]);
    // V8's young space with each sample: bounded by its flags, it is no leak however late it grows.
    const youngs = processes.map(() => [] as (number | undefined)[]);
    // What V8 keeps after each full collection: its saw of garbage left out.
    const kepts = processes.map(() => [] as MemorySample[]);
    const breakdowns = processes.map(() => [] as Breakdown[]);
    const sample = async (min: number) => {
      const heaps = await Promise.all(processes.map((p) => heapOf(p.opsUrl)));
      processes.forEach((p, i) => {
        const rss = rssKb(p.pid) / 1024;
        samples[i].push({ min, mb: rss });
        youngs[i].push(heaps[i]?.young);
        const kept = heaps[i]?.kept;
        if (kept !== undefined && Number.isFinite(kept)) kepts[i].push({ min, mb: kept });
        if (BROKEN_DOWN.has(p.service ?? ''))
          breakdowns[i].push({ rss, heap: heaps[i], parts: partsOf(p.pid) });
      });
    };
    await sample(0);
    const partsAtStart = processes.map((p) => partsOf(p.pid));
    console.log('RSS at rest (MB):');
    for (const [i, p] of processes.entries()) {
      console.log(`  ${p.name.padEnd(28)} ${samples[i][0].mb.toFixed(0).padStart(6)}`);
    }

    let merchant: Merchant | undefined;
    let making: Promise<Merchant> | undefined;
    const merchantFor = async (): Promise<Merchant> => {
      if (merchant && merchant.requests < REQUESTS_PER_MERCHANT) return merchant;
      making ??= (async () => {
        const who = { ...(await createUserWithKey(url)), requests: 0 };
        await credit(url, who, 100_000_000); // far more than its requests cost
        book.merchants.push(who);
        merchant = who;
        making = undefined;
        return who;
      })();
      return making;
    };
    const tally = new Tally();
    const book = new DeliveryBook();
    const endpoints = new EndpointWatch();
    const cpuAtStart = processes.map((p) => cpuTimeMs(p.pid));
    const ops = operations(
      url,
      bare.url,
      receiver.url('/soak'),
      tally,
      book,
      endpoints,
      merchantFor,
    );
    const couriers = await inParallel(Array.from({ length: COURIERS }), () =>
      courierAt(url, nearPickup()),
    );
    const courierRun = new CourierRun<Seen>(() => ({ accepted: 0 }));
    const started = performance.now();
    const endAt = started + MINUTES * 60_000;
    const codes = new CodeBook(sms);
    const pace = { ...COURIER_PACE, deadline: Date.now() + MINUTES * 60_000 };
    const shifts = couriers.map((courier) => shift(url, courier, courierRun, codes, pace));
    const minutes = () => (performance.now() - started) / 60_000;
    let next = 0;
    const exited = () =>
      nodes.some((n) => n.child.exitCode !== null || n.child.signalCode !== null);
    const workers = Array.from({ length: CONNECTIONS }, async () => {
      while (!stopping && performance.now() < endAt && !exited()) {
        const i = next++;
        await ops[i % ops.length](Math.floor(i / ops.length));
      }
    });
    const snapshots: string[] = [];
    const snapshot = async () => {
      for (const p of processes.filter((p) => SNAPSHOTTED.has(p.name))) {
        snapshots.push(
          `${await heapSnapshot(p.pid, snapshotDir)} (${p.name}, ${minutes().toFixed(1)} min)`,
        );
      }
    };
    let snapshotted = false;
    const sampler = (async () => {
      while (!stopping && performance.now() < endAt && !exited()) {
        await sleep(Math.min(INTERVAL_S * 1000, Math.max(0, endAt - performance.now())));
        if (!snapshotted && minutes() >= MINUTES / 8) {
          snapshotted = true;
          await snapshot();
        }
        await sample(minutes());
        const last = samples.map((s) => s[s.length - 1].mb.toFixed(0)).join(' ');
        const slowest = tally.takeSlowest();
        console.log(
          `  ${minutes().toFixed(1)} min: ${tally.total} answers, slowest ${slowest.ms.toFixed(0)} ms (${slowest.op}); RSS ${last}`,
        );
      }
    })();
    await sampler;
    // Bounded: a request still unanswered GIVE_UP_MS after the end is left behind.
    stopping = true;
    courierRun.finished = true;
    await Promise.race([Promise.all([...workers, ...shifts]), sleep(GIVE_UP_MS)]);
    const ranMin = minutes();
    const cpuS = processes.map((p, i) => (cpuTimeMs(p.pid) - cpuAtStart[i]) / 1000);
    await snapshot();
    const heapsAtEnd = await Promise.all(processes.map((p) => heapOf(p.opsUrl)));
    const partsAtEnd = processes.map((p) => partsOf(p.pid));
    // Idle, V8 collects in full and shrinks its heap: what stays is what the run kept.
    await sleep(COOL_DOWN_S * 1000);
    const afterRest = processes.map((p) => rssKb(p.pid) / 1024);
    // Read after the last sample, so as not to move it: no money lost or doubled under load.
    const ledger = await reconcileWhenSettled(url, book.merchants, book.created, book.shed, SWEEP);

    console.log(
      `\nRSS (MB) every ${INTERVAL_S} s, ${tally.total} answers in ${ranMin.toFixed(1)} min:`,
    );
    const header = [
      'process'.padEnd(28),
      ...samples[0].map((s) => `${s.min.toFixed(1)}`.padStart(6)),
    ];
    console.log(header.join(' '));
    for (const [i, p] of processes.entries()) {
      console.log(
        [p.name.padEnd(28), ...samples[i].map((s) => s.mb.toFixed(0).padStart(6))].join(' '),
      );
    }
    console.log(`\nV8's young space (MB) with each sample:`);
    console.log(header.join(' '));
    for (const [i, p] of processes.entries()) {
      if (!p.opsUrl) continue;
      const cells = youngs[i].map((y) => (y?.toFixed(0) ?? '-').padStart(6));
      console.log([p.name.padEnd(28), ...cells].join(' '));
    }
    const mb = (n: number | undefined, width: number) => (n?.toFixed(0) ?? '-').padStart(width);
    for (const [i, p] of processes.entries()) {
      if (breakdowns[i].length === 0) continue;
      console.log(`\n${p.name}: what its memory is made of at each sample (MB)`);
      console.log(header.join(' '));
      const row = (label: string, of: (b: Breakdown) => number | undefined) =>
        console.log([`  ${label}`.padEnd(28), ...breakdowns[i].map((b) => mb(of(b), 6))].join(' '));
      row('RSS', (b) => b.rss);
      row("V8's heap, committed", (b) => b.heap?.committed);
      row('  kept after a full GC', (b) => b.heap?.kept);
      row('  of it young space', (b) => b.heap?.young);
      row("glibc's [heap]", (b) => b.parts?.heap);
      row("glibc's other arenas", (b) => b.parts?.arenas);
      row('anonymous less V8', (b) =>
        b.parts && b.heap ? b.parts.anon - b.heap.committed : undefined,
      );
      row('JS external (Buffers)', (b) => b.heap?.external);
    }
    const fromTo = (from: number | undefined, to: number | undefined, width: number) =>
      `${mb(from, 0)} → ${mb(to, 0)}`.padStart(width);
    console.log(
      `\n${'process'.padEnd(28)} ${'rest'.padStart(6)} ${'end'.padStart(6)} ${'idle after'.padStart(10)} ${'floor MB'.padStart(11)} ${'last rise'.padStart(9)}  ${'verdict'.padEnd(8)} ${'w/o young'.padEnd(9)} ${'JS kept'.padEnd(18)} ${'heap used'.padStart(9)} ${'young gen'.padStart(9)} ${'[heap] MB'.padStart(11)} ${'arenas MB'.padStart(11)} ${'anon MB'.padStart(11)} ${'CPU s'.padStart(6)}`,
    );
    const referenceTrend = memoryTrend(samples[samples.length - 1]);
    const withoutYoung = samples.map((s, i) =>
      s.map((point, k) => ({ min: point.min, mb: point.mb - (youngs[i][k] ?? 0) })),
    );
    for (const [i, p] of processes.entries()) {
      const t = memoryTrend(samples[i]);
      const s = samples[i];
      const rest = memoryVerdict(memoryTrend(withoutYoung[i]), referenceTrend);
      const k = kepts[i];
      const kept =
        k.length > 0
          ? `${memoryVerdict(memoryTrend(k), referenceTrend)} ${mb(k[0].mb, 0)} → ${mb(k[k.length - 1].mb, 0)}`
          : '-';
      console.log(
        `${p.name.padEnd(28)} ${mb(s[0].mb, 6)} ${mb(s[s.length - 1].mb, 6)} ${mb(afterRest[i], 10)} ${fromTo(t.windows[0]?.floor, t.windows.at(-1)?.floor, 11)} ${(t.rises.at(-1)?.toFixed(2) ?? '-').padStart(9)}  ${memoryVerdict(t, referenceTrend).padEnd(8)} ${(p.opsUrl ? rest : '-').padEnd(9)} ${kept.padEnd(18)} ${mb(heapsAtEnd[i]?.used, 9)} ${mb(heapsAtEnd[i]?.young, 9)} ${fromTo(partsAtStart[i]?.heap, partsAtEnd[i]?.heap, 11)} ${fromTo(partsAtStart[i]?.arenas, partsAtEnd[i]?.arenas, 11)} ${fromTo(partsAtStart[i]?.anon, partsAtEnd[i]?.anon, 11)} ${cpuS[i].toFixed(0).padStart(6)}`,
      );
    }
    console.log(
      [
        '\nfloor MB: the lowest sample of the first window after the warm-up → of the last.',
        "last rise: how fast the last window's floor rose above the highest before it, MB/min",
        `  (GROWING above ${GROWTH_MB_PER_MIN} and above twice the reference's fastest rise).`,
        "w/o young: the same verdict on RSS less V8's young space at each sample (a space its",
        '  flags bound, which V8 grows with the allocation rate, late or early).',
        "JS kept: the same verdict on V8's heap in use beside its young space after each full",
        '  collection (process_memory_heap_kept), start → end in MB: what the process keeps alive.',
        "[heap], arenas, anon: RSS of glibc's main heap, of its other threads' arenas and of the",
        '  other anonymous mappings (V8, buffers, large mallocs), start → end of the load.',
      ].join('\n'),
    );
    console.log(
      `\nAgainst each pod's memory (deploy/k8s), MB; "sized": the request decision 88 gives for this run's highest:\n${'process'.padEnd(28)} ${'rest'.padStart(6)} ${'highest'.padStart(8)} ${'request'.padStart(8)} ${'sized'.padStart(6)} ${'limit'.padStart(6)}  fit`,
    );
    for (const [i, p] of processes.entries()) {
      if (!p.service) continue;
      const pod = deployedMemoryMb(p.service);
      const atRestMb = samples[i][0].mb;
      const highestMb = Math.max(...samples[i].map((s) => s.mb), afterRest[i]);
      console.log(
        `${p.name.padEnd(28)} ${mb(atRestMb, 6)} ${mb(highestMb, 8)} ${mb(pod.request, 8)} ${mb(requestFor(highestMb), 6)} ${mb(pod.limit, 6)}  ${memoryFit({ atRestMb, highestMb }, pod) || 'fits'}`,
      );
    }
    const offered = [...courierRun.deliveries.values()].filter((d) => d.offeredAt).length;
    console.log(
      `\n${COURIERS} couriers: ${offered} deliveries offered, ${courierRun.delivered} taken to the door of ${book.created.size} requested`,
    );
    courierRun.printCalls();
    console.log('\nAnswers by operation and status:');
    for (const [op, byStatus] of tally.counts) {
      const statuses = [...byStatus].map(([s, n]) => `${s || 'no answer'} × ${n}`).join(', ');
      console.log(`  ${op.padEnd(28)} ${statuses}`);
    }
    console.log(
      `\nLoad average at the end: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    if (snapshots.length > 0) {
      console.log(`\nHeap snapshots (scripts/tsx scripts/heap-diff.ts <early> <late>):`);
      for (const line of snapshots) console.log(`  ${line}`);
    }
    console.log(`\n${ledgerSummary(book.created.size, ledger)}`);
    console.log(
      `webhook endpoints: at most ${endpoints.most} listed for one merchant right after a registration (the cap: ${endpoints.cap})`,
    );
    for (const line of tally.unexpected) console.error(`  unexpected: ${line}`);
    if (exited()) {
      console.error('FAILED: a service process exited during the run');
      for (const n of nodes) if (n.child.exitCode !== null) console.error(n.output().slice(-2000));
      return 1;
    }
    if (tally.faults > 0) {
      console.error(`FAILED: ${tally.faults} answers were server errors (5xx other than 503/504)`);
      return 1;
    }
    if (endpoints.most > endpoints.cap) {
      console.error(
        `FAILED: a merchant held ${endpoints.most} webhook endpoints, above the cap of ${endpoints.cap}`,
      );
      return 1;
    }
    const courierProblems = [...courierRun.problems, ...courierRun.acceptedTwice()];
    if (courierProblems.length > 0) {
      console.error('FAILED: the couriers were answered other than as expected:');
      for (const p of courierProblems.slice(0, 20)) console.error(`  ${p}`);
      return 1;
    }
    if (ledger.mismatches.length > 0) {
      console.error('FAILED: the ledger does not match the answers:');
      for (const m of ledger.mismatches.slice(0, 20)) console.error(`  ${m}`);
      return 1;
    }
    return 0;
  } finally {
    bare.child.kill();
    await Promise.all(nodes.map((n) => n.stop()));
    await receiver.stop();
    await sms.close();
    await dropDatabases(iso);
  }
}

runMain(main);
