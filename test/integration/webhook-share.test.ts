import { randomUUID } from 'node:crypto';
import { call } from '../../libs/contracts';
import type { PublishedEvent } from '../../libs/contracts/webhook';
import { QUEUE_READ } from '../../services/webhook/dispatcher';
import { laneOf } from '../../services/webhook/dispatch-rules';
import { ATTEMPTS_SHOWN } from '../../services/webhook/store';
import { eventually } from '../support/eventually';
import { createUserWithKey, request } from '../support/http';
import { useMerchantStack } from '../support/merchant-stack';
import { openServiceDatabase } from '../support/stack';
import { FAST_WEBHOOKS, WebhookReceiver } from '../support/webhook-receiver';

/**
 * What one receiver's trouble costs the others and its owner's log. One slow receiver does not
 * hold a dispatcher's every request slot: with room for four
 * requests (WEBHOOK_CONCURRENCY), an endpoint that never answers, with eight deliveries' events
 * waiting, has one request under way at a time, and another endpoint's event goes meanwhile;
 * so do one user's four endpoints at such a server, all together.
 * A message retried many times shows its latest attempts.
 */
const stack = useMerchantStack({
  internal: ['webhook'],
  services: 'gateway,account,webhook',
  env: { ...FAST_WEBHOOKS, WEBHOOK_CONCURRENCY: '4', WEBHOOK_TIMEOUT_MS: '2000' },
});
const receiver = new WebhookReceiver();
beforeAll(() => receiver.start());
afterAll(() => receiver.stop());

/** A new merchant with an endpoint at each of `paths`. */
async function endpointsAt(...paths: string[]) {
  const merchant = await createUserWithKey(stack.node.url);
  for (const path of paths) {
    const created = await request(stack.node.url, 'POST', '/api/webhooks', {
      headers: { 'api-key': merchant.key },
      json: { url: receiver.url(path), events: ['delivery.created'] },
    });
    expect(created.status).toBe(201);
  }
  return merchant;
}
const endpointAt = (path: string) => endpointsAt(path);

const created = (userId: string): PublishedEvent => {
  const deliveryId = randomUUID();
  return {
    id: randomUUID(),
    type: 'delivery.created',
    userId,
    deliveryId,
    sequence: 0,
    createdAt: new Date().toISOString(),
    data: { id: deliveryId, status: 'REQUEST_CREATED' },
  };
};

it('gives a receiver that never answers a share of the room, and the others the rest', async () => {
  receiver.answer = (path) => (path === '/slow' ? 'hang' : { status: 200 });
  const slow = await endpointAt('/slow');
  const fast = await endpointAt('/fast');
  const events = Array.from({ length: 8 }, () => created(slow.userId));
  await call(stack.client, 'webhook.publish', { events });
  await call(stack.client, 'webhook.publish', { events: [created(fast.userId)] });

  await eventually(() => expect(receiver.at('/fast')).toHaveLength(1), { timeout: 10_000 });
  // The slow one's deliveries are tried one after another, each until its deadline.
  await eventually(() => expect(receiver.at('/slow').length).toBeGreaterThanOrEqual(3), {
    timeout: 20_000,
  });
  expect(receiver.mostAtOnce('/slow')).toBe(1);
});

it('gives one user’s endpoints together one share, however many they register at a server that never answers', async () => {
  const paths = ['/tarpit-1', '/tarpit-2', '/tarpit-3', '/tarpit-4'];
  receiver.answer = (path) => (paths.includes(path) ? 'hang' : { status: 200 });
  const owner = await endpointsAt(...paths);
  const other = await endpointAt('/other');
  // Each event goes to the four endpoints: eight lanes of one owner waiting.
  const events = [created(owner.userId), created(owner.userId)];
  await call(stack.client, 'webhook.publish', { events });
  await call(stack.client, 'webhook.publish', { events: [created(other.userId)] });

  await eventually(() => expect(receiver.at('/other')).toHaveLength(1), { timeout: 10_000 });
  await eventually(
    () => expect(paths.flatMap((p) => receiver.at(p)).length).toBeGreaterThanOrEqual(3),
    { timeout: 20_000 },
  );
  // With room for four, a share of one: one request under way at a time across all four.
  expect(receiver.mostAtOnceAmong(paths)).toBe(1);
});

it('sends other users’ events past a disabled endpoint’s backlog larger than a read of the queue', async () => {
  receiver.answer = () => ({ status: 200 });
  const owner = await endpointAt('/backlogged');
  const [endpoint] = (
    await request(stack.node.url, 'GET', '/api/webhooks', { headers: { 'api-key': owner.key } })
  ).body.data as { id: string }[];
  const db = await openServiceDatabase(stack.iso, 'webhook');
  try {
    // Disabled after a day of failures, with more waiting for it than one read of the queue
    // holds, all stored before anything else.
    await db
      .collection<{ _id: string }>('webhook_endpoints')
      .updateOne({ _id: endpoint.id }, { $set: { status: 'DISABLED', disabledAt: new Date() } });
    const now = new Date();
    await db.collection<{ _id: string }>('webhook_queue').insertMany(
      Array.from({ length: QUEUE_READ + 1 }, () => {
        const deliveryId = randomUUID();
        return {
          _id: randomUUID(),
          webhookId: endpoint.id,
          userId: owner.userId,
          eventId: randomUUID(),
          lane: laneOf(endpoint.id, deliveryId),
          sequence: 0,
          attempts: 0,
          firstAttemptAt: null,
          nextAttemptAt: now,
          ephemeral: false,
        };
      }),
    );
    const other = await endpointAt('/behind-the-backlog');
    await call(stack.client, 'webhook.publish', { events: [created(other.userId)] });
    await eventually(() => expect(receiver.at('/behind-the-backlog')).toHaveLength(1), {
      timeout: 15_000,
    });
    expect(receiver.at('/backlogged')).toHaveLength(0);
  } finally {
    await db.collection('webhook_queue').deleteMany({ webhookId: endpoint.id });
    await db.close();
  }
});

