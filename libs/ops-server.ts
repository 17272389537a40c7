import type { IncomingMessage, ServerResponse } from 'node:http';
import { MetricReporters } from 'moleculer';
import { metricTableOf } from './metric-table';
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
