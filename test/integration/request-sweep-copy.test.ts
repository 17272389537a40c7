import { randomUUID } from 'node:crypto';
import type { Logger } from 'moleculer';
import type mongoose from 'mongoose';
import { Announcer } from '../../services/order/announcer';
import { ProofChecks } from '../../services/order/proofs';
import { courierViewer } from '../../services/order/courier-view';
import { Outbox } from '../../services/order/outbox';
import * as codes from '../../services/order/codes';
import { ABANDONED, DeliveryRequests } from '../../services/order/requests';
import { Settlement } from '../../services/order/settlement';
import { defineOrderModels, OrderStore, type PendingRequest } from '../../services/order/store';
import { DeliveryTransitions } from '../../services/order/transitions';
import { loadConfig } from '../../libs/config';
import { authUserOf } from '../../libs/service';
import { validate } from '../../libs/validation';
import { requestParams } from '../../services/order/schemas';
import {
  balanceOf,
  cancelDelivery,
  credit,
  DESTINATION,
  entriesOf,
  freePackages,
  getDelivery,
  ledgerIsClean,
  ORIGIN,
  requestDelivery,
  savePackage,
} from '../support/deliveries';
import { eventually } from '../support/eventually';
import { adminHeaders, request } from '../support/http';
import { useMerchantStack } from '../support/merchant-stack';
import { openServiceDatabase } from '../support/stack';

/**
 * A request that ended must never be undone, nor run again, by what read it before its end.
 * The order sweep lists the requests pending too long, then takes each over in turn, with
 * calls to other services between: the copy it holds of a request may be older than the
 * request's READY. A request that saved READY and claimed CREATED meanwhile (a slow write
 * under load) was paid and is stored: the sweep must never undo it from its old copy. And a
 * second run of a request with a key (a retry the gateway sent on for a lost node, a client's
 * retry while the first ran) may have looked for its outcome just before the first run ended.
 */
const stack = useMerchantStack({ internal: ['payment', 'package', 'account'] });
let db: mongoose.Connection;
let store: OrderStore;
let requests: DeliveryRequests;
let settlement: Settlement;

beforeAll(async () => {
  db = await openServiceDatabase(stack.iso, 'order');
  const models = defineOrderModels(db);
  store = new OrderStore(() => models);
  const config = loadConfig({ ...process.env, NAMESPACE: stack.iso.namespace });
  const logger = () => ({ warn: () => undefined, info: () => undefined }) as unknown as Logger;
  const shared = {
    store,
    services: () => stack.client,
    courierOf: courierViewer(config.courierPositions.onlineMs),
    logger,
  };
  const transitions = new DeliveryTransitions(store);
  const announcer = new Announcer({ ...shared, transitions });
  settlement = new Settlement({
    ...shared,
    outbox: new Outbox(store, config.notifications.publicBaseUrl, config.appEnv),
    proofs: new ProofChecks(store, config.order.proofCodeSecret, config.appEnv),
    announcer,
    scheduledSearchLeadMs: config.order.scheduledSearchLeadMs,
    answerWithinMs: 7_500,
  });
  requests = new DeliveryRequests({
    ...shared,
    config: config.order,
    transitions,
    settlement,
    announcer,
  });
});
afterAll(() => db?.close());

it('never undoes a request it listed before READY and finds CREATED: nothing given back, the packages kept', async () => {
  const base = stack.node.url;
  const { alice } = stack;
  await credit(base, alice, 10_000);
  const packageId = await savePackage(base, alice);
  const key = randomUUID();
  const created = await requestDelivery(base, alice, [packageId], {}, { 'Idempotency-Key': key });
  expect(created.status).toBe(201);
  const deliveryId: string = created.body.data.deliveryId;
  const balance = await balanceOf(base, alice);

  // The document as the sweep read it while the request was still at its start.
  const startedAt = new Date(Date.now() - 60_000);
  const listedEarlier: PendingRequest = {
    _id: deliveryId,
    userId: alice.userId,
    stage: 'STARTED',
    walletDebit: true,
    createdAt: startedAt,
    updatedAt: startedAt,
  };
  expect(await requests.recover(listedEarlier)).toBe('created');

  const entries = await entriesOf(base, alice);
  expect(entries.filter((e) => e.type === 'REFUND')).toEqual([]);
  expect(await balanceOf(base, alice)).toBe(balance);
  expect(await freePackages(base, alice)).not.toContain(packageId);
  expect((await getDelivery(base, alice, deliveryId)).body.data.p2pDelivery.status).toBe('PENDING');
  const again = await requestDelivery(base, alice, [packageId], {}, { 'Idempotency-Key': key });
  expect(again.status).toBe(201);
  expect(again.body.data.deliveryId).toBe(deliveryId);
  expect(again.body.data.deliveryFee.creator.paid).toBe(true);
  expect(await ledgerIsClean(base)).toBe(true);
});

