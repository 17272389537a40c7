import { randomUUID } from 'node:crypto';
import { ServiceBroker } from 'moleculer';
import type { Config } from '../../libs/config';
import { nameBasedId } from '../../libs/ids';
import { Checkouts } from '../../services/payment/checkout-actions';
import { paystackProvider } from '../../services/payment/checkout-providers';
import { CheckoutStore } from '../../services/payment/checkout-store';
import { LedgerStore } from '../../services/payment/ledger-store';
import { definePaymentModels } from '../../services/payment/store';
import { FakePaystack, outcomeListener, walletFundingParams } from '../support/checkout';
import { useStoreDatabase } from '../support/store-database';

/**
 * A checkout whose start stopped between its two inserts stays on the sweep's list, due at its
 * session's time, however a start made again and a sweep interleave (docs/payments.md).
 *
 * An outcome's event is sent once across replicas (decision 120): two sweeps at once, a sweep
 * racing the provider's webhook, a claimant that died after its claim, two sweeps resending
 * one outbox entry. Each replica is a `Checkouts` of its own over the real database, its
 * events broadcast by one broker to a listener; the point where the replicas meet (the first
 * write of each towards the send) is a gate the test opens once all have reached it, so the
 * race is played, not hoped for.
 */

const SECRET = 'sk_test_waybill_fake_sends_0123456789';
const fake = new FakePaystack(SECRET);
const db = useStoreDatabase('checkout_sends', definePaymentModels);
type Models = typeof db.models;
const listener = outcomeListener();
const broker = new ServiceBroker({ logger: false });
broker.createService(listener.schema);

beforeAll(async () => {
  await fake.start();
  await broker.start();
});
afterAll(async () => {
  await broker.stop();
  await fake.stop();
});

const quiet = { info() {}, warn() {}, error() {} };

/** A gate `parties` callers pass together; `arrived` counts those waiting at it. */
function gate(parties: number) {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  const state = {
    arrived: 0,
    async pass() {
      state.arrived++;
      if (state.arrived === parties) open();
      await opened;
    },
  };
  return state;
}

/** A write a replica sends: an insert or an update of one document of a collection. */
type Write = { collection: string; op: 'create' | 'updateOne' };

/**
 * The models as one replica sees them, with `before(write)` awaited before each insert and
 * update it sends.
 */
function hooked(before: (write: Write) => Promise<void>): Models {
  const wrapped = Object.entries(db.models).map(([name, model]) => {
    const replica = Object.create(model) as typeof model;
    const collection = model.collection.collectionName;
    for (const op of ['create', 'updateOne'] as const) {
      const original = model[op] as (...args: unknown[]) => Promise<unknown>;
      (replica as unknown as Record<string, unknown>)[op] = async (...args: unknown[]) => {
        await before({ collection, op });
        return original.apply(model, args);
      };
    }
    return [name, replica];
  });
  return Object.fromEntries(wrapped) as Models;
}

/** A replica's first write towards a send: its claim, or an outbox insert made without one. */
const firstSendWrite = ({ collection, op }: Write) =>
  op === 'create' && (collection === 'checkout_outbox' || collection === 'checkout_sends');

/**
 * A payment replica. `at(write)` runs before each of its writes; `eventRetryMs` is the lease of
 * a send's claim and the wait before a resend (long: no resend comes by itself in a test);
 * `store` may watch the replica's store.
 */
function replica(
  at: (write: Write) => Promise<void> = async () => {},
  eventRetryMs = 3_600_000,
  checkoutTtlMs = 1,
  store?: (store: CheckoutStore) => CheckoutStore,
): Checkouts {
  const models = hooked(at);
  const ownStore = new CheckoutStore(() => models);
  const config: Config['payment'] = {
    provider: 'paystack',
    publicBaseUrl: 'http://localhost',
    paystack: { baseUrl: fake.url, secretKey: SECRET, timeoutMs: 5_000 },
    checkoutTtlMs,
    sweepIntervalMs: 3_600_000,
    eventRetryMs,
    lateChecksMs: [3_600_000],
  };
  return new Checkouts({
    config,
    store: store ? store(ownStore) : ownStore,
    ledger: new LedgerStore(() => models),
    provider: paystackProvider(config.paystack),
    broadcaster: () => broker,
    logger: () => quiet,
  });
}

/** Meets the other replicas at its first write towards a send, once. */
function meetingAt(g: ReturnType<typeof gate>, which: (write: Write) => boolean = firstSendWrite) {
  let met = false;
  return async (write: Write) => {
    if (met || !which(write)) return;
    met = true;
    await g.pass();
  };
}

