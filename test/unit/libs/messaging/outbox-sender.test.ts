import { ServiceBroker } from 'moleculer';
import { loadConfig } from '../../../../libs/config';
import { TRACKING_ID_IN_TEXT } from '../../../../libs/contracts/order';
import type { ChannelSender, OutgoingMessage } from '../../../../libs/messaging/channels';
import {
  keptError,
  LANE_TURNS_PER_RUN,
  LAST_ERROR_MAX_BYTES,
  OutboxSender,
  withoutAddress,
  withoutLinks,
  type OutboxMessage,
  type OutboxStore,
} from '../../../../libs/messaging/outbox-sender';

/** An outbox in memory: the sender's rules on their own (the real stores: integration tests). */
function memoryOutbox(messages: OutboxMessage[]) {
  const byId = new Map(messages.map((m) => [m._id, { ...m }]));
  const claims = new Map<string, Date>();
  const withdrawn = new Set<string>();
  const writes: string[] = [];
  // The queue's order: as given (each message's place, `createdAt` standing for it).
  const order = new Map(messages.map((m, i) => [m._id, i]));
  const store: OutboxStore = {
    // Copies, as a database answers: what was listed does not change with later writes.
    due: async (now, limit, after) => {
      const from = after ? (order.get(after._id) ?? -1) : -1;
      const read = [...byId.values()]
        .filter((m) => m.status === 'PENDING' && (!m.nextAttemptAt || m.nextAttemptAt <= now))
        .filter((m) => (order.get(m._id) ?? 0) > from)
        .slice(0, limit);
      const last = read.at(-1);
      const next =
        last && read.length === limit
          ? { createdAt: new Date(order.get(last._id) ?? 0), _id: last._id }
          : null;
      return { messages: read.map((m) => ({ ...m })), next };
    },
    get: async (id) => {
      const m = byId.get(id);
      return m ? { ...m } : null;
    },
    claimAttempt: async (id, n, at) => {
      if (claims.has(`${id}:${n}`)) return false;
      claims.set(`${id}:${n}`, at);
      return true;
    },
    attemptClaimedAt: async (id, n) => claims.get(`${id}:${n}`) ?? null,
    markSent: async (id, attempt, recipient, dropText) => {
      const m = byId.get(id)!;
      Object.assign(m, {
        status: 'SENT',
        attempts: attempt,
        recipient,
        ...(dropText ? { text: null } : {}),
      });
      writes.push(`sent ${id} ${attempt}`);
    },
    markAttemptFailed: async (id, attempt, error, retryAt) => {
      const m = byId.get(id)!;
      Object.assign(m, {
        attempts: attempt,
        nextAttemptAt: retryAt ?? undefined,
        ...(retryAt ? {} : { status: 'FAILED' }),
      });
      writes.push(`${retryAt ? 'retry' : 'failed'} ${id} ${attempt}: ${error}`);
    },
    isWithdrawn: async (id) => withdrawn.has(id),
    markWithdrawn: async (id) => {
      byId.get(id)!.status = 'SUPERSEDED';
      writes.push(`withdrawn ${id}`);
    },
  };
  return { store, writes, byId, claims, withdrawn };
}

const message = (fields: Partial<OutboxMessage> = {}): OutboxMessage => ({
  _id: 'm1',
  channel: 'EMAIL',
  recipient: 'ada@example.com',
  text: 'Your code is 123456',
  subject: 'A subject of its own',
  secret: true,
  status: 'PENDING',
  attempts: 0,
  label: 'TEST',
  ...fields,
});

const config = loadConfig({ NOTIFY_MAX_ATTEMPTS: '2' }).notifications;
const broker = new ServiceBroker({ logger: false });

function senderOver(
  store: OutboxStore,
  channel: ChannelSender,
  appEnv: 'live' | 'staging',
  { concurrency = config.concurrency, keys }: { concurrency?: number; keys?: RegExp } = {},
) {
  return new OutboxSender({
    kind: 'test message',
    config: { ...config, concurrency },
    appEnv,
    store,
    channels: { EMAIL: channel, SMS: channel },
    logger: () => broker.getLogger('outbox-test'),
    keys,
  });
}

/** What one run of a sender over `store` sent, its channel taking everything. */
async function sentInOneRun(store: OutboxStore): Promise<OutgoingMessage[]> {
  const sent: OutgoingMessage[] = [];
  await senderOver(store, { send: async (m) => void sent.push(m) }, 'staging').sendDue(new Date());
  return sent;
}

