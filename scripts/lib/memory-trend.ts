/** One resident-memory sample of a process: minutes since the load started, and megabytes. */
export interface MemorySample {
  min: number;
  mb: number;
}

/** Growth rates (MB/min) over the first and the last half of the samples after the warm-up. */
export interface MemoryTrend {
  first: number;
  last: number;
}

/** A last half growing faster than this (MB/min), not levelling off, is a leak. */
export const GROWTH_MB_PER_MIN = 0.5;

/** Least-squares slope of megabytes against minutes. */
function slope(points: readonly MemorySample[]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((s, p) => s + p.min, 0) / n;
  const my = points.reduce((s, p) => s + p.mb, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.min - mx) * (p.mb - my);
    den += (p.min - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

/**
 * The trend after the warm-up (the first quarter of the samples: heaps and caches grow to
 * their working size then). The halves share their middle sample, so that three samples
 * after the warm-up already give two slopes.
 */
export function memoryTrend(points: readonly MemorySample[]): MemoryTrend {
  const warm = points.slice(Math.floor(points.length / 4));
  const half = Math.ceil(warm.length / 2);
  return { first: slope(warm.slice(0, half)), last: slope(warm.slice(half - 1)) };
}

/**
 * GROWING: the last half still grows, at more than half the pace of the first (memory that
 * does not level off); settling: it grew, but slows down; flat: it did not grow.
 */
export function memoryVerdict({ first, last }: MemoryTrend): 'GROWING' | 'settling' | 'flat' {
  if (last > GROWTH_MB_PER_MIN && last > first / 2) return 'GROWING';
  if (first > GROWTH_MB_PER_MIN) return 'settling';
  return 'flat';
}
