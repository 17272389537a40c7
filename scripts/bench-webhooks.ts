/**
 * Webhook dispatch benchmark: events published to the webhook service (its dispatcher in a
 * process of its own, over NATS) and delivered to a local HTTP receiver; next to a reference
 * measured in the same run: the same bodies POSTed straight to the same receiver at the same
 * concurrency. Every event must arrive once and in order within its delivery, or the run fails
 * (exit 1). Timings never do.
 */
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { percentile } from '../test/support/load';
import { createUserWithKey, request } from '../test/support/http';
import {
  dropDatabases,
  isolation,
  startClient,
  startNode,
  type NodeProcess,
} from '../test/support/stack';
import { WebhookReceiver } from '../test/support/webhook-receiver';
import { nameBasedId } from '../libs/ids';
import {
  inParallel,
  option,
  requireInfrastructure,
  runMain,
  showHelpIfAsked,
  withDeployedNodeOptions,
} from './bench-support';

showHelpIfAsked(`
npm run bench:webhooks [-- --deliveries D --events E --concurrency C] [-- --drain]
  (or: scripts/tsx scripts/bench-webhooks.ts ...; needs scripts/infra up && eval "$(scripts/infra env)")

Publishes D deliveries x E events each to the webhook service (the dispatcher in its own
process over NATS, WEBHOOK_CONCURRENCY = C) for one endpoint on a local receiver, and prints
events delivered per second and the lag (publish -> arrival) p50/p99/max; then, as the
reference, the same number of bodies POSTed straight to the receiver with C connections.
Exits 1 when an event is missing, repeated, or out of order within its delivery.

  --deliveries D    deliveries (lanes)                 BENCH_DELIVERIES   200
  --events E        events per delivery                BENCH_EVENTS       5
  --concurrency C   requests in flight at once         BENCH_CONCURRENCY  32
  --drain           publish everything first, then start the dispatcher: its own rate
                    (the lag then counts the wait for it)
`);

const DELIVERIES = option('deliveries', 200);
const EVENTS = option('events', 5);
const CONCURRENCY = option('concurrency', 32);
const TYPES = [
  'delivery.created',
  'delivery.paid',
  'courier.assigned',
  'delivery.status_changed',
  'delivery.delivered',
] as const;

requireInfrastructure(['MONGO_URL', 'NATS_URL', 'REDIS_URL']);

/** What a webhook's `data` weighs: a delivery as GET answers it (about 2 kB). */
const DATA = { note: 'x'.repeat(1800), status: 'IN_TRANSIT' };

async function main(): Promise<number> {
  const iso = isolation();
  const receiver = new WebhookReceiver();
  await receiver.start();
  const env = {
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_DISPATCH_INTERVAL_MS: '500',
    WEBHOOK_CONCURRENCY: String(CONCURRENCY),
    LOG_LEVEL: 'warn',
  };
  const drain = process.argv.includes('--drain');
  const dispatcherEnv = withDeployedNodeOptions('webhook', env);
  // Each stopped at the end, however far the start got.
  let front: NodeProcess | undefined;
  let dispatcher: NodeProcess | undefined;
  let client: Awaited<ReturnType<typeof startClient>> | undefined;
  try {
    front = await startNode({
      services: 'gateway,account,webhook',
      iso,
      env: { ...env, WEBHOOK_CONCURRENCY: '1', WEBHOOK_DISPATCH_INTERVAL_MS: '3600000' },
    });
    if (!drain) dispatcher = await startNode({ services: 'webhook', iso, env: dispatcherEnv });
    const publisher = (client = await startClient(iso, ['webhook']));
    const merchant = await createUserWithKey(front.url);
    const created = await request(front.url, 'POST', '/api/webhooks', {
      headers: { 'api-key': merchant.key },
      json: { url: receiver.url('/bench') },
    });
    if (created.status !== 201) throw new Error(`endpoint not created: ${created.status}`);

    const total = DELIVERIES * EVENTS;
    const publishedAt = new Map<string, number>();
    const order = new Map<string, string[]>();
    const deliveries = Array.from({ length: DELIVERIES }, () => randomUUID());
    const started = performance.now();
    await inParallel(
      deliveries,
      async (deliveryId) => {
        const events = Array.from({ length: EVENTS }, (_, i) => ({
          id: nameBasedId('bench-event', deliveryId, String(i)),
          type: TYPES[i % TYPES.length],
          userId: merchant.userId,
          deliveryId,
          sequence: i * 10,
          createdAt: new Date().toISOString(),
          data: { ...DATA, id: deliveryId },
        }));
        order.set(
          deliveryId,
          events.map((e) => e.id),
        );
        const at = performance.now();
        for (const e of events) publishedAt.set(e.id, at);
        await publisher.call('webhook.publish', { events });
      },
      8,
    );
    const publishedIn = (performance.now() - started) / 1000;
    if (drain) dispatcher = await startNode({ services: 'webhook', iso, env: dispatcherEnv });
    const drainStarted = performance.now();
    const deadline = Date.now() + 10 * 60_000;
    while (receiver.at('/bench').length < total && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const received = receiver.at('/bench');
    const elapsed = (performance.now() - (drain ? drainStarted : started)) / 1000;
    const lags = received.map(
      (r) => r.at - performance.timeOrigin - (publishedAt.get(r.event.id) ?? 0),
    );

    // Once each, in order within each delivery.
    let problems = 0;
    const seen = new Map<string, number>();
    for (const r of received) seen.set(r.event.id, (seen.get(r.event.id) ?? 0) + 1);
    for (const [deliveryId, ids] of order) {
      const arrived = received.filter((r) => r.event.data.id === deliveryId).map((r) => r.event.id);
      if (arrived.join() !== ids.join()) problems += 1;
    }
    const repeated = [...seen.values()].filter((n) => n > 1).length;
    const missing = total - seen.size;

    // The reference: the same bodies POSTed straight to the receiver, C at a time.
    const bodies = received.map((r) => r.body);
    const direct = new WebhookReceiver();
    await direct.start();
    const refStarted = performance.now();
    await inParallel(bodies, (body) => postDirect(direct.url('/ref'), body), CONCURRENCY);
    const refElapsed = (performance.now() - refStarted) / 1000;
    await direct.stop();

    const rate = received.length / elapsed;
    const refRate = bodies.length / refElapsed;
    console.log(
      `events published:      ${total} (${DELIVERIES} deliveries x ${EVENTS}) in ${publishedIn.toFixed(2)} s`,
    );
    console.log(
      `delivered:             ${received.length} in ${elapsed.toFixed(2)} s = ${rate.toFixed(0)} events/s`,
    );
    console.log(
      `lag publish->arrival:  p50 ${percentile(lags, 50).toFixed(0)} ms, p99 ${percentile(lags, 99).toFixed(0)} ms, max ${Math.max(...lags).toFixed(0)} ms`,
    );
    console.log(
      `reference (direct):    ${refRate.toFixed(0)} POSTs/s with ${CONCURRENCY} connections`,
    );
    console.log(`ratio:                 ${(rate / refRate).toFixed(3)}`);
    console.log(`missing ${missing}, repeated ${repeated}, deliveries out of order ${problems}`);
    return missing === 0 && repeated === 0 && problems === 0 ? 0 : 1;
  } finally {
    await client?.stop();
    await dispatcher?.stop();
    await front?.stop();
    await receiver.stop();
    await dropDatabases(iso);
  }
}

function postDirect(url: string, body: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve());
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

runMain(main);
