import { randomUUID } from 'node:crypto';
import { MARK_GRACE_MS } from '../../libs/work-marks';
import {
  OrderStore,
  defineOrderModels,
  transitionId,
  type OrderModels,
  type TransitionRecord,
} from '../../services/order/store';
import { useStoreDatabase } from '../support/store-database';

/**
 * The order sweep finishes transitions whose writer did not (effects to settle, events to hand
 * over). Transitions are every change of every delivery ever made, so the sweep reads their
 * marks (`transition_work`), as many as the work under way, and each transition by `_id`: on the
 * real server, what it sends to `delivery_transitions` is `_id` lookups alone.
 */
const transitionFilters: unknown[] = [];
let recording = false;
const db = useStoreDatabase('order', defineOrderModels, (event) => {
  const command = event.command as Record<string, unknown>;
  if (!recording || command[event.commandName] !== 'delivery_transitions') return;
  const updates = command.updates as { q: unknown }[] | undefined;
  for (const filter of [command.filter, ...(updates ?? []).map((u) => u.q)]) {
    if (filter !== undefined) transitionFilters.push(filter);
  }
});
let models: OrderModels;
let store: OrderStore;

beforeAll(() => {
  models = db.models;
  store = new OrderStore(() => models);
});

const old = new Date(Date.now() - 10 * 60_000);

function record(work: Partial<TransitionRecord>, at = old): TransitionRecord {
  const deliveryId = randomUUID();
  return {
    _id: transitionId(deliveryId, 2),
    deliveryId,
    version: 2,
    event: { kind: 'CANCEL' },
    lifecycle: { status: 'CANCELLED' },
    step: null,
    effects: [],
    at,
    ...work,
  } as TransitionRecord;
}

/** As `DeliveryTransitions.apply` writes a transition with work: marked around its claim. */
async function write(t: TransitionRecord) {
  expect(await store.claimTransition(t)).toBe(true);
}

/** The mark a writer makes before it claims its transition. */
const markBeforeClaim = (t: TransitionRecord) =>
  models.TransitionWork.create({ _id: t._id, at: t.at });

const markIds = async () => (await models.TransitionWork.find().lean()).map((m) => m._id).sort();

it('reads marks, not transitions, and ends each mark once its work is done', async () => {
  // Many transitions done long ago: what a scan would read.
  await models.Transition.insertMany(Array.from({ length: 200 }, () => record({})) as never[]);
  const unsettled = record({ unsettled: true });
  const unannounced = record({ unannounced: true });
  const fresh = record({ unsettled: true }, new Date());
  for (const t of [unsettled, unannounced, fresh]) await write(t);

  recording = true;
  const marked = await store.markedWork(new Date(Date.now() - 15_000), 100);
  expect(marked.map((m) => m.transition?._id).sort()).toEqual(
    [unsettled._id, unannounced._id].sort(),
  );
  // Work left: the marks stay.
  for (const { mark } of marked) await store.finishWork(mark, new Date());
  expect(await markIds()).toEqual([unsettled._id, unannounced._id, fresh._id].sort());

  await store.workDone(unsettled, ['unsettled']);
  await store.workDone(unannounced, ['unannounced']);
  for (const { mark } of marked) await store.finishWork(mark, new Date());
  recording = false;
  expect(await markIds()).toEqual([fresh._id]);
  expect(transitionFilters.length).toBeGreaterThan(0);
  for (const filter of transitionFilters) expect(Object.keys(filter as object)).toEqual(['_id']);
});

it('records its writer’s work in one write, and ends the mark it knows done unless the record says otherwise', async () => {
  await models.TransitionWork.deleteMany({});
  const both = record({ unsettled: true, unannounced: true }, new Date());
  await write(both);
  const stored = async () =>
    (await models.Transition.findById(both._id).lean()) as unknown as TransitionRecord;

  // Settled, not announced: only `unsettled` goes.
  await store.workDone(both, ['unsettled']);
  expect((await stored()).unsettled).toBeUndefined();
  expect((await stored()).unannounced).toBe(true);
  // Its writer believes it done (a write of another's undid its own): the record, read after
  // the mark's end, puts the mark back.
  await store.finishWork(both, new Date(), { ...both, unsettled: false, unannounced: false });
  expect(await markIds()).toEqual([both._id]);

  await store.workDone(both, ['unannounced']);
  expect(await stored()).not.toHaveProperty('unannounced');
  await store.finishWork(both, new Date(), { ...both, unsettled: false, unannounced: false });
  expect(await markIds()).toEqual([]);
});

