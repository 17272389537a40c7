/** One resident-memory sample of a process: minutes since the load started, and megabytes. */
export interface MemorySample {
  min: number;
  mb: number;
}

/** A stretch of samples after the warm-up, by its floor: the lowest sample in it. */
export interface FloorWindow {
  /** Minutes of its first sample. */
  from: number;
  floor: number;
}

/** How a process's memory moved after the warm-up. */
export interface MemoryTrend {
  /** Consecutive windows of equal length, oldest first; none when the run is too short. */
  windows: FloorWindow[];
  /**
   * For each window after the first: how fast its floor rose above the highest floor before
   * it, in MB/min since the latest window that held that floor (negative when it stayed below).
   */
  rises: number[];
}

export type MemoryVerdict = 'GROWING' | 'plateau' | 'flat';

/** A floor rising faster than this (MB/min) is memory that is not given back. */
export const GROWTH_MB_PER_MIN = 1;

/**
 * The windows the samples after the warm-up are cut into. Enough that the last two are at most
 * the last quarter of a run of 21 samples or more (a plateau reached before them is not read
 * as growth), few enough that each is long beside a saw tooth.
 */
const WINDOWS = 6;

/**
 * A window's floor is the saw's floor when the window holds one sample between teeth: three
 * samples hold one under teeth up to two samples long.
 */
const MIN_WINDOW_SAMPLES = 3;

/**
 * Where the floor of a process's memory went after the warm-up (the first quarter of the
 * samples, while heaps and caches grow to their working size). A V8 process's resident size is
 * a saw: it grows until a collection, which may give pages back or not, and V8's young space
 * and glibc's heap grow to a working size and then stay. So each window is read by its floor,
 * and a window's floor counts as a rise only above the highest floor before it: a collection
 * that gave pages back and a tooth that has not fallen yet are neither of them growth.
 */
export function memoryTrend(points: readonly MemorySample[]): MemoryTrend {
  const after = points.slice(Math.floor(points.length / 4));
  const count = Math.min(WINDOWS, Math.floor(after.length / MIN_WINDOW_SAMPLES));
  if (count < 2) return { windows: [], rises: [] };
  const size = Math.floor(after.length / count);
  // Counted from the end, so that the last window ends with the run; the few samples left
  // over at the start go to the warm-up.
  const kept = after.slice(after.length - count * size);
  const windows = Array.from({ length: count }, (_, i) => {
    const window = kept.slice(i * size, (i + 1) * size);
    return { from: window[0].min, floor: Math.min(...window.map((p) => p.mb)) };
  });
  const rises = windows.slice(1).map((window, i) => {
    let highest = windows[0];
    for (const earlier of windows.slice(1, i + 1)) {
      if (earlier.floor >= highest.floor) highest = earlier;
    }
    return (window.floor - highest.floor) / (window.from - highest.from);
  });
  return { windows, rises };
}

/**
 * GROWING when the floor still rose into the last window; plateau when it rose into an earlier
 * one and then stopped; flat when it never rose. A rise counts when it is faster than
 * GROWTH_MB_PER_MIN and than twice the reference's fastest (a process that cannot leak,
 * sampled at the same moments: its floor moves a few MB too, more on a busy machine).
 */
export function memoryVerdict(
  { rises }: MemoryTrend,
  reference: MemoryTrend = { windows: [], rises: [] },
): MemoryVerdict {
  const allowed = Math.max(GROWTH_MB_PER_MIN, 2 * Math.max(0, ...reference.rises));
  if (rises.length > 0 && rises[rises.length - 1] > allowed) return 'GROWING';
  return rises.some((rise) => rise > allowed) ? 'plateau' : 'flat';
}