/** A delivery's checkout opened at the provider and past its time (set so once opened). */
async function pastItsTime(): Promise<string> {
  // Opened within its time: a checkout that ended while it was opened is not handed out.
  const started = await replica(undefined, undefined, 60_000).start({
    ...walletFundingParams(randomUUID(), 2_500),
    purpose: { kind: 'DELIVERY', id: randomUUID() },
  });
  const { reference } = started.data;
  await db.models.CheckoutSession.updateOne(
    { _id: reference },
    { $set: { expiresAt: new Date(Date.now() - 1_000) } },
  );
  await db.models.CheckoutPending.updateOne(
    { _id: reference },
    { $set: { expiresAt: new Date(Date.now() - 1_000) } },
  );
  return reference;
}

const eventsOf = (reference: string) => listener.log.of(reference).map((e) => e.name);

/** A sweep that claimed EXPIRED and stopped before carrying it out. */
const claimExpired = (reference: string) =>
  db.models.CheckoutOutcome.create({
    _id: reference,
    status: 'EXPIRED',
    source: 'sweep',
    decidedAt: new Date(),
  });

/** The webhook params of a `charge.success` of the transaction, signed as the provider signs. */
function webhookOf(reference: string) {
  const body = JSON.stringify({ event: 'charge.success', data: { reference } });
  return {
    rawBody: Buffer.from(body).toString('base64'),
    headers: { 'x-paystack-signature': fake.sign(body) },
  };
}

describe('an outcome’s event across replicas', () => {
  it('is sent once by two sweeps that find its expiry claimed and not carried out', async () => {
    const reference = await pastItsTime();
    await claimExpired(reference);
    const g = gate(2);
    await Promise.all([replica(meetingAt(g)).sweep(), replica(meetingAt(g)).sweep()]);
    expect(g.arrived).toBe(2);
    expect(eventsOf(reference)).toEqual(['payment.failed']);
    await replica().sweep();
    expect(eventsOf(reference)).toEqual(['payment.failed']);
    expect(await db.models.CheckoutPending.findById(reference).lean()).toBeNull();
  });

  it('is sent once by a sweep expiring the checkout and the webhook of its payment, which is credited once', async () => {
    const reference = await pastItsTime();
    const g = gate(2);
    // The sweep is told `abandoned`; the payer pays while it carries its expiry out.
    let verifications = 0;
    fake.beforeVerify = (asked) => {
      if (asked !== reference) return;
      verifications++;
      if (verifications === 2) fake.transactions.get(reference)!.status = 'success';
    };
    try {
      const sweeping = replica(meetingAt(g)).sweep();
      await new Promise<void>((resolve) => {
        const poll = setInterval(() => g.arrived === 1 && (clearInterval(poll), resolve()), 5);
      });
      const webhooking = replica(meetingAt(g)).webhook(webhookOf(reference));
      const [, handled] = await Promise.all([sweeping, webhooking]);
      expect(handled).toBe(false);
    } finally {
      fake.beforeVerify = undefined;
    }
    expect(verifications).toBe(2);
    expect(g.arrived).toBe(2);
    expect(eventsOf(reference)).toEqual(['payment.failed']);
    const credits = await db.models.Entry.find({ reference: `refund:${reference}` }).lean();
    expect(credits).toHaveLength(1);
    await replica().sweep();
    expect(eventsOf(reference)).toEqual(['payment.failed']);
    expect(await db.models.CheckoutPending.findById(reference).lean()).toBeNull();
  });

  it('is sent once, after its lease, when the replica that claimed its send died before sending', async () => {
    const reference = await pastItsTime();
    // This replica claims the send, then dies before the event reaches the outbox.
    const dying = replica(async ({ collection, op }) => {
      if (collection === 'checkout_outbox' && op === 'create') throw new Error('process died');
    });
    await dying.sweep();
    expect(eventsOf(reference)).toEqual([]);
    // Its failed look put it behind the others, a sweep's interval on (an hour here): due again.
    await db.models.CheckoutPending.updateOne(
      { _id: reference },
      { $set: { expiresAt: new Date(Date.now() - 1_000) } },
    );
    // Within the lease, the claim stands: nobody sends.
    await replica().sweep();
    expect(eventsOf(reference)).toEqual([]);
    expect(await db.models.CheckoutPending.findById(reference).lean()).not.toBeNull();
    // Its lease over, two sweeps take over from it at once: one sends.
    await db.models.CheckoutSend.updateOne(
      { _id: reference },
      { $set: { claimedAt: new Date(Date.now() - 3_600_000) } },
    );
    const g = gate(2);
    await Promise.all([replica(meetingAt(g)).sweep(), replica(meetingAt(g)).sweep()]);
    expect(eventsOf(reference)).toEqual(['payment.failed']);
    expect(await db.models.CheckoutPending.findById(reference).lean()).toBeNull();
    await replica().sweep();
    expect(eventsOf(reference)).toEqual(['payment.failed']);
  });

  it('is resent once by two sweeps that find it due in the outbox', async () => {
    const reference = await pastItsTime();
    await replica().sweep();
    expect(eventsOf(reference)).toEqual(['payment.failed']);
    await db.models.CheckoutOutbox.updateOne(
      { _id: reference },
      { $set: { nextAttemptAt: new Date(Date.now() - 1_000) } },
    );
    const g = gate(2);
    const postponing = ({ collection, op }: Write) =>
      collection === 'checkout_outbox' && op === 'updateOne';
    await Promise.all([
      replica(meetingAt(g, postponing)).sweep(),
      replica(meetingAt(g, postponing)).sweep(),
    ]);
    expect(g.arrived).toBe(2);
    expect(eventsOf(reference)).toEqual(['payment.failed', 'payment.failed']);
  });
});

