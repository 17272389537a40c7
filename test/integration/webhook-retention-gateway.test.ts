import { randomUUID } from 'node:crypto';
import { call } from '../../libs/contracts';
import type { PublishedEvent } from '../../libs/contracts/webhook';
import { RETENTION_METRIC } from '../../services/webhook/webhook.service';
import { messageIdOf } from '../../services/webhook/store';
import { callAs, type Party } from '../support/deliveries';
import { eventually } from '../support/eventually';
import { expectErrorEnvelope } from '../support/http';
import { useMerchantStack } from '../support/merchant-stack';
import { count, samples } from '../support/metrics';
import { openServiceDatabase } from '../support/stack';
import { FAST_WEBHOOKS, useWebhookReceiver } from '../support/webhook-receiver';

/**
 * Retention as an integrator sees it through the gateway, on a stack whose retention is three
 * seconds: a message delivered leaves the log and cannot be replayed once it is past, a message
 * still being retried stays (and so does the event it needs), and the webhook node counts what
 * it deleted.
 */
const stack = useMerchantStack({
  internal: ['webhook'],
  services: 'gateway,account,webhook',
  env: {
    ...FAST_WEBHOOKS,
    WEBHOOK_RETENTION_MS: '3000',
    WEBHOOK_RETENTION_INTERVAL_MS: '200',
  },
});
const receiver = useWebhookReceiver();

const api = (who: Party, method: string, path: string, json?: unknown) =>
  callAs(stack.node.url, who, method, path, json);

async function register(who: Party, path: string): Promise<string> {
  const created = await api(who, 'POST', '/api/webhooks', { url: receiver.url(path) });
  expect(created.status).toBe(201);
  return (created.body.data as { id: string }).id;
}

async function logOf(who: Party, webhookId: string) {
  const log = await api(who, 'GET', `/api/webhooks/${webhookId}/deliveries`);
  expect(log.status).toBe(200);
  return log.body.data as { id: string; status: string }[];
}

/** How many of these documents the webhook database holds, each read by `_id`. */
async function stored(collection: string, ids: string[]): Promise<number> {
  const db = await openServiceDatabase(stack.iso, 'webhook');
  try {
    const found = await Promise.all(
      ids.map((id) => db.collection<{ _id: string }>(collection).findOne({ _id: id })),
    );
    return found.filter((doc) => doc !== null).length;
  } finally {
    await db.close();
  }
}

const deleted = async (kind: string) =>
  count(await samples(stack.node.opsUrl, RETENTION_METRIC), { kind });

it('deletes what was sent once past the retention, and keeps what is still to send', async () => {
  const merchant = stack.alice;
  let fixed = false;
  receiver.answer = (path) => (path === '/down' && !fixed ? { status: 500 } : { status: 200 });
  const sent = await register(merchant, '/ok');
  const failing = await register(merchant, '/down');
  const event: PublishedEvent = {
    id: randomUUID(),
    type: 'delivery.status_changed',
    userId: merchant.userId,
    deliveryId: randomUUID(),
    sequence: 10,
    createdAt: new Date().toISOString(),
    data: {},
  };
  await call(stack.client, 'webhook.publish', { events: [event] });
  const delivered = messageIdOf(sent, event.id);
  const retried = messageIdOf(failing, event.id);
  await eventually(() => expect(receiver.at('/ok')).toHaveLength(1), { timeout: 10_000 });

  // Past its retention the delivered message leaves the log, and a replay finds nothing.
  await eventually(async () => expect(await logOf(merchant, sent)).toEqual([]), {
    timeout: 20_000,
    interval: 200,
  });
  const replay = (webhookId: string, messageId: string) =>
    api(merchant, 'POST', `/api/webhooks/${webhookId}/deliveries/${messageId}/replay`);
  expectErrorEnvelope(await replay(sent, delivered), 404);
  expect(await stored('webhook_attempts', [`${delivered}:1`])).toBe(0);
  expect(await deleted('message')).toBe(1);

  // The endpoint that keeps failing: its message is still retried, listed, and its event kept.
  expect(await logOf(merchant, failing)).toEqual([
    expect.objectContaining({ id: retried, status: 'PENDING' }),
  ]);
  expectErrorEnvelope(await replay(failing, retried), 409);
  expect(await stored('webhook_events', [event.id])).toBe(1);
  expect(await deleted('event')).toBe(0);

  // Once delivered and past its retention too, it goes, and the event with it.
  fixed = true;
  await eventually(async () => expect(await logOf(merchant, failing)).toEqual([]), {
    timeout: 20_000,
    interval: 200,
  });
  expect(receiver.at('/down').length).toBeGreaterThan(1);
  expect(await stored('webhook_events', [event.id])).toBe(0);
  expect(await stored('webhook_messages', [delivered, retried])).toBe(0);
  expect(await deleted('message')).toBe(2);
  expect(await deleted('event')).toBe(1);
  expect(await deleted('attempt')).toBe(receiver.at('/ok').length + receiver.at('/down').length);
});
