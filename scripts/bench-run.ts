/**
 * Deliveries taken to the door under load: merchants request wallet-paid deliveries through the
 * gateway while couriers, as the courier app would, report where they are, poll their offers,
 * accept, and drive each delivery through its steps with the codes the stops' contacts were
 * sent by SMS (a Termii stand-in the script runs; the services run as live). Every service in
 * its own process over NATS, compiled as the image runs them. The reference, measured in the
 * same run by the same couriers: a location report, the cheapest courier call.
 *
 * Fails (exit 1) on an answer other than the expected one, a delivery not delivered in time, a
 * delivery accepted twice, or a ledger that does not reconcile. Timings never fail the run.
 */
import { availableParallelism } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { nairaToKobo } from '../libs/money';
import { courierAt } from '../test/support/couriers';
import { getDelivery, requestDelivery, type Party } from '../test/support/deliveries';
import { percentile } from '../test/support/load';
import { liveEnv, startSmsProvider, startSmtpReceiver } from '../test/support/receivers';
import { dropDatabases, isolation, startNodes, type NodeProcess } from '../test/support/stack';
import {
  asDeployed,
  buildAsTheImage,
  BUILD_RUN,
  cpuProfileArgs,
  FROM_SOURCE,
  inParallel,
  option,
  optionIfGiven,
  profileDir,
  requireInfrastructure,
  runMain,
  showHelpIfAsked,
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
import { CodeBook, CourierRun, nearPickup, shift, STEPS, type Seen } from './lib/courier-shift';
import { fundedPackages, type FundedPackage } from './lib/funded-packages';
import {
  ledgerSummary,
  reconcileWhenSettled,
  SHED_STATUSES,
  sweepEnv,
} from './lib/wallet-reconcile';

showHelpIfAsked(`
npm run bench:run [-- --deliveries N --couriers C --concurrency K --report-every S --poll-ms P
                      --give-up S --provider-ms M --db-commands --profile DIR --tsx]
  (or: scripts/tsx scripts/bench-run.ts ...; needs scripts/infra up && eval "$(scripts/infra env)")

Deliveries taken to the door: N wallet-paid POST /api/request at K connections while C
couriers near the pickup report every S seconds, poll GET /courier/offers every P ms,
accept, and drive each delivery (arrived-at-pickup, collected, in-transit,
arrived-at-dropoff, delivered) with the codes sent by SMS to a Termii stand-in; the
services run as live, each in its own process over NATS. Prints deliveries delivered a
second; from each request's 201, when it was offered, assigned and delivered (p50, p99);
each courier call's p50/p99 against a location report's in the same run; the CPU each
process spent a delivery taken to the door. Exits 1 on any unexpected answer, a delivery
not delivered within the give-up time or accepted twice, or a ledger that does not
reconcile. Timings never fail the run.

  --deliveries N    delivery requests                             BENCH_DELIVERIES   200
  --couriers C      couriers at work                               BENCH_COURIERS     20
  --concurrency K   connections requesting, one after another      BENCH_CONCURRENCY  10
  --report-every S  seconds between a courier's location reports   BENCH_REPORT_EVERY 5
  --poll-ms P       ms between a free courier's offer polls        BENCH_POLL_MS      1000
  --give-up S       seconds after which deliveries not delivered fail the run
                                                                   BENCH_GIVE_UP      600
  --provider-ms M   ms the SMS and SMTP stand-ins take to accept each message, as real
                    providers do (none unless given)               BENCH_PROVIDER_MS
  --db-commands     also print the database commands a delivery sent, by database and
                    collection (DB_COMMAND_METRICS in every process)
  --profile DIR     each service process writes a CPU profile of the whole run into DIR
  --tsx             run the services' TypeScript through tsx instead of compiled
`);

const DELIVERIES = option('deliveries', 200);
const COURIERS = option('couriers', 20);
const CONCURRENCY = option('concurrency', 10);
const REPORT_EVERY_MS = option('report-every', 5) * 1000;
const POLL_MS = option('poll-ms', 1000);
const GIVE_UP_MS = option('give-up', 600) * 1000;
const PROVIDER_MS = optionIfGiven('provider-ms') ?? 0;
const DB_COMMANDS = process.argv.includes('--db-commands');

/** Kept short so that a request shed half-way is settled before the ledger is reconciled. */
const SWEEP = { staleMs: 30_000, intervalMs: 5_000 };

requireInfrastructure(['MONGO_URL', 'NATS_URL', 'REDIS_URL']);

/** What the run saw of one delivery: its couriers' side, and its merchant's 201. */
interface Requested extends Seen {
  created?: { merchant: Party; amountKobo: number };
}

/** Everything measured: the couriers' side, and the requests the gateway shed. */
class Run extends CourierRun<Requested> {
  shed = 0;

  constructor() {
    super(() => ({ accepted: 0 }));
  }
}

/** The merchants' side: every request, `CONCURRENCY` at a time. */
async function requestAll(url: string, jobs: readonly FundedPackage[], run: Run) {
  await inParallel(
    jobs,
    async ({ merchant, packageId }) => {
      const reply = await requestDelivery(url, merchant, [packageId]).catch((error: unknown) => ({
        status: 0,
        text: String(error),
        body: undefined,
      }));
      if (reply.status === 201) {
        const data = reply.body.data;
        const seen = run.seen(data.deliveryId);
        seen.requestedAt = performance.now();
        seen.created = { merchant, amountKobo: nairaToKobo(data.deliveryFee.creator.amount) };
      } else if (SHED_STATUSES.has(reply.status)) {
        run.shed++;
      } else {
        run.problem(`POST /api/request: ${reply.status} ${reply.text.slice(0, 200)}`);
      }
    },
    CONCURRENCY,
  );
}

const seconds = (values: number[], p: number) =>
  (percentile(values, p) / 1000).toFixed(2).padStart(7);

function printTimes(run: Run): void {
  const since = (pick: (s: Seen) => number | undefined) =>
    [...run.deliveries.values()].flatMap((s) => {
      const at = pick(s);
      return at === undefined || s.requestedAt === undefined ? [] : [at - s.requestedAt];
    });
  console.log('\nfrom the 201 of its request, a delivery was (s)            p50     p99');
  for (const [what, pick] of [
    ['offered (seen by the courier polling)', (s: Seen) => s.offeredAt],
    ['assigned (its accept answered)', (s: Seen) => s.assignedAt],
    ['delivered (its last step answered)', (s: Seen) => s.deliveredAt],
  ] as const) {
    const values = since(pick);
    console.log(`  ${what.padEnd(52)} ${seconds(values, 50)} ${seconds(values, 99)}`);
  }
  console.log(
    `  ${'a courier waited for a code SMS, once needed'.padEnd(52)} ${seconds(run.codeWaits, 50)} ${seconds(run.codeWaits, 99)}`,
  );
  run.printCalls();
}

async function main(): Promise<number> {
  const iso = isolation();
  const nodes: NodeProcess[] = [];
  const [smtp, sms] = await Promise.all([
    startSmtpReceiver({ acceptMs: PROVIDER_MS }),
    startSmsProvider({ answerMs: PROVIDER_MS }),
  ]);
  try {
    const env = {
      ...liveEnv(smtp, sms),
      QUOTA_LIMIT: '100000000',
      LOG_LEVEL: 'warn',
      ...sweepEnv(SWEEP),
      ...(DB_COMMANDS ? { DB_COMMAND_METRICS: 'true' } : {}),
    };
    const groups = [
      'gateway',
      'account',
      'geo',
      'pricing',
      'courier-matching',
      'package',
      'payment',
      'webhook',
      'order',
    ];
    await startNodes(nodes, groups, {
      iso,
      entry: FROM_SOURCE ? undefined : buildAsTheImage(),
      perProcess: asDeployed(env),
      nodeArgs: cpuProfileArgs(profileDir()),
    });
    const url = nodes[0].url;

    const { merchants, packages: jobs } = await fundedPackages(url, DELIVERIES);
    const couriers = await inParallel(Array.from({ length: COURIERS }), () =>
      courierAt(url, nearPickup()),
    );
    const logStart = outputMarks(nodes);

    console.log(
      `bench:run — ${availableParallelism()} CPUs, Node ${process.version}, ${BUILD_RUN}, APP_ENV=live; ${groups.length} processes over NATS`,
    );
    console.log(
      `${DELIVERIES} deliveries requested at ${CONCURRENCY} connections; ${COURIERS} couriers reporting every ${REPORT_EVERY_MS / 1000} s, polling offers every ${POLL_MS} ms; SMS and SMTP accept in ${PROVIDER_MS} ms`,
    );

    const run = new Run();
    const deadline = Date.now() + GIVE_UP_MS;
    const commandsBefore = DB_COMMANDS ? await dbCommands(nodes) : [];
    const cpuUsed = cpuFromNow(busyProcesses(nodes, groups));
    const started = performance.now();
    const codes = new CodeBook(sms);
    const pace = { reportEveryMs: REPORT_EVERY_MS, pollMs: POLL_MS, deadline };
    const shifts = couriers.map((courier) => shift(url, courier, run, codes, pace));
    await requestAll(url, jobs, run);
    const requested = (performance.now() - started) / 1000;
    // Done when every delivery made is delivered (or a courier call went wrong: then it waits
    // out the give-up time, which the problems already explain).
    while (run.delivered < run.deliveries.size && Date.now() < deadline) await sleep(200);
    run.finished = true;
    await Promise.all(shifts);
    const elapsed = (performance.now() - started) / 1000;
    const used = cpuUsed();
    const commandsAfter = DB_COMMANDS ? await dbCommands(nodes) : [];

    const delivered = run.delivered;
    const created = new Map(
      [...run.deliveries].flatMap(([id, seen]) => (seen.created ? [[id, seen.created]] : [])),
    );
    console.log(
      `\n${created.size} requests answered 201 in ${requested.toFixed(1)} s (${(created.size / requested).toFixed(1)}/s), ${run.shed} shed; ${delivered} delivered in ${elapsed.toFixed(1)} s: ${(delivered / elapsed).toFixed(2)} deliveries/s`,
    );
    printTimes(run);
    printCpu(used, Math.max(delivered, 1), 'a delivery taken to the door', elapsed);
    if (DB_COMMANDS) {
      printDbCommands(commandsBefore, commandsAfter, Math.max(delivered, 1), 'a delivery');
    }

    const problems = [...run.problems, ...run.acceptedTwice()];
    for (const [id, seen] of run.deliveries) {
      if (seen.deliveredAt === undefined) {
        problems.push(`delivery ${id} not delivered within ${GIVE_UP_MS / 1000} s`);
      }
    }
    // What the merchants see: every delivery DELIVERED.
    const reads = await inParallel([...created], async ([id, { merchant }]) => {
      const reply = await getDelivery(url, merchant, id);
      return reply.body?.data?.status === 'DELIVERED'
        ? undefined
        : `GET /api/deliveries/${id}: ${reply.status} ${reply.text.slice(0, 200)}`;
    });
    problems.push(...reads.filter((problem) => problem !== undefined));
    const ledger = await reconcileWhenSettled(url, merchants, created, run.shed, SWEEP);
    problems.push(...ledger.mismatches);
    console.log(`\n${ledgerSummary(created.size, ledger)}`);
    const reference = percentile(run.calls.get('location') ?? [], 50);
    const steps = STEPS.flatMap((step) => run.calls.get(step) ?? []);
    console.log(
      `bench:run delivered/s=${(delivered / elapsed).toFixed(2)} | step p50=${percentile(steps, 50).toFixed(0)} p99=${percentile(steps, 99).toFixed(0)} | location p50=${reference.toFixed(0)} | ratio step/location p50=${(percentile(steps, 50) / reference).toFixed(2)}`,
    );
    const logged = keepLoggedErrors(nodes, groups, logStart, `bench-run-${iso.namespace}`);
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
    await Promise.all([smtp.close(), sms.close()]);
  }
}

runMain(main);
