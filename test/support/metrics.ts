export interface Sample {
  labels: Record<string, string>;
  value: number;
}

/** The samples of one metric in a process's Prometheus scrape (`<opsUrl>/metrics`). */
export async function samples(opsUrl: string, name: string): Promise<Sample[]> {
  return samplesIn(await (await fetch(`${opsUrl}/metrics`)).text(), name);
}

/** The samples of one metric in the text of a Prometheus scrape. */
export function samplesIn(scrape: string, name: string): Sample[] {
  return scrape
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

/** Whether a sample's labels include `labels`. */
export const hasLabels = (sample: Sample, labels: Record<string, string>) =>
  Object.entries(labels).every(([k, v]) => sample.labels[k] === v);

/** The sum of the samples whose labels include `labels`. */
export const count = (all: Sample[], labels: Record<string, string> = {}) =>
  all.filter((s) => hasLabels(s, labels)).reduce((sum, s) => sum + s.value, 0);
