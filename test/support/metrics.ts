import { ServiceBroker } from 'moleculer';
import { loadConfig } from '../../libs/config';
import { createBrokerOptions } from '../../moleculer.config';
import { freePort } from './stack';

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

/**
 * A broker with the services' own options in this process (no transporter), its metrics
 * served on a free ops port: for tests of what the broker counts.
 */
export async function brokerWithOps(
  namespace: string,
): Promise<{ broker: ServiceBroker; opsUrl: string }> {
  const port = await freePort();
  const config = loadConfig({ NATS_URL: '', OPS_PORT: String(port), NAMESPACE: namespace });
  const broker = new ServiceBroker({ ...createBrokerOptions(config), logger: false });
  return { broker, opsUrl: `http://127.0.0.1:${port}` };
}
