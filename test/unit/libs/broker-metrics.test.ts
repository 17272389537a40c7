import { ServiceBroker } from 'moleculer';
import { loadConfig } from '../../../libs/config';
import { createBrokerOptions } from '../../../moleculer.config';
import { freePort } from '../../support/stack';

describe('moleculer metrics of every process', () => {
  let broker: ServiceBroker;
  let opsUrl: string;

  beforeAll(async () => {
    const port = await freePort();
    opsUrl = `http://127.0.0.1:${port}`;
    const config = loadConfig({ NATS_URL: '', OPS_PORT: String(port), NAMESPACE: 'metrics-test' });
    broker = new ServiceBroker({ ...createBrokerOptions(config), logger: false });
    broker.createService({ name: 'probe', actions: { ping: () => 'pong' } });
    await broker.start();
  });

  afterAll(() => broker.stop());

  it('time calls as plain histograms, without sliding quantile windows', async () => {
    for (let i = 0; i < 5; i++) await broker.call('probe.ping');
    const text = await (await fetch(`${opsUrl}/metrics`)).text();
    const timing = text.split('\n').filter((line) => line.startsWith('moleculer_request_time'));
    expect(
      timing.some((line) => /^moleculer_request_time_count\{.*"probe\.ping".*\} 5$/.test(line)),
    ).toBe(true);
    expect(timing.some((line) => line.startsWith('moleculer_request_time_bucket{'))).toBe(true);
    expect(text).not.toMatch(/quantile="/);
  });
});
