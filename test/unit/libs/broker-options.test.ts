import { setImmediate as nextTurn } from 'node:timers/promises';
import { ServiceBroker } from 'moleculer';
import { MAX_TIMER_MS, loadConfig } from '../../../libs/config';
import { consoleLogger, createBrokerOptions } from '../../../moleculer.config';

/** What the NATS client is handed: moleculer passes it the URL's host and credentials only. */
const natsOptionsFor = (natsUrl: string) => {
  const { transporter } = createBrokerOptions(loadConfig({ NATS_URL: natsUrl }));
  return (transporter as unknown as { opts: Record<string, unknown> }).opts;
};

describe('the NATS transporter', () => {
  it('demands TLS of a server named by tls://, which moleculer alone would not', () => {
    expect(natsOptionsFor('tls://waybill:secret@nats.example:4222').tls).toEqual({});
  });

  it('leaves nats:// as it is', () => {
    expect(natsOptionsFor('nats://nats.example:4222')).not.toHaveProperty('tls');
  });
});

describe('the wait for requests in progress at a stop', () => {
  it('outlasts the stop budget, and is never a timer Node would fire at once', () => {
    const waitFor = (stopGraceMs: string) =>
      (createBrokerOptions(loadConfig({ STOP_GRACE_MS: stopGraceMs })).tracking ?? {})
        .shutdownTimeout;
    expect(waitFor('20000')).toBe(25_000);
    expect(waitFor(String(MAX_TIMER_MS))).toBe(MAX_TIMER_MS);
  });
});

describe('the process signals', () => {
  it('are left to bin/server.ts and the CLI: moleculer’s own stopped the broker a second time at once, then exited 0', async () => {
    const events = ['SIGTERM', 'SIGINT', 'beforeExit', 'exit'] as const;
    const before = events.map((event) => process.listenerCount(event));
    const broker = new ServiceBroker({ ...createBrokerOptions(loadConfig({})), logger: false });
    expect(events.map((event) => process.listenerCount(event))).toEqual(before);
    expect(broker.options.skipProcessEventRegistration).toBe(true);
    // Its ops server listens from the broker's making: left open, it kept jest from exiting.
    await broker.stop();
  });
});

describe('the console logger of a service', () => {
  const REFERENCE = `ck-${'ab'.repeat(20)}`;
  /** What one line naming a checkout reference and a tracking id reads once written. */
  async function written(env: Record<string, string>): Promise<string> {
    const out = jest.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      const broker = new ServiceBroker({
        nodeID: 'log-test',
        logger: consoleLogger(loadConfig(env)),
      });
      await nextTurn();
      out.mockClear();
      broker.getLogger('payment').info('checkout decided', {
        reference: REFERENCE,
        trackingId: 'P2P-7K3M9QZX2B4R',
      });
      await nextTurn();
      return out.mock.calls.map(([text]) => String(text)).join('');
    } finally {
      out.mockRestore();
    }
  }

  it('cuts tracking ids always, and checkout references under the sandbox provider', async () => {
    const sandbox = await written({ LOG_FORMAT: 'json', LOG_LEVEL: 'info' });
    expect(sandbox).toContain('ck-abababab…');
    expect(sandbox).toContain('P2P-7K3M…');
    expect(sandbox).not.toContain('P2P-7K3M9QZX2B4R');
    const paystack = await written({
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'info',
      PAYMENT_PROVIDER: 'paystack',
      PAYSTACK_SECRET_KEY: 'sk_test_x',
    });
    expect(paystack).toContain(REFERENCE);
    expect(paystack).not.toContain('P2P-7K3M9QZX2B4R');
  });
});
