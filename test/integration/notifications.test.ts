import { randomInt, randomUUID } from 'node:crypto';
import { ServiceBroker } from 'moleculer';
import type { Connection } from 'mongoose';
import { loadConfig } from '../../libs/config';
import type { ChannelSender } from '../../libs/messaging/channels';
import { OutboxSender } from '../../libs/messaging/outbox-sender';
import { notificationOutbox } from '../../services/order/notification-outbox';
import {
  recordIds,
  returnProof,
  type DeliveryRecord,
  type ProofRecord,
  type StoredAddress,
} from '../../services/order/delivery-record';
import {
  onTheWayMessages,
  paymentLinkMessages,
  proofCodeMessageIds,
  proofCodeMessages,
} from '../../services/order/notifications';
import { Outbox } from '../../services/order/outbox';
import { MAX_PROOF_CODES, ProofChecks } from '../../services/order/proofs';
import { defineOrderModels, OrderStore } from '../../services/order/store';
import { DeliveryTransitions } from '../../services/order/transitions';
import { asCourier, courierAt, offerOf, type Courier } from '../support/couriers';
import {
  cancelDelivery,
  credit,
  DESTINATION,
  notificationsOf,
  ORIGIN,
  requestDelivery,
  savePackage,
  type Party,
} from '../support/deliveries';
import { eventually } from '../support/eventually';
import { createUserWithKey } from '../support/http';
import {
  liveEnv,
  startSmsProvider,
  startSmtpReceiver,
  type SmsProvider,
  type SmtpReceiver,
} from '../support/receivers';
import {
  dropDatabases,
  isolation,
  openServiceDatabase,
  startNode,
  type NodeProcess,
} from '../support/stack';

/**
 * Notifications to people (issue 14), live, over NATS, with two order replicas sending the
 * outbox together: e-mails reach a real SMTP server and SMS a Termii stand-in, both started
 * here. The codes the courier gives are read from what the people received, since a live
 * outbox never shows a text.
 */
const iso = isolation();
const PUBLIC_BASE_URL = 'https://waybill.example.test';
const MAX_ATTEMPTS = 3;
let smtp: SmtpReceiver;
let sms: SmsProvider;
let rest: NodeProcess;
const orders: NodeProcess[] = [];
const base = () => rest.url;

beforeAll(async () => {
  [smtp, sms] = await Promise.all([startSmtpReceiver(), startSmsProvider()]);
  const env = {
    ...liveEnv(smtp, sms),
    PUBLIC_BASE_URL,
    NOTIFY_INTERVAL_MS: '150',
    NOTIFY_TIMEOUT_MS: '2000',
    NOTIFY_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
    NOTIFY_RETRY_BASE_MS: '200',
    NOTIFY_RETRY_MAX_MS: '400',
    ORDER_SWEEP_INTERVAL_MS: '250',
    MATCHING_SWEEP_INTERVAL_MS: '200',
    MATCHING_OFFER_TIMEOUT_MS: '10000',
  };
  rest = await startNode({
    services: 'gateway,account,geo,pricing,package,payment,courier-matching,webhook',
    iso,
    env,
  });
  // Info: the log of what each replica sent is read below for codes that must not be there.
  for (let i = 0; i < 2; i++) {
    orders.push(await startNode({ services: 'order', iso, env: { ...env, LOG_LEVEL: 'info' } }));
  }
}, 180_000);

afterAll(async () => {
  await Promise.all([...orders, rest].map((n) => n?.stop()));
  await Promise.all([smtp?.close(), sms?.close()]);
  await dropDatabases(iso);
});

/** Deliveries a test made: cancelled after it, so that no later courier is offered them. */
const made: { merchant: Party; deliveryId: string }[] = [];
afterEach(async () => {
  for (const { merchant, deliveryId } of made.splice(0)) {
    await cancelDelivery(base(), merchant, deliveryId);
  }
});

/** A recipient of their own: what the receivers got for this test is what reached them. */
function recipient() {
  const n = Math.floor(Math.random() * 1e8)
    .toString()
    .padStart(8, '0');
  return {
    contactName: 'Ada Obi',
    contactPhone: `+23480${n}`,
    contactEmail: `ada-${randomUUID().slice(0, 8)}@example.com`,
  };
}
type Recipient = ReturnType<typeof recipient>;

/** The number as Termii receives it: international digits without `+`. */
const termiiTo = (who: Recipient) => who.contactPhone.slice(1);

