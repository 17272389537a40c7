import { randomUUID } from 'node:crypto';
import { ServiceBroker, type Logger } from 'moleculer';
import type { Connection } from 'mongoose';
import { loadConfig } from '../../libs/config';
import { SecretBox } from '../../libs/secret-box';
import { Dispatcher } from '../../services/webhook/dispatcher';
import { streakQuietMs } from '../../services/webhook/dispatch-rules';
import { DisableNotices, disabledNoticeId } from '../../services/webhook/notices';
import { defineWebhookModels, WebhookStore } from '../../services/webhook/store';
import { callAs, credit, type Party, requestDelivery, savePackage } from '../support/deliveries';
import { eventually } from '../support/eventually';
import { adminHeaders, createUserWithKey, request } from '../support/http';
import { startSmtpReceiver, type SmtpReceiver } from '../support/receivers';
import {
  dropDatabases,
  isolation,
  openServiceDatabase,
  startNode,
  type NodeProcess,
} from '../support/stack';
import { endpointRecord } from '../support/webhook-records';
import { FAST_WEBHOOKS, WebhookReceiver } from '../support/webhook-receiver';

/**
 * An endpoint disabled after failing is told to its owner by e-mail (issue 14), once per
 * disable, with two webhook nodes dispatching and sending notices together; the e-mails reach
 * a real SMTP server started here.
 */
const iso = isolation();
const PUBLIC_BASE_URL = 'https://waybill.example.test';
const DISABLED = 'Your Waybill webhook endpoint was disabled';
let smtp: SmtpReceiver;
let rest: NodeProcess;
const webhookNodes: NodeProcess[] = [];
const receiver = new WebhookReceiver();
const base = () => rest.url;

beforeAll(async () => {
  smtp = await startSmtpReceiver();
  await receiver.start();
  const env = {
    PUBLIC_BASE_URL,
    SMTP_URL: smtp.url,
    MAIL_FROM: 'Waybill <webhooks@waybill.example.test>',
    NOTIFY_INTERVAL_MS: '150',
    SIMULATOR_TIME_SCALE: '600',
    MATCHING_SWEEP_INTERVAL_MS: '200',
    ORDER_SWEEP_INTERVAL_MS: '500',
    ...FAST_WEBHOOKS,
    WEBHOOK_DISABLE_AFTER_MS: '3000',
  };
  rest = await startNode({
    services: 'gateway,account,geo,pricing,package,payment,courier-matching,order',
    iso,
    env,
  });
  for (let i = 0; i < 2; i++) {
    webhookNodes.push(await startNode({ services: 'webhook', iso, env }));
  }
}, 180_000);

afterAll(async () => {
  await Promise.all([...webhookNodes, rest].map((n) => n?.stop()));
  await Promise.all([smtp?.close(), receiver.stop()]);
  await dropDatabases(iso);
});

const api = (who: Party, method: string, path: string, json?: unknown) =>
  callAs(base(), who, method, path, json);

async function simulated(merchant: Party) {
  const packageId = await savePackage(base(), merchant);
  const created = await requestDelivery(
    base(),
    merchant,
    [packageId],
    {},
    { 'Waybill-Simulate': 'delivered' },
  );
  expect(created.status).toBe(201);
}

async function endpointStatus(merchant: Party) {
  const [endpoint] = (await api(merchant, 'GET', '/api/webhooks')).body.data;
  return endpoint as { status: string; disabledAt: string | null };
}

