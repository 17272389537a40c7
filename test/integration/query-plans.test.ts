import { randomUUID } from 'node:crypto';
import mongoose from 'mongoose';
import { defineAccountModels, AccountStore } from '../../services/account/store';
import { CourierStore, defineMatchingModels } from '../../services/courier-matching/store';
import { defineOrderModels, OrderStore } from '../../services/order/store';
import { DeliveryTransitions } from '../../services/order/transitions';
import { definePackageModels, PackageStore } from '../../services/package/store';
import { CheckoutStore, defineCheckoutModels } from '../../services/payment/checkout-store';
import { defineLedgerModels, LedgerStore } from '../../services/payment/ledger-store';
import { fanOut } from '../../services/webhook/fan-out';
import { defineWebhookModels, WebhookStore } from '../../services/webhook/store';
import { dropDatabases, isolation } from '../support/stack';
import { endpointRecord, publishedEvent } from '../support/webhook-records';
import { openPayerRefund, recipientsCheckout } from '../support/checkout-records';
import { STORED_PACKAGE } from '../support/store-database';

/**
 * Every query behind `GET /api/deliveries/:id`, `GET /api/deliveries`, `GET /api/packages`, a
 * wallet debit, the gateway's key lookup, `GET /api/webhooks/:webhookId/deliveries`, the
 * webhook fan-out, `package.release` and a merchant's couriers (docs/performance.md "Cost as
 * data grows", docs/webhooks.md), recorded from the driver as the stores send them and each
 * explained by the server: none may read the whole collection. A filter with more than a lone
 * `_id` reads it on FerretDB, `_id` and all. FerretDB on SQLite pushes only `_id` equality down (its plan says
 * SEARCH ... USING INDEX, or SCAN); MongoDB names its plan's stages (COLLSCAN or an index);
 * FerretDB on PostgreSQL shows PostgreSQL's plan and uses no index but `_id`'s, whose planner
 * may still scan a table this small: there a filter without an `_id` equality fails, and a
 * sequential scan of one by `_id` is reported as something the server cannot tell.
 */
const iso = isolation();
const FILTER_KEYS: Record<string, (c: Record<string, unknown>) => unknown[]> = {
  find: (c) => [c.filter ?? {}],
  count: (c) => [c.query ?? {}],
  findAndModify: (c) => [c.query ?? {}],
  update: (c) => (c.updates as { q: unknown }[]).map((u) => u.q),
  delete: (c) => (c.deletes as { q: unknown }[]).map((d) => d.q),
};
/** Commands that read nothing: inserts are checked by the `_id` (and unique) indexes. */
const NO_FILTER = new Set(['insert', 'createIndexes', 'listIndexes', 'ping', 'hello', 'isMaster']);

interface Query {
  db: string;
  collection: string;
  filter: unknown;
}

interface Verdict {
  server: 'ferretdb-sqlite' | 'ferretdb-postgresql' | 'mongodb' | 'unknown';
  /** Whether the server answers without reading the collection; null when it cannot tell. */
  indexed: boolean | null;
  plan: string;
}

/** What the server says of a find with this filter. */
async function explain(conn: mongoose.Connection, query: Query): Promise<Verdict> {
  const db = conn.useDb(query.db, { useCache: true }).db;
  if (!db) throw new Error(`no database ${query.db}`);
  const explained = await db.command({
    explain: { find: query.collection, filter: query.filter },
  });
  const plan = JSON.stringify(explained.queryPlanner ?? explained);
  if (/"Node Type"/.test(plan)) {
    if (/Index Scan|Index Only Scan|Bitmap Index Scan/.test(plan)) {
      return { server: 'ferretdb-postgresql', indexed: true, plan };
    }
    // FerretDB never filters by a secondary index there (docs/performance.md "The database"):
    // without an `_id` equality the collection is read whole. With one, a sequential scan of
    // a table this small is the planner's choice and says nothing of a large one.
    const byId = typeof (query.filter as { _id?: unknown })._id === 'string';
    return { server: 'ferretdb-postgresql', indexed: byId ? null : false, plan };
  }
  if (explained.ferretdbVersion !== undefined || /\b(SCAN|SEARCH)\b/.test(plan)) {
    const searched = /SEARCH \S+ USING (INDEX|PRIMARY KEY|COVERING INDEX)/.test(plan);
    return { server: 'ferretdb-sqlite', indexed: searched && !/\bSCAN\b/.test(plan), plan };
  }
  if (/"stage"/.test(plan)) {
    return { server: 'mongodb', indexed: !/COLLSCAN/.test(plan), plan };
  }
  return { server: 'unknown', indexed: null, plan };
}

