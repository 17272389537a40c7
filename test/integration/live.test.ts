import { randomUUID } from 'node:crypto';
import { SIMULATION_IN_LIVE } from '../../services/order/order.service';
import {
  credit,
  notificationsOf,
  requestDelivery,
  savePackage,
  type Party,
} from '../support/deliveries';
import { eventually } from '../support/eventually';
import { createUserWithKey, expectErrorEnvelope, request } from '../support/http';
import {
  liveEnv,
  startSmsProvider,
  startSmtpReceiver,
  type SmsProvider,
  type SmtpReceiver,
} from '../support/receivers';
import { dropDatabases, isolation, startNode, type NodeProcess } from '../support/stack';

/**
 * What only a live node does (APP_ENV=live, every service, a Paystack key the tests never use:
 * they open no checkout; live sends to people, so an SMTP server and an SMS provider of
 * the test's own): the sandbox's simulator is refused, and the notification outbox never
 * shows a message's text, whose proof codes are secrets.
 */
const iso = isolation();
let live: NodeProcess;
let smtp: SmtpReceiver;
let sms: SmsProvider;

beforeAll(async () => {
  [smtp, sms] = await Promise.all([startSmtpReceiver(), startSmsProvider()]);
  live = await startNode({
    services: 'all',
    iso,
    env: { ...liveEnv(smtp, sms), ORDER_SWEEP_INTERVAL_MS: '250', NOTIFY_INTERVAL_MS: '250' },
  });
}, 120_000);

afterAll(async () => {
  await live?.stop();
  await Promise.all([smtp?.close(), sms?.close()]);
  await dropDatabases(iso);
});

it('refuses Waybill-Simulate with 400 before anything is taken', async () => {
  const merchant: Party = await createUserWithKey(live.url);
  const reply = await requestDelivery(
    live.url,
    merchant,
    [randomUUID()],
    {},
    { 'Waybill-Simulate': 'delivered' },
  );
  expectErrorEnvelope(reply, 400, SIMULATION_IN_LIVE);
  // Nor does the live document offer it (staging's does: simulator.test).
  const doc = await request(live.url, 'GET', '/openapi.json');
  const parameters = doc.body.paths['/api/request'].post.parameters as { name: string }[];
  expect(parameters.map((p) => p.name)).not.toContain('Waybill-Simulate');
  expect(parameters.map((p) => p.name)).toContain('Idempotency-Key');
});

it('never shows a notification’s text, before it is sent or after', async () => {
  const merchant: Party = await createUserWithKey(live.url);
  await credit(live.url, merchant, 100_000);
  const created = await requestDelivery(live.url, merchant, [
    await savePackage(live.url, merchant),
  ]);
  expect(created.status).toBe(201);
  const deliveryId = created.body.data.deliveryId as string;
  const queued = await notificationsOf(live.url, deliveryId);
  expect(queued.map((m) => m.purpose)).toContain('COLLECTION_CODE');
  expect(queued.map((m) => m.text)).toEqual(queued.map(() => null));
  await eventually(async () => {
    const sent = await notificationsOf(live.url, deliveryId);
    expect(sent.every((m) => m.status === 'SENT' && m.text === null)).toBe(true);
  });
});

it.each([
  ['a plain http URL', 'http://hooks.example.com/waybill', /https/],
  ['a loopback address', 'https://127.0.0.1/hook', /loopback/],
  ['a private address', 'https://10.1.2.3/hook', /private/],
  ['localhost', 'https://localhost/hook', /localhost|loopback|private/],
  // Told as a name resolving to a private address is: which names exist inside is not told.
  [
    'a name that does not resolve',
    'https://hooks.no-such-host.invalid/hook',
    /^url host hooks\.no-such-host\.invalid has no public address; give a host name with a public DNS record$/,
  ],
])('refuses a webhook to %s', async (_what, url, reason) => {
  const merchant: Party = await createUserWithKey(live.url);
  const reply = await request(live.url, 'POST', '/api/webhooks', {
    headers: { 'api-key': merchant.key },
    json: { url },
  });
  expectErrorEnvelope(reply, 400);
  expect(reply.body.message).toMatch(reason);
});
