import { randomUUID } from 'node:crypto';
import type { Logger } from 'moleculer';
import type { Announcer } from '../../services/order/announcer';
import type { DeliveryRecord, StoredAddress } from '../../services/order/delivery-record';
import type { ProofChecks } from '../../services/order/proofs';
import { Outbox } from '../../services/order/outbox';
import { ScheduledSearches, STUCK_SEARCH_MS } from '../../services/order/scheduled-searches';
import { dueBucket } from '../../services/order/scheduling';
import { Settlement } from '../../services/order/settlement';
import { OrderStore, defineOrderModels } from '../../services/order/store';
import { DeliveryTransitions } from '../../services/order/transitions';
import { useStoreDatabase } from '../support/store-database';
import { BUCKET_GRACE_MS, LOOK_BEHIND_EVERY_MS, LOOK_BEHIND_MS } from '../../libs/time-buckets';

/**
 * The order sweep finds the SCHEDULED searches that are due through 5-minute buckets of their
 * dates, read by `_id` from its cursor up to now (`scheduled_search_buckets`), never by a query
 * on `scheduled_searches`, which holds every booking up to 30 days ahead: on the real server, a
 * due search starts once whatever the replicas do, one not due waits, the cursor passes only
 * buckets that are over and empty, and a search that keeps failing holds up no other.
 */
const scheduledFilters: unknown[] = [];
const db = useStoreDatabase('order', defineOrderModels, (event) => {
  const command = event.command as Record<string, unknown>;
  if (command[event.commandName] !== 'scheduled_searches' || command.filter === undefined) return;
  scheduledFilters.push(command.filter);
});

const MINUTE = 60_000;

/**
 * Matching as the order service calls it: a search starts once however often it is asked (it
 * is claimed by its delivery's id), and an unreachable matching refuses the call.
 */
class Matching {
  readonly calls: string[] = [];
  readonly started = new Set<string>();
  readonly unreachableFor = new Set<string>();

  async call(action: string, params?: unknown): Promise<unknown> {
    if (action !== 'courier-matching.startSearch') return undefined;
    const { deliveryId } = params as { deliveryId: string };
    this.calls.push(deliveryId);
    if (this.unreachableFor.has(deliveryId)) throw new Error('courier-matching unreachable');
    this.started.add(deliveryId);
    return undefined;
  }

  broadcast(): void {}

  callsFor(deliveryId: string): number {
    return this.calls.filter((id) => id === deliveryId).length;
  }
}

let matching: Matching;
const logs: { level: string; msg: string; deliveryId?: string }[] = [];
const record =
  (level: string) =>
  (msg: string, context?: { deliveryId?: string }): void => {
    logs.push({ level, msg, deliveryId: context?.deliveryId });
  };
const logger = {
  info: record('info'),
  warn: record('warn'),
  error: record('error'),
} as unknown as Logger;

/** One order replica: its own store, transitions, settlement and sweep on the shared database. */
function replica() {
  const store = new OrderStore(() => db.models);
  const transitions = new DeliveryTransitions(store);
  const settlement = new Settlement({
    store,
    scheduledSearchLeadMs: 0,
    answerWithinMs: 7_500,
    announcer: {} as Announcer,
    outbox: new Outbox(store, 'https://waybill.test', 'staging'),
    proofs: {} as ProofChecks,
    services: () => matching,
    logger: () => logger,
  });
  const sweep = new ScheduledSearches({ store, transitions, settlement, logger: () => logger });
  return { store, transitions, settlement, sweep };
}

let store: OrderStore;
/** The middle of a bucket: a minute either way stays in it. */
let now: Date;
const at = (minutes: number) => new Date(now.getTime() + minutes * MINUTE);

beforeEach(async () => {
  const m = db.models;
  // Each test starts with nothing scheduled and no cursor.
  await m.ScheduledSearch.deleteMany({});
  await m.SweepCursor.deleteMany({});
  await m.SearchBucketEntry.deleteMany({});
  await m.SearchBucketHead.deleteMany({});
  await m.SearchBucketClaim.deleteMany({});
  matching = new Matching();
  logs.length = 0;
  store = new OrderStore(() => db.models);
  now = new Date(dueBucket(Date.now()) + 150_000);
});

