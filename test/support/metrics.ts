export interface Sample {
  labels: Record<string, string>;
  value: number;
}

/** The samples of one metric in a process's Prometheus scrape (`<opsUrl>/metrics`). */
export async function samples(opsUrl: string, name: string): Promise<Sample[]> {
  const text = await (await fetch(`${opsUrl}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .map((line) => {
      const [, labelText, value] = /^[^{\s]+(?:\{(.*)\})? (\S+)/.exec(line) ?? [];
      const labels = Object.fromEntries(
        [...(labelText ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]),
      );
      return { labels, value: Number(value) };
    });
}

/** The sum of the samples whose labels include `labels`. */
export const count = (all: Sample[], labels: Record<string, string> = {}) =>
  all
    .filter((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