const mailsTo = (who: Recipient) => smtp.mails.filter((m) => m.to.includes(who.contactEmail));
const smsTo = (who: Recipient) => sms.accepted(termiiTo(who));

/** A paid delivery from a sender to a recipient of the test's own. */
async function deliveryTo(
  receiver: Recipient,
  sender: Recipient = recipient(),
  fields: Record<string, unknown> = {},
) {
  const merchant: Party = await createUserWithKey(base());
  await credit(base(), merchant, 100_000);
  const created = await requestDelivery(base(), merchant, [await savePackage(base(), merchant)], {
    destination: { ...DESTINATION, ...receiver },
    originContactName: sender.contactName,
    originContactPhone: sender.contactPhone,
    originContactEmail: sender.contactEmail,
    ...fields,
  });
  expect(created.status).toBe(201);
  const deliveryId = created.body.data.deliveryId as string;
  made.push({ merchant, deliveryId });
  return {
    merchant,
    deliveryId,
    trackingId: created.body.data.delivery.trackingId as string,
  };
}

/** The six-digit code a message carries. */
const codeIn = (text: string) => /code is (\d{6})/.exec(text)?.[1];

/** Long enough for every replica to have run its sender many times over. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 3_000));

describe('proof codes', () => {
  it('reach the sender and the recipient by SMS and e-mail, exactly once each, from two replicas', async () => {
    const sender = recipient();
    const receiver = recipient();
    const { deliveryId } = await deliveryTo(receiver, sender);

    await eventually(async () => {
      const messages = await notificationsOf(base(), deliveryId);
      expect(messages).toHaveLength(4);
      expect(messages.every((m) => m.status === 'SENT')).toBe(true);
    });
    await settle();

    const collection = smsTo(sender);
    const delivery = smsTo(receiver);
    expect(collection).toHaveLength(1);
    expect(delivery).toHaveLength(1);
    expect(collection[0]).toMatch(/your collection code is \d{6}/);
    expect(delivery[0]).toMatch(/your delivery code is \d{6}/);
    // The e-mails carry the same codes, once each, from MAIL_FROM, with a subject that does not.
    const [senderMail, ...moreToSender] = mailsTo(sender);
    const [receiverMail, ...moreToReceiver] = mailsTo(receiver);
    expect([moreToSender, moreToReceiver]).toEqual([[], []]);
    expect(senderMail).toMatchObject({
      from: 'deliveries@waybill.example.test',
      subject: 'Your Waybill collection code',
    });
    expect(codeIn(senderMail.text)).toBe(codeIn(collection[0]));
    expect(receiverMail.subject).toBe('Your Waybill delivery code');
    expect(codeIn(receiverMail.text)).toBe(codeIn(delivery[0]));

    // Termii's request, as its API takes it.
    const request = sms.requests.find((r) => r.body.to === termiiTo(sender));
    expect(request).toMatchObject({
      path: '/api/sms/send',
      body: {
        to: termiiTo(sender),
        from: 'Waybill',
        sms: collection[0],
        type: 'plain',
        // The transactional route by default: the promotional one skips numbers on DND.
        channel: 'dnd',
        api_key: 'termii-test-key',
      },
    });

    // Live: no text is kept once sent, and no replica logged a code.
    const messages = await notificationsOf(base(), deliveryId);
    expect(messages.map((m) => m.text)).toEqual([null, null, null, null]);
    for (const node of orders) {
      expect(node.output()).not.toContain(codeIn(collection[0]));
      expect(node.output()).not.toContain(codeIn(delivery[0]));
    }
  });

  it('are sent again after the provider answers 500, and reach the person once', async () => {
    const receiver = recipient();
    sms.answerFor(termiiTo(receiver), [500]);
    const { deliveryId } = await deliveryTo(receiver);

    await eventually(async () => {
      const [sent] = (await notificationsOf(base(), deliveryId)).filter(
        (m) => m.purpose === 'DELIVERY_CODE' && m.channel === 'SMS',
      );
      expect(sent).toMatchObject({ status: 'SENT', attempts: 2, lastError: null, text: null });
    });
    await settle();
    const tries = sms.requests.filter((r) => r.body.to === termiiTo(receiver));
    expect(tries.map((r) => r.answer)).toEqual([500, 200]);
    expect(smsTo(receiver)).toHaveLength(1);
    expect(mailsTo(receiver)).toHaveLength(1);
  });

  it('keep out of their error the tracking id and the code a provider quotes back', async () => {
    const receiver = recipient();
    sms.answerFor(termiiTo(receiver), Array<number>(MAX_ATTEMPTS).fill(400));
    const { deliveryId } = await deliveryTo(receiver);
    const failed = await eventually(async () => {
      const [message] = (await notificationsOf(base(), deliveryId)).filter(
        (m) => m.purpose === 'DELIVERY_CODE' && m.channel === 'SMS',
      );
      expect(message).toMatchObject({ status: 'FAILED', attempts: MAX_ATTEMPTS });
      return message as unknown as { lastError: string };
    });
    const [quoted] = sms.requests
      .filter((r) => r.body.to === termiiTo(receiver))
      .map((r) => String(r.body.sms));
    const trackingId = /P2P-[0-9A-Z]{12}/.exec(quoted)?.[0] as string;
    expect(trackingId).toBeDefined();
    expect(failed.lastError).toContain('[key]');
    expect(failed.lastError).toContain('[digits]');
    expect(failed.lastError).not.toContain(trackingId);
    expect(failed.lastError).not.toContain(codeIn(quoted) as string);
    for (const node of orders) expect(node.output()).not.toContain(trackingId);
  });

  it('are recorded FAILED, with the last error, once the provider stays down past the attempts', async () => {
    const receiver = recipient();
    sms.answerFor(termiiTo(receiver), Array<'drop'>(MAX_ATTEMPTS + 2).fill('drop'));
    const { deliveryId } = await deliveryTo(receiver);

    await eventually(async () => {
      const [failed] = (await notificationsOf(base(), deliveryId)).filter(
        (m) => m.purpose === 'DELIVERY_CODE' && m.channel === 'SMS',
      );
      expect(failed).toMatchObject({
        status: 'FAILED',
        attempts: MAX_ATTEMPTS,
        lastError: expect.stringMatching(/\S/),
        sentAt: null,
        text: null,
      });
    });
    await settle();
    // Exactly the attempts allowed, and none after; the e-mail went.
    expect(sms.requests.filter((r) => r.body.to === termiiTo(receiver))).toHaveLength(MAX_ATTEMPTS);
    expect(smsTo(receiver)).toEqual([]);
    expect(mailsTo(receiver)).toHaveLength(1);
  });
});

describe('your courier is on the way', () => {
  it('tells the recipient, with the tracking link, once the courier has collected', async () => {
    const sender = recipient();
    const receiver = recipient();
    const courier: Courier = await courierAt(base(), {
      lat: ORIGIN.lat + 0.003,
      lon: ORIGIN.lon + 0.002,
    });
    // Only this courier: the deliveries of the other tests are still looking for one.
    const { deliveryId, trackingId } = await deliveryTo(receiver, sender, {
      courierSelection: 'SPECIFIC',
      courierId: courier.id,
    });
    const offer = await offerOf(base(), courier);
    expect(offer.deliveryId).toBe(deliveryId);
    const step = (name: string, json?: unknown) =>
      asCourier(base(), courier, 'POST', `/courier/deliveries/${deliveryId}/${name}`, json);
    expect(
      (await asCourier(base(), courier, 'POST', `/courier/offers/${offer.id}/accept`)).status,
    ).toBe(200);
    expect((await step('arrived-at-pickup')).status).toBe(200);
    await eventually(() => expect(smsTo(sender)).toHaveLength(1));
    // Not before the package is in the courier's hands.
    expect(smsTo(receiver).filter((t) => t.includes('on the way'))).toEqual([]);

    // The code the sender received by SMS is the one the courier asks for.
    const code = codeIn(smsTo(sender)[0]);
    expect((await step('collected', { code })).status).toBe(200);

    const link = `${PUBLIC_BASE_URL}/track/${trackingId}`;
    await eventually(() => {
      expect(smsTo(receiver).filter((t) => t.includes('on the way'))).toHaveLength(1);
      expect(mailsTo(receiver).filter((m) => m.text.includes('on the way'))).toHaveLength(1);
    });
    expect((await step('in-transit')).status).toBe(200);
    await settle();
    const [text] = smsTo(receiver).filter((t) => t.includes('on the way'));
    expect(text).toContain(link);
    const mails = mailsTo(receiver).filter((m) => m.text.includes('on the way'));
    expect(mails).toHaveLength(1);
    expect(mails[0]).toMatchObject({ subject: 'Your Waybill delivery is on the way' });
    expect(mails[0].text).toContain(link);
    const queued = (await notificationsOf(base(), deliveryId)).filter(
      (m) => m.purpose === 'COURIER_ON_THE_WAY',
    );
    expect(queued.map((m) => `${m.channel} ${m.status}`).sort()).toEqual([
      'EMAIL SENT',
      'SMS SENT',
    ]);
  });
});

/**
 * The sender's claims on the real FerretDB, without the providers' latency: senders of several
 * replicas share one outbox (a database of its own here, which no order node reads).
 */
