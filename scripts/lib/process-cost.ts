import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { samples, type Sample } from '../../test/support/metrics';
import { cpuTimeMs, type NodeProcess } from '../../test/support/stack';

/**
 * What a benchmark's services and the infrastructure under them spend on a unit of its work
 * (a request, a delivery taken to the door): CPU from `/proc`, database commands from each
 * process's `waybill_db_commands_total` (DB_COMMAND_METRICS), and the errors they logged.
 */

/** The servers `scripts/infra up` started, by the pid files it keeps in `.local/run`. */
const INFRA_SERVERS = { database: 'mongo', nats: 'nats', redis: 'redis' } as const;

export interface NamedProcess {
  name: string;
  pid: number;
}

/** Each process a benchmark keeps busy, by name: the services' (by group) and the infrastructure's. */
export function busyProcesses(
  nodes: readonly NodeProcess[],
  groups: readonly string[],
): NamedProcess[] {
  const processes = nodes.map((node, i) => ({ name: groups[i], pid: node.child.pid ?? 0 }));
  for (const [name, file] of Object.entries(INFRA_SERVERS)) {
    const pidFile = join(__dirname, '..', '..', '.local', 'run', `${file}.pid`);
    if (existsSync(pidFile)) processes.push({ name, pid: Number(readFileSync(pidFile, 'utf8')) });
  }
  return processes.filter(({ pid }) => pid > 0);
}

export interface CpuUsed {
  name: string;
  ms: number;
}

/** From now: a reading of the CPU ms each process has spent since. */
export function cpuFromNow(processes: readonly NamedProcess[]): () => CpuUsed[] {
  const before = processes.map(({ pid }) => cpuTimeMs(pid));
  return () => processes.map(({ name, pid }, i) => ({ name, ms: cpuTimeMs(pid) - before[i] }));
}

/**
 * CPU ms each process spent on one of `units` (`a measured request`), and how much of the
 * machine that was over `seconds`.
 */
export function printCpu(used: readonly CpuUsed[], units: number, what: string, seconds: number) {
  const total = used.reduce((sum, p) => sum + p.ms, 0);
  console.log(
    `\nCPU ${what} (ms), ${(total / 1000 / seconds / availableParallelism()).toFixed(2)} of the machine's ${availableParallelism()} CPUs busy with these:`,
  );
  for (const { name, ms } of [...used].sort((a, b) => b.ms - a.ms)) {
    console.log(`  ${name.padEnd(26)} ${(ms / units).toFixed(2).padStart(7)}`);
  }
  console.log(`  ${'all'.padEnd(26)} ${(total / units).toFixed(2).padStart(7)}`);
}

export const DB_COMMANDS_METRIC = 'waybill_db_commands_total';
const WRITES = new Set(['insert', 'update', 'delete', 'findAndModify']);

/** Every process's `waybill_db_commands_total` (DB_COMMAND_METRICS). */
export async function dbCommands(nodes: readonly NodeProcess[]): Promise<Sample[]> {
  const scrapes = await Promise.all(nodes.map((node) => samples(node.opsUrl, DB_COMMANDS_METRIC)));
  return scrapes.flat();
}

/**
 * Commands one of `units` sent (`a measured request`), by database (writes and reads) and the
 * busiest collections.
 */
export function printDbCommands(before: Sample[], after: Sample[], units: number, what: string) {
  /** What `after` counts beyond `before` a unit, summed by `key` (null: left out). */
  const perUnit = (key: (s: Sample) => string | null) => {
    const totals = new Map<string, number>();
    const add = (list: Sample[], sign: number) => {
      for (const sample of list) {
        const k = key(sample);
        if (k !== null) totals.set(k, (totals.get(k) ?? 0) + (sign * sample.value) / units);
      }
    };
    add(after, 1);
    add(before, -1);
    return new Map([...totals].filter(([, n]) => n > 0));
  };
  const byDatabase = (writing: boolean) =>
    perUnit((s) => (WRITES.has(s.labels.command) === writing ? s.labels.database : null));
  const [writes, reads] = [byDatabase(true), byDatabase(false)];
  console.log(`\ndatabase commands ${what} sent (${units} of them):`);
  for (const database of new Set([...writes.keys(), ...reads.keys()])) {
    const of = (counts: Map<string, number>) => (counts.get(database) ?? 0).toFixed(2).padStart(6);
    console.log(`  ${database.padEnd(24)} writes ${of(writes)}  reads ${of(reads)}`);
  }
  const byCollection = perUnit((s) =>
    s.labels.collection ? `${s.labels.database}.${s.labels.collection} ${s.labels.command}` : null,
  );
  console.log(`  by collection and command, the busiest first (from 0.05 ${what}):`);
  for (const [k, n] of [...byCollection].sort(([, a], [, b]) => b - a)) {
    if (n >= 0.05) console.log(`    ${n.toFixed(2).padStart(6)}  ${k}`);
  }
}

/** Where each process's output stood: the errors logged after it are the run's. */
export const outputMarks = (nodes: readonly NodeProcess[]) =>
  nodes.map((node) => node.output().length);

/**
 * The error lines the services logged since `marks`, kept in a file named after `run` for the
 * bug report: its path, or undefined when there were none.
 */
export function keepLoggedErrors(
  nodes: readonly NodeProcess[],
  groups: readonly string[],
  marks: readonly number[],
  run: string,
): { file: string; count: number } | undefined {
  const errors = nodes.flatMap((node, i) =>
    node
      .output()
      .slice(marks[i])
      .split('\n')
      .filter((line) => /"level":"(error|fatal)"/.test(line))
      .map((line) => `[${groups[i]}] ${line}`),
  );
  if (errors.length === 0) return undefined;
  const file = join(tmpdir(), `${run}.log`);
  writeFileSync(file, `${errors.join('\n')}\n`);
  return { file, count: errors.length };
}
