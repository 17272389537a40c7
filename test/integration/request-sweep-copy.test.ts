import { randomUUID } from 'node:crypto';
import type { Logger } from 'moleculer';
import type mongoose from 'mongoose';
import { Announcer } from '../../services/order/announcer';
import { Outbox } from '../../services/order/outbox';
import { DeliveryRequests } from '../../services/order/requests';
import { Settlement } from '../../services/order/settlement';
import { defineOrderModels, OrderStore, type PendingRequest } from '../../services/order/store';
import { DeliveryTransitions } from '../../services/order/transitions';
import { loadConfig } from '../../libs/config';
import {
  balanceOf,
  credit,
  entriesOf,
  freePackages,
  getDelivery,
  ledgerIsClean,
  requestDelivery,
  savePackage,
} from '../support/deliveries';
import { useMerchantStack } from '../support/merchant-stack';
import { openServiceDatabase } from '../support/stack';

/**
 * The order sweep lists the requests pending too long, then takes each over in turn, with
 * calls to other services between: the copy it holds of a request may be older than the
 * request's READY. A request that saved READY and claimed CREATED meanwhile (a slow write
 * under load) was paid and is stored: the sweep must never undo it from its old copy.
 */
const stack = useMerchantStack({ internal: ['payment', 'package'] });
let db: mongoose.Connection;
let requests: DeliveryRequests;

beforeAll(async () => {
  db = await openServiceDatabase(stack.iso, 'order');
  const models = defineOrderModels(db);
  const store = new OrderStore(() => models);
  const config = loadConfig({ ...process.env, NAMESPACE: stack.iso.namespace });
  const logger = () => ({ warn: () => undefined, info: () => undefined }) as unknown as Logger;
  const shared = { store, services: () => stack.client, logger };
  const transitions = new DeliveryTransitions(store);
  const announcer = new Announcer({ ...shared, transitions });
  const settlement = new Settlement({
    ...shared,
    outbox: new Outbox(store, config.notifications.publicBaseUrl),
    announcer,
    scheduledSearchLeadMs: config.order.scheduledSearchLeadMs,
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