describe('a checkout whose start stopped between its two inserts', () => {
  const HOUR = 3_600_000;
  /** A start that lists its checkout as pending, then stops before it stores the session. */
  const stopsBeforeSession = () =>
    replica(async ({ collection, op }) => {
      if (collection === 'checkout_sessions' && op === 'create') throw new Error('stopped');
    });
  const pendingOf = async (reference: string) =>
    (await db.models.CheckoutPending.findById(reference).lean())?.expiresAt;

  it('expires at the time of the start made again, not of the one that stopped', async () => {
    const params = walletFundingParams(randomUUID(), 3_000);
    await expect(stopsBeforeSession().start(params)).rejects.toThrow('stopped');
    const { reference } = (await replica(undefined, HOUR, HOUR).start(params)).data;
    const session = await db.models.CheckoutSession.findById(reference).lean();

    // Listed for the first start's time (1 ms), past: the sweep moves it to the session's.
    await replica().sweep();
    expect(await db.models.CheckoutOutcome.findById(reference).lean()).toBeNull();
    expect(await pendingOf(reference)).toEqual(session?.expiresAt);
  });

  it('stays listed when a sweep drops it as sessionless as the start made again stores it', async () => {
    const params = walletFundingParams(randomUUID(), 3_100);
    await expect(stopsBeforeSession().start(params)).rejects.toThrow('stopped');
    const keyId = nameBasedId('checkout', params.userId, params.idempotencyKey);
    const reference = (await db.models.CheckoutKey.findById(keyId).lean())?.reference as string;
    expect(await pendingOf(reference)).toBeDefined();
    // The sweep finds no session, then waits while the start is made again.
    let looked!: () => void;
    const sweepLooked = new Promise<void>((resolve) => (looked = resolve));
    let goOn!: () => void;
    const startDone = new Promise<void>((resolve) => (goOn = resolve));
    const sweeping = replica(undefined, HOUR, 1, (store) => {
      const watched = Object.create(store) as CheckoutStore;
      watched.session = async (ref) => {
        const found = await store.session(ref);
        if (ref === reference && !found) {
          looked();
          await startDone;
        }
        return found;
      };
      return watched;
    }).sweep();
    await sweepLooked;
    await replica(undefined, HOUR, HOUR).start(params);
    goOn();
    await sweeping;

    const session = await db.models.CheckoutSession.findById(reference).lean();
    expect(session).not.toBeNull();
    expect(await pendingOf(reference)).toEqual(session?.expiresAt);
  });

  it('stays listed when a sweep drops it as sessionless just before the start made again stores it', async () => {
    const params = walletFundingParams(randomUUID(), 3_200);
    await expect(stopsBeforeSession().start(params)).rejects.toThrow('stopped');
    let swept = false;
    const again = replica(
      async ({ collection, op }) => {
        if (collection !== 'checkout_sessions' || op !== 'create' || swept) return;
        swept = true;
        await replica().sweep();
      },
      HOUR,
      HOUR,
    );
    const { reference } = (await again.start(params)).data;
    expect(swept).toBe(true);
    const session = await db.models.CheckoutSession.findById(reference).lean();
    expect(await pendingOf(reference)).toEqual(session?.expiresAt);
  });
});

