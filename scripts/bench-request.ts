/**
 * Delivery request benchmark: wallet-paid `POST /api/request` through the gateway, with the
 * services each in its own process over NATS, next to a reference measured the same way in the
 * same run: `POST /api/pricing` Mode A for the same packages, at the same concurrency (the
 * same reads and the same price, without the saga's writes). Then the ledger is reconciled
 * against the answers; any mismatch fails the run (exit 1). Timings never do.
 */
import { availableParallelism } from 'node:os';
import { nairaToKobo } from '../libs/money';
import { DESTINATION, ORIGIN, type Party } from '../test/support/deliveries';
import { count } from '../test/support/metrics';
import { percentile, send, type LoadTarget } from '../test/support/load';
import { dropDatabases, isolation, startNodes, type NodeProcess } from '../test/support/stack';
import {
  asDeployed,
  buildAsTheImage,
  BUILD_RUN,
  cpuProfileArgs,
  FROM_SOURCE,
  option,
  optionIfGiven,
  profileDir,
  requireInfrastructure,
  showHelpIfAsked,
  runMain,
} from './bench-support';
import {
  busyProcesses,
  cpuFromNow,
  dbCommands,
  keepLoggedErrors,
  outputMarks,
  printCpu,
  printDbCommands,
} from './lib/process-cost';
import { fundedPackages, type FundedPackage } from './lib/funded-packages';
import {
  ledgerSummary,
  reconcileWhenSettled,
  SHED_STATUSES,
  sweepEnv,
} from './lib/wallet-reconcile';

showHelpIfAsked(`
npm run bench:request [-- --count N --concurrency C --warm-up W --db-commands --waiting S
                          --profile DIR --tsx]
  (or: scripts/tsx scripts/bench-request.ts ...; needs scripts/infra up && eval "$(scripts/infra env)")

Wallet-paid POST /api/request through the gateway, the services in separate processes over
NATS, against POST /api/pricing Mode A for the same packages at the same concurrency; then
the ledger reconciled. Prints successes/s (201s; 200s for the reference), their p50 and
p99, and the answers by status; exits 1 on any answer other than 201 (200 for the
reference) that is not load shed (503, 504), and on any mismatch between the answers and
the ledger. Timings never fail the run.

  --count N         measured requests (and reference quotes)      BENCH_COUNT        800
  --concurrency C   connections sending one request after another  BENCH_CONCURRENCY  50
  --warm-up W       unmeasured requests first (reconciled too)     BENCH_WARM_UP      50
Also printed: the CPU time each process (services, database, NATS, Redis) spent a measured
request, from /proc.

  --profile DIR     each service process writes a CPU profile of the whole run (node
                    --cpu-prof) into DIR; scripts/profile-summary.ts reads one
  --db-commands     also print the database commands a measured request sent, by database
                    and by collection (DB_COMMAND_METRICS in every process; the driver then
                    decodes each reply twice, so compare requests/s only between runs alike)
  --waiting S       then, for S seconds, what the searches left waiting cost: no courier is
                    in reach, so every delivery made is searched for until its time is over,
                    each search stepped by matching's sweep; prints the steps a second, a
                    step's reads and CPU (matching's process, the database, Redis), and that
                    CPU a second of the window. Counts commands as --db-commands does, in
                    both runs of a comparison
  --tsx             run the services' TypeScript through tsx, as the tests do, instead of
                    compiled as the image runs them (npm run build, dist/: the default)

Each merchant holds at most PACKAGE_MAX_OPEN (400) open packages: every 400 requests go to
a merchant of their own, one after another, so the load is one merchant's at a time.
`);

const COUNT = option('count', 800);
const CONCURRENCY = option('concurrency', 50);
const WARM_UP = option('warm-up', 50);
const DB_COMMANDS = process.argv.includes('--db-commands');
/** Seconds of waiting searches measured after the requests; none unless asked for. */
const WAITING_S = optionIfGiven('waiting') ?? 0;
/** A request unanswered this long is abandoned and recorded with status 0. */
const GIVE_UP_MS = 60_000;
/**
 * The order service's sweep finishes or undoes a request stopped half-way once it is this old
 * (kept short here so that the reconciliation waits less for it).
 */
