import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import type mongoose from 'mongoose';
import { ORDER_FAULT_POINTS, type OrderFaultPoint } from '../../libs/config';
import { ABANDONED } from '../../services/order/requests';
import { postForm, pagePath } from '../support/checkout';
import {
  balanceOf,
  credit,
  entriesOf,
  freePackages,
  getDelivery,
  ledgerIsClean,
  requestDelivery,
  savePackage,
  type Party,
} from '../support/deliveries';
import { eventually } from '../support/eventually';
import { createUserWithKey, expectErrorEnvelope, request, type Reply } from '../support/http';
import {
  dropDatabases,
  isolation,
  startNode,
  type NodeProcess,
  openServiceDatabase,
} from '../support/stack';

/**
 * A delivery request is a saga across four services. Here the order service runs in its own
 * process, and a fault switch (ORDER_FAULT, honoured only under tests) kills it with SIGKILL
 * at each point of a request. A fresh order process's sweep must then finish or undo the
 * request: never a package held by a delivery that does not exist, a debit without a
 * delivery, or a paid delivery marked unpaid; and a retry with the same key must agree.
 */
const iso = isolation();
let rest: NodeProcess;
let payment: NodeProcess | undefined;
let order: NodeProcess | undefined;
let db: mongoose.Connection;
let redis: Redis;

const startOrder = (fault?: OrderFaultPoint) =>
  startNode({
    services: 'order',
    iso,
    env: {
      NODE_ENV: 'test',
      ORDER_FAULT: fault,
      ORDER_SWEEP_INTERVAL_MS: '250',
      // The sweep takes over a request only once the request itself could no longer be
      // under way; the config requires the first to exceed the second.
      REQUEST_TIMEOUT_MS: '5000',
      ORDER_STALE_REQUEST_MS: '6000',
    },
  });

const REST_ENV = {
  REQUEST_TIMEOUT_MS: '20000',
  STOP_GRACE_MS: '25000',
  PAYMENT_SWEEP_INTERVAL_MS: '200',
  PAYMENT_EVENT_RETRY_MS: '500',
};
/** Payment in a process of its own, so that a test can take it away; up once the gateway reaches it. */
async function startPayment(): Promise<NodeProcess> {
  const node = await startNode({ services: 'payment', iso, env: REST_ENV });
  const someone = await createUserWithKey(rest.url);
  await eventually(async () => expect((await walletOf(rest.url, someone.key)).status).toBe(200), {
    timeout: 30_000,
  });
  return node;
}

const walletOf = (base: string, key: string) =>
  request(base, 'GET', '/api/wallet', { headers: { 'api-key': key } });

beforeAll(async () => {
  rest = await startNode({
    services: 'gateway,account,geo,pricing,package,courier-matching,webhook',
    iso,
    env: REST_ENV,
  });
  payment = await startPayment();
  db = await openServiceDatabase(iso, 'order');
  redis = new Redis(process.env.REDIS_URL as string);
}, 120_000);

afterAll(async () => {
  redis?.disconnect();
  await db?.close();
  await order?.stop();
  await payment?.stop();
  await rest?.stop();
  await dropDatabases(iso);
});

afterEach(async () => {
  // A graceful stop says goodbye: the gateway forgets this order node at once.
  await order?.stop();
  order = undefined;
});

/** GET of a delivery that does not exist: 404 from an order node, 503 when there is none. */
const probe = async (who: Party) => (await getDelivery(rest.url, who, randomUUID())).status;

/** Starts an order process and waits until the gateway reaches it. */
async function orderUp(who: Party, fault?: OrderFaultPoint): Promise<void> {
  order = await startOrder(fault);
  await eventually(async () => expect(await probe(who)).toBe(404), { timeout: 30_000 });
}

/**
 * Sends the request that kills the order process, then waits until the gateway has noticed
 * the death (its heartbeats stop: 3-7 s), so that no later call is sent to the dead node.
 */
async function crash(send: () => Promise<Reply>, who: Party): Promise<Reply> {
  const crashed = await send();
  expect(order?.child.signalCode).toBe('SIGKILL');
  await eventually(async () => expect(await probe(who)).toBe(503), { timeout: 30_000 });
  order = undefined;
  return crashed;
}

