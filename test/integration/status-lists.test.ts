import { randomUUID } from 'node:crypto';
import { LIFT_AFTER_CLOSED } from '../../libs/owner-list';
import type { DeliveryRecord } from '../../services/order/delivery-record';
import type { DeliveryStatus, LifecycleEvent } from '../../services/order/lifecycle';
import type { NotificationRecord } from '../../services/order/notifications';
import { OrderStore, defineOrderModels } from '../../services/order/store';
import { DeliveryTransitions } from '../../services/order/transitions';
import { useStoreDatabase } from '../support/store-database';

/**
 * `GET /api/deliveries?status=` reads the user's list of deliveries in that status (one list
 * per status, `user_deliveries_by_status`): on the real server, a page costs the page and the
 * deliveries that left the status lately, never the user's whole history, and no delivery in
 * a status is ever missing from its list — whatever writer stopped or raced where.
 */
const db = useStoreDatabase('order', defineOrderModels);
let store: OrderStore;
let transitions: DeliveryTransitions;

beforeAll(() => {
  store = new OrderStore(() => db.models);
  transitions = new DeliveryTransitions(store);
});

/** Nothing owed: the delivery may be assigned or cancelled at once. */
const LIFECYCLE = {
  status: 'REQUEST_CREATED',
  p2pStatus: 'PENDING',
  owes: { creator: false, recipient: false },
  paid: { creator: false, recipient: false },
} as const;

function deliveryRecord(userId: string): DeliveryRecord {
  const now = new Date();
  return {
    _id: randomUUID(),
    userId,
    trackingId: randomUUID(),
    version: 0,
    lifecycle: { ...LIFECYCLE, owes: { ...LIFECYCLE.owes }, paid: { ...LIFECYCLE.paid } },
    steps: [],
    proofs: [],
    createdAt: now,
    updatedAt: now,
  } as unknown as DeliveryRecord;
}

async function create(userId: string): Promise<string> {
  const delivery = deliveryRecord(userId);
  expect(await store.insertDelivery(delivery, [])).toBe(true);
  return delivery._id;
}

const assign: LifecycleEvent = { kind: 'COURIER_ASSIGNED', courierId: 'courier-1' };
const cancel: LifecycleEvent = { kind: 'CANCEL' };

async function apply(deliveryId: string, event: LifecycleEvent) {
  expect((await transitions.apply(deliveryId, event)).applied).toBe(true);
}

it('decides a change again on a fresh read when the delivery it started from was moved on', async () => {
  const deliveryId = await create(randomUUID());
  const known = (await transitions.current(deliveryId)) as DeliveryRecord;
  await apply(deliveryId, assign);
  // As read before the assignment, another courier's assignment was allowed; the claim of
  // the next number fails, and the delivery as it now is refuses it.
  const again = await transitions.apply(
    deliveryId,
    { kind: 'COURIER_ASSIGNED', courierId: 'courier-2' },
    { known },
  );
  expect(again.applied).toBe(false);
  expect(again.delivery.assignment?.courierId).toBe('courier-1');
  // Two writers starting from the same read: one change is made.
  const twice = await Promise.all(
    Array.from({ length: 2 }, () =>
      transitions.apply(deliveryId, { kind: 'CANCEL' }, { known: again.delivery }),
    ),
  );
  expect(twice.filter((a) => a.applied)).toHaveLength(1);
  expect((await transitions.current(deliveryId))?.version).toBe(2);
});

const current = (deliveryId: string) => transitions.current(deliveryId);
const PAGE = { limit: 100, offset: 0 };

/** The ids of a page of the user's deliveries in `status`, and how many deliveries it read. */
async function listed(userId: string, status: DeliveryStatus, limit = 20, offset = 0) {
  const { result, finds } = await db.countFinds('deliveries', () =>
    store.listInStatus(userId, status, { limit, offset }, current),
  );
  for (const d of result) expect(d.lifecycle.status).toBe(status);
  return { ids: result.map((d) => d._id), reads: finds };
}

const idsIn = async (userId: string, status: DeliveryStatus, limit = 20, offset = 0) =>
  (await listed(userId, status, limit, offset)).ids;

