import { ServiceBroker } from 'moleculer';
import { loadConfig } from '../../../../libs/config';
import type { ChannelSender, OutgoingMessage } from '../../../../libs/messaging/channels';
import {
  OutboxSender,
  type OutboxMessage,
  type OutboxStore,
} from '../../../../libs/messaging/outbox-sender';

/** An outbox in memory: the sender's rules on their own (the real stores: integration tests). */
function memoryOutbox(messages: OutboxMessage[]) {
  const byId = new Map(messages.map((m) => [m._id, { ...m, retryAt: null as Date | null }]));
  const claims = new Map<string, Date>();
  const writes: string[] = [];
  const store: OutboxStore = {
    due: async (now) =>
      [...byId.values()].filter((m) => m.status === 'PENDING' && (!m.retryAt || m.retryAt <= now)),
    get: async (id) => byId.get(id) ?? null,
    claimAttempt: async (id, n, at) => {
      if (claims.has(`${id}:${n}`)) return false;
      claims.set(`${id}:${n}`, at);
      return true;
    },
    attemptClaimedAt: async (id, n) => claims.get(`${id}:${n}`) ?? null,
    markSent: async (id, attempt, dropText) => {
      const m = byId.get(id)!;
      Object.assign(m, { status: 'SENT', attempts: attempt, ...(dropText ? { text: null } : {}) });
      writes.push(`sent ${id} ${attempt}`);
    },
    markAttemptFailed: async (id, attempt, error, retryAt) => {
      const m = byId.get(id)!;
      Object.assign(m, { attempts: attempt, retryAt, ...(retryAt ? {} : { status: 'FAILED' }) });
      writes.push(`${retryAt ? 'retry' : 'failed'} ${id} ${attempt}: ${error}`);
    },
  };
  return { store, writes, byId };
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

function senderOver(store: OutboxStore, channel: ChannelSender, appEnv: 'live' | 'staging') {
  return new OutboxSender({
    kind: 'test message',
    config,
    appEnv,
    store,
    channels: { EMAIL: channel, SMS: channel },
    logger: () => broker.getLogger('outbox-test'),
  });
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

  it('fails a message with no address at once, naming what is missing', async () => {
    const { store, writes } = memoryOutbox([message({ channel: 'SMS', recipient: '' })]);
    await senderOver(store, { send: async () => undefined }, 'staging').sendDue(new Date());
    expect(writes).toEqual(['failed m1 1: no phone number to send it to or with']);
  });
});