describe('an endpoint disabled after failing', () => {
  it('is told to its owner by one e-mail per disable, naming the URL and the enable route', async () => {
    receiver.answer = (path) => (path === '/down' ? { status: 503 } : { status: 200 });
    const merchant: Party = await createUserWithKey(base());
    await credit(base(), merchant, 100_000);
    const owner = await request(base(), 'GET', `/admin/users/${merchant.userId}`, {
      headers: adminHeaders,
    });
    const email = owner.body.data.email as string;
    const url = receiver.url('/down');
    const created = await api(merchant, 'POST', '/api/webhooks', {
      url,
      events: ['delivery.created'],
    });
    expect(created.status).toBe(201);
    const webhookId = created.body.data.id as string;
    // Three deliveries, three lanes: both nodes fail attempts of the endpoint at once, and both
    // may disable it together.
    for (let i = 0; i < 3; i++) await simulated(merchant);

    // The deliveries' proof codes reach the merchant too: only the notices count here.
    const mailsToOwner = () =>
      smtp.mails.filter((m) => m.to.includes(email) && m.subject === DISABLED);
    await eventually(async () => expect((await endpointStatus(merchant)).status).toBe('DISABLED'), {
      timeout: 30_000,
      interval: 250,
    });
    const [mail] = await eventually(
      () => {
        expect(mailsToOwner()).toHaveLength(1);
        return mailsToOwner();
      },
      { timeout: 20_000, interval: 150 },
    );
    expect(mail.from).toBe('webhooks@waybill.example.test');
    expect(mail.text).toContain(url);
    expect(mail.text).toContain(`POST ${PUBLIC_BASE_URL}/api/webhooks/${webhookId}/enable`);
    expect(mail.text).toContain('HTTP 503');
    expect(mail.text).toContain((await endpointStatus(merchant)).disabledAt);
    // Sent once: the other node's sender and later runs find it sent.
    await new Promise((r) => setTimeout(r, 1500));
    expect(mailsToOwner()).toHaveLength(1);
    // On record as sent, with the address it went to.
    const webhookDb = await openServiceDatabase(iso, 'webhook');
    try {
      const notices = await webhookDb.collection('webhook_notices').find({ webhookId }).toArray();
      expect(notices).toEqual([
        expect.objectContaining({ status: 'SENT', recipient: email, attempts: 1 }),
      ]);
    } finally {
      await webhookDb.close();
    }

    // Enabled while still failing: disabled again, told again, once.
    const enabled = await api(merchant, 'POST', `/api/webhooks/${webhookId}/enable`);
    expect(enabled.status).toBe(200);
    await eventually(() => expect(mailsToOwner()).toHaveLength(2), {
      timeout: 30_000,
      interval: 150,
    });
    expect((await endpointStatus(merchant)).status).toBe('DISABLED');
    await new Promise((r) => setTimeout(r, 1500));
    expect(mailsToOwner()).toHaveLength(2);
    expect(mailsToOwner()[1].text).toContain(`/api/webhooks/${webhookId}/enable`);
    receiver.answer = () => ({ status: 200 });
  });
});

/** Two dispatchers recording one disable, each at its own instant, against the real database. */
describe('the record of a disable', () => {
  let conn: Connection;
  let store: WebhookStore;
  const broker = new ServiceBroker({ logger: false });

  beforeAll(async () => {
    conn = await openServiceDatabase(iso, 'notice_claims');
    const models = defineWebhookModels(conn);
    await Promise.all(Object.values(models).map((m) => m.init()));
    store = new WebhookStore(() => models);
  });
  afterAll(() => conn?.close());

  it('is one notice, whose disabledAt every dispatcher writes', async () => {
    const failingSince = new Date('2030-01-01T00:00:00Z');
    const endpoint = {
      ...endpointRecord(randomUUID(), { createdAt: failingSince }),
      failingSince,
    };
    /** The notices of this store, the owner's address asked of `ownerEmail`. */
    const noticesAsking = (ownerEmail: (userId: string) => Promise<string>) =>
      new DisableNotices({
        store,
        publicBaseUrl: PUBLIC_BASE_URL,
        ownerEmail,
        logger: () => broker.getLogger('notices-test'),
      });
    const notices = noticesAsking(async () => 'owner@example.com');
    const first = new Date('2030-01-02T00:00:01Z');
    const second = new Date('2030-01-02T00:00:02Z');
    const answers = await Promise.all([
      notices.record(endpoint, first, 'HTTP 503'),
      notices.record(endpoint, second, null),
    ]);
    expect(new Set(answers.map((d) => d.getTime())).size).toBe(1);
    const id = disabledNoticeId(endpoint._id, failingSince);
    expect(await store.notices.get(id)).toMatchObject({
      webhookId: endpoint._id,
      userId: endpoint.userId,
      recipient: null,
      status: 'PENDING',
      disabledAt: answers[0],
    });
    // Addressed as it is read; the account service not answering leaves it for the next run.
    const down = noticesAsking(async () => {
      throw new Error('account unreachable');
    });
    const dueIds = async (n: DisableNotices) =>
      (await n.outbox().due(new Date('2030-01-03T00:00:00Z'), 50)).messages.map((m) => m._id);
    expect(await dueIds(down)).not.toContain(id);
    const { messages: listed } = await notices.outbox().due(new Date('2030-01-03T00:00:00Z'), 50);
    expect(listed.find((m) => m._id === id)).toMatchObject({
      channel: 'EMAIL',
      recipient: 'owner@example.com',
    });
    // A later attempt's read is addressed too, and fails while the owner cannot be known.
    expect(await notices.outbox().get(id)).toMatchObject({ recipient: 'owner@example.com' });
    await expect(down.outbox().get(id)).rejects.toThrow('account unreachable');
    // The attempt's read, moments after its run listed the notice, does not ask again.
    let asked = 0;
    const flaky = noticesAsking(async () => {
      asked += 1;
      if (asked > 1) throw new Error('account unreachable');
      return 'owner@example.com';
    });
    const run = flaky.outbox();
    expect(await dueIds(flaky)).toContain(id);
    expect(await run.get(id)).toMatchObject({ recipient: 'owner@example.com' });
    expect(asked).toBe(1);
    // Reading writes nothing (a write beside a sender's could undo its record, decision 97):
    // the address goes on the notice with its send, by the holder of the attempt.
    expect(await store.notices.get(id)).toMatchObject({ recipient: null, status: 'PENDING' });
    await notices.outbox().markSent(id, 1, 'owner@example.com', false);
    expect(await store.notices.get(id)).toMatchObject({
      recipient: 'owner@example.com',
      status: 'SENT',
    });
  });
});