it('lists the deliveries now in a status, the latest to enter it first, paged', async () => {
  const userId = randomUUID();
  const [a, b, c] = [await create(userId), await create(userId), await create(userId)];
  expect(await idsIn(userId, 'REQUEST_CREATED')).toEqual([c, b, a]);
  await apply(b, assign);
  await apply(a, cancel);
  expect(await idsIn(userId, 'REQUEST_CREATED')).toEqual([c]);
  expect(await idsIn(userId, 'COURIER_ASSIGNED')).toEqual([b]);
  expect(await idsIn(userId, 'CANCELLED')).toEqual([a]);

  await apply(c, cancel);
  await apply(b, cancel);
  expect(await idsIn(userId, 'CANCELLED')).toEqual([b, c, a]);
  expect(await idsIn(userId, 'CANCELLED', 2, 1)).toEqual([c, a]);
  expect(await idsIn(userId, 'CANCELLED', 2, 3)).toEqual([]);
  expect(await idsIn(userId, 'COURIER_ASSIGNED')).toEqual([]);
  // Another user's lists hold none of them.
  expect(await idsIn(randomUUID(), 'CANCELLED')).toEqual([]);
});

it('reads a page or a rare status, not the history; what left a status is passed over a bounded number of times', async () => {
  const userId = randomUUID();
  const rare = await create(userId);
  await apply(rare, assign);
  const kept = [await create(userId), await create(userId)];
  const history: string[] = [];
  for (let i = 0; i < LIFT_AFTER_CLOSED + 10; i++) history.push(await create(userId));
  for (const id of history) await apply(id, cancel);

  // A rare status reads its one delivery; a status most deliveries end in reads the page.
  expect(await listed(userId, 'COURIER_ASSIGNED')).toEqual({ ids: [rare], reads: 1 });
  expect(await listed(userId, 'CANCELLED', 20)).toEqual({
    ids: history.slice(-20).reverse(),
    reads: 20,
  });

  // Every delivery passed through REQUEST_CREATED: the first read walks the entries once, lifts
  // the ones still there above the others in their order, and the next read finds them at once.
  const stillCreated = [...kept].reverse();
  const walked = history.length + 3;
  expect(await listed(userId, 'REQUEST_CREATED')).toEqual({ ids: stillCreated, reads: walked });
  expect(await listed(userId, 'REQUEST_CREATED')).toEqual({ ids: stillCreated, reads: 2 });
  for (const id of kept) await apply(id, cancel);
  expect(await listed(userId, 'REQUEST_CREATED')).toEqual({ ids: [], reads: 2 });
  expect(await listed(userId, 'REQUEST_CREATED')).toEqual({ ids: [], reads: 0 });
  const fresh = await create(userId);
  expect(await listed(userId, 'REQUEST_CREATED')).toEqual({ ids: [fresh], reads: 1 });
});

it('pages deep by reading the deliveries before the page, holding only the page', async () => {
  const userId = randomUUID();
  const cancelled: string[] = [];
  for (let i = 0; i < 45; i++) cancelled.push(await create(userId));
  for (const id of cancelled) await apply(id, cancel);
  const newestFirst = [...cancelled].reverse();
  const pages: string[] = [];
  for (let offset = 0; offset < 45; offset += 10) {
    const page = await listed(userId, 'CANCELLED', 10, offset);
    expect(page.ids).toEqual(newestFirst.slice(offset, offset + 10));
    // What it costs: the deliveries before the page and the page, read in batches.
    expect(page.reads).toBe(Math.min(offset + 10, 45));
    pages.push(...page.ids);
  }
  expect(pages).toEqual(newestFirst);
  expect(await idsIn(userId, 'CANCELLED', 10, 45)).toEqual([]);
});

it('passes over what left a status once when the first page fills before the floor', async () => {
  const userId = randomUUID();
  const stuck: string[] = [];
  for (let i = 0; i < 25; i++) stuck.push(await create(userId));
  const passed: string[] = [];
  for (let i = 0; i < 120; i++) passed.push(await create(userId));
  for (const id of passed) await apply(id, cancel);
  const page = stuck.slice(-20).reverse();
  // The first page walks the 120 that left, then lifts the 20 it found above them.
  expect(await listed(userId, 'REQUEST_CREATED')).toEqual({ ids: page, reads: 140 });
  expect(await listed(userId, 'REQUEST_CREATED')).toEqual({ ids: page, reads: 20 });
  expect(await idsIn(userId, 'REQUEST_CREATED', 20, 20)).toEqual(stuck.slice(0, 5).reverse());
});