/** The one request the crash left half-done (the delivery is named after it). */
async function halfDone() {
  const pending = await db.collection<{ _id: string }>('pending_requests').find().toArray();
  expect(pending).toHaveLength(1);
  return pending[0] as { _id: string; built?: { delivery?: any } }; // eslint-disable-line @typescript-eslint/no-explicit-any -- a stored document, read as the test needs it
}

/** The gateway keeps a key whose request's outcome it could not learn; that hold has run out. */
async function forgetIdempotencyKeys(): Promise<void> {
  const keys = await redis.keys(`${iso.namespace}:idempotency:*`);
  if (keys.length > 0) await redis.del(...keys);
}

/** Waits until the new order process's sweep has taken over every request left half-done. */
async function swept(): Promise<void> {
  await eventually(
    async () => expect(await db.collection('pending_requests').countDocuments()).toBe(0),
    { timeout: 60_000, interval: 250 },
  );
}

/** Where the request stopped decides: finished once the wallet was debited, else undone. */
const FINISHED: Record<OrderFaultPoint, boolean> = {
  'after-claim': false,
  'after-packages': false,
  'before-debit': false,
  'before-ready': false,
  'after-ready': true,
  'after-outcome': true,
};

describe.each(ORDER_FAULT_POINTS)('a wallet-paid request whose order process dies %s', (point) => {
  it('is finished or undone by the next process’s sweep, and a retry with its key agrees', async () => {
    const merchant = await createUserWithKey(rest.url);
    await credit(rest.url, merchant, 10_000);
    const packageId = await savePackage(rest.url, merchant);
    const key = randomUUID();
    const send = () =>
      requestDelivery(rest.url, merchant, [packageId], {}, { 'Idempotency-Key': key });

    await orderUp(merchant, point);
    const crashed = await crash(send, merchant);
    expect([503, 504]).toContain(crashed.status);
    const { _id: deliveryId } = await halfDone();

    await orderUp(merchant);
    await swept();
    const outcome = await db
      .collection<{ _id: string; outcome: string }>('request_outcomes')
      .findOne({ _id: deliveryId });
    expect(outcome?.outcome).toBe(FINISHED[point] ? 'CREATED' : 'REFUSED');
    await forgetIdempotencyKeys();
    const retried = await send();
    const debits = (await entriesOf(rest.url, merchant)).filter((e) => e.type === 'DEBIT');

    if (FINISHED[point]) {
      expect(retried.status).toBe(201);
      expect(retried.body.data.deliveryId).toBe(deliveryId);
      expect(retried.body.data.status).toBe('PENDING');
      expect(retried.body.data.deliveryFee.creator.paid).toBe(true);
      const stored = await getDelivery(rest.url, merchant, deliveryId);
      expect(stored.body.data.p2pDelivery.status).toBe('PENDING');
      // One debit, of the total the delivery stores.
      expect(debits).toHaveLength(1);
      expect(debits[0].reference).toBe(deliveryId);
      expect(await balanceOf(rest.url, merchant)).toBe(
        (10_000 - Math.abs(Number(debits[0].amount))).toFixed(2),
      );
      expect(await freePackages(rest.url, merchant)).not.toContain(packageId);
    } else {
      expectErrorEnvelope(retried, 409, ABANDONED);
      expect((await getDelivery(rest.url, merchant, deliveryId)).status).toBe(404);
      // Nothing kept: no delivery, the package free, the wallet as it was.
      expect(
        await db.collection<{ _id: string }>('deliveries').countDocuments({ _id: deliveryId }),
      ).toBe(0);
      expect(await freePackages(rest.url, merchant)).toContain(packageId);
      if (point === 'before-ready') {
        // Debited, then stopped before the record was saved: the debit given back once.
        expect(debits.map((d) => d.reference)).toEqual([deliveryId]);
        const refunds = (await entriesOf(rest.url, merchant)).filter((e) => e.type === 'REFUND');
        expect(refunds).toHaveLength(1);
        expect(Number(refunds[0].amount)).toBe(Math.abs(Number(debits[0].amount)));
      } else {
        expect(debits).toEqual([]);
      }
      expect(await balanceOf(rest.url, merchant)).toBe('10000.00');
    }
    expect(await ledgerIsClean(rest.url)).toBe(true);
  }, 180_000);
});

