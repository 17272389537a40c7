import type { IncomingMessage, ServerResponse } from 'node:http';
import { MetricReporters, type MetricRegistry } from 'moleculer';
import { metricTableOf } from './metric-table';
import { readiness } from './health';
import { HEAP_KEPT_METRIC, heapBesideYoung, observeHeapKept } from './heap-kept';

/**
 * Every process, whatever services it runs, answers Kubernetes probes and Prometheus
 * scrapes on OPS_PORT: `/health/live`, `/health/ready`, `/metrics`.
 */
export class OpsServer extends MetricReporters.Prometheus {
  private stopObserving?: () => void;

  override init(registry: MetricRegistry): void {
    super.init(registry);
    registry.register({
      type: 'gauge',
      name: HEAP_KEPT_METRIC,
      unit: 'byte',
      description:
        "V8's heap in use beside the young generation after the latest full collection: what the process keeps alive",
    });
    // Until the first full collection, the figure now: the heap at start-up.
    registry.set(HEAP_KEPT_METRIC, heapBesideYoung());
    this.stopObserving = observeHeapKept((bytes) => registry.set(HEAP_KEPT_METRIC, bytes));
  }

  override stop(): Promise<void> {
    this.stopObserving?.();
    return super.stop();
  }

  override handler(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/health/live') {
      this.reply(res, 200, { status: 'ok' });
      return;
    }
    if (path === '/health/ready') {
      readiness(this.broker).then(
        (state) => this.reply(res, state.ready ? 200 : 503, state),
        () => this.reply(res, 503, { ready: false }),
      );
      return;
    }
    super.handler(req, res);
  }

  /** moleculer's registry, then the counts kept out of it (libs/metric-table). */
  override generatePrometheusResponse(): string {
    return `${super.generatePrometheusResponse()}\n${metricTableOf(this.broker).text()}`;
  }

  private reply(res: ServerResponse, status: number, body: unknown) {
    res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(body));
  }
}