describe('OutboxSender', () => {
  it('sends the store’s subject and text to the recipient once, dropping the text in live', async () => {
    const { store, writes, byId } = memoryOutbox([message()]);
    const sent: OutgoingMessage[] = [];
    const sender = senderOver(store, { send: async (m) => void sent.push(m) }, 'live');
    await sender.sendDue(new Date());
    await sender.sendDue(new Date());
    expect(sent).toEqual([
      { to: 'ada@example.com', subject: 'A subject of its own', text: 'Your code is 123456' },
    ]);
    expect(writes).toEqual(['sent m1 1']);
    expect(byId.get('m1')?.text).toBeNull();
  });

  it('spreads the retries of messages that failed together by ±20 %', async () => {
    const { store, byId } = memoryOutbox([message({ _id: 'a' }), message({ _id: 'b' })]);
    const draws = [0, 0.999];
    const sender = new OutboxSender({
      kind: 'test message',
      config,
      appEnv: 'staging',
      store,
      channels: {
        EMAIL: { send: async () => Promise.reject(new Error('down')) },
        SMS: { send: async () => undefined },
      },
      logger: () => broker.getLogger('outbox-test'),
      random: () => draws.shift() ?? 0.5,
    });
    const before = Date.now();
    await sender.sendDue(new Date());
    const waits = ['a', 'b'].map((id) => (byId.get(id)?.nextAttemptAt?.getTime() ?? 0) - before);
    const base = config.retry.baseDelayMs;
    expect(Math.min(...waits)).toBeLessThan(base * 0.81 + 1_000);
    expect(Math.max(...waits)).toBeGreaterThan(base * 1.19);
  });

  it('records the address it sent to with the send', async () => {
    const { store, byId } = memoryOutbox([message({ recipient: '' })]);
    // Addressed as it is listed (a webhook notice), not on its record.
    const addressed: OutboxStore = {
      ...store,
      due: async (now, limit) => {
        const page = await store.due(now, limit);
        const messages = page.messages.map((m) => ({ ...m, recipient: 'owner@example.com' }));
        return { ...page, messages };
      },
    };
    expect((await sentInOneRun(addressed)).map((m) => m.to)).toEqual(['owner@example.com']);
    expect(byId.get('m1')).toMatchObject({ status: 'SENT', recipient: 'owner@example.com' });
  });

  it('retries a failed attempt, then leaves it FAILED, without a secret’s digits in live', async () => {
    const { store, writes } = memoryOutbox([message()]);
    const refusing = {
      send: async () => {
        throw new Error('provider echoed 123456');
      },
    };
    const sender = senderOver(store, refusing, 'live');
    await sender.sendDue(new Date());
    await sender.sendDue(new Date(Date.now() + 60_000));
    expect(writes).toEqual([
      'retry m1 1: provider echoed [digits]',
      'failed m1 2: provider echoed [digits]',
    ]);
  });

  it('records an attempt failed once its send outlasts twice the provider’s time limit, well within its claim’s lease', async () => {
    const { store, writes, byId } = memoryOutbox([message({ secret: false })]);
    const aborted: unknown[] = [];
    const sender = new OutboxSender({
      kind: 'test message',
      config: { ...config, timeoutMs: 100 },
      appEnv: 'staging',
      store,
      // An SMTP server answering a byte at a time: no single wait ever runs out.
      channels: {
        EMAIL: {
          send: (_message, signal) =>
            new Promise<void>(() =>
              signal?.addEventListener('abort', () => aborted.push(signal.reason)),
            ),
        },
        SMS: {} as never,
      },
      logger: () => broker.getLogger('outbox-test'),
    });
    await sender.sendDue(new Date());
    expect(writes).toEqual([
      'retry m1 1: no answer from the provider within 200 ms; it may have been sent',
    ]);
    // The channel is told, so that it drops what it still holds of the message.
    expect(aborted).toEqual([
      expect.objectContaining({ message: expect.stringMatching(/within 200 ms/) }),
    ]);
    expect(byId.get('m1')?.status).toBe('PENDING');
  });

  it('keeps the address a provider echoes out of the error it records', async () => {
    const { store, writes } = memoryOutbox([
      message({ _id: 'mail', recipient: 'Ada.Lovelace@example.com', secret: false }),
      message({ _id: 'sms', channel: 'SMS', recipient: '+234 803 123 4567', secret: false }),
    ]);
    const echoing: ChannelSender = {
      send: async (m) => {
        throw new Error(
          m.to.includes('@')
            ? `550 5.1.1 <ada.lovelace@EXAMPLE.com>: Recipient address rejected`
            : `Termii answered HTTP 400: {"message":"2348031234567 is on DND"}`,
        );
      },
    };
    await senderOver(store, echoing, 'staging').sendDue(new Date());
    expect(withoutAddress('code 1234 for +234 803', { recipient: ' 1234 ', channel: 'SMS' })).toBe(
      'code 1234 for +234 803',
    );
    expect(writes.sort()).toEqual([
      'retry mail 1: 550 5.1.1 <[recipient]>: Recipient address rejected',
      'retry sms 1: Termii answered HTTP 400: {"message":"[recipient] is on DND"}',
    ]);
  });

  it('keeps the links a provider echoes out of the error it records, whole or by their last part', async () => {
    const text =
      'Your parcel is on its way: https://waybill.example/track/P2P-7K3M9Q2X4B6N. Pay at https://waybill.example/checkout/ck-0a1b2c3d4e5f?from=sms';
    const { store, writes } = memoryOutbox([message({ secret: false, text })]);
    const echoing: ChannelSender = {
      send: async () => {
        throw new Error(
          `400 {"sms":"${text}","id":"P2P-7K3M9Q2X4B6N","ref":"ck-0a1b2c3d4e5f","path":"%2Ftrack%2FP2P-7K3M9Q2X4B6N"}`,
        );
      },
    };
    await senderOver(store, echoing, 'staging').sendDue(new Date());
    expect(writes).toEqual([
      'retry m1 1: 400 {"sms":"Your parcel is on its way: [link]. Pay at [link]","id":"[link]","ref":"[link]","path":"%2Ftrack%2F[link]"}',
    ]);
    expect(writes[0]).not.toMatch(/P2P-7K3M9Q2X4B6N/);
    // In any case, as a provider may write it; a short last part is a word, not a capability:
    // left alone apart from the whole link.
    expect(withoutLinks('see /help and HTTPS://X.EXAMPLE/HELP', 'at https://x.example/help.')).toBe(
      'see /help and [link]',
    );
    expect(withoutLinks('nothing was sent', null)).toBe('nothing was sent');
  });

  it('keeps the keys its service names out of the error, wherever the text carries them', async () => {
    const text = 'Waybill delivery P2P-7K3M9Q2X4B6N: your delivery code is 4821';
    const { store, writes } = memoryOutbox([message({ secret: false, text })]);
    const echoing: ChannelSender = {
      send: async () => {
        throw new Error(`400 {"sms":"${text}","ids":["p2p-7k3m9q2x4b6n"]}`);
      },
    };
    await senderOver(store, echoing, 'staging', { keys: TRACKING_ID_IN_TEXT }).sendDue(new Date());
    expect(writes).toEqual([
      'retry m1 1: 400 {"sms":"Waybill delivery [key]: your delivery code is 4821","ids":["[key]"]}',
    ]);
  });

  it('keeps at most LAST_ERROR_MAX_BYTES of an error, as a provider quotes a long answer', async () => {
    const { store, writes } = memoryOutbox([message({ secret: false })]);
    const long = `554 5.7.1 refused: ${'\u0001漢'.repeat(20_000)}`;
    const refusing: ChannelSender = {
      send: async () => {
        throw new Error(long);
      },
    };
    await senderOver(store, refusing, 'staging').sendDue(new Date());
    expect(writes).toHaveLength(1);
    const kept = writes[0].replace(/^retry m1 1: /, '');
    expect(kept).toMatch(/^554 5\.7\.1 refused: ␁漢␁漢.*…$/);
    expect(Buffer.byteLength(JSON.stringify(kept)) - 2).toBeLessThanOrEqual(LAST_ERROR_MAX_BYTES);
    expect(keptError(kept)).toBe(kept);
  });

  it('fails a message with no address at once, naming what is missing', async () => {
    const { store, writes } = memoryOutbox([message({ channel: 'SMS', recipient: '' })]);
    await senderOver(store, { send: async () => undefined }, 'staging').sendDue(new Date());
    expect(writes).toEqual(['failed m1 1: no phone number to send it to or with']);
  });

  it('sends to several people at once, each person’s messages in the order queued', async () => {
    const messages = ['a1', 'b1', 'a2', 'c1', 'b2', 'd1'].map((id) =>
      message({ _id: id, recipient: `${id[0]}@example.com`, text: id }),
    );
    const { store } = memoryOutbox(messages);
    const inFlight = new Set<string>();
    let most = 0;
    const sent: string[] = [];
    const slow: ChannelSender = {
      send: async (m) => {
        // Never two of one person's at once.
        expect(inFlight.has(m.to)).toBe(false);
        inFlight.add(m.to);
        most = Math.max(most, inFlight.size);
        await new Promise((done) => setTimeout(done, 20));
        inFlight.delete(m.to);
        sent.push(m.text);
      },
    };
    await senderOver(store, slow, 'staging', { concurrency: 3 }).sendDue(new Date());
    expect([...sent].sort()).toEqual(['a1', 'a2', 'b1', 'b2', 'c1', 'd1']);
    expect(sent.indexOf('a1')).toBeLessThan(sent.indexOf('a2'));
    expect(sent.indexOf('b1')).toBeLessThan(sent.indexOf('b2'));
    expect(most).toBe(3);
  });

  it('sends the others while one person’s provider hangs', async () => {
    const { store } = memoryOutbox([
      message({ _id: 'sms', channel: 'SMS', recipient: '+2348031234567' }),
      message({ _id: 'm2', recipient: 'b@example.com' }),
      message({ _id: 'm3', recipient: 'c@example.com' }),
    ]);
    let answer: () => void = () => undefined;
    const sent: string[] = [];
    const sms: ChannelSender = {
      send: () => new Promise<void>((done) => (answer = done)).then(() => void sent.push('sms')),
    };
    const email: ChannelSender = { send: async (m) => void sent.push(m.to) };
    const sender = new OutboxSender({
      kind: 'test message',
      config,
      appEnv: 'staging',
      store,
      channels: { EMAIL: email, SMS: sms },
      logger: () => broker.getLogger('outbox-test'),
    });
    const run = sender.sendDue(new Date());
    await new Promise((done) => setTimeout(done, 50));
    expect(sent).toEqual(['b@example.com', 'c@example.com']);
    answer();
    await run;
    expect(sent).toHaveLength(3);
  });

  it('reads the outbox again while it has more, and stops when another sender holds what is left', async () => {
    const many = Array.from({ length: 130 }, (_, i) =>
      message({ _id: `m${i}`, recipient: `p${i}@example.com` }),
    );
    const { store, writes, claims } = memoryOutbox(many);
    // Another replica is sending the last 60 (claimed just now).
    for (let i = 70; i < 130; i++) claims.set(`m${i}:1`, new Date());
    const sender = senderOver(store, { send: async () => undefined }, 'staging');
    await sender.sendDue(new Date());
    expect(writes).toHaveLength(70);
  });

  it('reads on past what other senders hold: held messages at the head keep no one behind them waiting', async () => {
    // Another replica is sending the first of a merchant's 60 (their lane waits for it), and
    // three other people's come after them.
    const merchant = Array.from({ length: 60 }, (_, i) =>
      message({ _id: `m${i}`, recipient: 'pickups@example.com' }),
    );
    const others = ['a', 'b', 'c'].map((p) => message({ _id: p, recipient: `${p}@example.com` }));
    const { store, writes, claims } = memoryOutbox([...merchant, ...others]);
    claims.set('m0:1', new Date());
    await senderOver(store, { send: async () => undefined }, 'staging').sendDue(new Date());
    expect(writes).toEqual(['sent a 1', 'sent b 1', 'sent c 1']);
  });

  it(`sends at most ${LANE_TURNS_PER_RUN} of one person’s messages a run, in order, the others’ going on`, async () => {
    const merchant = Array.from({ length: 25 }, (_, i) =>
      message({ _id: `m${i}`, recipient: 'pickups@example.com' }),
    );
    const { store, writes } = memoryOutbox([...merchant, message({ _id: 'ada' })]);
    const sender = senderOver(store, { send: async () => undefined }, 'staging');
    const sentIds = () => writes.map((w) => w.split(' ')[1]);
    await sender.sendDue(new Date());
    const firstTurn = merchant.slice(0, LANE_TURNS_PER_RUN).map((m) => m._id);
    expect(sentIds().sort()).toEqual([...firstTurn, 'ada'].sort());
    expect(sentIds().filter((id) => id !== 'ada')).toEqual(firstTurn);
    await sender.sendDue(new Date());
    await sender.sendDue(new Date());
    expect(sentIds().filter((id) => id !== 'ada')).toEqual(merchant.map((m) => m._id));
  });

  it('makes no send once the reads before it outlasted their share of the claim’s lease', async () => {
    const { store, writes } = memoryOutbox([message({ attempts: 1 })]);
    const sent: OutgoingMessage[] = [];
    // The message's read again before its second attempt, and the database takes 20 s to answer.
    const slow: OutboxStore = {
      ...store,
      get: async (id) => {
        const realNow = Date.now.bind(Date);
        jest.spyOn(Date, 'now').mockImplementation(() => realNow() + 20_000);
        return store.get(id);
      },
    };
    try {
      const sender = senderOver(slow, { send: async (m) => void sent.push(m) }, 'staging');
      await sender.sendDue(new Date());
    } finally {
      jest.restoreAllMocks();
    }
    expect(sent).toEqual([]);
    expect(writes).toEqual([]);
  });

  it('records a send again when its record failed, never leaving it for another sender to send twice', async () => {
    const { store, writes } = memoryOutbox([message()]);
    let failures = 2;
    const flaky: OutboxStore = {
      ...store,
      markSent: async (...args) => {
        if (failures-- > 0) throw new Error('database away a moment');
        return store.markSent(...args);
      },
    };
    const sent = await sentInOneRun(flaky);
    expect(sent).toHaveLength(1);
    expect(writes).toEqual(['sent m1 1']);
  });

  it('holds a person’s later messages back while another sender is sending their earlier one', async () => {
    const { store, writes, claims } = memoryOutbox([
      message({ _id: 'old-code', recipient: 'ada@example.com' }),
      message({ _id: 'new-code', recipient: 'ada@example.com' }),
      message({ _id: 'other', recipient: 'bola@example.com' }),
    ]);
    claims.set('old-code:1', new Date());
    const sender = senderOver(store, { send: async () => undefined }, 'staging');
    await sender.sendDue(new Date());
    expect(writes).toEqual(['sent other 1']);
    // Its sender recorded it: the next run sends the later one.
    await store.markSent('old-code', 1, '+2348030000000', false);
    await sender.sendDue(new Date());
    expect(writes).toEqual(['sent other 1', 'sent old-code 1', 'sent new-code 1']);
  });

  it('sends what it listed without reading it again when it claims the next attempt', async () => {
    const { store, writes } = memoryOutbox([message(), message({ _id: 'm2' })]);
    const reads: string[] = [];
    const counted: OutboxStore = {
      ...store,
      get: async (id) => {
        reads.push(id);
        return store.get(id);
      },
    };
    await senderOver(counted, { send: async () => undefined }, 'staging').sendDue(new Date());
    expect(writes).toEqual(['sent m1 1', 'sent m2 1']);
    expect(reads).toEqual([]);
  });

  it('reads a message again after passing over a stopped sender’s attempt: sent after all, it is not sent twice', async () => {
    const { store, writes, claims } = memoryOutbox([message()]);
    // The list as read before that sender recorded it sent.
    const listed = { ...message() };
    const stale: OutboxStore = { ...store, due: async () => ({ messages: [listed], next: null }) };
    claims.set('m1:1', new Date(Date.now() - 60 * 60_000));
    await store.markSent('m1', 1, '+2348030000000', false);
    expect(await sentInOneRun(stale)).toEqual([]);
    expect(writes).toEqual(['sent m1 1']);
  });

  it('records a message withdrawn while its attempt failed SUPERSEDED at the retry, unsent', async () => {
    const { store, writes, withdrawn } = memoryOutbox([message()]);
    const sent: OutgoingMessage[] = [];
    let failing = true;
    const channel: ChannelSender = {
      send: async (m) => {
        if (failing) {
          // The merchant issues a new code while this attempt is under way.
          withdrawn.add('m1');
          throw new Error('provider down');
        }
        sent.push(m);
      },
    };
    const sender = senderOver(store, channel, 'staging');
    await sender.sendDue(new Date());
    failing = false;
    await sender.sendDue(new Date(Date.now() + 60_000));
    expect(sent).toEqual([]);
    expect(writes).toEqual(['retry m1 1: provider down', 'withdrawn m1']);
  });

  it('passes over no claim recorded since the message was listed: its retry waits for its time, however late the list', async () => {
    const { store, writes, claims } = memoryOutbox([message()]);
    // Listed before another sender made attempt 1 (long enough ago for its claim to look
    // abandoned), which failed, its retry due in five minutes.
    const listed = { ...message() };
    const stale: OutboxStore = { ...store, due: async () => ({ messages: [listed], next: null }) };
    claims.set('m1:1', new Date(Date.now() - 60 * 60_000));
    await store.markAttemptFailed(
      'm1',
      1,
      'provider down',
      new Date(Date.now() + 5 * 60_000),
      false,
    );
    expect(await sentInOneRun(stale)).toEqual([]);
    expect(writes).toEqual(['retry m1 1: provider down']);
    expect(claims.has('m1:2')).toBe(false);
  });

  it('sends a retry recorded since the message was listed once it is due, in its turn', async () => {
    const { store, writes, claims } = memoryOutbox([message()]);
    const listed = { ...message() };
    const stale: OutboxStore = { ...store, due: async () => ({ messages: [listed], next: null }) };
    claims.set('m1:1', new Date(Date.now() - 60 * 60_000));
    await store.markAttemptFailed('m1', 1, 'provider down', new Date(Date.now() - 1_000), false);
    expect(await sentInOneRun(stale)).toHaveLength(1);
    expect(writes).toEqual(['retry m1 1: provider down', 'sent m1 2']);
  });

  it('records a message whose last attempt was lost FAILED once, however many senders find it at once', async () => {
    const { store, writes, claims } = memoryOutbox([message()]);
    await store.claimAttempt('m1', 1, new Date(Date.now() - 60 * 60_000));
    await store.markAttemptFailed('m1', 1, 'provider down', new Date(Date.now() - 60_000), false);
    claims.set('m1:2', new Date(Date.now() - 60 * 60_000));
    const senders = [1, 2, 3].map(() =>
      senderOver(store, { send: async () => undefined }, 'staging'),
    );
    await Promise.all(senders.map((sender) => sender.sendDue(new Date())));
    expect(writes.filter((w) => w.startsWith('failed m1'))).toEqual([
      'failed m1 2: its last sender stopped before it recorded how the attempt went',
    ]);
  });

  it('records a message withdrawn as its last claim was taken, then its sender stopped, SUPERSEDED, not FAILED', async () => {
    const { store, writes, claims, withdrawn } = memoryOutbox([message()]);
    // Its first attempt failed; its withdrawal claimed the last (NOTIFY_MAX_ATTEMPTS 2) and
    // stopped before it recorded it.
    await store.claimAttempt('m1', 1, new Date(Date.now() - 60 * 60_000));
    await store.markAttemptFailed('m1', 1, 'provider down', new Date(Date.now() - 60_000), false);
    claims.set('m1:2', new Date(Date.now() - 60 * 60_000));
    withdrawn.add('m1');
    expect(await sentInOneRun(store)).toEqual([]);
    expect(writes).toEqual(['retry m1 1: provider down', 'withdrawn m1']);
  });

  it('records a message withdrawn while its sender stopped SUPERSEDED when it takes over', async () => {
    const { store, writes, claims, withdrawn } = memoryOutbox([message()]);
    claims.set('m1:1', new Date(Date.now() - 60 * 60_000));
    withdrawn.add('m1');
    expect(await sentInOneRun(store)).toEqual([]);
    expect(writes).toEqual(['withdrawn m1']);
  });

  it('lets go of what its channels keep open when it stops', async () => {
    const closed: string[] = [];
    const sender = new OutboxSender({
      kind: 'test message',
      config,
      appEnv: 'staging',
      store: memoryOutbox([]).store,
      channels: {
        EMAIL: { send: async () => undefined, close: () => void closed.push('EMAIL') },
        SMS: { send: async () => undefined },
      },
      logger: () => broker.getLogger('outbox-test'),
    });
    sender.start();
    await sender.stop();
    expect(closed).toEqual(['EMAIL']);
  });
});
