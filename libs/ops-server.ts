import type { IncomingMessage, ServerResponse } from 'node:http';
import { MetricReporters, type ServiceBroker } from 'moleculer';
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

  private reply(res: ServerResponse, status: number, body: unknown) {
    res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(body));
  }
}