/**
 * The request as the order action hands it over, run as `merchant`'s (alice's unless named)
 * with `token` as its key's.
 */
async function runOf(token: string, merchant = stack.alice) {
  const user = authUserOf(await stack.client.call('account.getUser', { userId: merchant.userId }));
  const who = { user, apiKeyId: null, idempotencyToken: token, caller: stack.client };
  return (params: Record<string, unknown>) =>
    requests.create(
      validate(requestParams, {
        origin: ORIGIN,
        destination: DESTINATION,
        type: 'DROP_OFF',
        courierSelection: 'ANYONE',
        ...params,
      }),
      who,
    );
}

describe('a second run of a request that looked for its outcome just before the first ended', () => {
  /** The second run: it read no outcome at its start (the first had not claimed one yet). */
  async function lateTwin<T>(run: () => Promise<T>): Promise<T> {
    const outcome = jest.spyOn(store, 'outcome').mockResolvedValueOnce(null);
    try {
      return await run();
    } finally {
      outcome.mockRestore();
    }
  }

  /** A request run to its end, paid from the wallet, and how to run it again. */
  async function firstRun() {
    const base = stack.node.url;
    const { alice } = stack;
    await credit(base, alice, 10_000);
    const packageId = await savePackage(base, alice);
    const run = await runOf(randomUUID());
    const { delivery: first } = await run({ packagesId: [packageId] });
    return { base, alice, packageId, run, first, balance: await balanceOf(base, alice) };
  }

  it('answers the first run’s delivery and sends nothing of its own', async () => {
    const { base, alice, packageId, run, first, balance } = await firstRun();
    const sent = (await store.notificationsOf(first._id)).length;

    const { delivery: second } = await lateTwin(() => run({ packagesId: [packageId] }));
    expect(second._id).toBe(first._id);
    expect(second.trackingId).toBe(first.trackingId);
    expect(await store.notificationsOf(first._id)).toHaveLength(sent);
    expect(await store.pending(first._id)).toBeNull();
    expect(await balanceOf(base, alice)).toBe(balance);
  });

  it('gives nothing back on a refusal of its own even past its look, and its document is swept', async () => {
    const { base, alice, packageId, run, first, balance } = await firstRun();
    // The second run looked for the outcome twice before the first claimed it (at its start,
    // and once it held its own document), then was refused (asked otherwise).
    const outcome = jest
      .spyOn(store, 'outcome')
      .mockResolvedValueOnce(null)
      .mockResolvedValueOnce(null);
    const second = await run({ packagesId: [packageId], urgencyType: 'PRIORITY' }).catch(
      (err: Error) => err,
    );
    outcome.mockRestore();
    expect(second).toMatchObject({ code: 409 });
    const entries = await entriesOf(base, alice);
    expect(entries.filter((e) => e.type === 'REFUND')).toEqual([]);
    expect(await balanceOf(base, alice)).toBe(balance);
    expect(await freePackages(base, alice)).not.toContain(packageId);
    // Its document, left behind, is the sweep's: dropped, the delivery as it was.
    const left = await store.pending(first._id);
    expect(left).toMatchObject({ stage: 'STARTED' });
    expect(await requests.recover(left!)).toBe('created');
    expect(await store.pending(first._id)).toBeNull();
    expect((await getDelivery(base, alice, first._id)).body.data.trackingId).toBe(first.trackingId);
    expect(await balanceOf(base, alice)).toBe(balance);
  });

  it('never gives back the first run’s debit or packages on a refusal of its own', async () => {
    const { base, alice, packageId, run, first, balance } = await firstRun();

    // Priced otherwise by the time the second ran (here: asked otherwise), its debit under
    // the same reference would be refused; it ends with the first run's delivery instead.
    const second = await lateTwin(() =>
      run({ packagesId: [packageId], urgencyType: 'PRIORITY' }),
    ).catch((err: Error) => err);
    const entries = await entriesOf(base, alice);
    expect(entries.filter((e) => e.type === 'REFUND')).toEqual([]);
    expect(await balanceOf(base, alice)).toBe(balance);
    expect(await freePackages(base, alice)).not.toContain(packageId);
    expect(second).toMatchObject({ delivery: { _id: first._id, trackingId: first.trackingId } });
    expect(await ledgerIsClean(base)).toBe(true);
  });
});