/** A delivery paid (nothing owed) and waiting for a courier, stored with its addresses. */
async function paidDelivery(changes: Partial<DeliveryRecord> = {}): Promise<DeliveryRecord> {
  const deliveryId = randomUUID();
  const userId = randomUUID();
  const stamp = new Date();
  const address = (role: StoredAddress['role']) =>
    ({
      _id: `${deliveryId}:${role}`,
      userId,
      deliveryId,
      role,
      fields: { lat: 6.45, lon: 3.39 },
      createdAt: stamp,
      updatedAt: stamp,
    }) as unknown as StoredAddress;
  const addresses = [address('origin'), address('destination')];
  const delivery = {
    _id: deliveryId,
    userId,
    trackingId: randomUUID(),
    version: 0,
    lifecycle: {
      status: 'REQUEST_CREATED',
      p2pStatus: 'PENDING',
      owes: { creator: false, recipient: false },
      paid: { creator: false, recipient: false },
    },
    etaSeconds: 0,
    slotStartsAt: null,
    simulation: null,
    fleetType: { id: 'bike', name: 'Bike', icon: null },
    packages: { ids: [], totalWeightGrams: 1_000, totalValueKobo: 0 },
    courierMatching: 'AUTOMATIC',
    courierId: null,
    originId: addresses[0]._id,
    destinationId: addresses[1]._id,
    steps: [],
    proofs: [],
    createdAt: stamp,
    updatedAt: stamp,
    ...changes,
  } as unknown as DeliveryRecord;
  expect(await store.insertDelivery(delivery, addresses)).toBe(true);
  return delivery;
}

it('starts a due search once while two replicas sweep at the same time, and leaves one not due yet', async () => {
  const [a, b] = [replica(), replica()];
  await a.store.searchBuckets.pass(dueBucket(at(-60)));
  const due = (await paidDelivery())._id;
  const notYet = (await paidDelivery())._id;
  // Both in the bucket of now; a retry racing the first write records it once.
  const scheduled = await Promise.all([
    a.store.scheduleSearch(due, at(-2), now),
    b.store.scheduleSearch(due, at(-2), now),
    b.store.scheduleSearch(notYet, at(1), now),
  ]);
  expect(scheduled).toEqual([true, true, true]);
  expect(dueBucket(at(-2))).toBe(dueBucket(now));
  expect(dueBucket(at(1))).toBe(dueBucket(now));

  await Promise.all([a.sweep.startDue(now), b.sweep.startDue(now)]);
  expect([...matching.started]).toEqual([due]);
  // Each replica asked matching at most once; matching started one search.
  expect(matching.callsFor(due)).toBeGreaterThanOrEqual(1);
  expect(matching.callsFor(due)).toBeLessThanOrEqual(2);
  expect(matching.callsFor(notYet)).toBe(0);
  expect(await store.scheduledSearch(due)).toBeNull();
  expect(await store.scheduledSearch(notYet)).not.toBeNull();

  // Its time comes, within the same bucket: the next sweep starts it, and only it.
  const callsBefore = matching.callsFor(due);
  await Promise.all([a.sweep.startDue(at(2)), b.sweep.startDue(at(2))]);
  expect(matching.started).toEqual(new Set([due, notYet]));
  expect(matching.callsFor(due)).toBe(callsBefore);
  expect(await store.scheduledSearch(notYet)).toBeNull();
  // Nothing failed.
  expect(logs.filter((l) => l.level !== 'info')).toEqual([]);
});

it('reads the searches due by `_id` alone, as many as are due, whatever is booked further ahead', async () => {
  const { store: own, sweep } = replica();
  await own.searchBuckets.pass(dueBucket(at(-30)));
  const ahead = await Promise.all(Array.from({ length: 60 }, () => paidDelivery()));
  // Booked over the coming days: what the old `find({dueAt: {$lte}})` decoded every tick.
  for (const [i, d] of ahead.entries()) await own.scheduleSearch(d._id, at(60 + i * 97), now);
  const due = (await paidDelivery())._id;
  await own.scheduleSearch(due, at(-1), now);

  scheduledFilters.length = 0;
  const { finds } = await db.countFinds('scheduled_searches', () => sweep.startDue(now));
  expect(matching.started).toEqual(new Set([due]));
  expect(finds).toBe(1);
  expect(scheduledFilters.length).toBeGreaterThan(0);
  for (const filter of scheduledFilters) expect(Object.keys(filter as object)).toEqual(['_id']);
});