it('leaves the lift to a later read when a delivery enters the status during the read', async () => {
  const userId = randomUUID();
  const kept = await create(userId);
  for (let i = 0; i < LIFT_AFTER_CLOSED + 5; i++) await apply(await create(userId), cancel);
  let fresh = '';
  // While the read judges the bottom of the list, a new delivery enters the status.
  const racing = async (id: string) => {
    if (id === kept && !fresh) fresh = await create(userId);
    return current(id);
  };
  const first = await store.listInStatus(userId, 'REQUEST_CREATED', PAGE, racing);
  expect(first.map((d) => d._id)).toEqual([kept]);
  // The latest to enter heads the list; the next whole read lifts `kept` below it.
  expect(await idsIn(userId, 'REQUEST_CREATED')).toEqual([fresh, kept]);
  expect(await listed(userId, 'REQUEST_CREATED')).toEqual({ ids: [fresh, kept], reads: 2 });
});

it('keeps an entry whose transition is not claimed yet above the floor, and drops one whose version another writer took', async () => {
  const userId = randomUUID();
  const gone = await create(userId);
  await apply(gone, assign);
  await apply(gone, cancel);
  // A writer listed `late` under COURIER_ASSIGNED for version 1 and has not claimed it yet.
  const late = deliveryRecord(userId);
  expect(await store.insertDelivery(late, [])).toBe(true);
  await store.enteringStatus(late, 'COURIER_ASSIGNED', 1);
  // A read that finds nothing in the status must not raise the floor past the waiting entry.
  expect(await idsIn(userId, 'COURIER_ASSIGNED')).toEqual([]);
  expect(await idsIn(userId, 'COURIER_ASSIGNED')).toEqual([]);
  await apply(late._id, assign);
  expect(await idsIn(userId, 'COURIER_ASSIGNED')).toEqual([late._id]);

  // Listed under CANCELLED for version 1 by a writer that lost version 1 to the assignment.
  const raced = await create(userId);
  await store.enteringStatus({ _id: raced, userId }, 'CANCELLED', 1);
  await apply(raced, assign);
  expect(await idsIn(userId, 'CANCELLED')).toEqual([gone]);
  // Version 2 is the cancellation's: listed once, at its own entry.
  await apply(raced, cancel);
  expect(await idsIn(userId, 'CANCELLED')).toEqual([raced, gone]);
});

it('lists each delivery once, in exactly one status, under concurrent transitions and reads', async () => {
  const userId = randomUUID();
  const ids: string[] = [];
  for (let i = 0; i < 12; i++) ids.push(await create(userId));
  const reads: Promise<unknown>[] = [];
  const writes = ids.flatMap((id, i) => {
    // Racing writers: the same event twice, or an assignment against a cancellation.
    const events = i % 3 === 0 ? [assign, cancel] : i % 3 === 1 ? [cancel, cancel] : [assign];
    return events.map((event) => transitions.apply(id, event));
  });
  for (const status of ['REQUEST_CREATED', 'COURIER_ASSIGNED', 'CANCELLED'] as const) {
    for (let r = 0; r < 4; r++) reads.push(store.listInStatus(userId, status, PAGE, current));
  }
  await Promise.all([...writes, ...reads]);

  const byStatus = new Map<string, string[]>();
  for (const status of ['REQUEST_CREATED', 'COURIER_ASSIGNED', 'CANCELLED'] as const) {
    byStatus.set(status, await idsIn(userId, status, 100));
  }
  const everyListed = [...byStatus.values()].flat();
  expect(everyListed.sort()).toEqual([...ids].sort());
  for (const id of ids) {
    const delivery = await current(id);
    expect(byStatus.get(delivery?.lifecycle.status ?? '')).toContain(id);
  }
});

