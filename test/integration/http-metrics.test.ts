import { request } from '../support/http';
import { useMerchantStack } from '../support/merchant-stack';
import { count, samples as metricSamples } from '../support/metrics';

// One page a minute from an address: the tracking stream's second request is throttled.
const stack = useMerchantStack({ internal: [], env: { PAGE_REQUEST_LIMIT: '1' } });

/** The samples of one metric in the stack's Prometheus scrape. */
const samples = (name: string) => metricSamples(stack.node.opsUrl, name);

describe('HTTP metrics on /metrics', () => {
  it('count answers by method, route template and status, and time them', async () => {
    const headers = { 'api-key': stack.alice.key };
    for (let i = 0; i < 3; i++) {
      expect((await request(stack.node.url, 'GET', '/api/packages', { headers })).status).toBe(200);
    }
    const missing = `/api/package/${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}`;
    expect((await request(stack.node.url, 'DELETE', missing, { headers })).status).toBe(404);
    expect((await request(stack.node.url, 'GET', '/api/packages')).status).toBe(401);
    expect((await request(stack.node.url, 'GET', '/api/no-such-thing', { headers })).status).toBe(
      404,
    );
    // Under no route, though it begins with one's letters: counted as every answer is.
    expect((await request(stack.node.url, 'GET', '/apix')).status).toBe(404);

    const requests = await samples('waybill_http_requests_total');
    expect(count(requests, { method: 'GET', route: '/api/packages', status: '200' })).toBe(3);
    expect(count(requests, { method: 'GET', route: '/api/packages', status: '401' })).toBe(1);
    // One series per route template, whatever the id in the URL.
    expect(
      count(requests, { method: 'DELETE', route: '/api/package/:packageId', status: '404' }),
    ).toBe(1);
    expect(count(requests, { route: 'unmatched', status: '404' })).toBe(2);
    expect(requests.some((s) => s.labels.route?.includes('no-such-thing'))).toBe(false);

    const durations = await samples('waybill_http_request_duration_seconds_count');
    expect(count(durations, { method: 'GET', route: '/api/packages' })).toBe(4);
    const sums = await samples('waybill_http_request_duration_seconds_sum');
    expect(count(sums, { method: 'GET', route: '/api/packages' })).toBeGreaterThan(0);
    // Buckets in ascending order of their bound, counts cumulative, ending with +Inf.
    const buckets = (await samples('waybill_http_request_duration_seconds_bucket')).filter(
      (s) => s.labels.method === 'GET' && s.labels.route === '/api/packages',
    );
    const bounds = buckets.map((s) => Number(s.labels.le.replace('+Inf', 'Infinity')));
    expect(bounds).toEqual([...bounds].sort((a, b) => a - b));
    expect(bounds.at(-1)).toBe(Infinity);
    const counts = buckets.map((s) => s.value);
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
    expect(counts.at(-1)).toBe(4);
  });

  it('label the gateway’s own routes’ refusals by their template too: a page’s throttle, an ops preflight', async () => {
    const events = '/track/P2P-000000000000/events';
    expect((await request(stack.node.url, 'GET', events)).status).not.toBe(429);
    expect((await request(stack.node.url, 'GET', events)).status).toBe(429);
    const preflight = { origin: 'https://evil.example', 'access-control-request-method': 'GET' };
    const refused = await request(stack.node.url, 'OPTIONS', '/openapi.json', {
      headers: preflight,
    });
    expect(refused.status).toBe(403);
    const requests = await samples('waybill_http_requests_total');
    expect(count(requests, { route: '/track/:trackingId/events', status: '429' })).toBe(1);
    expect(count(requests, { route: '/openapi.json', status: '403' })).toBe(1);
  });
});
