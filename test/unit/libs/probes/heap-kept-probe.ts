/**
 * Run by heap-kept.test.ts in a process of its own (`node --expose-gc`): in a jest worker the
 * previous test file's environment is torn down while the figures are read, and its release
 * moves them by more than the test retains. Prints one JSON line of the figures it read.
 */
import { heapBesideYoung, observeHeapKept } from '../../../../libs/heap-kept';

const exposedGc = (globalThis as { gc?: () => void }).gc;
if (!exposedGc) throw new Error('run with --expose-gc');
const fullCollection: () => void = exposedGc;

/** The figure reported after the next full collection. */
function keptAfterCollection(): Promise<number> {
  return new Promise((resolve) => {
    const stop = observeHeapKept((bytes) => {
      stop();
      resolve(bytes);
    });
    fullCollection();
  });
}

async function main(): Promise<void> {
  // Node delivers 'gc' entries from an unreferenced handle: without this the process would
  // exit before the first figure arrives.
  const keepAlive = setInterval(() => undefined, 1000);
  const start = await keptAfterCollection();
  let retained: { id: number; label: string }[] | undefined = Array.from(
    { length: 300_000 },
    (_, id) => ({ id, label: `item ${id}` }),
  );
  const holding = await keptAfterCollection();
  const retainedCount = retained.length;
  retained = undefined;
  const released = await keptAfterCollection();
  for (let i = 0; i < 30; i++) {
    Array.from({ length: 10_000 }, (_, id) => ({ id, label: `garbage ${id}` }));
  }
  const afterGarbage = await keptAfterCollection();
  const figures = { start, holding, retainedCount, released, afterGarbage, now: heapBesideYoung() };
  process.stdout.write(`${JSON.stringify(figures)}\n`);
  clearInterval(keepAlive);
}

void main();
