import fc from 'fast-check';
import {
  GROWTH_MB_PER_MIN,
  memoryTrend,
  memoryVerdict,
  type MemorySample,
} from '../../../scripts/lib/memory-trend';

/** Samples every half minute for ten minutes (or forty), from a function of the minute. */
const run = (mb: (min: number) => number, minutes = 10) =>
  Array.from({ length: 2 * minutes + 1 }, (_, i) => ({ min: i / 2, mb: mb(i / 2) }));
const longRun = (mb: (min: number) => number) => run(mb, 40);

const verdictOf = (points: readonly MemorySample[]) => memoryVerdict(memoryTrend(points));

/** A run's length, its interval in minutes and its memory before the load. */
const shape = (minSamples: number) =>
  fc.record({
    n: fc.integer({ min: minSamples, max: 400 }),
    interval: fc.double({ min: 0.05, max: 5, noNaN: true }),
    base: fc.double({ min: 20, max: 2000, noNaN: true }),
  });

/**
 * A saw on top of the memory, MB above its floor at each sample: a tooth is the memory a
 * collection has not given back yet, of any height, up to `longest` samples in a row, after
 * which the memory is back on its floor for at least one sample.
 */
const saw = (n: number, longest: number) =>
  fc
    .array(
      fc.record({
        up: fc.array(fc.double({ min: 0, max: 200, noNaN: true }), { maxLength: longest }),
        down: fc.integer({ min: 1, max: 4 }),
      }),
      { minLength: n, maxLength: n },
    )
    .map((teeth) => teeth.flatMap(({ up, down }) => [...up, ...Array<number>(down).fill(0)]))
    .chain((heights) => fc.nat(heights.length - n).map((at) => heights.slice(at, at + n)));

describe('the soak verdict on a process', () => {
  it('calls memory that keeps growing GROWING', () => {
    const trend = memoryTrend(run((min) => 100 + 3 * min));
    expect(trend.rises.at(-1)).toBeCloseTo(3);
    expect(memoryVerdict(trend)).toBe('GROWING');
  });

  it('calls a saw whose floor stays put flat, however the teeth fall', () => {
    // Grows 20 MB in half a minute, then a full collection gives it all back, every minute.
    expect(verdictOf(run((min) => 150 + 20 * (min % 1)))).toBe('flat');
    expect(verdictOf(run((min) => 150 + 20 * ((min + 0.5) % 1)))).toBe('flat');
    // Every two minutes, over forty: a window (an eighth of the run) holds a collection.
    expect(verdictOf(longRun((min) => 150 + 20 * (min % 2)))).toBe('flat');
  });

  it('calls a saw whose floor rises GROWING', () => {
    expect(verdictOf(run((min) => 150 + 20 * (min % 1) + 2 * min))).toBe('GROWING');
    expect(verdictOf(longRun((min) => 150 + 20 * (min % 2) + 2 * min))).toBe('GROWING');
  });

  it('calls memory that grew to a working size by minute 7 of 10 and stayed there a plateau', () => {
    // Runs C–E: V8's young space and glibc's heap settle late in the run, then hold.
    const late = run((min) => 150 + 15 * Math.min(Math.max(min - 3, 0), 4));
    expect(verdictOf(late)).toBe('plateau');
    expect(verdictOf(run((min) => (min < 6 ? 170 : 260)))).toBe('plateau');
  });

  it('does not call a tooth still up at the end of the run growth', () => {
    expect(verdictOf(run((min) => (min >= 9.5 ? 230 : 170)))).toBe('flat');
  });

  it('does not call the pages a collection gave back, then took again, growth', () => {
    expect(verdictOf(run((min) => (min >= 7.5 && min < 9 ? 180 : 260)))).toBe('flat');
  });

  it('allows as much again as the reference rose in the same run', () => {
    const step = (mb: number) => run((min) => 150 + (min >= 9 ? mb : 0));
    const reference = memoryTrend(step(6));
    expect(memoryVerdict(memoryTrend(step(10)), reference)).toBe('flat');
    expect(memoryVerdict(memoryTrend(step(30)), reference)).toBe('GROWING');
  });

  it('ignores the warm-up', () => {
    expect(verdictOf(run((min) => (min < 2.5 ? 100 + 40 * min : 200)))).toBe('flat');
  });

  it('calls a run too short to cut into windows flat', () => {
    expect(memoryTrend(run((min) => 100 + 5 * min).slice(0, 6)).windows).toEqual([]);
    expect(verdictOf([{ min: 0, mb: 100 }])).toBe('flat');
  });

  it('calls a climb at any rate over the tolerance GROWING, from 7 samples on', () => {
    fc.assert(
      fc.property(
        shape(7),
        fc.double({ min: 0.01, max: 100, noNaN: true }),
        ({ n, interval, base }, over) => {
          const rate = GROWTH_MB_PER_MIN + over;
          const points = Array.from({ length: n }, (_, i) => ({
            min: i * interval,
            mb: base + rate * i * interval,
          }));
          expect(verdictOf(points)).toBe('GROWING');
        },
      ),
    );
  });

  it('calls a climb at 1.5 times the tolerance GROWING under a saw of one-sample teeth', () => {
    // A window's floor may be its second sample, a tooth's width above the climb.
    fc.assert(
      fc.property(
        shape(7).chain((s) => fc.tuple(fc.constant(s), saw(s.n, 1))),
        fc.double({ min: 0.01, max: 100, noNaN: true }),
        ([{ n, interval, base }, teeth], over) => {
          const rate = 1.5 * GROWTH_MB_PER_MIN + over;
          const points = Array.from({ length: n }, (_, i) => ({
            min: i * interval,
            mb: base + rate * i * interval + teeth[i],
          }));
          expect(verdictOf(points)).toBe('GROWING');
        },
      ),
    );
  });

  it('never calls a climb that stopped before the last quarter of the run GROWING, saw or not', () => {
    fc.assert(
      fc.property(
        shape(21).chain((s) =>
          fc.tuple(
            fc.constant(s),
            saw(s.n, 2),
            fc.integer({ min: 0, max: s.n - Math.ceil(s.n / 4) }),
          ),
        ),
        fc.double({ min: 0, max: 100, noNaN: true }),
        ([{ n, interval, base }, teeth, stop], rate) => {
          const points = Array.from({ length: n }, (_, i) => ({
            min: i * interval,
            mb: base + rate * Math.min(i, stop) * interval + teeth[i],
          }));
          expect(verdictOf(points)).not.toBe('GROWING');
        },
      ),
    );
  });

  it('calls a saw whose floor stays put flat, for any run and any teeth', () => {
    fc.assert(
      fc.property(
        shape(7).chain((s) => fc.tuple(fc.constant(s), saw(s.n, 2))),
        ([{ interval, base }, teeth]) => {
          const points = teeth.map((tooth, i) => ({ min: i * interval, mb: base + tooth }));
          expect(verdictOf(points)).toBe('flat');
        },
      ),
    );
  });

  it('reads nothing of the first quarter of the samples', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 20, max: 2000, noNaN: true }), { minLength: 1, maxLength: 200 }),
        fc.array(fc.double({ min: 0, max: 5000, noNaN: true }), { maxLength: 50 }),
        (mbs, other) => {
          const points = mbs.map((mb, i) => ({ min: i / 2, mb }));
          const warmUp = Math.floor(points.length / 4);
          const changed = points.map((p, i) => (i < warmUp ? { ...p, mb: other[i] ?? 0 } : p));
          expect(memoryTrend(changed)).toEqual(memoryTrend(points));
        },
      ),
    );
  });
});