it('passes the empty buckets that are over, stops before one whose search keeps failing, and starts the later ones', async () => {
  const { store: own, sweep } = replica();
  await own.searchBuckets.pass(dueBucket(at(-60)));
  const failing = (await paidDelivery())._id;
  const later = (await paidDelivery())._id;
  await own.scheduleSearch(failing, at(-40), now);
  await own.scheduleSearch(later, at(-25), now);
  matching.unreachableFor.add(failing);

  for (let tick = 0; tick < 2; tick++) {
    await sweep.startDue(now);
    expect(matching.started).toEqual(new Set([later]));
    // Past the empty buckets before it, not past its own.
    expect(await own.searchBuckets.cursor(now)).toBe(dueBucket(at(-40)));
    expect(await own.scheduledSearch(failing)).not.toBeNull();
  }
  expect(logs).toContainEqual(expect.objectContaining({ level: 'warn', deliveryId: failing }));
  expect(logs.some((l) => l.level === 'error')).toBe(false);

  // Matching answers again: it starts, and the cursor passes every bucket over.
  matching.unreachableFor.clear();
  await sweep.startDue(now);
  expect(matching.started).toEqual(new Set([later, failing]));
  expect(matching.callsFor(later)).toBe(1);
  expect(await own.searchBuckets.cursor(now)).toBe(dueBucket(now.getTime() - BUCKET_GRACE_MS));
  expect(await own.searchBuckets.cursor(now)).toBeLessThan(dueBucket(now));
});

it('calls an operator for a search failing an hour past its date, and lists it under the current bucket so that the cursor moves on', async () => {
  const { store: own, sweep } = replica();
  await own.searchBuckets.pass(dueBucket(at(-180)));
  const stuck = (await paidDelivery())._id;
  await own.scheduleSearch(stuck, new Date(now.getTime() - STUCK_SEARCH_MS - 30 * MINUTE), now);
  matching.unreachableFor.add(stuck);

  await sweep.startDue(now);
  const errors = logs.filter((l) => l.level === 'error');
  expect(errors.map((l) => l.deliveryId)).toEqual([stuck]);
  expect(errors[0].msg).toMatch(/courier-matching/);
  expect(errors[0].msg).toMatch(/cancel the delivery/);
  expect((await own.scheduledSearch(stuck))?.listedIn).toBe(dueBucket(now));

  // Its old bucket is empty now: the cursor passes it, and the search is still tried.
  await sweep.startDue(now);
  expect(await own.searchBuckets.cursor(now)).toBe(dueBucket(now.getTime() - BUCKET_GRACE_MS));
  expect(matching.callsFor(stuck)).toBe(2);
  matching.unreachableFor.clear();
  await sweep.startDue(now);
  expect(matching.started).toEqual(new Set([stuck]));
  expect(await own.scheduledSearch(stuck)).toBeNull();
});

it('drops the search of a delivery cancelled while it waits for its date', async () => {
  const { store: own, transitions, settlement, sweep } = replica();
  await own.searchBuckets.pass(dueBucket(Date.now() - 60 * MINUTE));
  const delivery = await paidDelivery({ slotStartsAt: new Date(Date.now() + 120 * MINUTE) });
  // Paid: its search waits for its date.
  await settlement.startMatching(delivery, new Date());
  expect(matching.calls).toEqual([]);
  expect(await own.scheduledSearch(delivery._id)).not.toBeNull();

  const cancelled = await transitions.apply(delivery._id, { kind: 'CANCEL' });
  if (!cancelled.applied) throw new Error(cancelled.message);
  expect(cancelled.transition.effects).toContainEqual({ kind: 'END_MATCHING' });
  await settlement.settle(cancelled.delivery, cancelled.transition);
  expect(await own.scheduledSearch(delivery._id)).toBeNull();

  // Its date comes: nothing is left to start.
  await sweep.startDue(new Date(Date.now() + 121 * MINUTE));
  expect(matching.started.size).toBe(0);
});