const SWEEP = { staleMs: 30_000, intervalMs: 5_000 };

requireInfrastructure(['MONGO_URL', 'NATS_URL', 'REDIS_URL']);

type Merchant = Party;

/** One delivery request (and its reference quote): a merchant and one of its packages. */
type Job = FundedPackage;

interface Answer {
  job: Job;
  status: number;
  ms: number;
  text: string;
}

interface Phase {
  name: string;
  /** The status of a success: 201 for a request, 200 for a quote. */
  expected: number;
  seconds: number;
  answers: Answer[];
}

/** Runs every job once, `concurrency` at a time, each connection taking the next job. */
async function runAll(
  name: string,
  expected: number,
  jobs: readonly Job[],
  target: (job: Job) => LoadTarget,
): Promise<Phase> {
  const answers: Answer[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, jobs.length) }, async () => {
      while (next < jobs.length) {
        const job = jobs[next++];
        const t0 = performance.now();
        let status = 0;
        let text = '';
        try {
          ({ status, text } = await send(target(job), GIVE_UP_MS));
        } catch (error) {
          text = String(error);
        }
        answers.push({ job, status, ms: performance.now() - t0, text });
      }
    }),
  );
  return { name, expected, seconds: (performance.now() - started) / 1000, answers };
}

/** Successes per second: an answer shed fast (503) is no throughput. */
const rate = (phase: Phase) => succeeded(phase).length / phase.seconds;
/** The latencies of the successes. */
const succeeded = (phase: Phase) =>
  phase.answers.filter((a) => a.status === phase.expected).map((a) => a.ms);

/** "201 × 798, 504 × 2": the answers by status. */
function byStatus(phase: Phase): string {
  const counts = new Map<number, number>();
  for (const a of phase.answers) counts.set(a.status, (counts.get(a.status) ?? 0) + 1);
  return [...counts]
    .sort(([a], [b]) => a - b)
    .map(([status, n]) => `${status === 0 ? 'no answer' : status} × ${n}`)
    .join(', ');
}

function report(phase: Phase, reference?: Phase): void {
  const ms = succeeded(phase);
  const ratio = reference ? `  ${(rate(phase) / rate(reference)).toFixed(2)}× the reference` : '';
  console.log(
    `${phase.name.padEnd(30)} ${rate(phase).toFixed(1).padStart(6)} ${phase.expected}/s  p50 ${percentile(ms, 50).toFixed(0).padStart(5)} ms  p99 ${percentile(ms, 99).toFixed(0).padStart(5)} ms  (${byStatus(phase)})${ratio}`,
  );
}

/** Prints the first few answers of each unexpected status, to tell what went wrong. */
function showUnexpected(phase: Phase): void {
  const shown = new Map<number, number>();
  for (const a of phase.answers) {
    if (a.status === phase.expected || (shown.get(a.status) ?? 0) >= 3) continue;
    shown.set(a.status, (shown.get(a.status) ?? 0) + 1);
    console.error(`  ${phase.name}: ${a.status || 'no answer'} ${a.text.slice(0, 300)}`);
  }
}

/**
 * What a step of a search may read: its record (one a step, so they count the steps), its end,
 * its offers, the couriers it noted out of it.
 */
const READ_IN_A_STEP = ['searches', 'search_ends', 'offers', 'search_notes'] as const;

/**
 * What searches waiting for a courier cost: over `seconds`, the steps matching's sweep made
 * (each reads its search's record), and a step's reads and CPU in the matching process, the
 * database and Redis.
 */