describe('a wallet-paid request undone while the payment service is away', () => {
  it('stays pending until its debit can be given back, and is given back once', async () => {
    const merchant = await createUserWithKey(rest.url);
    await credit(rest.url, merchant, 10_000);
    const packageId = await savePackage(rest.url, merchant);
    await orderUp(merchant, 'before-ready');
    await crash(() => requestDelivery(rest.url, merchant, [packageId]), merchant);
    const { _id: deliveryId } = await halfDone();
    expect(await balanceOf(rest.url, merchant)).not.toBe('10000.00');

    // No node runs payment.refund (moleculer's 404): not the answer that nothing was debited.
    await payment?.stop();
    payment = undefined;
    await orderUp(merchant);
    await eventually(
      async () =>
        expect(
          await db.collection('request_outcomes').findOne({ _id: deliveryId as never }),
        ).toMatchObject({ outcome: 'REFUSED' }),
      { timeout: 60_000, interval: 250 },
    );
    // Several sweeps later the request is still pending, its package still held.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await halfDone())._id).toBe(deliveryId);
    expect(await freePackages(rest.url, merchant)).not.toContain(packageId);

    payment = await startPayment();
    await swept();
    const refunds = (await entriesOf(rest.url, merchant)).filter((e) => e.type === 'REFUND');
    expect(refunds.map((r) => r.reference)).toEqual([`refund:${deliveryId}`]);
    expect(await balanceOf(rest.url, merchant)).toBe('10000.00');
    expect(await freePackages(rest.url, merchant)).toContain(packageId);
    expect(await ledgerIsClean(rest.url)).toBe(true);
  }, 180_000);
});

describe('a wallet-paid request refused while the payment service is away', () => {
  it('is answered its refusal, and undone by the sweep once payment is back', async () => {
    const merchant = await createUserWithKey(rest.url);
    await orderUp(merchant);
    await payment?.stop();
    payment = undefined;
    // Not one of the merchant's packages: refused before anything is taken, but its undoing
    // asks payment to give back a debit that may have been made.
    const refused = await requestDelivery(rest.url, merchant, [randomUUID()]);
    expectErrorEnvelope(refused, 400, 'Invalid packages selection');
    expect(await db.collection('pending_requests').countDocuments()).toBe(1);
    payment = await startPayment();
    await swept();
  }, 120_000);
});

describe('a checkout-paid request whose order process dies after-ready', () => {
  it('is finished by the sweep, and the checkout paid meanwhile marks it paid, crediting nothing back', async () => {
    const merchant = await createUserWithKey(rest.url);
    const packageId = await savePackage(rest.url, merchant);
    const key = randomUUID();
    const send = () =>
      requestDelivery(
        rest.url,
        merchant,
        [packageId],
        { paymentMethodType: 'CHECKOUT' },
        { 'Idempotency-Key': key },
      );

    await orderUp(merchant, 'after-ready');
    await crash(send, merchant);
    // The payer pays while no order process runs: the payment service keeps the outcome
    // until an order process acknowledges it.
    const pending = await halfDone();
    const deliveryId = pending._id;
    const url = pending.built?.delivery?.payment?.creator?.checkoutUrl as string;
    expect(url).toEqual(expect.stringContaining('/checkout/'));
    expect((await postForm(rest.url, `${pagePath(url)}/pay`)).status).toBe(303);

    await orderUp(merchant);
    await swept();
    await eventually(
      async () => {
        const got = await getDelivery(rest.url, merchant, deliveryId);
        expect(got.body.data.p2pDelivery.status).toBe('PENDING');
      },
      { timeout: 30_000 },
    );
    await forgetIdempotencyKeys();
    const retried = await send();
    expect(retried.status).toBe(201);
    expect(retried.body.data.data.authorization_url).toBe(url);
    // Paid once by checkout, for this delivery: no money came back to the wallet.
    expect(await balanceOf(rest.url, merchant)).toBe('0.00');
    expect(await freePackages(rest.url, merchant)).not.toContain(packageId);
    expect(await ledgerIsClean(rest.url)).toBe(true);
  }, 180_000);
});
