import { Errors, type Logger } from 'moleculer';
import type mongoose from 'mongoose';
import { loadConfig } from '../../libs/config';
import type { Caller } from '../../libs/contracts';
import type { CourierMove } from '../../libs/contracts/matching';
import { Announcer } from '../../services/order/announcer';
import { courierViewer } from '../../services/order/courier-view';
import { defineOrderModels, OrderStore } from '../../services/order/store';
import { DeliveryTransitions } from '../../services/order/transitions';
import { acceptOffer, courierAt, offeredDelivery } from '../support/couriers';
import { credit, ORIGIN } from '../support/deliveries';
import { eventually } from '../support/eventually';
import { createUserWithKey, request } from '../support/http';
import { useMerchantStack } from '../support/merchant-stack';
import { openServiceDatabase } from '../support/stack';
import { FAST_WEBHOOKS, WebhookReceiver } from '../support/webhook-receiver';

/**
 * Each flush of couriers' positions (COURIER_LOCATION_FLUSH_MS) tells order of every courier on
 * a delivery who moved. Most deliveries' owners have no endpoint that takes `courier.location`:
 * for those order builds nothing (the courier's read is a call) and hands nothing over (another),
 * having asked the webhook service once a flush who takes positions.
 */
const stack = useMerchantStack({
  internal: ['webhook', 'courier-matching'],
  env: FAST_WEBHOOKS,
});
const receiver = new WebhookReceiver();
let db: mongoose.Connection;
/** The actions the announcer called, in order. */
const called: string[] = [];
let announcer: Announcer;

/**
 * The stack's own services, each call noted. `failing` fails one action: as a webhook node of
 * the version before, which lacks it (`older`), or as one too slow to answer (`slow`).
 */
function recording(failing?: { action: string; as: 'older' | 'slow' | 'open' }): Caller {
  return {
    call: (action, params, opts) => {
      called.push(action);
      if (action === failing?.action) {
        const refusals = {
          older: () => new Errors.ServiceNotFoundError({ action }),
          slow: () => new Errors.RequestTimeoutError({ action, nodeID: 'webhook-node' }),
          // Its circuit open after timeouts: moleculer refuses to start the call.
          open: () => new Errors.ServiceNotAvailableError({ action }),
        };
        return Promise.reject(refusals[failing.as]());
      }
      return stack.client.call(action, params, opts);
    },
  };
}

function announcerCalling(services: Caller): Announcer {
  const store = new OrderStore(() => defineOrderModels(db));
  const config = loadConfig({ ...process.env, NAMESPACE: stack.iso.namespace });
  return new Announcer({
    store,
    transitions: new DeliveryTransitions(store),
    services: () => services,
    courierOf: courierViewer(config.courierPositions.onlineMs),
    logger: () => ({ warn: () => undefined, info: () => undefined }) as unknown as Logger,
  });
}

beforeAll(async () => {
  await receiver.start();
  db = await openServiceDatabase(stack.iso, 'order');
  announcer = announcerCalling(recording());
});
afterAll(async () => {
  await db?.close();
  await receiver.stop();
});

/** A delivery of a new merchant's, its courier assigned, and the courier's move on it. */
async function deliveryUnderWay() {
  const merchant = await createUserWithKey(stack.node.url);
  await credit(stack.node.url, merchant, 100_000);
  const courier = await courierAt(stack.node.url, {
    lat: ORIGIN.lat + 0.002,
    lon: ORIGIN.lon + 0.001,
  });
  const { deliveryId, offer } = await offeredDelivery(stack.node.url, merchant, courier);
  await acceptOffer(stack.node.url, courier, offer);
  const move: CourierMove = {
    courierId: courier.id,
    deliveryId,
    lat: ORIGIN.lat + 0.001,
    lon: ORIGIN.lon + 0.001,
    at: new Date().toISOString(),
  };
  return { merchant, move };
}

/** Waits until a position of the move's delivery would go to whoever took it: its assignment is handed over. */
async function assignmentHandedOver(move: CourierMove) {
  const older = announcerCalling(recording({ action: 'webhook.takingLocations', as: 'older' }));
  await eventually(async () => {
    called.length = 0;
    await older.locations([{ ...move, at: new Date().toISOString() }]);
    expect(called).toContain('webhook.publish');
  });
}

it('builds and hands over no position of a delivery whose owner takes none', async () => {
  const { move } = await deliveryUnderWay();
  await assignmentHandedOver(move);
  called.length = 0;
  await announcer.locations([{ ...move, at: new Date().toISOString() }]);
  expect(called).toEqual(['webhook.takingLocations']);
});

it('hands over the position of a delivery whose owner has an endpoint that takes them', async () => {
  const { merchant, move } = await deliveryUnderWay();
  const registered = await request(stack.node.url, 'POST', '/api/webhooks', {
    headers: { 'api-key': merchant.key },
    json: { url: receiver.url('/positions'), events: ['courier.location'] },
  });
  expect(registered.status).toBe(201);
  // Once the courier's assignment is handed over: no position goes before it.
  await eventually(async () => {
    called.length = 0;
    await announcer.locations([{ ...move, at: new Date().toISOString() }]);
    expect(called).toContain('webhook.publish');
  });
  expect(called[0]).toBe('webhook.takingLocations');
  await eventually(() =>
    expect(receiver.at('/positions').map((r) => r.event.type)).toContain('courier.location'),
  );
});

it('hands over every position while the webhook service cannot say who takes them (a rollout)', async () => {
  const { move } = await deliveryUnderWay();
  await assignmentHandedOver(move);
  expect(called[0]).toBe('webhook.takingLocations');
});

it('hands over no position while the webhook service cannot answer who takes them (slow, its circuit open)', async () => {
  const { move } = await deliveryUnderWay();
  await assignmentHandedOver(move);
  for (const as of ['slow', 'open'] as const) {
    const failing = announcerCalling(recording({ action: 'webhook.takingLocations', as }));
    called.length = 0;
    await failing.locations([{ ...move, at: new Date().toISOString() }]);
    expect({ as, called }).toEqual({ as, called: ['webhook.takingLocations'] });
  }
});