async function printWaiting(
  nodes: readonly NodeProcess[],
  groups: readonly string[],
  waiting: number,
  seconds: number,
): Promise<void> {
  const matching = groups.find((group) => group.split(',').includes('courier-matching'));
  // The finds of a step, then every command of every process (the collections are matching's).
  const counts = async () => {
    const all = await dbCommands(nodes);
    return [
      ...READ_IN_A_STEP.map((collection) => count(all, { collection, command: 'find' })),
      count(all),
    ];
  };
  const busy = busyProcesses(nodes, groups).filter(
    ({ name }) => name === matching || name === 'database' || name === 'redis',
  );
  const countsBefore = await counts();
  const cpuUsed = cpuFromNow(busy);
  await new Promise((done) => setTimeout(done, seconds * 1000));
  const cpu = cpuUsed();
  const [steps, ends, offers, notes, commands] = (await counts()).map(
    (n, i) => n - countsBefore[i],
  );
  const perStep = (n: number) => (steps > 0 ? n / steps : NaN);
  console.log(
    `\n${waiting} searches waiting, no courier in reach, over ${seconds} s: ${(steps / seconds).toFixed(1)} steps/s`,
  );
  const reads = [steps, ends, offers, notes].map(
    (n, i) => `${READ_IN_A_STEP[i]} ${perStep(n).toFixed(2)}`,
  );
  console.log(`  reads a step: ${reads.join(', ')}`);
  // The other services' sweeps and outboxes go on meanwhile: the database serves them too.
  console.log(`  database commands from every process, a step: ${perStep(commands).toFixed(2)}`);
  const used = cpu.map(({ name, ms }) => `${name} ${perStep(ms * 1000).toFixed(0)}`);
  console.log(`  CPU µs a step: ${used.join(', ')}`);
  // What the waiting costs the machine, however often each search is stepped.
  const rate = cpu.map(({ name, ms }) => `${name} ${(ms / seconds).toFixed(1)}`);
  console.log(`  CPU ms a second: ${rate.join(', ')}`);
}

