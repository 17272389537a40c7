import type { ServiceBroker } from 'moleculer';
import { templatePattern } from './routes';

/**
 * What operators alert on: answers by route template and status, and their latency, as the
 * client saw them (moleculer's own metrics count action calls, not HTTP answers).
 */
export const HTTP_REQUESTS_METRIC = 'waybill.http.requests.total';
export const HTTP_DURATION_METRIC = 'waybill.http.request.duration.seconds';

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120];

/** The route label of a request no alias matched: raw paths would make a label per URL. */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * The route template of a request, for answers given before moleculer-web names the alias
 * (a refused key, the quota): `/api/package/:packageId` for `/api/package/0a1b…`. A method
 * the path does not have (405) matches no template and is labelled `unmatched`.
 */
export function routeTemplates(
  routes: { method: string; fullPath: string }[],
): (method: string, path: string) => string {
  const patterns = routes.map(({ method, fullPath }) => ({
    method,
    fullPath,
    regexp: templatePattern(fullPath),
  }));
  return (method, path) =>
    patterns.find((p) => p.method === method && p.regexp.test(path))?.fullPath ?? UNMATCHED_ROUTE;
}

export interface HttpAnswer {
  method: string;
  /** The alias template, such as `/api/package/:packageId`. */
  route: string;
  status: number;
  seconds: number;
}

export function registerHttpMetrics(broker: ServiceBroker): void {
  if (!broker.isMetricsEnabled()) return;
  broker.metrics.register({
    type: 'counter',
    name: HTTP_REQUESTS_METRIC,
    labelNames: ['method', 'route', 'status'],
    description: 'HTTP requests answered by the gateway',
  });
  broker.metrics.register({
    type: 'histogram',
    name: HTTP_DURATION_METRIC,
    labelNames: ['method', 'route'],
    buckets: DURATION_BUCKETS,
    description: 'Time from a request reaching the gateway to its answer being sent, in seconds',
  });
}

export function recordHttpAnswer(broker: ServiceBroker, answer: HttpAnswer): void {
  if (!broker.isMetricsEnabled()) return;
  const { method, route, status, seconds } = answer;
  broker.metrics.increment(HTTP_REQUESTS_METRIC, { method, route, status: String(status) });
  broker.metrics.observe(HTTP_DURATION_METRIC, seconds, { method, route });
}
