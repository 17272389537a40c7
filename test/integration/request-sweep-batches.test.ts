import type { Logger } from 'moleculer';
import type mongoose from 'mongoose';
import { loadConfig } from '../../libs/config';
import type { Announcer } from '../../services/order/announcer';
import type { DeliveryRequests } from '../../services/order/requests';
import type { Settlement } from '../../services/order/settlement';
import { defineOrderModels, OrderStore, type PendingRequest } from '../../services/order/store';
import { OrderSweep } from '../../services/order/sweep';
import { DeliveryTransitions } from '../../services/order/transitions';
import { isolation, openServiceDatabase } from '../support/stack';

/**
 * The order sweep takes stopped requests over a batch at a time. A full batch of requests
 * that cannot be taken over for now (their payment service away) must not hold back the
 * requests stored behind them: each sweep reads on from where the last full batch ended.
 */
const iso = isolation();
let conn: mongoose.Connection;
let store: OrderStore;

beforeAll(async () => {
  conn = await openServiceDatabase(iso, 'order');
  const models = defineOrderModels(conn);
  await Promise.all(Object.values(models).map((m) => m.createIndexes()));
  store = new OrderStore(() => models);
});

afterAll(async () => {
  await conn?.dropDatabase();
  await conn?.close();
});

it('reaches a request stored behind a full batch of requests that keep failing', async () => {
  const longAgo = new Date(Date.now() - 3_600_000);
  const ids = Array.from({ length: 101 }, (_, i) => `req-${String(i).padStart(3, '0')}`);
  // Stored last-first, so that storage order is not the order the sweep must follow.
  for (const id of [...ids].reverse()) {
    const pending: PendingRequest = {
      _id: id,
      userId: 'u1',
      stage: 'STARTED',
      walletDebit: true,
      createdAt: longAgo,
      updatedAt: longAgo,
    };
    expect(await store.claimPending(pending)).toBe(true);
  }
  const healthy = ids[100];
  const tried: string[] = [];
  const requests = {
    recover: async (pending: PendingRequest) => {
      tried.push(pending._id);
      if (pending._id !== healthy) throw new Error('payment service away');
      return 'undone';
    },
  } as unknown as DeliveryRequests;
  const config = loadConfig({ ...process.env, NAMESPACE: iso.namespace }).order;
  const logger = () => ({ warn: () => undefined, info: () => undefined }) as unknown as Logger;
  const sweep = new OrderSweep({
    config,
    store,
    requests,
    transitions: new DeliveryTransitions(store),
    settlement: {} as Settlement,
    announcer: { sweep: async () => undefined } as unknown as Announcer,
    logger,
  });

  const now = new Date();
  await sweep.sweepOnce(now);
  expect(tried).toEqual(ids.slice(0, 100));
  tried.length = 0;
  await sweep.sweepOnce(now);
  expect(tried).toEqual([healthy]);
  tried.length = 0;
  // The cursor starts over once a batch comes back short: the failing ones are tried again.
  await sweep.sweepOnce(now);
  expect(tried).toEqual(ids.slice(0, 100));
});
