import type { ServiceBroker } from 'moleculer';
import { metricTableOf } from '../../libs/metric-table';
import { templateMatcher } from './routes';

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120];

/** The route label of a request no alias matched: raw paths would make a label per URL. */
export const UNMATCHED_ROUTE = 'unmatched';

/** The methods whose 405 is labelled by its path's template (any other's, `unmatched`). */
const LABELLED_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * The route template of a request, for answers given before moleculer-web names the alias
 * (a refused key, the quota): `/api/package/:packageId` for `/api/package/0a1b…`. A method
 * of HTTP's usual few that the path does not have (a 405, a refused preflight) is labelled
 * by the path's template; a path under no route, or another method (Node reads some thirty:
 * a scanner's every one on every path would make series by the thousand), `unmatched`.
 */
export function routeTemplates(
  routes: { method: string; fullPath: string }[],
): (method: string, path: string) => string {
  const matching = templateMatcher(routes);
  return (method, path) => {
    const found = matching(path);
    const route =
      found.find((r) => r.method === method) ??
      (LABELLED_METHODS.has(method) ? found[0] : undefined);
    return route?.fullPath ?? UNMATCHED_ROUTE;
  };
}

export interface HttpAnswer {
  method: string;
  /** The alias template, such as `/api/package/:packageId`. */
  route: string;
  status: number;
  seconds: number;
}

/**
 * What operators alert on: answers by route template and status, and their latency, as the
 * client saw them (moleculer's own metrics count action calls, not HTTP answers). Counted in
 * the broker's metric table (libs/metric-table); nothing without metrics.
 */
export function httpAnswerRecorder(broker: ServiceBroker): (answer: HttpAnswer) => void {
  if (!broker.isMetricsEnabled()) return () => undefined;
  const table = metricTableOf(broker);
  const requests = table.counter(
    'waybill_http_requests_total',
    'HTTP requests answered by the gateway, or given up on by their client first (status 499)',
    ['method', 'route', 'status'],
  );
  const durations = table.histogram(
    'waybill_http_request_duration_seconds',
    'Time from a request reaching the gateway to its answer being sent, in seconds',
    ['method', 'route'],
    DURATION_BUCKETS,
  );
  return ({ method, route, status, seconds }) => {
    requests.of(method, route, String(status)).value++;
    durations.of(method, route).observe(seconds);
  };
}
