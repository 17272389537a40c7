import type { ServiceBroker } from 'moleculer';

/**
 * Metrics counted on every call or request, kept out of moleculer's metric registry: the
 * registry hashes its labels twice and stamps the time on every change, which was the largest
 * cost of a call between services after the transport (docs/performance.md, decision 64). A
 * series here is found once by its label values and then counted with plain arithmetic;
 * `/metrics` writes these tables after the registry's metrics (libs/ops-server).
 */

type Labels = readonly string[];

interface Family {
  text(): string;
}

/** One series per distinct label values, found by them without building a string per count. */
class SeriesMap<S> {
  private readonly byKey = new Map<string, { labels: Labels; series: S }>();

  constructor(
    private readonly labelNames: Labels,
    private readonly create: () => S,
  ) {}

  get(values: Labels): S {
    if (values.length !== this.labelNames.length) {
      throw new Error(`expected ${this.labelNames.length} label values, got ${values.length}`);
    }
    const key = values.join('\u0000');
    let entry = this.byKey.get(key);
    if (!entry) {
      entry = { labels: [...values], series: this.create() };
      this.byKey.set(key, entry);
    }
    return entry.series;
  }

  /** Each series with its labels as `a="1",b="x"`, escaped as the exposition format asks. */
  entries(): { pairs: string; series: S }[] {
    return [...this.byKey.values()].map(({ labels, series }) => ({
      pairs: this.labelNames.map((name, i) => `${name}="${escapeLabelValue(labels[i])}"`).join(','),
      series,
    }));
  }
}

/** A value that goes up and down (`inc`/`dec`), or only up for a counter. */
export interface Count {
  value: number;
}

class CountFamily implements Family {
  private readonly series: SeriesMap<Count>;

  constructor(
    private readonly name: string,
    private readonly help: string,
    private readonly type: 'counter' | 'gauge',
    labelNames: Labels,
  ) {
    this.series = new SeriesMap(labelNames, () => ({ value: 0 }));
  }

  /** The series of these label values; keep it to count it without a lookup. */
  of(...values: string[]): Count {
    return this.series.get(values);
  }

  text(): string {
    return header(this.name, this.help, this.type)
      .concat(
        this.series
          .entries()
          .map(({ pairs, series }) => `${this.name}${braces(pairs)} ${series.value}`),
      )
      .join('\n');
  }
}

/** Buckets counted one each (not cumulatively) and summed when written: an observation is one increment. */
export class Histogram {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    this.sum += value;
    this.count++;
    const { bounds } = this;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]) {
        this.counts[i]++;
        return;
      }
    }
  }
}

class HistogramFamily implements Family {
  private readonly series: SeriesMap<Histogram>;

  constructor(
    private readonly name: string,
    private readonly help: string,
    labelNames: Labels,
    private readonly bounds: readonly number[],
  ) {
    const sorted = [...bounds].sort((a, b) => a - b);
    this.bounds = sorted;
    this.series = new SeriesMap(labelNames, () => new Histogram(sorted));
  }

  of(...values: string[]): Histogram {
    return this.series.get(values);
  }

  text(): string {
    const lines = header(this.name, this.help, 'histogram');
    for (const { pairs, series } of this.series.entries()) {
      const bucket = (le: string) => braces(pairs ? `${pairs},le="${le}"` : `le="${le}"`);
      let cumulative = 0;
      this.bounds.forEach((bound, i) => {
        cumulative += series.counts[i];
        lines.push(`${this.name}_bucket${bucket(String(bound))} ${cumulative}`);
      });
      lines.push(`${this.name}_bucket${bucket('+Inf')} ${series.count}`);
      lines.push(`${this.name}_sum${braces(pairs)} ${series.sum}`);
      lines.push(`${this.name}_count${braces(pairs)} ${series.count}`);
    }
    return lines.join('\n');
  }
}

/** The metric families of one broker, written on its `/metrics`. */
export class MetricTable {
  private readonly families = new Map<string, Family>();

  counter(name: string, help: string, labelNames: Labels): CountFamily {
    return this.add(name, () => new CountFamily(name, help, 'counter', labelNames));
  }

  /**
   * A counter several services of the broker count in (one per database, say): made by the
   * first to ask, the same family for the others.
   */
  sharedCounter(name: string, help: string, labelNames: Labels): CountFamily {
    const made = this.families.get(name);
    if (made instanceof CountFamily) return made;
    return this.counter(name, help, labelNames);
  }

  gauge(name: string, help: string, labelNames: Labels): CountFamily {
    return this.add(name, () => new CountFamily(name, help, 'gauge', labelNames));
  }

  histogram(
    name: string,
    help: string,
    labelNames: Labels,
    bounds: readonly number[],
  ): HistogramFamily {
    return this.add(name, () => new HistogramFamily(name, help, labelNames, bounds));
  }

  /** Prometheus text exposition, one family after another. */
  text(): string {
    return [...this.families.values()].map((family) => `${family.text()}\n`).join('\n');
  }

  private add<F extends Family>(name: string, create: () => F): F {
    if (this.families.has(name)) throw new Error(`metric ${name} is defined twice`);
    const family = create();
    this.families.set(name, family);
    return family;
  }
}

const tables = new WeakMap<ServiceBroker, MetricTable>();

/** The broker's table; several brokers share a process in tests and `npm start`. */
export function metricTableOf(broker: ServiceBroker): MetricTable {
  let table = tables.get(broker);
  if (!table) {
    table = new MetricTable();
    tables.set(broker, table);
  }
  return table;
}

function header(name: string, help: string, type: string): string[] {
  return [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`];
}

const braces = (pairs: string) => (pairs ? `{${pairs}}` : '');

function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}