describe('a sweep’s look at a checkout', () => {
  /** A delivery's checkout of an hour, opened at the provider. */
  async function openedForAnHour(checkouts: Checkouts): Promise<string> {
    const started = await checkouts.start({
      ...walletFundingParams(randomUUID(), 2_500),
      purpose: { kind: 'DELIVERY', id: randomUUID() },
    });
    return started.data.reference;
  }

  it('comes when its close said, with its charge under way, not at its own later time', async () => {
    const checkouts = replica(undefined, undefined, 3_600_000);
    const reference = await openedForAnHour(checkouts);
    fake.transactions.get(reference)!.status = 'ongoing';
    // Its delivery cancelled: closed while the payer's transfer is under way.
    expect(await checkouts.close(reference)).toEqual({ status: 'PENDING' });
    // The time its close named comes, an hour before the checkout's own; the charge settled.
    await db.models.CheckoutPending.updateOne(
      { _id: reference },
      { $set: { expiresAt: new Date(Date.now() - 1_000) } },
    );
    fake.transactions.get(reference)!.status = 'success';
    await replica(undefined, undefined, 3_600_000).sweep();
    expect(await db.models.CheckoutOutcome.findById(reference).lean()).toMatchObject({
      status: 'PAID',
    });
  });

  it('that failed puts it behind the others: an expiry, and a late check', async () => {
    const checkouts = replica(undefined, undefined, 3_600_000);
    const [expiring, watched] = [
      await openedForAnHour(checkouts),
      await openedForAnHour(checkouts),
    ];
    const past = new Date(Date.now() - 1_000);
    await db.models.CheckoutPending.updateOne({ _id: expiring }, { $set: { expiresAt: past } });
    await db.models.CheckoutSession.updateOne({ _id: expiring }, { $set: { expiresAt: past } });
    await db.models.CheckoutPending.deleteOne({ _id: watched });
    await new CheckoutStore(() => db.models).watchLate(watched, past, past);
    Object.assign(fake.fail, { verify: 2, mode: 'error' });
    try {
      await checkouts.sweep();
    } finally {
      fake.fail.verify = 0;
    }
    const soon = Date.now() + 60_000;
    const pending = await db.models.CheckoutPending.findById(expiring).lean();
    expect(pending?.expiresAt.getTime()).toBeGreaterThan(soon);
    const lateCheck = await db.models.CheckoutLateCheck.findById(watched).lean();
    expect(lateCheck).toMatchObject({ checks: 0 });
    expect(lateCheck?.nextCheckAt.getTime()).toBeGreaterThan(soon);
  });
});

/** A point one replica tells another it has reached (`fire`), and the wait for it. */
function signal() {
  let fire!: () => void;
  const fired = new Promise<void>((resolve) => (fire = resolve));
  return { fired, fire };
}

/** A replica of checkouts of an hour that says so at its insert into `collection`, then waits. */
const pausingAtInsert = (collection: string, reached: () => void, until: Promise<void>) =>
  replica(
    async (write) => {
      if (write.collection !== collection || write.op !== 'create') return;
      reached();
      await until;
    },
    undefined,
    3_600_000,
  );

describe('a checkout closed while a start opens it', () => {
  it('is watched for a late payment when the start handed its page out before the close claimed EXPIRED', async () => {
    // The start records the opening only once the close has read none and is about to claim
    // EXPIRED, and reads the outcome before that claim lands: its page goes out, and the close
    // must see the opening after its claim, or nothing watches a page a payer holds.
    const [closeAtClaim, pageOut, startAtOpening] = [signal(), signal(), signal()];
    const starting = pausingAtInsert('checkout_opened', startAtOpening.fire, closeAtClaim.fired);
    const closing = pausingAtInsert('checkout_outcomes', closeAtClaim.fire, pageOut.fired);
    const start = starting.start({
      ...walletFundingParams(randomUUID(), 2_500),
      purpose: { kind: 'DELIVERY', id: randomUUID() },
    });
    await startAtOpening.fired;
    const reference = (await db.models.CheckoutSession.findOne().sort({ createdAt: -1 }).lean())
      ?._id as string;
    const close = closing.close(reference);
    const started = await start;
    expect(started.data.authorization_url).toMatch(/^https:\/\//);
    pageOut.fire();
    expect(await close).toEqual({ status: 'EXPIRED' });
    expect(await db.models.CheckoutLateCheck.findById(reference).lean()).toMatchObject({
      checks: 0,
    });
  });
});
