import { MetricTable } from '../../../libs/metric-table';

describe('a metric table', () => {
  it('writes counters and gauges by their label values, escaped', () => {
    const table = new MetricTable();
    const answers = table.counter('answers_total', 'Answers', ['route', 'status']);
    answers.of('/a', '200').value++;
    answers.of('/a', '200').value++;
    answers.of('/b "quoted"\\\n', '500').value += 3;
    const open = table.gauge('open', 'Open things', []);
    open.of().value = 4;
    open.of().value--;
    expect(table.text()).toBe(
      [
        '# HELP answers_total Answers',
        '# TYPE answers_total counter',
        'answers_total{route="/a",status="200"} 2',
        'answers_total{route="/b \\"quoted\\"\\\\\\n",status="500"} 3',
        '',
        '# HELP open Open things',
        '# TYPE open gauge',
        'open 3',
        '',
      ].join('\n'),
    );
  });

  it('writes histograms with cumulative buckets, +Inf, sum and count', () => {
    const table = new MetricTable();
    const times = table.histogram('took', 'Time taken', ['action'], [10, 1, 5]);
    const series = times.of('a.b');
    for (const value of [0.5, 1, 3, 7, 50]) series.observe(value);
    expect(table.text().split('\n')).toEqual([
      '# HELP took Time taken',
      '# TYPE took histogram',
      'took_bucket{action="a.b",le="1"} 2',
      'took_bucket{action="a.b",le="5"} 3',
      'took_bucket{action="a.b",le="10"} 4',
      'took_bucket{action="a.b",le="+Inf"} 5',
      'took_sum{action="a.b"} 61.5',
      'took_count{action="a.b"} 5',
      '',
    ]);
  });

  it('refuses a name defined twice and label values that do not fit', () => {
    const table = new MetricTable();
    const family = table.counter('x_total', 'X', ['a']);
    expect(() => table.gauge('x_total', 'X again', [])).toThrow('metric x_total is defined twice');
    expect(() => family.of('1', '2')).toThrow('expected 1 label values, got 2');
  });

  it('gives the services of a broker one shared counter, counted by each', () => {
    const table = new MetricTable();
    const first = table.sharedCounter('shared_total', 'Shared', ['db']);
    first.of('a').value += 2;
    table.sharedCounter('shared_total', 'Shared', ['db']).of('b').value++;
    expect(table.sharedCounter('shared_total', 'Shared', ['db'])).toBe(first);
    expect(table.text()).toContain('shared_total{db="a"} 2\nshared_total{db="b"} 1');
  });
});