it('gives up what an endpoint disabled longer than the retention kept waiting, and nothing sooner', async () => {
  receiver.answer = (path) => (path.endsWith('-off') ? { status: 500 } : { status: 200 });
  const [longOff, justOff] = [await endpointAt('/long-off'), await endpointAt('/just-off')];
  const endpointOf = async (owner: { key: string }) =>
    (
      (
        await request(stack.node.url, 'GET', '/api/webhooks', {
          headers: { 'api-key': owner.key },
        })
      ).body.data as { id: string }[]
    )[0].id;
  const [longId, justId] = [await endpointOf(longOff), await endpointOf(justOff)];
  await call(stack.client, 'webhook.publish', {
    events: [created(longOff.userId), created(justOff.userId)],
  });
  // Both failing, retried.
  await eventually(() => {
    expect(receiver.at('/long-off').length).toBeGreaterThan(0);
    expect(receiver.at('/just-off').length).toBeGreaterThan(0);
  });
  const db = await openServiceDatabase(stack.iso, 'webhook');
  const endpoints = db.collection<{ _id: string }>('webhook_endpoints');
  const queue = db.collection<{ _id: string; webhookId: string }>('webhook_queue');
  const log = async (owner: { key: string }, id: string) =>
    (
      await request(stack.node.url, 'GET', `/api/webhooks/${id}/deliveries`, {
        headers: { 'api-key': owner.key },
      })
    ).body.data as { status: string; attempts: { error: string | null }[] }[];
  try {
    // Once each failing streak is recorded: the dispatcher's write of it, FerretDB writing the
    // endpoint whole as it read it, would put back ACTIVE over the disable below (seen in CI).
    await eventually(async () => {
      for (const id of [longId, justId]) {
        const stored = await endpoints.findOne({ _id: id });
        expect((stored as { failingSince?: Date | null } | null)?.failingSince).toBeInstanceOf(
          Date,
        );
      }
    });
    // Disabled 31 days ago (the retention is 30), and just now.
    const longAgo = new Date(Date.now() - 31 * 86_400_000);
    await endpoints.updateOne(
      { _id: longId },
      { $set: { status: 'DISABLED', disabledAt: longAgo } },
    );
    await endpoints.updateOne(
      { _id: justId },
      { $set: { status: 'DISABLED', disabledAt: new Date() } },
    );

    // The dispatcher reads the change once its cached target expires; a loaded machine (a full
    // run) has taken more than the default 5 s.
    await eventually(
      async () => {
        const [message] = await log(longOff, longId);
        expect(message.status).toBe('FAILED');
        expect(message.attempts[message.attempts.length - 1].error).toMatch(
          /^given up: the endpoint stayed disabled for 30 days/,
        );
      },
      { timeout: 15_000 },
    );
    expect(await queue.countDocuments({ webhookId: longId })).toBe(0);
    const sent = receiver.at('/long-off').length;
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(receiver.at('/long-off')).toHaveLength(sent);
    // Disabled since just now: its message waits for an enable.
    expect((await log(justOff, justId))[0].status).toBe('PENDING');
    expect(await queue.countDocuments({ webhookId: justId })).toBe(1);
  } finally {
    await queue.deleteMany({ webhookId: justId });
    await db.close();
  }
});

it('shows a message retried many times with its latest attempts, not every one', async () => {
  receiver.answer = (path) => (path === '/failing' ? { status: 500 } : { status: 200 });
  const owner = await endpointAt('/failing');
  await call(stack.client, 'webhook.publish', { events: [created(owner.userId)] });
  await eventually(() => expect(receiver.at('/failing').length).toBeGreaterThan(ATTEMPTS_SHOWN), {
    timeout: 30_000,
    interval: 200,
  });
  const [endpoint] = (
    await request(stack.node.url, 'GET', '/api/webhooks', { headers: { 'api-key': owner.key } })
  ).body.data as { id: string }[];
  const log = await request(stack.node.url, 'GET', `/api/webhooks/${endpoint.id}/deliveries`, {
    headers: { 'api-key': owner.key },
  });
  expect(log.status).toBe(200);
  const [message] = log.body.data as { attempts: { n: number }[] }[];
  const numbers = message.attempts.map((a) => a.n);
  expect(numbers).toHaveLength(ATTEMPTS_SHOWN);
  const last = numbers[numbers.length - 1];
  expect(last).toBeGreaterThan(ATTEMPTS_SHOWN);
  expect(numbers).toEqual(
    Array.from({ length: ATTEMPTS_SHOWN }, (_, i) => last - ATTEMPTS_SHOWN + 1 + i),
  );
});