it('lists the deliveries stored before the status lists existed, once per deployment', async () => {
  const userId = randomUUID();
  const old = deliveryRecord(userId);
  const older = { ...deliveryRecord(userId), updatedAt: new Date(Date.now() - 60_000) };
  const cancelled = {
    ...deliveryRecord(userId),
    lifecycle: { ...LIFECYCLE, status: 'CANCELLED' },
  } as DeliveryRecord;
  await db.models.Delivery.insertMany([old, older, cancelled] as never[]);
  expect(await idsIn(userId, 'REQUEST_CREATED')).toEqual([]);

  await Promise.all([store.listStoredStatuses('start'), store.listStoredStatuses('start')]);
  expect(await idsIn(userId, 'REQUEST_CREATED')).toEqual([old._id, older._id]);
  expect(await idsIn(userId, 'CANCELLED')).toEqual([cancelled._id]);
  // Once marked filled, a later start does not scan again.
  const stray = deliveryRecord(userId);
  await db.models.Delivery.create(stray);
  await store.listStoredStatuses('start');
  expect(await idsIn(userId, 'REQUEST_CREATED')).toEqual([old._id, older._id]);
});

it('after a rollout, lists what an older version stored or moved and offers nothing this version listed', async () => {
  await store.listStoredDeliveries('start');
  await store.listStoredStatuses('start');
  const userId = randomUUID();
  const [kept, assigned, movedByOld] = [
    await create(userId),
    await create(userId),
    await create(userId),
  ];
  await apply(assigned, assign);
  await apply(movedByOld, assign);
  // A replica of a version before the marks stores a delivery, and cancels one of ours; it
  // writes neither list's entry nor a mark.
  const storedByOld = deliveryRecord(userId);
  await db.models.Delivery.insertMany([storedByOld] as never[]);
  const moved = await current(movedByOld);
  await db.models.Delivery.updateOne(
    { _id: movedByOld },
    {
      $set: {
        lifecycle: { ...moved?.lifecycle, status: 'CANCELLED' },
        version: 2,
        updatedAt: new Date(),
      },
    },
  );
  expect(await idsIn(userId, 'CANCELLED')).toEqual([]);

  // A pass claims each item it offers its list (`<list>_claims`), listed already or not.
  const offeredToUsers = await db.idsInserted('user_deliveries_claims', () =>
    store.listStoredDeliveries('after-rollout'),
  );
  const offeredToStatuses = await db.idsInserted('user_deliveries_by_status_claims', () =>
    store.listStoredStatuses('after-rollout'),
  );
  const offered = (claims: string[], id: string) => claims.some((c) => c.includes(id));
  for (const id of [kept, assigned, movedByOld]) {
    expect(offered(offeredToUsers, id)).toBe(false);
  }
  expect(offered(offeredToUsers, storedByOld._id)).toBe(true);
  for (const id of [kept, assigned]) expect(offered(offeredToStatuses, id)).toBe(false);
  expect(offered(offeredToStatuses, storedByOld._id)).toBe(true);
  expect(offered(offeredToStatuses, movedByOld)).toBe(true);

  expect(await idsIn(userId, 'CANCELLED')).toEqual([movedByOld]);
  expect((await idsIn(userId, 'REQUEST_CREATED')).sort()).toEqual([kept, storedByOld._id].sort());
  expect(await idsIn(userId, 'COURIER_ASSIGNED')).toEqual([assigned]);
  const page = await store.list(userId, PAGE);
  expect(page.map(String).sort()).toEqual([kept, assigned, movedByOld, storedByOld._id].sort());
});