it('answers that a search whose bucket the sweep has read past must start at once, and the payment starts it', async () => {
  const { store: own, settlement } = replica();
  // The cursor ahead of the booking: clocks apart, or a writer that paused past the grace.
  await own.searchBuckets.pass(dueBucket(Date.now() + 120 * MINUTE));
  const behind = (await paidDelivery())._id;
  expect(await own.scheduleSearch(behind, new Date(Date.now() + 30 * MINUTE))).toBe(false);

  const delivery = await paidDelivery({ slotStartsAt: new Date(Date.now() + 60 * MINUTE) });
  await settlement.startMatching(delivery, new Date());
  expect(matching.started).toEqual(new Set([delivery._id]));
  // Searched for: no sweep is to start it again.
  expect(await own.scheduledSearch(delivery._id)).toBeNull();
});

it('starts the search of a retry after its date at once, and drops what the first attempt recorded', async () => {
  const { store: own, settlement } = replica();
  await own.searchBuckets.pass(dueBucket(Date.now() - 60 * MINUTE));
  const delivery = await paidDelivery({ slotStartsAt: new Date(Date.now() - MINUTE) });
  // The first attempt recorded it before its date, then stopped.
  await own.scheduleSearch(delivery._id, new Date(Date.now() - MINUTE));
  await settlement.startMatching(delivery, new Date());
  expect(matching.started).toEqual(new Set([delivery._id]));
  expect(await own.scheduledSearch(delivery._id)).toBeNull();
});

it('lists again where the sweep reads a search found behind its cursor that cannot start yet', async () => {
  const { store: own, sweep } = replica();
  const cursor = dueBucket(at(-20));
  await own.searchBuckets.pass(cursor);
  const behind = (await paidDelivery())._id;
  await own.scheduleSearch(behind, at(-35), now);
  // Matching away as the look behind finds it: only the look behind reads its bucket, for an
  // hour, every ten minutes, so it is listed under the bucket the sweep reads now.
  matching.unreachableFor.add(behind);
  await sweep.startDue(now);
  // Tried by the look behind, then, listed again, by the sweep in the same tick.
  expect(matching.callsFor(behind)).toBe(2);
  expect((await own.scheduledSearch(behind))?.listedIn).toBe(dueBucket(now));
  // The next tick, no look behind due: the sweep itself starts it.
  matching.unreachableFor.clear();
  await sweep.startDue(at(1));
  expect(matching.started).toEqual(new Set([behind]));
  expect(await own.scheduledSearch(behind)).toBeNull();
});

it('finds, within the hour behind its cursor, a booking listed in a bucket the sweep had passed, at most every ten minutes', async () => {
  const { store: own, sweep } = replica();
  const cursor = dueBucket(at(-20));
  await own.searchBuckets.pass(cursor);
  // A writer whose clock was behind: it listed the booking in a bucket the cursor has passed,
  // having read the cursor before it was raised (told all was well).
  const missed = (await paidDelivery())._id;
  await own.scheduleSearch(missed, at(-35), now);
  const tooOld = (await paidDelivery())._id;
  await own.scheduleSearch(tooOld, new Date(cursor - LOOK_BEHIND_MS - 10 * MINUTE), now);

  // Not read by the ticks between two looks behind.
  await sweep.startDue(at(-LOOK_BEHIND_EVERY_MS / MINUTE));
  expect(matching.started).toEqual(new Set([missed]));
  expect(logs).toContainEqual(expect.objectContaining({ level: 'warn' }));
  expect(await own.scheduledSearch(missed)).toBeNull();
  // Found, not passed: the cursor stays where it was.
  expect(await own.searchBuckets.cursor(now)).toBe(cursor);

  const missedNext = (await paidDelivery())._id;
  await own.scheduleSearch(missedNext, at(-30), now);
  await sweep.startDue(at(-1));
  expect(matching.started).toEqual(new Set([missed]));
  await sweep.startDue(now);
  expect(matching.started).toEqual(new Set([missed, missedNext]));
  // An hour behind the cursor is as far as it looks.
  expect(matching.callsFor(tooOld)).toBe(0);
});