it('puts a mark whose work is left behind the others, so that failing ones hold back no later one', async () => {
  await models.TransitionWork.deleteMany({});
  const failing = [0, 1].map((ms) => record({ unsettled: true }, new Date(old.getTime() + ms)));
  const later = record({ unsettled: true }, new Date(old.getTime() + 60_000));
  for (const t of [...failing, later]) await write(t);
  const first = await store.markedWork(new Date(Date.now() - 15_000), 2);
  expect(first.map((m) => m.transition?._id)).toEqual(failing.map((t) => t._id));
  const now = new Date();
  for (const { mark } of first) await store.finishWork(mark, now);
  const next = await store.markedWork(new Date(now.getTime() + 1), 2);
  expect(next[0].transition?._id).toBe(later._id);
  expect(await markIds()).toEqual([...failing, later].map((t) => t._id).sort());
});

it('lets go of a mark whose transition was never claimed, after a while only', async () => {
  await models.TransitionWork.deleteMany({});
  const stopped = record({ unsettled: true }, new Date(Date.now() - MARK_GRACE_MS - 1000));
  const claiming = record({ unsettled: true }, new Date());
  await markBeforeClaim(stopped);
  await markBeforeClaim(claiming);
  for (const t of [stopped, claiming]) await store.finishWork(t, new Date());
  expect(await markIds()).toEqual([claiming._id]);
  // Its writer claims it: the mark stays until the work is done.
  expect(await store.claimTransition(claiming)).toBe(true);
  await store.finishWork(claiming, new Date(Date.now() + MARK_GRACE_MS * 2));
  expect(await markIds()).toEqual([claiming._id]);
});

it('waits for a transition from its mark’s first write, however old the transition’s time', async () => {
  await models.TransitionWork.deleteMany({});
  // A writer slowed before its claim (writes held for the database's lock, races lost): its
  // transition's time is long past when it marks it and sends the claim.
  const slowed = record({ unsettled: true }, new Date(Date.now() - 3 * MARK_GRACE_MS));
  expect(await store.claimTransition(slowed)).toBe(true);
  const mark = await models.TransitionWork.findById(slowed._id).lean();
  expect(Date.now() - new Date(mark?.markedAt as Date).getTime()).toBeLessThan(60_000);
  // Its claim not landed yet, as one held by the database: the mark waits for it.
  await models.Transition.deleteOne({ _id: slowed._id });
  // The sweep's read of the marks, as it passes them on.
  const [read] = await store.markedWork(new Date(), 10);
  expect(read.mark._id).toBe(slowed._id);
  const sweptAt = new Date();
  await store.finishWork(read.mark, sweptAt);
  expect(await markIds()).toEqual([slowed._id]);
  // Behind the others meanwhile: marks of writers stopped before their claims hold back no
  // later transition's work for their grace.
  const behind = await models.TransitionWork.findById(slowed._id).lean();
  expect(new Date(behind?.at as Date).getTime()).toBe(sweptAt.getTime());
  // Past the grace from its first write, it is let go.
  await store.finishWork(read.mark, new Date(Date.now() + MARK_GRACE_MS + 1000));
  expect(await markIds()).toEqual([]);
});

it('marks the transitions with work stored before marks existed, once', async () => {
  await Promise.all([models.TransitionWork.deleteMany({}), models.Transition.deleteMany({})]);
  const before = [record({ unsettled: true }), record({ unannounced: true }), record({})];
  await models.Transition.insertMany(before as never[]);
  await Promise.all([store.markStoredWork(), store.markStoredWork()]);
  const marked = await store.markedWork(new Date(), 100);
  expect(marked.map((m) => m.mark._id).sort()).toEqual([before[0]._id, before[1]._id].sort());
  await models.Transition.insertMany([record({ unsettled: true })] as never[]);
  await store.markStoredWork();
  expect(await store.markedWork(new Date(), 100)).toHaveLength(2);
});
