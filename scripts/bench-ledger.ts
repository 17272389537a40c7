/**
 * Ledger benchmark: debits through the payment service in its own process over NATS, called
 * by a broker of this process (as the order service calls it), next to a reference measured
 * the same way in the same run: `payment.balance`, a call that only reads one wallet.
 *
 *   scripts/infra up && eval "$(scripts/infra env)"
 *   npm run bench:ledger                          (or: scripts/tsx scripts/bench-ledger.ts)
 *   npm run bench:ledger -- --concurrency 32 --duration 10 --history 50000
 *
 * Phases: the reference; debits on one hot wallet (every caller races for the same next
 * entry); debits on many wallets (one per caller); then one caller's debits on a wallet of 10
 * entries and on one of --history entries, whose ratio shows whether a debit's cost grows with
 * the wallet's history. At the end the whole ledger is reconciled: any problem, or a count of
 * entries other than the debits that succeeded, fails the run (exit 1). Every database it
 * created is dropped.
 */
import { randomUUID } from 'node:crypto';
import mongoose from 'mongoose';
import type { ServiceBroker } from 'moleculer';
import {
  cpuTimeMs,
  dropDatabases,
  isolation,
  startClient,
  startNode,
  type NodeProcess,
} from '../test/support/stack';
import { percentile } from '../test/support/load';
import {
  measureCalls,
  option,
  requireInfrastructure,
  runMain,
  showHelpIfAsked,
  stringOption,
  withDeployedNodeOptions,
  type CallPhase as Phase,
} from './bench-support';

showHelpIfAsked(`
npm run bench:ledger [-- --concurrency 16 --duration 8 --history 20000 --node-options FLAGS]

Debits through the payment service in its own process over NATS (started with its pod's
NODE_OPTIONS from deploy/k8s), called by a broker of this process, next to payment.balance
in the same run: one hot wallet, a wallet per caller, then one caller on a wallet of 10
entries and on one of --history entries. Each phase prints its rate, p50 and p99, and the
payment process's CPU µs a call. The ledger is reconciled at the end; a problem fails the run.
--node-options adds V8 or Node flags after the pod's (a later flag wins), to measure a
setting against the deployed one, e.g. --node-options --max-semi-space-size=64.
`);

const CONCURRENCY = option('concurrency', 16);
const DURATION_S = option('duration', 8);
const HISTORY = option('history', 20_000);
const EXTRA_NODE_OPTIONS = stringOption('node-options') ?? '';

requireInfrastructure(['MONGO_URL', 'NATS_URL', 'REDIS_URL']);

const FUNDS_KOBO = 1_000_000_000_000;
const DEBIT_KOBO = 100;

/** A phase, with the CPU time the payment process spent on it. */
type LedgerPhase = Phase & { serviceCpuMs: number };

/** A phase runner that reads the CPU time of the process `pid` around each phase. */
function phasesOf(pid: number) {
  return async (
    name: string,
    workers: number,
    call: (worker: number) => Promise<unknown>,
  ): Promise<LedgerPhase> => {
    const cpuBefore = cpuTimeMs(pid);
    const phase = await measureCalls(name, workers, DURATION_S, call);
    return { ...phase, serviceCpuMs: cpuTimeMs(pid) - cpuBefore };
  };
}

/**
 * A phase's rate and latencies, and the payment process's CPU µs a call: the rate of a
 * database-bound phase moves with the machine's other load, the CPU a call costs far less.
 */
function report(phase: LedgerPhase, reference?: Phase, referenceName = 'the reference'): void {
  const rate = phase.calls / phase.seconds;
  const ratio = reference
    ? `  ${(rate / (reference.calls / reference.seconds)).toFixed(2)}× ${referenceName}`
    : '';
  const cpuUs = phase.calls > 0 ? ((phase.serviceCpuMs * 1000) / phase.calls).toFixed(0) : '-';
  console.log(
    `${phase.name.padEnd(34)} ${rate.toFixed(0).padStart(6)}/s  p50 ${percentile(phase.latenciesMs, 50).toFixed(1)} ms  p99 ${percentile(phase.latenciesMs, 99).toFixed(1)} ms  payment ${cpuUs} CPU µs/call  (${phase.calls} calls, ${phase.failures} failed)${ratio}`,
  );
}

