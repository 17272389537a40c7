import type { ServiceBroker } from 'moleculer';
import { brokerWithOps, samples } from '../../support/metrics';

describe('moleculer metrics of every process', () => {
  let broker: ServiceBroker;
  let opsUrl: string;
  const received: string[] = [];

  beforeAll(async () => {
    ({ broker, opsUrl } = await brokerWithOps('metrics-test'));
    broker.createService({
      name: 'probe',
      actions: {
        ping: () => 'pong',
        fail: () => {
          throw new Error('refused');
        },
      },
      events: {
        'probe.seen'(ctx: { params: string }) {
          received.push(ctx.params);
        },
      },
    });
    await broker.start();
  });

  afterAll(() => broker.stop());

  const lines = async (prefix: string) =>
    (await (await fetch(`${opsUrl}/metrics`)).text())
      .split('\n')
      .filter((line) => line.startsWith(prefix));

  it('count calls, their failures and their times under moleculer names, as plain histograms', async () => {
    for (let i = 0; i < 5; i++) await broker.call('probe.ping');
    await expect(broker.call('probe.fail')).rejects.toThrow('refused');
    const ping = '{service="probe",action="probe.ping",type="local",caller=""}';
    expect(await lines('moleculer_request_total{')).toEqual(
      expect.arrayContaining([`moleculer_request_total${ping} 5`]),
    );
    expect(await lines('moleculer_request_active{')).toContain(`moleculer_request_active${ping} 0`);
    expect(await lines('moleculer_request_error_total{')).toEqual([
      'moleculer_request_error_total{service="probe",action="probe.fail",type="local",caller="",errorName="Error",errorCode="",errorType=""} 1',
    ]);
    const timing = await lines('moleculer_request_time');
    expect(timing).toContain(`moleculer_request_time_count${ping} 5`);
    expect(timing.some((line) => line.startsWith('moleculer_request_time_bucket{'))).toBe(true);
    expect(await (await fetch(`${opsUrl}/metrics`)).text()).not.toMatch(/quantile="/);
  });

  it('are scraped whatever query a scrape job adds', async () => {
    const scraped = await fetch(`${opsUrl}/metrics?collect%5B%5D=waybill&job=waybill`);
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toMatch(/^moleculer_request_total\{/m);
  });

  it('show the heap the process kept after its latest full collection, in bytes', async () => {
    const [kept] = await samples(opsUrl, 'process_memory_heap_kept');
    expect(kept.value).toBeGreaterThan(2 ** 20);
  });

  it("count them outside moleculer's registry, whose per-call work was the cost (decision 64)", () => {
    expect(broker.metrics.getMetric('moleculer.request.total')).toBeNull();
    expect(broker.middlewares.list.map((m: { name?: string }) => m.name)).not.toContain('Metrics');
  });

  it('count events received and emitted', async () => {
    await broker.emit('probe.seen', 'a');
    await broker.emit('probe.seen', 'b');
    expect(received).toEqual(['a', 'b']);
    expect(await lines('moleculer_event_emit_total{')).toEqual([
      'moleculer_event_emit_total{event="probe.seen"} 2',
    ]);
    expect(await lines('moleculer_event_received_total{')).toEqual([
      'moleculer_event_received_total{service="probe",group="probe",event="probe.seen",caller=""} 2',
    ]);
  });
});
