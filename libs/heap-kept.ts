import { PerformanceObserver, constants, type NodeGCPerformanceDetail } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';

/** The `/metrics` gauge (moleculer's name) of what the process keeps, in bytes. */
export const HEAP_KEPT_METRIC = 'process.memory.heap.kept';

/** The young generation: small objects, and large ones not yet through a collection. */
const YOUNG_SPACES = new Set(['new_space', 'new_large_object_space']);

/**
 * V8's heap in use outside the young generation. Read right after a full collection, it is
 * what the process keeps alive: it climbs only when something is retained, where RSS and
 * the heap's committed size also follow garbage not yet collected (docs/performance.md).
 */
export function heapBesideYoung(): number {
  let bytes = 0;
  for (const space of getHeapSpaceStatistics()) {
    if (!YOUNG_SPACES.has(space.space_name)) bytes += space.space_used_size;
  }
  return bytes;
}

/**
 * Calls `onKept` with the heap kept after each full (mark-compact) collection, a moment after
 * it. Node reports collections in batches, off the collection itself; until the next one
 * only objects promoted from the young generation add to the figure. Stop with the result.
 */
export function observeHeapKept(onKept: (bytes: number) => void): () => void {
  const observer = new PerformanceObserver((list) => {
    const full = list
      .getEntries()
      // A 'gc' entry's detail, which Node's entry type leaves untyped.
      .some((entry) => {
        const { detail } = entry as { detail?: NodeGCPerformanceDetail };
        return detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR;
      });
    if (full) onKept(heapBesideYoung());
  });
  observer.observe({ entryTypes: ['gc'] });
  return () => observer.disconnect();
}
