/**
 * What grew between two V8 heap snapshots of one process (`npm run bench:soak --
 * --heap-snapshots package` takes them early and late in the load): each kind of object by
 * its count and bytes in both, the most grown first, and the totals.
 *
 *   scripts/tsx scripts/heap-diff.ts EARLY.heapsnapshot LATE.heapsnapshot [--top N]
 */
import { readFileSync } from 'node:fs';
import { option, showHelpIfAsked } from './bench-support';
import { compareHeaps, summarizeHeap, totalBytes, type HeapSnapshotJson } from './lib/heap-summary';

showHelpIfAsked(`
scripts/tsx scripts/heap-diff.ts EARLY.heapsnapshot LATE.heapsnapshot [--top N]
Sums each snapshot's live objects by constructor (objects) or by V8's node type (strings,
code, arrays, buffers) and prints the N kinds (default 25) whose bytes grew the most, with
their counts and bytes in both, then the totals.`);

const [early, late] = process.argv.slice(2).filter((a) => a.endsWith('.heapsnapshot'));
if (!early || !late) {
  console.error('usage: scripts/tsx scripts/heap-diff.ts EARLY.heapsnapshot LATE.heapsnapshot');
  process.exit(2);
}
const TOP = option('top', 25);

const summaryOf = (path: string) =>
  summarizeHeap(JSON.parse(readFileSync(path, 'utf8')) as HeapSnapshotJson);
const [before, after] = [summaryOf(early), summaryOf(late)];
const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(2).padStart(9);
const count = (n: number) => String(n).padStart(10);

console.log(
  `${'kind'.padEnd(48)} ${'count'.padStart(10)} ${'→'.padStart(10)} ${'MB'.padStart(9)} ${'→'.padStart(9)} ${'Δ MB'.padStart(9)}`,
);
for (const { name, before: b, after: a } of compareHeaps(before, after).slice(0, TOP)) {
  console.log(
    `${name.slice(0, 48).padEnd(48)} ${count(b.count)} ${count(a.count)} ${mb(b.bytes)} ${mb(a.bytes)} ${mb(a.bytes - b.bytes)}`,
  );
}
const objects = (groups: typeof before) => groups.reduce((sum, g) => sum + g.count, 0);
console.log(
  `${'total'.padEnd(48)} ${count(objects(before))} ${count(objects(after))} ${mb(totalBytes(before))} ${mb(totalBytes(after))} ${mb(totalBytes(after) - totalBytes(before))}`,
);
