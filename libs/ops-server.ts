import type { IncomingMessage, ServerResponse } from 'node:http';
import { MetricReporters, type MetricRegistry, type ServiceBroker } from 'moleculer';
import { readiness } from './health';

/**
 * Every process, whatever services it runs, answers Kubernetes probes and Prometheus
 * scrapes on OPS_PORT: `/health/live`, `/health/ready`, `/metrics`.
 */
export class OpsServer extends MetricReporters.Prometheus {
  override handler(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/health/live') {
      this.reply(res, 200, { status: 'ok' });
      return;
    }
    if (path === '/health/ready') {
      const broker = (this.registry as unknown as { broker: ServiceBroker }).broker;
      readiness(broker).then(
        (state) => this.reply(res, state.ready ? 200 : 503, state),
        () => this.reply(res, 503, { ready: false }),
      );
      return;
    }
    super.handler(req, res);
  }

  /**
   * moleculer writes a histogram without quantiles with no `_sum` and `_count` and with its
   * buckets in object-key order; such histograms (ours) are written here instead.
   */
  override matchMetricName(name: string): boolean {
    return super.matchMetricName(name) && !isPlainHistogram(this.registry.getMetric(name));
  }

  override generatePrometheusResponse(): string {
    const histograms = [...this.registry.store.values()]
      .filter(isPlainHistogram)
      .filter((metric) => super.matchMetricName(metric.name));
    return [
      super.generatePrometheusResponse(),
      ...histograms.map((metric) => this.histogramText(metric)),
    ].join('\n');
  }

  private histogramText(metric: PlainHistogram): string {
    const name = this.formatMetricName(metric.name).replace(/[.-]/g, '_');
    const lines = [
      `# HELP ${name} ${metric.description ?? metric.name}`,
      `# TYPE ${name} histogram`,
    ];
    const bounds = [...metric.buckets].sort((a, b) => a - b);
    for (const item of metric.snapshot()) {
      for (const le of bounds) {
        const labels = this.labelsToStr(item.labels, { le });
        lines.push(`${name}_bucket${labels} ${item.buckets?.[le] ?? 0}`);
      }
      lines.push(`${name}_bucket${this.labelsToStr(item.labels, { le: '+Inf' })} ${item.count}`);
      lines.push(`${name}_sum${this.labelsToStr(item.labels)} ${item.sum}`);
      lines.push(`${name}_count${this.labelsToStr(item.labels)} ${item.count}`);
    }
    return `${lines.join('\n')}\n`;
  }

  private reply(res: ServerResponse, status: number, body: unknown) {
    res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(body));
  }
}

type PlainHistogram = Extract<ReturnType<MetricRegistry['getMetric']>, { buckets: number[] }>;

function isPlainHistogram(metric: unknown): metric is PlainHistogram {
  const candidate = metric as Partial<PlainHistogram> | null;
  return (
    candidate?.type === 'histogram' && Array.isArray(candidate.buckets) && !candidate.quantiles
  );
}
