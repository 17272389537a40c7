/**
 * Failover benchmark: Mode B quotes through the gateway while one of two pricing replicas is
 * killed with SIGKILL (a crash: no goodbye to its peers), with gateway, account, geo and the
 * two pricing replicas each in its own process over NATS. Prints the throughput second by
 * second, the dip after the kill and the latencies around it; it asserts nothing.
 *
 *   scripts/infra up && eval "$(scripts/infra env)"
 *   npm run bench:failover
 *   npm run bench:failover -- --connections 20 --duration 20 --kill-at 5
 *
 * Every database the benchmark creates is dropped at the end.
 */
import { availableParallelism } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { createUserWithKey } from '../test/support/http';
import { failures, percentile, sentBetween, startLoad, type Sample } from '../test/support/load';
import { QUOTE, waitForQuote } from '../test/support/quote';
import { dropDatabases, isolation, startNodes, type NodeProcess } from '../test/support/stack';
import { asDeployed, option, requireInfrastructure, showHelpIfAsked } from './bench-support';

showHelpIfAsked(`
npm run bench:failover [-- --connections 20 --duration 20 --kill-at 5]

Mode B quotes through the gateway for --duration seconds, with gateway, account, geo and two
pricing replicas each in its own process over NATS; at --kill-at seconds one pricing replica
is killed with SIGKILL. Prints the throughput second by second, the dip after the kill and the
latencies around it; asserts nothing. Needs scripts/infra up && eval "$(scripts/infra env)".
`);

const CONNECTIONS = option('connections', 20);
const DURATION_S = option('duration', 20);
const KILL_AT_S = option('kill-at', 5);
if (KILL_AT_S < 1 || KILL_AT_S >= DURATION_S) {
  console.error(
    `--kill-at must be at least 1 and less than --duration (${DURATION_S}): the seconds before it are what the dip is measured against`,
  );
  process.exit(1);
}
/** A request still unanswered after this long counts as hung (failed). */
const GIVE_UP_MS = 30_000;

requireInfrastructure(['MONGO_URL', 'NATS_URL', 'REDIS_URL']);

/** Answers completed in [from, to) milliseconds, per second. */
const completedPerSecond = (samples: Sample[], from: number, to: number) =>
  (samples.filter((s) => s.at + s.ms >= from && s.at + s.ms < to).length * 1000) / (to - from);

const latencies = (samples: Sample[]) => samples.map((s) => s.ms);

async function main() {
  const iso = isolation();
  const nodes: NodeProcess[] = [];
  try {
    const env = { QUOTA_LIMIT: '100000000', LOG_LEVEL: 'warn' };
    const names = ['gateway', 'account', 'geo', 'pricing', 'pricing'];
    await startNodes(nodes, names, { iso, perProcess: asDeployed(env) });
    const [gateway, , , , victim] = nodes;
    const { key } = await createUserWithKey(gateway.url);
    await waitForQuote(gateway.url, key);

    console.log(
      `bench:failover — ${availableParallelism()} CPUs, Node ${process.version}, ${CONNECTIONS} connections, one of two pricing replicas killed (SIGKILL) at ${KILL_AT_S} s of ${DURATION_S} s`,
    );
    const load = startLoad(
      {
        url: `${gateway.url}/api/pricing`,
        headers: { 'api-key': key },
        body: JSON.stringify(QUOTE),
      },
      { connections: CONNECTIONS, giveUpMs: GIVE_UP_MS },
    );
    await sleep(KILL_AT_S * 1000);
    await victim.stop('SIGKILL');
    const killedAt = load.elapsed();
    await sleep(Math.max(0, DURATION_S * 1000 - killedAt));
    const end = load.elapsed();
    const samples = await load.stop();

    console.log(
      `\n${'second'.padStart(6)} ${'req/s'.padStart(8)} ${'p99 ms'.padStart(8)} ${'failed'.padStart(7)}`,
    );
    for (let from = 0; from < end; from += 1000) {
      const sent = sentBetween(samples, from, from + 1000);
      const mark = from <= killedAt && killedAt < from + 1000 ? '  ← kill' : '';
      console.log(
        `${String(from / 1000).padStart(6)} ${completedPerSecond(samples, from, from + 1000)
          .toFixed(0)
          .padStart(
            8,
          )} ${String(percentile(latencies(sent), 99)).padStart(8)} ${String(failures(sent).length).padStart(7)}${mark}`,
      );
    }

    const before = sentBetween(samples, 1000, killedAt);
    const baseline = completedPerSecond(samples, 1000, killedAt);
    // The dip: half-second windows from the kill until the throughput is back to 80%.
    let lowest = Number.POSITIVE_INFINITY;
    let recoveredAt: number | undefined;
    for (let from = killedAt; from + 500 <= end && recoveredAt === undefined; from += 500) {
      const rate = completedPerSecond(samples, from, from + 500);
      lowest = Math.min(lowest, rate);
      if (from > killedAt && rate >= 0.8 * baseline) recoveredAt = from;
    }
    const recoverySeconds =
      recoveredAt === undefined ? undefined : ((recoveredAt - killedAt) / 1000).toFixed(1);
    // Around the kill: requests sent from a second before it until the throughput recovered.
    const around = sentBetween(samples, killedAt - 1000, recoveredAt ?? end);
    const p99Around = percentile(latencies(around), 99);
    console.log(
      `\nbefore the kill: ${baseline.toFixed(0)} req/s, p50 ${percentile(latencies(before), 50)} ms, p99 ${percentile(latencies(before), 99)} ms`,
    );
    console.log(
      `the dip: lowest ${lowest.toFixed(0)} req/s (0.5 s windows), back to 80% of before ${recoverySeconds === undefined ? 'not within the run' : `${recoverySeconds} s after the kill`}`,
    );
    console.log(
      `around the kill (1 s before it until recovered): ${around.length} requests, p99 ${p99Around} ms, max ${Math.max(0, ...latencies(around))} ms`,
    );
    console.log(`failed: ${failures(samples).length} of ${samples.length} requests`);
    console.log(
      `\nbench:failover rps_before=${baseline.toFixed(0)} rps_lowest=${lowest.toFixed(0)} recovery_s=${recoverySeconds ?? 'none'} p99_before=${percentile(latencies(before), 99)} p99_around=${p99Around} failed=${failures(samples).length}`,
    );
  } finally {
    await Promise.all(nodes.map((n) => n.stop('SIGKILL')));
    await dropDatabases(iso);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
