/** One resident-memory sample of a process: minutes since the load started, and megabytes. */
export interface MemorySample {
  min: number;
  mb: number;
}

/** How a process's memory moved after the warm-up, in MB/min. */
export interface MemoryTrend {
  /** Least-squares slope over every sample after the warm-up: for information only. */
  slope: number;
  /** How fast the floor (the lowest sample) rose from the first half to the last. */
  floor: number;
}

/** A floor rising faster than this (MB/min) is memory that is never given back. */
export const GROWTH_MB_PER_MIN = 1;

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

function lowest(points: readonly MemorySample[]): MemorySample {
  return points.reduce((low, p) => (p.mb < low.mb ? p : low));
}

/**
 * The trend after the warm-up (the first quarter of the samples: heaps and caches grow to
 * their working size then). A V8 heap's resident size is a saw: it grows until a full
 * collection, which may give pages back or not, so a slope over a few samples says more about
 * when the collections fell than about a leak. What a leak does is raise the floor: the
 * lowest sample of the last half stands above the lowest of the first.
 */
export function memoryTrend(points: readonly MemorySample[]): MemoryTrend {
  const warm = points.slice(Math.floor(points.length / 4));
  if (warm.length < 2) return { slope: 0, floor: 0 };
  const half = Math.floor(warm.length / 2);
  const first = lowest(warm.slice(0, half));
  const last = lowest(warm.slice(half));
  const span = (warm[warm.length - 1].min - warm[0].min) / 2;
  return { slope: slope(warm), floor: span > 0 ? (last.mb - first.mb) / span : 0 };
}

/**
 * GROWING: the floor rose faster than GROWTH_MB_PER_MIN and than twice the reference's (a
 * process that cannot leak, sampled in the same run: its floor moves a few MB too); else flat.
 */
export function memoryVerdict(
  { floor }: MemoryTrend,
  reference: MemoryTrend = { slope: 0, floor: 0 },
): 'GROWING' | 'flat' {
  return floor > Math.max(GROWTH_MB_PER_MIN, 2 * Math.abs(reference.floor)) ? 'GROWING' : 'flat';
}