describe('the queries of the paths whose cost must not grow with the data', () => {
  let conn: mongoose.Connection;
  const recorded: Query[] = [];
  const unexpected: string[] = [];
  let recording = false;

  let order: OrderStore;
  let transitions: DeliveryTransitions;
  let packages: PackageStore;
  let ledger: LedgerStore;
  let checkouts: CheckoutStore;
  let account: AccountStore;
  let webhooks: WebhookStore;
  let couriers: CourierStore;
  const userId = randomUUID();
  const webhookIds: string[] = [];
  /** The user's recipients' checkouts, each with a refund to its payer and a reversal. */
  const sessionRefs: string[] = [];
  const deliveryIds: string[] = [];
  /** A delivery of the user's that holds two of its packages. */
  const holder = randomUUID();
  let keyHash = '';

  beforeAll(async () => {
    conn = await mongoose
      .createConnection(process.env.MONGO_URL as string, { monitorCommands: true })
      .asPromise();
    conn.getClient().on('commandStarted', (event) => {
      if (!recording) return;
      const command = event.command as Record<string, unknown>;
      const filters = FILTER_KEYS[event.commandName];
      if (!filters) {
        if (!NO_FILTER.has(event.commandName)) unexpected.push(event.commandName);
        return;
      }
      const collection = String(command[event.commandName]);
      for (const filter of filters(command)) {
        recorded.push({ db: event.databaseName, collection, filter });
      }
    });
    const open = <M>(service: string, define: (c: mongoose.Connection) => M) => {
      const db = conn.useDb(`${iso.dbPrefix}${service}`, { useCache: true });
      const models = define(db);
      return { db, models };
    };
    const o = open('order', defineOrderModels);
    const p = open('package', definePackageModels);
    const l = open('payment', defineLedgerModels);
    const c = open('payment', defineCheckoutModels);
    const a = open('account', defineAccountModels);
    const w = open('webhook', defineWebhookModels);
    const m = open('matching', defineMatchingModels);
    for (const { db } of [o, p, l, c, a, w, m]) {
      await Promise.all(Object.values(db.models).map((m) => m.createIndexes()));
    }
    order = new OrderStore(() => o.models);
    transitions = new DeliveryTransitions(order);
    packages = new PackageStore(() => p.models);
    ledger = new LedgerStore(() => l.models);
    checkouts = new CheckoutStore(() => c.models);
    account = new AccountStore(() => a.models);
    webhooks = new WebhookStore(() => w.models);
    couriers = new CourierStore(() => m.models);

    // Other users' documents too: a filter that matched only this user's would hide a scan.
    for (const owner of [userId, randomUUID(), randomUUID()]) {
      for (let i = 0; i < 5; i++) {
        const id = randomUUID();
        if (owner === userId) deliveryIds.push(id);
        const addressIds = [randomUUID(), randomUUID()];
        const at = new Date(Date.now() + i);
        await order.insertDelivery(
          {
            _id: id,
            userId: owner,
            trackingId: randomUUID(),
            version: 1,
            originId: addressIds[0],
            destinationId: addressIds[1],
            lifecycle: { status: i % 2 ? 'REQUEST_CREATED' : 'CANCELLED' },
            createdAt: at,
          } as never,
          addressIds.map((_id) => ({ _id, userId: owner, fields: {}, createdAt: at }) as never),
        );
        await packages.insert({ userId: owner, ...STORED_PACKAGE });
        await order.enqueue(
          (['SMS', 'EMAIL'] as const).map((channel) => ({
            _id: `${id}:COURIER_ON_THE_WAY:${channel}`,
            deliveryId: id,
            channel,
            purpose: 'COURIER_ON_THE_WAY',
            recipient: channel === 'SMS' ? '+2348012345678' : 'ada@example.com',
            secret: false,
            status: 'PENDING',
            text: 'On its way',
            createdAt: at,
            sentAt: null,
          })) as never[],
        );
      }
      // Everyone's deliveries hold packages: a filter by holder would read them all.
      const taken = (await packages.listOpen(owner)).slice(0, 2).map((p) => p._id);
      const deliveryId = owner === userId ? holder : randomUUID();
      await packages.recordSelection(deliveryId, taken);
      for (const id of taken) await packages.claim(id, owner, deliveryId);
      await packages.markTaken(taken, deliveryId);
      // Every merchant's list holds couriers, one of them removed.
      for (let i = 0; i < 3; i++) {
        const courierId = randomUUID();
        await couriers.create({ _id: courierId, ...COURIER });
        await couriers.addToList(owner, courierId, i);
        if (i === 1) await couriers.removeFromList(owner, courierId);
      }
      for (let i = 0; i < 3; i++) {
        const endpoint = endpointRecord(owner, { createdAt: new Date(Date.now() + i) });
        await webhooks.insertEndpoint(endpoint);
        if (i === 1) await webhooks.deleteEndpoint(endpoint._id);
        else if (owner === userId) webhookIds.push(endpoint._id);
      }
      await fanOut(
        webhooks,
        [1, 2, 3].map((n) => publishedEvent(owner, n)),
        'staging',
        new Date(),
      );
      await ledger.post({
        walletId: owner,
        type: 'CREDIT',
        amountKobo: 10_000,
        reference: randomUUID(),
      });
      // Everyone's recipients' checkouts, each refunded to its payer and given back.
      for (let i = 0; i < 2; i++) {
        const session = recipientsCheckout(5_000, owner);
        await checkouts.createSession(session);
        await checkouts.claimPayerRefund(openPayerRefund(session));
        await checkouts.recordReversal(reversalOf(session._id, owner), 60_000);
        if (owner === userId) sessionRefs.push(session._id);
      }
    }
    keyHash = randomUUID().replace(/-/g, '');
    await account.createKey({
      _id: randomUUID(),
      place: 0,
      userId,
      hash: keyHash,
      environment: 'staging',
      serverOnly: false,
      quota: null,
    });
  });

  afterAll(async () => {
    await dropDatabases(iso);
    await conn.close();
  });

  /** The user's package ids, read before recording starts. */
  const packageIdsOf = async (owner: string) => {
    const was = recording;
    recording = false;
    const ids = (await packages.listOpen(owner)).map((p) => p._id);
    recording = was;
    return ids;
  };

  /** The queries `work` sends, recorded as the driver sends them. */
  async function queriesOf(work: () => Promise<unknown>): Promise<Query[]> {
    recorded.length = 0;
    unexpected.length = 0;
    recording = true;
    try {
      await work();
    } finally {
      recording = false;
    }
    expect(unexpected).toEqual([]);
    return [...recorded];
  }

  const paths: [string, () => Promise<unknown>][] = [
    [
      'GET /api/deliveries/:id',
      async () => {
        const delivery = await transitions.current(deliveryIds[0]);
        if (delivery) await order.addresses([delivery.originId, delivery.destinationId]);
      },
    ],
    [
      'GET /api/deliveries',
      async () => {
        const ids = await order.list(userId, { limit: 20, offset: 0 });
        await Promise.all(ids.map((id) => transitions.current(id)));
      },
    ],
    [
      'GET /api/deliveries?status=',
      async () => {
        const page = { limit: 20, offset: 0 };
        const current = (id: string) => transitions.current(id);
        const found = await order.listInStatus(userId, 'REQUEST_CREATED', page, current);
        expect(found).toHaveLength(2);
      },
    ],
    [
      "a delivery's notifications (the staging simulator, GET /admin/notifications)",
      () => order.notificationsOf(deliveryIds[0]),
    ],
    ['GET /api/packages', () => packages.listOpen(userId)],
    [
      "a delivery request's package selection",
      async () => packages.findOpen(userId, await packageIdsOf(userId)),
    ],
    [
      'a wallet debit',
      () =>
        ledger.post({ walletId: userId, type: 'DEBIT', amountKobo: 100, reference: randomUUID() }),
    ],
    ["the gateway's key lookup", () => account.findKeyByHash(keyHash)],
    [
      'GET /api/webhooks/:webhookId/deliveries',
      async () => {
        const messages = await webhooks.messagesOf(webhookIds[0], 20, 1);
        expect(messages).toHaveLength(2);
        await Promise.all(messages.map((m) => webhooks.attemptsOf({ ...m, attempts: 1 })));
        await Promise.all(messages.map((m) => webhooks.queued(m._id)));
      },
    ],
    [
      "the fan-out's endpoint lookup",
      async () => expect(await webhooks.endpointsOf(userId, 'staging')).toHaveLength(2),
    ],
    ['webhook.publish', () => fanOut(webhooks, [publishedEvent(userId, 4)], 'staging', new Date())],
    [
      "a merchant's couriers (MERCHANT_SPECIAL_COURIERS requests and searches)",
      async () => expect(await couriers.merchantCouriers(userId)).toHaveLength(2),
    ],
    [
      'the location flush, of couriers with a position already (every few seconds)',
      async () => {
        const at = Date.now();
        const located = [randomUUID(), randomUUID()];
        const flush = (ms: number) =>
          couriers.writeLocations(
            located.map((courierId) => ({ courierId, lat: 6.5, lon: 3.4, at: new Date(at + ms) })),
          );
        await flush(0);
        await flush(1000);
        // An older one is not written over the newer.
        await flush(500);
        const stored = await conn
          .useDb(`${iso.dbPrefix}matching`, { useCache: true })
          .collection<{ _id: string; at: Date }>('courier_locations')
          .findOne({ _id: located[0] });
        expect(stored?.at.getTime()).toBe(at + 1000);
      },
    ],
    [
      "a refused request's tracking id given back",
      async () => {
        const trackingId = randomUUID();
        const deliveryId = randomUUID();
        expect(await order.claimTrackingId(trackingId, deliveryId)).toBe(true);
        // Another delivery's name for it gives back nothing.
        await order.dropTrackingRef(trackingId, randomUUID());
        expect(await order.deliveryIdByTracking(trackingId)).toBe(deliveryId);
        await order.dropTrackingRef(trackingId, deliveryId);
        expect(await order.deliveryIdByTracking(trackingId)).toBeNull();
      },
    ],
    [
      "package.assign's checks (every delivery request)",
      async () => {
        const ids = await packageIdsOf(userId);
        await Promise.all(ids.map((id) => packages.isLive(userId, id)));
        await packages.findHeld(ids);
      },
    ],
    [
      'a package edited or deleted',
      async () => {
        const [id] = await packageIdsOf(userId);
        expect(await packages.updateOpen(userId, id, { name: 'Renamed' })).not.toBeNull();
        expect(await packages.findLive(userId, id)).not.toBeNull();
      },
    ],
    [
      "a transition's projection on its delivery",
      async () => {
        const delivery = await order.delivery(deliveryIds[0]);
        if (!delivery) throw new Error('the delivery is not stored');
        await order.project(deliveryIds[0], delivery.version + 1, {
          lifecycle: delivery.lifecycle,
          steps: delivery.steps ?? [],
          updatedAt: new Date(),
        });
      },
    ],
    [
      "a notification's failed attempt",
      () =>
        order.notifications.markAttemptFailed(
          `${deliveryIds[0]}:COURIER_ON_THE_WAY:SMS`,
          1,
          'provider down',
          new Date(Date.now() + 60_000),
          false,
        ),
    ],
    [
      'package.release (cancellations, refunds, undone requests)',
      async () => {
        const held = await packages.claimedBy(holder);
        expect(held).toHaveLength(2);
        await packages.markReturned(held, holder);
        await packages.dropClaims(
          held.map((h) => h.packageId),
          holder,
        );
      },
    ],
  ];

  paths.push(
    [
      'a refund to a payer asked, then settled (every cancelled delivery its recipient paid)',
      async () => {
        const reference = sessionRefs[0];
        await checkouts.payerRefundAsked(reference, 1);
        await checkouts.settlePayerRefund(reference, 'OPEN', { state: 'QUEUED', refundId: 'r1' });
        expect((await checkouts.payerRefund(reference))?.state).toBe('QUEUED');
        await checkouts.namePayer(reference, 'MERCHANT');
      },
    ],
    [
      'a reversal counted, then given back (refund.processed webhooks, the payment sweep)',
      async () => {
        const id = reversalIdOf(sessionRefs[1]);
        await checkouts.noteReversalListedAt(id, new Date());
        await checkouts.reversalProgress(id, {
          credited: true,
          takenKobo: 5_000,
          parts: 1,
          nextCheckAt: new Date(),
        });
        await checkouts.reversalGivenBack({ _id: id }, 5_000);
        expect((await checkouts.reversal(id))?.settledAt).toBeInstanceOf(Date);
      },
    ],
  );

  it.each(paths)('%s reads nothing but what an index finds', async (_name, work) => {
    const queries = await queriesOf(work);
    expect(queries.length).toBeGreaterThan(0);
    const verdicts = await Promise.all(queries.map((q) => explain(conn, q)));
    const scans = queries
      .map((q, i) => ({ query: q, verdict: verdicts[i] }))
      .filter(({ verdict }) => verdict.indexed === false)
      .map(
        ({ query, verdict }) =>
          `${query.collection} ${JSON.stringify(query.filter)}: ${verdict.plan}`,
      );
    expect(scans).toEqual([]);
    const untold = verdicts.filter((v) => v.indexed === null);
    if (untold.length > 0) {
      console.warn(
        `${_name}: the server (${untold[0].server}) cannot tell whether ${untold.length} of ${queries.length} queries use an index: ${untold[0].plan.slice(0, 300)}`,
      );
    }
  });
});

const COURIER = {
  name: 'Ada',
  phone: '+2348012345678',
  profilePhoto: null,
  fleet: { typeId: randomUUID(), regNo: 'LAG-1', make: 'Honda', model: 'Ace', colour: 'Red' },
  active: true,
};

const reversalIdOf = (checkoutReference: string) => `rv-${checkoutReference}`;

/** A refund of the checkout as the provider told it, nothing counted of it yet. */
const reversalOf = (checkoutReference: string, userId: string) => ({
  _id: reversalIdOf(checkoutReference),
  providerReference: checkoutReference,
  checkoutReference,
  userId,
  amountKobo: 5_000,
  receivedAt: new Date(),
  credited: null,
  takenKobo: 0,
  parts: 0,
  settledAt: null,
});