describe('senders sharing an outbox', () => {
  let conn: Connection;
  let store: OrderStore;
  let models: ReturnType<typeof defineOrderModels>;
  const broker = new ServiceBroker({ logger: false });
  const config = loadConfig({ NOTIFY_TIMEOUT_MS: '1000', NOTIFY_MAX_ATTEMPTS: '3' }).notifications;

  beforeAll(async () => {
    conn = await openServiceDatabase(iso, 'outbox_claims');
    models = defineOrderModels(conn);
    await Promise.all(Object.values(models).map((m) => m.init()));
    store = new OrderStore(() => models);
  });
  afterAll(() => conn?.close());

  const PROOF_SECRET = 'proof-secret-for-the-test';

  /** A channel that counts what it was given, and takes a moment like a provider. */
  function countingChannel(sent: string[]): ChannelSender {
    return {
      async send(message) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        sent.push(`${message.to} ${message.text}`);
      },
    };
  }

  function senderOver(sent: string[], channel = countingChannel(sent)) {
    return new OutboxSender({
      kind: 'notification',
      config,
      appEnv: 'staging',
      store: notificationOutbox(
        store,
        new ProofChecks(store, PROOF_SECRET, 'staging'),
        new DeliveryTransitions(store),
      ),
      channels: { SMS: channel, EMAIL: channel },
      logger: () => broker.getLogger('notifications-test'),
    });
  }

  async function queue(count: number) {
    const now = new Date();
    const messages = Array.from({ length: count }, (_, i) =>
      proofCodeMessages(
        { _id: randomUUID(), trackingId: `P2P-TEST${i}` },
        'DELIVERY',
        String(100000 + i),
        { name: 'Ada', phone: `+234800000${i}`, email: `ada-${i}@example.com` },
        now,
      ),
    ).flat();
    await store.enqueue(messages);
    return messages;
  }

  it('send each message once, however many run at once', async () => {
    const messages = await queue(15);
    const sent: string[] = [];
    const senders = [senderOver(sent), senderOver(sent), senderOver(sent)];
    for (let round = 0; round < 3; round++) {
      await Promise.all(senders.map((s) => s.sendDue(new Date())));
    }
    expect(sent).toHaveLength(messages.length);
    expect(new Set(sent).size).toBe(messages.length);
    for (const m of messages) {
      expect(await store.notifications.get(m._id)).toMatchObject({ status: 'SENT', attempts: 1 });
    }
  });

  it('leave a message whose attempt another sender holds, and take over one whose sender stopped', async () => {
    const [held, lost] = await queue(1);
    const now = new Date();
    // A sender is at work on `held`; the sender of `lost` stopped long ago, mid-attempt.
    await store.notifications.claimAttempt(held._id, 1, now);
    await store.notifications.claimAttempt(lost._id, 1, new Date(now.getTime() - 10 * 60_000));
    const sent: string[] = [];
    await senderOver(sent).sendDue(now);
    expect(await store.notifications.get(held._id)).toMatchObject({
      status: 'PENDING',
      attempts: 0,
    });
    // The stopped attempt may have reached the person: this is the one resend it can cause.
    expect(await store.notifications.get(lost._id)).toMatchObject({ status: 'SENT', attempts: 2 });
    expect(sent).toEqual([`${lost.recipient} ${lost.text}`]);
    expect(await store.notifications.attemptClaimedAt(lost._id, 2)).not.toBeNull();
  });

  it('withdraw what a delivery that ended has not sent, and queue no more for it', async () => {
    const messages = await queue(2);
    const ours = messages.filter((m) => m.deliveryId === messages[0].deliveryId);
    const smsGone = ours.find((m) => m.channel === 'SMS')!;
    const emailWaiting = ours.find((m) => m.channel === 'EMAIL')!;
    const others = messages.filter((m) => m.deliveryId !== messages[0].deliveryId);
    // Its SMS went before the delivery ended; its e-mail waits (the provider was failing).
    await store.notifications.claimAttempt(smsGone._id, 1, new Date());
    await store.notifications.markSent(smsGone._id, 1, smsGone.recipient, false);
    const ended = {
      _id: smsGone.deliveryId,
      trackingId: 'P2P-ENDED',
      destinationId: `${smsGone.deliveryId}:destination`,
      lifecycle: { status: 'CANCELLED' },
    } as unknown as DeliveryRecord;
    const outbox = new Outbox(store, PUBLIC_BASE_URL, 'live');
    await outbox.withdrawUnsent(ended, new Date());
    // The sweep settling a late "on the way" of the collection, after the end: nothing queued.
    await outbox.courierOnTheWay(ended, new Date());

    expect(await store.notificationsOf(ended._id)).toEqual([
      expect.objectContaining({ _id: emailWaiting._id, status: 'SUPERSEDED', text: null }),
      expect.objectContaining({ _id: smsGone._id, status: 'SENT' }),
    ]);
    const sent: string[] = [];
    await senderOver(sent).sendDue(new Date());
    // Only the other delivery's messages went.
    expect(sent.sort()).toEqual(others.map((m) => `${m.recipient} ${m.text}`).sort());
  });

  it('send nothing of a delivery that ended, however late it was queued', async () => {
    // Queued after the end's withdrawal (a request recovered after its merchant cancelled it):
    // its sender reads the delivery before the attempt.
    const deliveryId = randomUUID();
    await models.Delivery.collection.insertOne({
      _id: deliveryId,
      lifecycle: { status: 'CANCELLED' },
    } as never);
    const late = proofCodeMessages(
      { _id: deliveryId, trackingId: 'P2P-LATE' },
      'DELIVERY',
      '123456',
      { name: 'Ada', phone: '+2348000000777', email: 'ada-late@example.com' },
      new Date(),
    );
    await store.enqueue(late);
    const sent: string[] = [];
    await senderOver(sent).sendDue(new Date());
    expect(sent.filter((line) => line.includes('123456'))).toEqual([]);
    for (const m of late) {
      expect(await store.notifications.get(m._id)).toMatchObject({
        status: 'SUPERSEDED',
        sentAt: null,
      });
    }
  });

  it('withdraw what a change of the delivery made untrue while it waited, and send the rest', async () => {
    // Held while the provider was failing, past a change that withdraws nothing of its own.
    const contact = (tag: string) => ({
      name: 'Ada',
      phone: `+23480${randomInt(1e7, 1e8)}`,
      email: `ada-${tag}-${randomUUID()}@example.com`,
    });
    async function deliveryIn(status: string, paid = { creator: true, recipient: false }) {
      const deliveryId = randomUUID();
      await models.Delivery.collection.insertOne({
        _id: deliveryId,
        lifecycle: { status, paid },
      } as never);
      return { _id: deliveryId, trackingId: `P2P-${deliveryId.slice(0, 8)}` };
    }
    const now = new Date();
    const returning = await deliveryIn('RETURNING');
    const collected = await deliveryIn('COLLECTED');
    const recipientPaid = await deliveryIn('COURIER_ASSIGNED', { creator: true, recipient: true });
    const inTransit = await deliveryIn('IN_TRANSIT');
    const stale = [
      ...proofCodeMessages(returning, 'DELIVERY', '111111', contact('r'), now),
      ...onTheWayMessages(returning, 'https://track.example/x', contact('r'), now),
      ...proofCodeMessages(collected, 'COLLECTION', '222222', contact('c'), now),
      ...paymentLinkMessages(recipientPaid, 150_000, 'https://pay', 'Bola', contact('p'), now),
    ];
    const due = [
      ...proofCodeMessages(inTransit, 'DELIVERY', '333333', contact('t'), now),
      ...onTheWayMessages(inTransit, 'https://track.example/y', contact('t'), now),
    ];
    await store.enqueue([...stale, ...due]);
    const sent: string[] = [];
    await senderOver(sent).sendDue(new Date());
    for (const m of stale) {
      expect(await store.notifications.get(m._id)).toMatchObject({
        status: 'SUPERSEDED',
        sentAt: null,
      });
    }
    for (const m of due) {
      expect(await store.notifications.get(m._id)).toMatchObject({ status: 'SENT' });
    }
    const ours = sent.filter((line) =>
      [...stale, ...due].some((m) => line.startsWith(m.recipient)),
    );
    expect(ours.sort()).toEqual(due.map((m) => `${m.recipient} ${m.text}`).sort());
  });

  /**
   * A delivery at the pickup whose sender was sent (or is being sent) their first collection
   * code, and the merchant's way to issue another.
   */
  async function codeReissue(live: boolean) {
    const deliveryId = randomUUID();
    // Named as a delivery's proof is: the sender finds its codes by that name.
    const proofId = recordIds(deliveryId).proof('COLLECTION');
    const tag = String(randomInt(1e7, 1e8));
    const contact = { name: 'Ada', phone: `+23481${tag}`, email: `ada-${tag}@example.com` };
    const delivery = {
      _id: deliveryId,
      trackingId: `P2P-${deliveryId.slice(0, 8)}`,
      originId: `${deliveryId}:origin`,
      destinationId: `${deliveryId}:destination`,
      lifecycle: { status: 'ARRIVED_AT_PICKUP' },
      proofs: [{ id: proofId, type: 'COLLECTION', codeHash: 'first', scannedAt: null }],
    } as unknown as DeliveryRecord;
    const origin = {
      fields: {
        contactName: contact.name,
        contactPhone: contact.phone,
        contactEmail: contact.email,
      },
    } as unknown as StoredAddress;
    const addresses = new Map([[delivery.originId, origin]]);
    const first = proofCodeMessages(delivery, 'COLLECTION', '111111', contact, new Date());
    await store.enqueue(first);
    const proofs = new ProofChecks(store, PROOF_SECRET, live ? 'live' : 'staging');
    return { first, issueAgain: () => proofs.issueAgain(delivery, proofId, addresses) };
  }

  /** Sends what is due: the person the first code was for is sent the new code alone, once a channel. */
  async function expectOnlyTheNewCodeSent(first: { recipient: string }[]) {
    const sent: string[] = [];
    await senderOver(sent).sendDue(new Date());
    const reached = sent.filter((line) => first.some((m) => line.startsWith(`${m.recipient} `)));
    expect(reached).toHaveLength(2);
    for (const line of reached) expect(line).toMatch(/your new collection code is \d{6}/);
  }

  it('withdraw a proof code replaced before it went: only the new code reaches the person', async () => {
    const { first, issueAgain } = await codeReissue(false);
    await issueAgain();
    await expectOnlyTheNewCodeSent(first);
    for (const m of first) {
      expect(await store.notifications.get(m._id)).toMatchObject({
        status: 'SUPERSEDED',
        sentAt: null,
        text: m.text, // staging keeps what it would have said
      });
    }
    // Live drops the dead code as it drops a sent one's.
    const inLive = await codeReissue(true);
    await inLive.issueAgain();
    for (const m of inLive.first) {
      expect(await store.notifications.get(m._id)).toMatchObject({
        status: 'SUPERSEDED',
        text: null,
      });
    }
  });

  it('send no replaced code when the reissue stopped between queueing its code and the withdrawal', async () => {
    const { first, issueAgain } = await codeReissue(false);
    // The withdrawal after the queueing never runs: the process stopped.
    const stopped = jest
      .spyOn(store, 'supersedeMessages')
      .mockRejectedValueOnce(new Error('process stopped'));
    try {
      await expect(issueAgain()).rejects.toThrow('process stopped');
    } finally {
      stopped.mockRestore();
    }
    await expectOnlyTheNewCodeSent(first);
    for (const m of first) {
      expect(await store.notifications.get(m._id)).toMatchObject({
        status: 'SUPERSEDED',
        sentAt: null,
      });
    }
  });

  it('send the code in force when its reissue failed before queueing the new one', async () => {
    const { first, issueAgain } = await codeReissue(false);
    const failed = jest.spyOn(store, 'enqueue').mockRejectedValueOnce(new Error('database busy'));
    try {
      await expect(issueAgain()).rejects.toThrow('database busy');
    } finally {
      failed.mockRestore();
    }
    const sent: string[] = [];
    await senderOver(sent).sendDue(new Date());
    for (const m of first) {
      expect(sent).toContain(`${m.recipient} ${m.text}`);
      expect(await store.notifications.get(m._id)).toMatchObject({ status: 'SENT' });
    }
  });

  it('send a code withdrawn while under way once if that attempt goes, and never if it fails', async () => {
    const [goes, fails] = await Promise.all([codeReissue(false), codeReissue(false)]);
    const failing = new Set(fails.first.map((m) => m.recipient));
    const held = new Set([...failing, ...goes.first.map((m) => m.recipient)]);
    // The first codes' sends wait at a gate until the merchant has issued new ones.
    const waiting: (() => void)[] = [];
    const sent: string[] = [];
    const gated: ChannelSender = {
      async send(message) {
        if (held.delete(message.to)) {
          await new Promise<void>((open) => waiting.push(open));
          if (failing.has(message.to)) throw new Error('provider down');
        }
        sent.push(`${message.to} ${message.text}`);
      },
    };
    const sender = senderOver(sent, gated);
    const run = sender.sendDue(new Date());
    await eventually(() => expect(waiting).toHaveLength(4));
    await Promise.all([goes.issueAgain(), fails.issueAgain()]);
    for (const open of waiting) open();
    await run;
    // The failed ones' retries fall due; the new codes go.
    await sender.sendDue(new Date(Date.now() + 10 * 60_000));

    const to = (m: { recipient: string }) =>
      sent.filter((line) => line.startsWith(`${m.recipient} `));
    for (const m of goes.first) {
      expect(await store.notifications.get(m._id)).toMatchObject({ status: 'SENT' });
      expect(to(m)).toEqual([`${m.recipient} ${m.text}`, expect.stringMatching(/new collection/)]);
    }
    for (const m of fails.first) {
      expect(await store.notifications.get(m._id)).toMatchObject({
        status: 'SUPERSEDED',
        attempts: 1,
      });
      expect(to(m)).toEqual([expect.stringMatching(/your new collection code is \d{6}/)]);
    }
  });

  it('send a replaced code once or withdraw it, never both, while senders race the merchant', async () => {
    const reissues = await Promise.all(Array.from({ length: 12 }, () => codeReissue(false)));
    const sent: string[] = [];
    const senders = [senderOver(sent), senderOver(sent)];
    await Promise.all([
      ...senders.map((s) => s.sendDue(new Date())),
      ...reissues.map((r) => r.issueAgain()),
    ]);
    // Whatever a sender held when it was withdrawn has been recorded; the new codes go now.
    for (let round = 0; round < 2; round++) await senders[round].sendDue(new Date());

    // What reached this test's people (an earlier test's new codes may have gone too).
    const firsts = reissues.flatMap((r) => r.first);
    const ours = new Set(firsts.map((m) => m.recipient));
    const reached = sent.filter((line) => ours.has(line.slice(0, line.indexOf(' '))));
    let firstSent = 0;
    for (const m of firsts) {
      const record = await store.notifications.get(m._id);
      const times = reached.filter((line) => line === `${m.recipient} ${m.text}`).length;
      if (record?.status === 'SENT') {
        firstSent++;
        expect(times).toBe(1);
      } else {
        expect(record?.status).toBe('SUPERSEDED');
        expect(times).toBe(0);
      }
      // Each person's new code, once.
      const fresh = reached.filter(
        (line) => line.startsWith(`${m.recipient} `) && line !== `${m.recipient} ${m.text}`,
      );
      expect(fresh).toHaveLength(1);
      expect(fresh[0]).toMatch(/your new collection code is \d{6}/);
    }
    expect(reached).toHaveLength(firstSent + firsts.length);
  });

  /** A delivery coming back to its sender, whose return code is yet to be sent. */
  async function returning(status = 'RETURNING') {
    const deliveryId = randomUUID();
    const tag = String(randomInt(1e7, 1e8));
    const contact = { name: 'Ada', phone: `+23481${tag}`, email: `ada-${tag}@example.com` };
    const now = new Date();
    const origin = {
      _id: `${deliveryId}:origin`,
      userId: randomUUID(),
      deliveryId,
      role: 'origin',
      createdAt: now,
      updatedAt: now,
      fields: {
        contactName: contact.name,
        contactPhone: contact.phone,
        contactEmail: contact.email,
      },
    };
    await models.Address.create(origin);
    const proof = returnProof(
      { _id: deliveryId, requireCollectionProofCode: true, payOnDelivery: null, proofs: [] },
      new Date(),
    );
    const delivery = {
      _id: deliveryId,
      trackingId: `P2P-${deliveryId.slice(0, 8)}`,
      originId: origin._id,
      destinationId: `${deliveryId}:destination`,
      lifecycle: { status },
      proofs: [proof],
    } as unknown as DeliveryRecord;
    const proofs = new ProofChecks(store, PROOF_SECRET, 'staging');
    return { delivery, proof: proof as ProofRecord, contact, proofs };
  }

  /** What the senders of two replicas send now, and to whom. */
  async function sentNow(): Promise<string[]> {
    const sent: string[] = [];
    const senders = [senderOver(sent), senderOver(sent)];
    await Promise.all(senders.map((s) => s.sendDue(new Date())));
    return sent;
  }

  it('send a returning delivery’s sender one return code, however often and at once its sending is settled', async () => {
    const { delivery, proof, contact, proofs } = await returning();
    // No code yet: a courier's code is refused without spending a try.
    await expect(proofs.check(delivery._id, proof, '123456')).rejects.toMatchObject({
      code: 409,
      message: expect.stringMatching(/No return code has been sent to the sender yet/),
    });
    expect(await models.ProofAttempt.countDocuments({ _id: new RegExp(`^${proof.id}:`) })).toBe(0);

    // Its writer and the sweep, one after the other: one code.
    await proofs.sendReturnCode(delivery);
    await proofs.sendReturnCode(delivery);
    const sent = (await sentNow()).filter(
      (line) => line.includes(contact.phone) || line.includes(contact.email),
    );
    expect(sent).toHaveLength(2);
    for (const line of sent)
      expect(line).toMatch(/is coming back to you: your return code is \d{6}\./);
    const code = /code is (\d{6})/.exec(sent[0])?.[1] as string;
    expect(sent[1]).toContain(code);
    await expect(proofs.check(delivery._id, proof, code)).resolves.toEqual({ id: proof.id, code });

    // Ten settling at once (a writer slower than the sweep's grace, many times over): one
    // number taken, one code, once a channel.
    const racing = await returning();
    await Promise.all(
      Array.from({ length: 10 }, () => racing.proofs.sendReturnCode(racing.delivery)),
    );
    expect(await store.proofCode(racing.proof.id, 1)).not.toBeNull();
    expect(await store.proofCode(racing.proof.id, 2)).toBeNull();
    const reached = (await sentNow()).filter(
      (line) => line.includes(racing.contact.phone) || line.includes(racing.contact.email),
    );
    expect(reached).toHaveLength(2);
    const first = /code is (\d{6})/.exec(reached[0])?.[1] as string;
    expect(reached[1]).toContain(first);
    await expect(
      racing.proofs.check(racing.delivery._id, racing.proof, first),
    ).resolves.toMatchObject({ code: first });
    // Every new code the merchant may issue is still theirs to issue.
    const addresses = new Map([
      [racing.delivery.originId, (await store.address(racing.delivery.originId))!],
    ]);
    for (let n = 2; n <= MAX_PROOF_CODES; n++) {
      await racing.proofs.issueAgain(racing.delivery, racing.proof.id, addresses);
    }
    expect(await store.proofCode(racing.proof.id, MAX_PROOF_CODES)).not.toBeNull();
  });

  it('send the first return code again, the same, when its queueing failed', async () => {
    const { delivery, proof, contact, proofs } = await returning();
    const failed = jest.spyOn(store, 'enqueue').mockRejectedValueOnce(new Error('database busy'));
    try {
      await expect(proofs.sendReturnCode(delivery)).rejects.toThrow('database busy');
    } finally {
      failed.mockRestore();
    }
    // The sweep settles it again: the code the failed call made, under its number.
    const claimed = await store.proofCode(proof.id, 1);
    await proofs.sendReturnCode(delivery);
    expect(await store.proofCode(proof.id, 1)).toBe(claimed);
    expect(await store.proofCode(proof.id, 2)).toBeNull();
    const sent = (await sentNow()).filter((line) => line.includes(contact.phone));
    expect(sent).toEqual([
      expect.stringMatching(/is coming back to you: your return code is \d{6}/),
    ]);
    const code = /code is (\d{6})/.exec(sent[0])?.[1] as string;
    await expect(proofs.check(delivery._id, proof, code)).resolves.toEqual({ id: proof.id, code });

    // Returned meanwhile (an operator recorded it): nothing is sent.
    const over = await returning('RETURNED');
    await over.proofs.sendReturnCode(over.delivery);
    expect(await store.proofCode(over.proof.id, 1)).toBeNull();
    expect(
      await store.anyNotificationStored(proofCodeMessageIds(over.delivery._id, 'RETURN', 1)),
    ).toBe(false);
  });
});
