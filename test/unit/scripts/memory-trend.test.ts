import { memoryTrend, memoryVerdict } from '../../../scripts/lib/memory-trend';

/** Samples every half minute for ten minutes, from a function of the minute. */
const run = (mb: (min: number) => number) =>
  Array.from({ length: 21 }, (_, i) => ({ min: i / 2, mb: mb(i / 2) }));

describe('the soak verdict on a process', () => {
  it('calls memory that keeps growing at the same pace GROWING', () => {
    const trend = memoryTrend(run((min) => 100 + 3 * min));
    expect(trend.first).toBeCloseTo(3);
    expect(trend.last).toBeCloseTo(3);
    expect(memoryVerdict(trend)).toBe('GROWING');
  });

  it('ignores the warm-up, and calls memory that levels off settling, then flat', () => {
    const warmUpOnly = run((min) => (min < 2 ? 100 + 40 * min : 180));
    expect(memoryVerdict(memoryTrend(warmUpOnly))).toBe('flat');
    const levelling = run((min) => 100 + 60 * (1 - Math.exp(-min / 2)));
    expect(memoryVerdict(memoryTrend(levelling))).toBe('settling');
  });

  it('is not fooled by noise around a flat line', () => {
    expect(memoryVerdict(memoryTrend(run((min) => 150 + (Math.round(min * 2) % 2) * 3)))).toBe(
      'flat',
    );
  });

  it('needs no more than a few samples', () => {
    expect(memoryVerdict(memoryTrend(run((min) => 100 + min).slice(0, 4)))).toBe('GROWING');
    expect(memoryVerdict(memoryTrend([{ min: 0, mb: 100 }]))).toBe('flat');
  });
});