describe('a request decided CREATED whose delivery a failed write left unstored', () => {
  /**
   * Runs a wallet-paid request here while the store fails one write of the delivery: its
   * first (`insertDelivery`), or the messages' after the record (`enqueue`).
   */
  async function createdUnstored(failing: 'insertDelivery' | 'enqueue' = 'insertDelivery') {
    const base = stack.node.url;
    const { alice } = stack;
    await credit(base, alice, 10_000);
    const packageId = await savePackage(base, alice);
    const balance = await balanceOf(base, alice);
    const run = await runOf(randomUUID());
    const write = jest
      .spyOn(store, failing)
      .mockRejectedValueOnce(new Error('connection reset by peer'));
    try {
      const { delivery, addresses } = await run({ packagesId: [packageId] });
      // Its stops as created: the answer reads none back from the store.
      expect(addresses.map((a) => a._id)).toEqual([delivery.originId, delivery.destinationId]);
      expect(write).toHaveBeenCalled();
      return { base, alice, packageId, delivery, balance };
    } finally {
      write.mockRestore();
    }
  }

  /** The wallet entries of `type` that name the delivery. */
  const entriesFor = async (base: string, type: string, deliveryId: string) =>
    (await entriesOf(base, stack.alice)).filter(
      (e) => e.type === type && String(e.reference).includes(deliveryId),
    );

  it('answers the delivery, paid once, and its first read through the API stores it', async () => {
    const { base, alice, packageId, delivery } = await createdUnstored();
    // Answered, not thrown: an error would send the client to pay for it again.
    expect(delivery.lifecycle.status).toBe('REQUEST_CREATED');
    expect(await store.delivery(delivery._id)).toBeNull();
    expect(await store.pending(delivery._id)).toMatchObject({ stage: 'READY' });
    expect(await entriesFor(base, 'DEBIT', delivery._id)).toHaveLength(1);
    // A stranger's read finds nothing, and writes nothing.
    expect((await getDelivery(base, stack.bob, delivery._id)).status).toBe(404);
    expect(await store.delivery(delivery._id)).toBeNull();

    const read = await getDelivery(base, alice, delivery._id);
    expect(read.status).toBe(200);
    expect(read.body.data.trackingId).toBe(delivery.trackingId);
    expect(read.body.data.p2pDelivery.status).toBe('PENDING');
    expect(await store.delivery(delivery._id)).not.toBeNull();
    expect(await store.pending(delivery._id)).toBeNull();
    expect((await getDelivery(base, alice, delivery._id)).status).toBe(200);
    expect(await freePackages(base, alice)).not.toContain(packageId);
    expect(await entriesFor(base, 'DEBIT', delivery._id)).toHaveLength(1);
    expect((await getDelivery(base, stack.bob, delivery._id)).status).toBe(404);
  });

  it('is found by an operator too, stored by their read: not 404 until the sweep comes', async () => {
    const { base, delivery } = await createdUnstored();
    expect(await store.delivery(delivery._id)).toBeNull();
    const read = await request(base, 'GET', `/admin/deliveries/${delivery._id}`, {
      headers: adminHeaders,
    });
    expect(read.status).toBe(200);
    expect(read.body.data.trackingId).toBe(delivery.trackingId);
    expect(await store.delivery(delivery._id)).not.toBeNull();
    expect(await store.pending(delivery._id)).toBeNull();
  });

  it('stored, its messages not: cancelled, then finished by the sweep, it is never looked for a courier', async () => {
    const { base, alice, delivery } = await createdUnstored('enqueue');
    expect(await store.delivery(delivery._id)).not.toBeNull();
    expect((await getDelivery(base, alice, delivery._id)).status).toBe(200);
    expect((await cancelDelivery(base, alice, delivery._id)).status).toBe(201);
    const left = await store.pending(delivery._id);
    expect(left).toMatchObject({ stage: 'READY' });

    const matching = jest.spyOn(settlement, 'startMatching');
    try {
      expect(await requests.recover(left!)).toBe('created');
      expect(matching).not.toHaveBeenCalled();
    } finally {
      matching.mockRestore();
    }
    expect(await store.pending(delivery._id)).toBeNull();
    expect((await getDelivery(base, alice, delivery._id)).body.data.status).toBe('CANCELLED');
    await eventually(async () =>
      expect(await entriesFor(base, 'REFUND', delivery._id)).toHaveLength(1),
    );
  });

  it('is cancelled by its creator before anything read it: refunded once, the packages free', async () => {
    const { base, alice, packageId, delivery, balance } = await createdUnstored();
    expect(await balanceOf(base, alice)).not.toBe(balance);
    const cancelled = await cancelDelivery(base, alice, delivery._id);
    expect(cancelled.status).toBe(201);
    await eventually(async () =>
      expect(await entriesFor(base, 'REFUND', delivery._id)).toHaveLength(1),
    );
    expect(await balanceOf(base, alice)).toBe(balance);
    await eventually(async () => expect(await freePackages(base, alice)).toContain(packageId));
    expect(await ledgerIsClean(base)).toBe(true);
  });
});

