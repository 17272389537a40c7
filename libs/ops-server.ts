import type { IncomingMessage, ServerResponse } from 'node:http';
import { MetricReporters, type MetricRegistry } from 'moleculer';
import { settledWithin } from './at-once';
import { metricTableOf, type MetricTable } from './metric-table';
import { readiness, type Readiness } from './health';
import { HEAP_KEPT_METRIC, heapBesideYoung, observeHeapKept } from './heap-kept';

/** How long a scrape waits for the dependencies' checks. */
const SCRAPE_CHECK_MS = 1_000;

/**
 * Every process, whatever services it runs, answers Kubernetes probes and Prometheus
 * scrapes on OPS_PORT: `/health/live`, `/health/ready`, `/metrics`.
 */
export class OpsServer extends MetricReporters.Prometheus {
  private stopObserving?: () => void;

  /** `waybill_dependency_up`, set from readiness's checks at each scrape and probe. */
  private dependencyUp?: ReturnType<MetricTable['gauge']>;

  override init(registry: MetricRegistry): void {
    super.init(registry);
    this.dependencyUp = metricTableOf(this.broker).gauge(
      'waybill_dependency_up',
      "Whether each of the process's dependencies (as /health/ready checks them) is up: 1 or 0, required or not",
      ['dependency'],
    );
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
      this.checkDependencies().then(
        (state) => this.reply(res, state.ready ? 200 : 503, state),
        () => this.reply(res, 503, { ready: false }),
      );
      return;
    }
    if (path === '/metrics') {
      // Checked again at the scrape: a dependency that does not decide readiness (the
      // gateway's Redis) is seen down here, not only in /health/ready's body. A check slower
      // than SCRAPE_CHECK_MS (S3 not answering) leaves the figures of the latest check
      // rather than holding every other metric past the scrape's timeout.
      // moleculer's reporter answers its exact path only: a scrape's query (a job's `params`)
      // is not its business.
      req.url = path;
      void settledWithin(this.checkDependencies(), SCRAPE_CHECK_MS).then(() =>
        super.handler(req, res),
      );
      return;
    }
    super.handler(req, res);
  }

  /** Readiness, its checks kept as `waybill_dependency_up`. */
  private async checkDependencies(): Promise<Readiness> {
    const state = await readiness(this.broker);
    for (const [name, up] of Object.entries(state.checks)) {
      if (this.dependencyUp) this.dependencyUp.of(name).value = up ? 1 : 0;
    }
    return state;
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
