import { MAX_TIMER_MS, loadConfig } from '../../../libs/config';
import { createBrokerOptions } from '../../../moleculer.config';

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
