import { credit, requestDelivery, savePackage, type Party } from '../support/deliveries';
import { eventually } from '../support/eventually';
import { createUserWithKey, request } from '../support/http';
import { dropDatabases, isolation, startNode, type NodeProcess } from '../support/stack';
import { FAST_WEBHOOKS, signedWith, WebhookReceiver } from '../support/webhook-receiver';

/**
 * Webhooks survive the webhook service's absence and its crashes (issue 14): a delivery's
 * events made while no webhook node runs are published once one does (the order sweep), and an
 * attempt whose dispatcher was killed with SIGKILL mid-request is concluded by the next one and
 * the message sent again: at least once, never lost.
 */
const iso = isolation();
let front: NodeProcess;
let dispatcher: NodeProcess | undefined;
const receiver = new WebhookReceiver();

beforeAll(async () => {
  await receiver.start();
  front = await startNode({
    services: 'gateway,account,geo,pricing,package,payment,courier-matching,order',
    iso,
    env: {
      ORDER_SWEEP_INTERVAL_MS: '250',
      REQUEST_TIMEOUT_MS: '5000',
      ORDER_STALE_REQUEST_MS: '6000',
    },
  });
}, 120_000);

afterAll(async () => {
  await dispatcher?.stop();
  await front?.stop();
  await receiver.stop();
  await dropDatabases(iso);
});

const startDispatcher = () => startNode({ services: 'webhook', iso, env: FAST_WEBHOOKS });

it('publishes what happened while no webhook node ran, and concludes an attempt its dispatcher died in', async () => {
  dispatcher = await startDispatcher();
  const merchant: Party = await createUserWithKey(front.url);
  await credit(front.url, merchant, 100_000);
  // Once the gateway knows the new node.
  const created = await eventually(async () => {
    const reply = await request(front.url, 'POST', '/api/webhooks', {
      headers: { 'api-key': merchant.key },
      json: { url: receiver.url('/crash'), events: ['delivery.created', 'delivery.paid'] },
    });
    expect(reply.status).toBe(201);
    return reply;
  });
  const secret = created.body.data.secret as string;
  await dispatcher.stop();
  dispatcher = undefined;

  // No webhook node: the request still succeeds; its events wait in order's records.
  const packageId = await savePackage(front.url, merchant);
  const delivery = await requestDelivery(front.url, merchant, [packageId]);
  expect(delivery.status).toBe(201);
  const deliveryId = delivery.body.data.deliveryId as string;
  await new Promise((r) => setTimeout(r, 1000));
  expect(receiver.at('/crash')).toEqual([]);

  // The first attempt hangs; its dispatcher is killed while it waits.
  let hung = true;
  receiver.answer = (path) => (path === '/crash' && hung ? 'hang' : { status: 200 });
  dispatcher = await startDispatcher();
  await eventually(() => expect(receiver.at('/crash')).toHaveLength(1), {
    timeout: 30_000,
    interval: 100,
  });
  await dispatcher.stop('SIGKILL');
  hung = false;

  dispatcher = await startDispatcher();
  await eventually(
    () =>
      expect(receiver.at('/crash').map((r) => r.event.type)).toEqual([
        'delivery.created', // the attempt that hung
        'delivery.created', // made again once it was taken as failed
        'delivery.paid',
      ]),
    { timeout: 30_000, interval: 200 },
  );
  const [first, again] = receiver.at('/crash');
  expect(again.event.id).toBe(first.event.id);
  expect(first.event.data.id).toBe(deliveryId);
  expect(receiver.at('/crash').every((r) => signedWith(r, secret))).toBe(true);

  const log = await request(front.url, 'GET', `/api/webhooks/${created.body.data.id}/deliveries`, {
    headers: { 'api-key': merchant.key },
  });
  const createdMessage = log.body.data.find((m: { type: string }) => m.type === 'delivery.created');
  expect(createdMessage.status).toBe('DELIVERED');
  expect(createdMessage.attempts).toMatchObject([
    { n: 1, statusCode: null },
    { n: 2, statusCode: 200 },
  ]);
}, 120_000);