async function main(): Promise<number> {
  const iso = isolation();
  const nodes: NodeProcess[] = [];
  try {
    const env = {
      QUOTA_LIMIT: '100000000',
      LOG_LEVEL: 'warn',
      ...sweepEnv(SWEEP),
      ...(DB_COMMANDS || WAITING_S > 0 ? { DB_COMMAND_METRICS: 'true' } : {}),
    };
    const groups = [
      'gateway,account',
      'geo',
      'pricing,courier-matching',
      'package',
      'payment,webhook',
      'order',
    ];
    await startNodes(nodes, groups, {
      iso,
      // What the image runs, unless --tsx: tsx adds its loader, esbuild's helpers and the
      // source maps of every error (a claim lost to another writer is one).
      entry: FROM_SOURCE ? undefined : buildAsTheImage(),
      perProcess: asDeployed(env),
      nodeArgs: cpuProfileArgs(profileDir()),
    });
    const url = nodes[0].url;

    const total = WARM_UP + COUNT;
    // Errors logged while the processes were still finding each other are not the run's.
    let logStart: number[] = [];
    const { merchants, packages: jobs } = await fundedPackages(url, total, () => {
      logStart = outputMarks(nodes);
    });

    console.log(
      `bench:request — ${availableParallelism()} CPUs, Node ${process.version}, ${BUILD_RUN}; ${groups.map((g) => g.replace(/,/g, '+')).join(', ')} each in its own process over NATS`,
    );
    console.log(
      `${COUNT} requests (after ${WARM_UP} unmeasured) at ${CONCURRENCY} connections, ${merchants.length} merchant(s), one package each\n`,
    );
    // The request's body is Mode A's plus what only a request has.
    const priced = (job: Job) => ({
      origin: ORIGIN,
      destination: DESTINATION,
      packagesId: [job.packageId],
    });
    const quote = (job: Job): LoadTarget => ({
      url: `${url}/api/pricing`,
      headers: { 'api-key': job.merchant.key },
      body: JSON.stringify(priced(job)),
    });
    const deliver = (job: Job): LoadTarget => ({
      url: `${url}/api/request`,
      headers: { 'api-key': job.merchant.key },
      body: JSON.stringify({ ...priced(job), type: 'DROP_OFF', courierSelection: 'ANYONE' }),
    });

    const warm = jobs.slice(0, WARM_UP);
    const measured = jobs.slice(WARM_UP);
    const quoteWarm = await runAll('warm-up: Mode A', 200, warm, quote);
    const reference = await runAll('reference: Mode A quote', 200, measured, quote);
    report(reference);
    const requestWarm = await runAll('warm-up: requests', 201, warm, deliver);
    const commandsBefore = DB_COMMANDS ? await dbCommands(nodes) : [];
    const cpuUsed = cpuFromNow(busyProcesses(nodes, groups));
    const requests = await runAll('POST /api/request (wallet)', 201, measured, deliver);
    const used = cpuUsed();
    report(requests, reference);
    printCpu(used, measured.length, 'a measured request', requests.seconds);
    if (DB_COMMANDS) {
      // Sweeps and outboxes run between the requests too: their commands are counted with them.
      printDbCommands(
        commandsBefore,
        await dbCommands(nodes),
        measured.length,
        'a measured request',
      );
    }

    // What Mode A quoted each package, to hold each debit to it.
    const quoted = new Map<string, number>();
    for (const a of [...quoteWarm.answers, ...reference.answers]) {
      if (a.status === 200) {
        quoted.set(
          a.job.packageId,
          nairaToKobo(JSON.parse(a.text).data.deliveryFee.creator.amount),
        );
      }
    }

    const problems: string[] = [];
    const created = new Map<string, { merchant: Merchant; amountKobo: number }>();
    let unanswered = 0;
    for (const a of [...requestWarm.answers, ...requests.answers]) {
      if (SHED_STATUSES.has(a.status)) {
        unanswered++;
        continue;
      }
      if (a.status !== 201) continue;
      const data = JSON.parse(a.text).data;
      const amountKobo = nairaToKobo(data.deliveryFee.creator.amount);
      if (quoted.get(a.job.packageId) !== amountKobo) {
        problems.push(
          `delivery ${data.deliveryId}: charged ${amountKobo / 100}, Mode A quoted ${(quoted.get(a.job.packageId) ?? NaN) / 100}`,
        );
      }
      created.set(data.deliveryId, { merchant: a.job.merchant, amountKobo });
    }
    for (const phase of [quoteWarm, reference, requestWarm, requests]) {
      showUnexpected(phase);
      const wrong = phase.answers.filter(
        (a) => a.status !== phase.expected && !SHED_STATUSES.has(a.status),
      );
      if (wrong.length > 0) {
        problems.push(`${phase.name}: ${wrong.length} answers other than ${phase.expected}`);
      }
    }

    // A request shed may still be under way: the sweep settles it.
    const ledger = await reconcileWhenSettled(url, merchants, created, unanswered, SWEEP);
    problems.push(...ledger.mismatches);
    console.log(`\n${ledgerSummary(created.size, ledger)} (warm-up included)`);
    const ms = succeeded(requests);
    const refMs = succeeded(reference);
    console.log(
      `bench:request rps=${rate(requests).toFixed(1)} p50=${percentile(ms, 50).toFixed(0)} p99=${percentile(ms, 99).toFixed(0)} | modeA rps=${rate(reference).toFixed(1)} p50=${percentile(refMs, 50).toFixed(0)} p99=${percentile(refMs, 99).toFixed(0)} | ratio rps=${(rate(requests) / rate(reference)).toFixed(3)}`,
    );
    if (WAITING_S > 0) await printWaiting(nodes, groups, created.size, WAITING_S);
    // What the services logged as errors tells why a request failed: kept for the bug report.
    const logged = keepLoggedErrors(nodes, groups, logStart, `bench-request-${iso.namespace}`);
    if (logged) console.log(`the services logged ${logged.count} error(s): ${logged.file}`);
    if (problems.length > 0) {
      console.error('\nFAILED:');
      for (const p of problems.slice(0, 20)) console.error(`  ${p}`);
      return 1;
    }
    return 0;
  } finally {
    await Promise.all(nodes.map((n) => n.stop()));
    await dropDatabases(iso);
  }
}

runMain(main);
