import { loadConfig } from '../../libs/config';
import { Dispatcher } from '../../services/webhook/dispatcher';
import { fanOut } from '../../services/webhook/fan-out';
import { defineWebhookModels, WebhookStore } from '../../services/webhook/store';
import { useStoreDatabase } from '../support/store-database';
import { endpointRecord, publishedEvent, quietDispatcher } from '../support/webhook-records';

/**
 * A disabled endpoint keeps what waits for it, a lane per delivery: thousands after a day of
 * failures. A look at the queue must not begin each of them only to pass it: each passed at
 * once, without I/O, and its end filled again from the first lane, holding the event loop
 * about a second a look at 5,000 lanes (found by the webhook audit).
 */
const db = useStoreDatabase('webhook_disabled_lanes', defineWebhookModels);
const store = new WebhookStore(() => db.models);
const config = loadConfig({ ...process.env, WEBHOOK_CONCURRENCY: '4' });
const LANES = 200;

it('begins a disabled endpoint’s lanes only until it has read the endpoint, in a look and the next', async () => {
  const endpoint = endpointRecord('disabled-owner');
  await store.insertEndpoint(endpoint);
  const events = Array.from({ length: LANES }, () => publishedEvent('disabled-owner', 0));
  await fanOut(store, events, 'staging', new Date());
  // Then disabled, after a day of failures: what waits for it stays.
  await store.updateEndpoint(endpoint._id, {
    status: 'DISABLED',
    disabledAt: new Date(),
    disabledReason: 'failing for a day',
  });
  expect(await db.models.Queue.countDocuments({ webhookId: endpoint._id })).toBe(LANES);

  const dispatcher = quietDispatcher(store, config.webhook);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- counting a private step
  const attempts = jest.spyOn(Dispatcher.prototype as any, 'attempt');
  try {
    await dispatcher.look(new Date());
    await dispatcher.settle();
    // Those begun together before the endpoint was read, at most the room for requests.
    expect(attempts.mock.calls.length).toBeGreaterThan(0);
    expect(attempts.mock.calls.length).toBeLessThanOrEqual(config.webhook.concurrency);
    const first = attempts.mock.calls.length;
    await dispatcher.look(new Date());
    await dispatcher.settle();
    expect(attempts.mock.calls.length).toBe(first);
    // Still waiting, every one.
    expect(await db.models.Queue.countDocuments({ webhookId: endpoint._id })).toBe(LANES);
  } finally {
    attempts.mockRestore();
    await dispatcher.stop();
  }
});