/**
 * A dispatcher keeps an endpoint for a second between reads; another dispatcher's success in
 * that second ends the failing streak it still knows. Its failure then must not disable.
 */
describe('a failing streak another dispatcher ended', () => {
  let conn: Connection;
  let store: WebhookStore;
  const broker = new ServiceBroker({ logger: false });
  const disableAfterMs = 3_000;

  beforeAll(async () => {
    conn = await openServiceDatabase(iso, 'streaks');
    const models = defineWebhookModels(conn);
    await Promise.all(Object.values(models).map((m) => m.init()));
    store = new WebhookStore(() => models);
  });
  afterAll(() => conn?.close());

  /** A message of a new event queued for the endpoint, due at `at`. */
  async function queueMessage(webhookId: string, at: Date) {
    const event = {
      _id: randomUUID(),
      type: 'delivery.status_changed' as const,
      userId: randomUUID(),
      deliveryId: randomUUID(),
      sequence: 1,
      createdAt: at,
      data: {},
    };
    await store.recordEvents([event]);
    const messageId = `${webhookId}:${event._id}`;
    const common = { webhookId, eventId: event._id, sequence: 1, attempts: 0 };
    await store.enqueueAll([
      {
        message: {
          _id: messageId,
          ...common,
          type: event.type,
          deliveryId: event.deliveryId,
          status: 'PENDING',
          lastAttemptAt: null,
          lastStatusCode: null,
          lastError: null,
          deliveredAt: null,
          createdAt: at,
        },
        queued: {
          _id: messageId,
          ...common,
          lane: `${webhookId}:${event.deliveryId}`,
          firstAttemptAt: null,
          nextAttemptAt: at,
          ephemeral: false,
        },
      },
    ]);
  }

  /**
   * An endpoint failing since `failingSince`, with no signing secret (every attempt fails
   * without a request, the dispatcher says why), and a dispatcher counting its disables (other
   * tests' endpoints share the queue: theirs do not count).
   */
  async function failingEndpoint(
    failingSince: Date,
    /** The store as the dispatcher sees it. */
    seenAs: (webhookId: string) => WebhookStore = () => store,
  ) {
    const endpoint = endpointRecord(randomUUID(), { failingSince, createdAt: failingSince });
    const webhookId = endpoint._id;
    await store.insertEndpoint(endpoint);
    let disables = 0;
    const config = loadConfig({ ...process.env, WEBHOOK_DISABLE_AFTER_MS: String(disableAfterMs) });
    const dispatcher = new Dispatcher({
      store: seenAs(webhookId),
      config: config.webhook,
      appEnv: config.appEnv,
      box: new SecretBox('streak-test'),
      logger: () => broker.getLogger('dispatcher-test'),
      recordDisable: async (disabled, at) => {
        if (disabled._id === webhookId) disables += 1;
        return at;
      },
    });
    return { webhookId, dispatcher, disables: () => disables };
  }

  /**
   * A failure of a new message queued at `queuedAt`, looked at `at`, that disables nothing: the
   * endpoint stays ACTIVE. Answers where its failing streak begins, as stored.
   */
  async function failsWithoutDisable(
    { webhookId, dispatcher, disables }: Awaited<ReturnType<typeof failingEndpoint>>,
    queuedAt: Date,
    at: Date,
  ): Promise<number> {
    await queueMessage(webhookId, queuedAt);
    await dispatcher.look(at);
    await dispatcher.settle();
    expect(disables()).toBe(0);
    const stored = await store.endpoint(webhookId);
    expect(stored?.status).toBe('ACTIVE');
    return new Date(stored?.failingSince as Date).getTime();
  }

  it('starts a new streak instead of disabling the endpoint', async () => {
    const failingSince = new Date('2031-01-01T00:00:00Z');
    const failing = await failingEndpoint(failingSince);
    const { webhookId, dispatcher } = failing;
    const later = (ms: number) => new Date(failingSince.getTime() + ms);
    await queueMessage(webhookId, later(0));
    // A failure short of the limit: the dispatcher now keeps the endpoint, streak and all.
    await dispatcher.look(later(disableAfterMs - 200));
    await dispatcher.settle();
    expect(await store.endpoint(webhookId)).toMatchObject({ status: 'ACTIVE', failingSince });
    // Another dispatcher's success ends the streak; a failure here, within the second, is due
    // a disable by the streak this one knows.
    await store.updateEndpoint(webhookId, { failingSince: null });
    // This failure's moment: its look's, and the time that look's reads took.
    const streak = await failsWithoutDisable(failing, later(0), later(disableAfterMs + 300));
    expect(streak).toBeGreaterThanOrEqual(later(disableAfterMs + 300).getTime());
    expect(streak).toBeLessThan(later(disableAfterMs + 300 + 5_000).getTime());
  });

  it('leaves a quiet no attempt filled out of a streak: disabled only once failures kept coming for the limit', async () => {
    const quiet = streakQuietMs(loadConfig(process.env).webhook.backoffMaxMs);
    const failingSince = new Date('2035-01-01T00:00:00Z');
    const later = (ms: number) => new Date(failingSince.getTime() + ms);
    const failing = await failingEndpoint(failingSince);
    const { webhookId, dispatcher } = failing;
    // Begun as this version begins one: its latest failure and length kept.
    await store.updateEndpoint(webhookId, { lastFailedAt: failingSince, failingForMs: 0 });
    const failAt = async (at: Date) => {
      await queueMessage(webhookId, at);
      await dispatcher.look(at);
      await dispatcher.settle();
    };
    // A failure, then nothing to send for longer than any wait between attempts (a position
    // tried once, then a quiet weekend): the next failure alone disables nothing.
    const back = quiet + 1_000;
    await failAt(later(back));
    expect(failing.disables()).toBe(0);
    const stored = await store.endpoint(webhookId);
    expect(stored).toMatchObject({ status: 'ACTIVE', failingSince, failingForMs: 0 });
    expect(stored?.lastFailedAt?.getTime()).toBeGreaterThanOrEqual(later(back).getTime());
    // Failures that keep coming for the limit (3 s here) from then on do.
    await failAt(later(back + disableAfterMs / 2));
    expect(failing.disables()).toBe(0);
    await failAt(later(back + disableAfterMs + 100));
    expect(failing.disables()).toBe(1);
    expect(await store.endpoint(webhookId)).toMatchObject({ status: 'DISABLED', failingSince });
  });

  it('writes a streak’s length only on the streak it was counted for, not on one begun since', async () => {
    const quiet = streakQuietMs(loadConfig(process.env).webhook.backoffMaxMs);
    const ended = new Date('2037-01-01T00:00:00Z');
    const later = (ms: number) => new Date(ended.getTime() + ms);
    // The endpoint as stored: its streak ended by a success, a new one begun half a second ago.
    const begunSince = later(quiet / 2 - 500);
    const current = { failingSince: begunSince, lastFailedAt: begunSince, failingForMs: 0 };
    // The dispatcher's copy, a second old: the ended streak, failing for a while.
    const stale = (webhookId: string) => {
      const seen = Object.create(store) as WebhookStore;
      seen.endpoint = async (id) => {
        const read = await store.endpoint(id);
        return id === webhookId && read
          ? { ...read, failingSince: ended, lastFailedAt: ended, failingForMs: 0 }
          : read;
      };
      return seen;
    };
    const failing = await failingEndpoint(begunSince, stale);
    await store.updateEndpoint(failing.webhookId, current);
    const at = later(quiet / 2);
    await queueMessage(failing.webhookId, at);
    await failing.dispatcher.look(at);
    await failing.dispatcher.settle();
    expect(failing.disables()).toBe(0);
    expect(await store.endpoint(failing.webhookId)).toMatchObject({ status: 'ACTIVE', ...current });
  });

  it('does not disable an endpoint whose streak a success or its owner’s enable ended after the dispatcher read it', async () => {
    for (const ended of ['success', 'enabled, failing anew'] as const) {
      const failingSince = new Date(
        ended === 'success' ? '2033-01-01T00:00:00Z' : '2034-01-01T00:00:00Z',
      );
      const later = (ms: number) => new Date(failingSince.getTime() + ms);
      // Enabled after another dispatcher's disable, then failing again: a streak too young.
      const anew = later(disableAfterMs);
      // Every read of the dispatcher's until it disables is of the endpoint as it stood, failing
      // since then; each is followed at once by the write that ended the streak (another
      // dispatcher's success, or the owner's enable and a failure since).
      const endingTheStreak = (webhookId: string) => {
        const watched = Object.create(store) as WebhookStore;
        let deciding = true;
        // Other tests' endpoints share the queue: their disables are not this one's.
        watched.disableEndpoint = (id, ...rest) => {
          if (id === webhookId) deciding = false;
          return store.disableEndpoint(id, ...rest);
        };
        watched.endpoint = async (id) => {
          const read = await store.endpoint(id);
          if (id === webhookId && read && deciding) {
            await store.updateEndpoint(
              id,
              ended === 'success'
                ? { failingSince: null }
                : { status: 'ACTIVE', failingSince: anew, disabledAt: null, disabledReason: null },
            );
            return { ...read, failingSince };
          }
          return read;
        };
        return watched;
      };
      const failing = await failingEndpoint(failingSince, endingTheStreak);
      const streak = await failsWithoutDisable(failing, later(0), later(disableAfterMs + 300));
      if (ended === 'success') {
        // This failure begins the next streak.
        expect(streak).toBeGreaterThanOrEqual(later(disableAfterMs + 300).getTime());
      } else {
        expect(streak).toBe(anew.getTime());
      }
    }
  });

  it('starts a new streak when a message was delivered after it began, though nothing ended it', async () => {
    const failingSince = new Date('2032-01-01T00:00:00Z');
    const { webhookId, dispatcher, disables } = await failingEndpoint(failingSince);
    const later = (ms: number) => new Date(failingSince.getTime() + ms);
    // Delivered a second into the streak by an attempt (of another replica) whose copy of the
    // endpoint did not show the streak yet: the streak stood.
    await queueMessage(webhookId, later(0));
    const [delivered] = await store.messagesOf(webhookId, 1, 0);
    await store.updateMessage(delivered._id, { status: 'DELIVERED', deliveredAt: later(1_000) });
    await store.dequeue(delivered._id);
    // A failure past the limit, counted from the streak's start: not a disable.
    await queueMessage(webhookId, later(disableAfterMs + 300));
    await dispatcher.look(later(disableAfterMs + 300));
    await dispatcher.settle();
    expect(disables()).toBe(0);
    const stored = await store.endpoint(webhookId);
    expect(stored?.status).toBe('ACTIVE');
    expect(new Date(stored?.failingSince as Date).getTime()).toBeGreaterThanOrEqual(
      later(disableAfterMs + 300).getTime(),
    );
  });

  it('dates an attempt after the reads of the queue and of the endpoint, not when the look began', async () => {
    const endpoint = endpointRecord(randomUUID(), { createdAt: new Date('2033-01-01T00:00:00Z') });
    await store.insertEndpoint(endpoint);
    const at = new Date('2033-01-01T00:00:10Z');
    await queueMessage(endpoint._id, at);
    // A long queue's reads, as slow as they get, and the endpoint's read as slow.
    const slowQueue = Object.create(store) as WebhookStore;
    slowQueue.queue = async (...args) => {
      await new Promise((resolve) => setTimeout(resolve, 400));
      return store.queue(...args);
    };
    slowQueue.endpoint = async (...args) => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      return store.endpoint(...args);
    };
    const config = loadConfig({ ...process.env, WEBHOOK_DISABLE_AFTER_MS: String(disableAfterMs) });
    const dispatcher = new Dispatcher({
      store: slowQueue,
      config: config.webhook,
      appEnv: config.appEnv,
      box: new SecretBox('dated-test'),
      logger: () => broker.getLogger('dispatcher-test'),
      recordDisable: async (_endpoint, disabledAt) => disabledAt,
    });
    await dispatcher.look(at);
    await dispatcher.settle();
    const [message] = await store.messagesOf(endpoint._id, 1, 0);
    const attempt = await store.attempt(message._id, 1);
    expect(new Date(attempt?.startedAt as Date).getTime()).toBeGreaterThanOrEqual(
      at.getTime() + 700,
    );
  });

  it('logs the disable naming the URL by its origin and a hash of its path, never its query', async () => {
    const failingSince = new Date('2032-01-01T00:00:00Z');
    const endpoint = endpointRecord(randomUUID(), {
      url: 'https://hooks.example.com/waybill/in?token=s3cr3t-t0ken&x=1',
      failingSince,
      createdAt: failingSince,
    });
    await store.insertEndpoint(endpoint);
    const logged: unknown[][] = [];
    const capture = (...args: unknown[]) => void logged.push(args);
    const logger = { warn: capture, info: capture, error: capture, debug: capture };
    const config = loadConfig({ ...process.env, WEBHOOK_DISABLE_AFTER_MS: String(disableAfterMs) });
    const notices = new DisableNotices({
      store,
      publicBaseUrl: 'https://waybill.example.test',
      ownerEmail: async () => 'owner@example.com',
      logger: () => logger as unknown as Logger,
    });
    const dispatcher = new Dispatcher({
      store,
      config: config.webhook,
      appEnv: config.appEnv,
      box: new SecretBox('log-test'),
      logger: () => logger as unknown as Logger,
      recordDisable: (e, at, lastError) => notices.record(e, at, lastError),
    });
    const at = new Date(failingSince.getTime() + disableAfterMs + 1_000);
    await queueMessage(endpoint._id, at);
    await dispatcher.look(at);
    await dispatcher.settle();
    expect(await store.endpoint(endpoint._id)).toMatchObject({ status: 'DISABLED' });
    // The test before left an endpoint failing with a message queued: this look disables it too.
    const disabled = logged.find(
      ([message, fields]) =>
        String(message).includes('disabled') &&
        (fields as { webhookId?: string }).webhookId === endpoint._id,
    );
    // The path only by its hash: catch-hook receivers carry their secret in it.
    expect(disabled?.[1]).toMatchObject({
      url: expect.stringMatching(/^https:\/\/hooks\.example\.com\/\[path [0-9a-f]{8}\]$/),
    });
    expect(JSON.stringify(logged)).not.toContain('s3cr3t');
    expect(JSON.stringify(logged)).not.toContain('/waybill/in');
    // Nor does the e-mail its query (staging's log sink writes it to the log whole); the owner
    // is told the path.
    const notice = await store.notices.get(disabledNoticeId(endpoint._id, failingSince));
    expect(notice?.text).toContain('https://hooks.example.com/waybill/in (');
    expect(notice?.text).not.toContain('s3cr3t');
  });
});