/** Writes a valid chain of `length` credits of 1 kobo straight into the database. */
async function writeHistory(walletId: string, length: number, dbName: string): Promise<void> {
  const conn = await mongoose
    .createConnection(process.env.MONGO_URL as string, { dbName })
    .asPromise();
  try {
    const entries = conn.collection('ledger_entries');
    const createdAt = new Date();
    for (let from = 1; from <= length; from += 1000) {
      const batch = [];
      for (let s = from; s < Math.min(from + 1000, length + 1); s++) {
        batch.push({
          _id: `${walletId}:${s}` as unknown as mongoose.mongo.ObjectId,
          walletId,
          sequence: s,
          type: 'CREDIT',
          amountKobo: s === 1 ? FUNDS_KOBO : 1,
          balanceKobo: FUNDS_KOBO + (s - 1),
          reference: `history:${walletId}:${s}`,
          description: null,
          createdAt,
        });
      }
      await entries.insertMany(batch, { ordered: false });
    }
    await conn.collection('wallets').insertOne({
      _id: walletId as unknown as mongoose.mongo.ObjectId,
      sequence: length,
      createdAt,
      updatedAt: createdAt,
    });
  } finally {
    await conn.close();
  }
}

async function main(): Promise<number> {
  const iso = isolation();
  let node: NodeProcess | undefined;
  let client: ServiceBroker | undefined;
  try {
    console.log(
      `payment service in its own process over NATS; ${CONCURRENCY} concurrent callers, ${DURATION_S} s a phase`,
    );
    if (EXTRA_NODE_OPTIONS)
      console.log(`payment's NODE_OPTIONS as deployed, then ${EXTRA_NODE_OPTIONS}`);
    node = await startNode({
      services: 'payment',
      iso,
      env: withDeployedNodeOptions('payment', {}, EXTRA_NODE_OPTIONS),
    });
    client = await startClient(iso, ['payment']);
    const broker = client;
    const measure = phasesOf(node.child.pid as number);
    const fund = (userId: string) =>
      broker.call('payment.credit', {
        userId,
        amountKobo: FUNDS_KOBO,
        reference: `bench:${userId}`,
      });
    const debit = (userId: string) =>
      broker.call('payment.debit', { userId, amountKobo: DEBIT_KOBO, reference: randomUUID() });

    const idle = randomUUID();
    await fund(idle);
    const reference = await measure('reference: payment.balance', CONCURRENCY, () =>
      broker.call('payment.balance', { userId: idle }),
    );
    report(reference);

    const hot = randomUUID();
    await fund(hot);
    const hotPhase = await measure('debits, one hot wallet', CONCURRENCY, () => debit(hot));
    report(hotPhase, reference);

    const many = Array.from({ length: CONCURRENCY }, () => randomUUID());
    await Promise.all(many.map(fund));
    const manyPhase = await measure('debits, a wallet per caller', CONCURRENCY, (w) =>
      debit(many[w]),
    );
    report(manyPhase, reference);

    const young = randomUUID();
    await writeHistory(young, 10, `${iso.dbPrefix}payment`);
    const old = randomUUID();
    console.log(`writing a wallet of ${HISTORY} entries...`);
    await writeHistory(old, HISTORY, `${iso.dbPrefix}payment`);
    const youngPhase = await measure('debits, 1 caller, 10 entries', 1, () => debit(young));
    report(youngPhase);
    const oldPhase = await measure(`debits, 1 caller, ${HISTORY} entries`, 1, () => debit(old));
    report(oldPhase, youngPhase, 'the 10-entry wallet');

    console.log('reconciling the ledger...');
    const verified = (await broker.call('payment.verifyLedger', {}, { timeout: 600_000 })) as {
      clean: boolean;
      entries: number;
      problems: unknown[];
    };
    const debits = hotPhase.calls + manyPhase.calls + youngPhase.calls + oldPhase.calls;
    const expectedEntries = 2 + many.length + 10 + HISTORY + debits;
    console.log(
      `ledger: ${verified.entries} entries (expected ${expectedEntries}), ${verified.clean ? 'clean' : `${verified.problems.length} problems`}`,
    );
    const failed = [hotPhase, manyPhase, youngPhase, oldPhase].some((p) => p.failures > 0);
    if (!verified.clean || verified.entries !== expectedEntries || failed) {
      console.error('FAILED: the ledger does not add up, or debits failed');
      for (const problem of verified.problems.slice(0, 10)) console.error(problem);
      return 1;
    }
    return 0;
  } finally {
    await client?.stop();
    await node?.stop();
    await dropDatabases(iso);
  }
}

runMain(main);