it('lists a linked delivery for its recipient too, and after a rollout what an older version stored or moved', async () => {
  await store.listLinkedDeliveries('start');
  await store.listStoredStatuses('start');
  const [creator, recipient] = [randomUUID(), randomUUID()];
  const linked = (): DeliveryRecord => ({ ...deliveryRecord(creator), recipientUserId: recipient });
  const ours = linked();
  await store.insertDelivery(ours, []);
  const asRecipient = (status: DeliveryStatus) =>
    store
      .listInStatus(recipient, status, PAGE, current, 'RECIPIENT')
      .then((found) => found.map((d) => d._id));
  expect(await store.list(recipient, PAGE, 'RECIPIENT')).toEqual([ours._id]);
  expect(await store.list(recipient, PAGE)).toEqual([]);
  expect(await asRecipient('REQUEST_CREATED')).toEqual([ours._id]);
  await apply(ours._id, assign);
  expect(await asRecipient('COURIER_ASSIGNED')).toEqual([ours._id]);
  expect(await asRecipient('REQUEST_CREATED')).toEqual([]);
  // Nor does the creator see it as a recipient, or the recipient as a creator.
  expect(await store.listInStatus(creator, 'COURIER_ASSIGNED', PAGE, current, 'RECIPIENT')).toEqual(
    [],
  );
  expect(await idsIn(recipient, 'COURIER_ASSIGNED')).toEqual([]);

  // A writer of the version before links stores one (it finished a request ours began), and
  // cancels ours: it lists each for its creator alone, and marks the status listed.
  const storedByOld = linked();
  await db.models.Delivery.insertMany([storedByOld] as never[]);
  await store.enteringStatus({ _id: ours._id, userId: creator }, 'CANCELLED', 2);
  const moved = await current(ours._id);
  await db.models.Delivery.updateOne(
    { _id: ours._id },
    {
      $set: {
        lifecycle: { ...moved?.lifecycle, status: 'CANCELLED' },
        listedStatus: 'CANCELLED',
        version: 2,
        updatedAt: new Date(),
      },
    },
  );
  expect(await asRecipient('CANCELLED')).toEqual([]);
  expect(await store.list(recipient, PAGE, 'RECIPIENT')).toEqual([ours._id]);

  await store.listLinkedDeliveries('after-rollout');
  await store.listStoredStatuses('after-rollout');
  expect((await store.list(recipient, PAGE, 'RECIPIENT')).sort()).toEqual(
    [ours._id, storedByOld._id].sort(),
  );
  expect(await asRecipient('CANCELLED')).toEqual([ours._id]);
  expect(await asRecipient('REQUEST_CREATED')).toEqual([storedByOld._id]);
  expect(await idsIn(creator, 'CANCELLED')).toEqual([ours._id]);
});

it('after a rollout, offers nothing of a linked delivery this version listed, paid since in its status', async () => {
  await store.listStoredStatuses('start');
  const [creator, recipient] = [randomUUID(), randomUUID()];
  const owing = deliveryRecord(creator);
  const delivery: DeliveryRecord = {
    ...owing,
    recipientUserId: recipient,
    lifecycle: { ...owing.lifecycle, owes: { creator: true, recipient: false } },
  };
  await store.insertDelivery(delivery, []);
  // Paid: a new version, the same status (no status entered, so nothing listed anew).
  await apply(delivery._id, { kind: 'PAID', share: 'creator' });
  expect((await current(delivery._id))?.version).toBe(1);

  const offered = await db.idsInserted('user_deliveries_by_status_claims', () =>
    store.listStoredStatuses('after-rollout'),
  );
  expect(offered.filter((c) => c.includes(delivery._id))).toEqual([]);
  const asRecipient = await store.listInStatus(
    recipient,
    'REQUEST_CREATED',
    PAGE,
    current,
    'RECIPIENT',
  );
  expect(asRecipient.map((d) => d._id)).toEqual([delivery._id]);
});

it("after a rollout, offers a delivery's notifications list only what an older version queued", async () => {
  await store.listStoredNotifications('start');
  const deliveryId = await create(randomUUID());
  const notification = (purpose: string) =>
    ({
      _id: `${deliveryId}:${purpose}:SMS`,
      deliveryId,
      channel: 'SMS',
      purpose,
      recipient: '+2348012345678',
      secret: false,
      status: 'SENT',
      text: null,
      createdAt: new Date(),
      sentAt: new Date(),
    }) as NotificationRecord;
  const ours = notification('COURIER_ON_THE_WAY');
  await store.enqueue([ours]);
  // A replica of a version before the list queues one without its entry.
  const theirs = notification('COLLECTION_CODE');
  await db.models.Notification.collection.insertOne(theirs as never);

  const offered = await db.idsInserted('delivery_notifications_claims', () =>
    store.listStoredNotifications('after-rollout'),
  );
  expect(offered).toEqual([`${deliveryId}:${theirs._id}`]);
  expect((await store.notificationsOf(deliveryId)).map((n) => n._id).sort()).toEqual(
    [ours._id, theirs._id].sort(),
  );
});
