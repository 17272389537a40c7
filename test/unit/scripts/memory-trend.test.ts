import { memoryTrend, memoryVerdict } from '../../../scripts/lib/memory-trend';

/** Samples every half minute for ten minutes, from a function of the minute. */
const run = (mb: (min: number) => number) =>
  Array.from({ length: 21 }, (_, i) => ({ min: i / 2, mb: mb(i / 2) }));

describe('the soak verdict on a process', () => {
  it('calls memory that keeps growing GROWING', () => {
    const trend = memoryTrend(run((min) => 100 + 3 * min));
    expect(trend.slope).toBeCloseTo(3);
    expect(trend.floor).toBeGreaterThan(2);
    expect(memoryVerdict(trend)).toBe('GROWING');
  });

  it('calls a saw whose floor stays put flat, however the teeth fall', () => {
    // Grows 20 MB/min, then a full collection gives it all back, every two minutes.
    const saw = run((min) => 150 + 20 * (min % 2));
    expect(memoryVerdict(memoryTrend(saw))).toBe('flat');
  });

  it('calls a saw whose floor rises GROWING', () => {
    const leakingSaw = run((min) => 150 + 20 * (min % 2) + 2 * min);
    expect(memoryVerdict(memoryTrend(leakingSaw))).toBe('GROWING');
  });

  it('allows as much again as the reference moved in the same run', () => {
    const step = (at: number, mb: number) => run((min) => 150 + (min >= at ? mb : 0));
    const reference = memoryTrend(step(6, 6));
    expect(memoryVerdict(memoryTrend(step(6, 10)), reference)).toBe('flat');
    expect(memoryVerdict(memoryTrend(step(6, 30)), reference)).toBe('GROWING');
  });

  it('ignores the warm-up', () => {
    const warmUpOnly = run((min) => (min < 2 ? 100 + 40 * min : 180));
    expect(memoryVerdict(memoryTrend(warmUpOnly))).toBe('flat');
  });

  it('needs only a few samples', () => {
    expect(memoryVerdict(memoryTrend(run((min) => 100 + 5 * min).slice(0, 4)))).toBe('GROWING');
    expect(memoryVerdict(memoryTrend([{ min: 0, mb: 100 }]))).toBe('flat');
  });
});