describe('a tracking id', () => {
  /** Runs `run` with the next tracking id drawn being `trackingId`. */
  async function drawing<T>(trackingId: string, run: () => Promise<T>): Promise<T> {
    const draw = jest.spyOn(codes, 'newTrackingId').mockReturnValueOnce(trackingId);
    try {
      return await run();
    } finally {
      draw.mockRestore();
    }
  }
  const newId = () => codes.newTrackingId();
  const trackingPage = (trackingId: string) => fetch(`${stack.node.url}/track/${trackingId}`);

  it('drawn twice is drawn again before anything is paid: each page shows its own delivery', async () => {
    const base = stack.node.url;
    const { alice } = stack;
    await credit(base, alice, 10_000);
    const first = await requestDelivery(base, alice, [await savePackage(base, alice)]);
    expect(first.status).toBe(201);
    const taken: string = first.body.data.delivery.trackingId;

    const packageId = await savePackage(base, alice);
    const run = await runOf(randomUUID());
    const { delivery } = await drawing(taken, () => run({ packagesId: [packageId] }));
    expect(delivery.trackingId).not.toBe(taken);
    // The wallet's entry names the id the delivery has.
    const debits = (await entriesOf(base, alice)).filter(
      (e) => e.type === 'DEBIT' && e.reference === delivery._id,
    );
    expect(debits.map((e) => e.description)).toEqual([`Delivery ${delivery.trackingId}`]);
    expect((await getDelivery(base, alice, delivery._id)).body.data.trackingId).toBe(
      delivery.trackingId,
    );
    expect(await store.deliveryIdByTracking(taken)).toBe(first.body.data.deliveryId);
    expect(await store.deliveryIdByTracking(delivery.trackingId)).toBe(delivery._id);
    expect((await trackingPage(taken)).status).toBe(200);
    expect((await trackingPage(delivery.trackingId)).status).toBe(200);
    expect(await ledgerIsClean(base)).toBe(true);
  });

  it('is given back by a refused request', async () => {
    const base = stack.node.url;
    const { bob } = stack;
    const packageId = await savePackage(base, bob);
    const run = await runOf(randomUUID(), bob);
    const trackingId = newId();
    const refused = drawing(trackingId, () => run({ packagesId: [packageId] }));
    // Bob's wallet is empty: insufficient balance.
    await expect(refused).rejects.toMatchObject({ code: 422 });
    expect(await store.deliveryIdByTracking(trackingId)).toBeNull();
    expect(await freePackages(base, bob)).toContain(packageId);
  });

  it('its request claimed and never used opens no page', async () => {
    const base = stack.node.url;
    const { alice } = stack;
    await credit(base, alice, 10_000);
    const created = await requestDelivery(base, alice, [await savePackage(base, alice)]);
    const unused = newId();
    expect(await store.claimTrackingId(unused, created.body.data.deliveryId)).toBe(true);
    expect((await trackingPage(unused)).status).toBe(404);
    expect((await trackingPage(created.body.data.delivery.trackingId)).status).toBe(200);
  });
});

describe('a request the sweep undid while its debit was on its way', () => {
  it('is answered the refusal recorded, as its retries are, and takes nothing', async () => {
    const base = stack.node.url;
    const { alice } = stack;
    await credit(base, alice, 10_000);
    const balance = await balanceOf(base, alice);
    const packageId = await savePackage(base, alice);
    const token = randomUUID();
    const run = await runOf(token);
    // The sweep takes the request over just before its debit reaches the payment service: it
    // records the refusal and gives the debit up, and the debit then meets that.
    const client = stack.client;
    const call = client.call.bind(client);
    const slowDebit = jest.spyOn(client, 'call').mockImplementation((async (
      action: string,
      params?: unknown,
      opts?: unknown,
    ) => {
      if (action === 'payment.debit') {
        const { reference } = params as { reference: string };
        const pending = await store.pending(reference);
        expect(await requests.recover(pending!)).toBe('undone');
      }
      return call(action, params as never, opts as never);
    }) as typeof client.call);
    const answered = await run({ packagesId: [packageId] }).catch((err: unknown) => err);
    slowDebit.mockRestore();
    // Not the payment service's own word on the late debit ("... was given up ..."), which no
    // retry would repeat.
    expect(answered).toMatchObject({ code: 409, message: ABANDONED });
    await expect(run({ packagesId: [packageId] })).rejects.toMatchObject({
      code: 409,
      message: ABANDONED,
    });
    expect(await balanceOf(base, alice)).toBe(balance);
    expect(await freePackages(base, alice)).toContain(packageId);
    expect(await ledgerIsClean(base)).toBe(true);
  });
});
