import { randomUUID } from 'node:crypto';
import type mongoose from 'mongoose';
import { Schema } from 'mongoose';
import {
  OutboxRecords,
  outboxPlaceSchema,
  type StoredOutboxFields,
} from '../../libs/messaging/outbox-records';
import { MARK_GRACE_MS } from '../../libs/work-marks';
import { useStoreDatabase } from '../support/store-database';

/**
 * An outbox's senders ask every few seconds what is due. The messages stay as the record of
 * what was sent, so that question is answered from the places of the messages still to send
 * (libs/messaging/outbox-records): on the real server, the messages are read by `_id` only,
 * and the places hold exactly the queue.
 */
/** Filters of the commands sent to the messages collection while recording. */
const messageFilters: unknown[] = [];
let recording = false;

const plain = { versionKey: false, strict: false } as const;
function defineModels(c: mongoose.Connection) {
  return {
    messages: c.model('Message', new Schema({ _id: String }, plain), 'messages'),
    places: c.model('MessagePlace', outboxPlaceSchema(), 'message_places'),
    attempts: c.model('MessageAttempt', new Schema({ _id: String, at: Date }, plain), 'attempts'),
  };
}

const db = useStoreDatabase('outbox', defineModels, (event) => {
  const command = event.command as Record<string, unknown>;
  if (!recording || command[event.commandName] !== 'messages') return;
  messageFilters.push(command.filter ?? command.q ?? command.updates ?? command.deletes);
});
let records: OutboxRecords<StoredOutboxFields>;
let models: ReturnType<typeof defineModels>;

beforeAll(() => {
  models = db.models;
  records = new OutboxRecords(() => models);
});

afterEach(async () => {
  const { messages, places, attempts } = models;
  await Promise.all([messages.deleteMany({}), places.deleteMany({}), attempts.deleteMany({})]);
});

const message = (createdAt: Date, id = randomUUID()): StoredOutboxFields => ({
  _id: id,
  status: 'PENDING',
  text: 'Your parcel is on its way',
  createdAt,
  sentAt: null,
});
const ids = (found: { _id: string }[] | { records: { _id: string }[] }) =>
  (Array.isArray(found) ? found : found.records).map((m) => m._id);

it('answers what is due from the queue, reading the messages by `_id` alone', async () => {
  const t0 = Date.now() - 60_000;
  const queued = Array.from({ length: 6 }, (_, i) => message(new Date(t0 + i)));
  await records.enqueue(queued);
  const now = new Date();
  expect(ids(await records.due(now, 50))).toEqual(ids(queued));

  await records.markSent(queued[0]._id, 1, 'ada@example.com', false);
  await records.markSent(queued[1]._id, 1, 'ada@example.com', true);
  await records.markAttemptFailed(queued[2]._id, 1, 'provider down', null, false);
  const retryAt = new Date(now.getTime() + 30_000);
  await records.markAttemptFailed(queued[3]._id, 1, 'provider busy', retryAt, false);

  recording = true;
  expect(ids(await records.due(now, 50))).toEqual(ids(queued.slice(4)));
  expect(ids(await records.due(retryAt, 50))).toEqual(ids(queued.slice(3)));
  expect(ids(await records.due(retryAt, 1))).toEqual([queued[3]._id]);
  recording = false;
  for (const filter of messageFilters) expect(Object.keys(filter as object)).toEqual(['_id']);
  expect(messageFilters.length).toBeGreaterThan(0);

  // Every message stays as the record; the queue holds only those still to send.
  expect(await models.messages.countDocuments()).toBe(6);
  expect((await models.places.find().lean()).map((p) => p._id).sort()).toEqual(
    ids(queued.slice(3)).sort(),
  );
});

it('reads on from where a read ended, to the queue’s end, whatever was sent or is not due', async () => {
  const t0 = Date.now() - 60_000;
  // Two made in the same millisecond: the queue's order is then by id.
  const queued = Array.from({ length: 7 }, (_, i) =>
    message(new Date(t0 + Math.min(i, 5)), `m-${i}` as ReturnType<typeof randomUUID>),
  );
  await records.enqueue(queued);
  const now = new Date();
  const first = await records.due(now, 3);
  expect(ids(first)).toEqual(ids(queued.slice(0, 3)));
  expect(first.next).toEqual({ createdAt: queued[2].createdAt, _id: 'm-2' });
  // Meanwhile one ahead is sent, one behind waits for a retry: neither moves the read.
  await records.markSent('m-0', 1, 'ada@example.com', false);
  await records.markAttemptFailed('m-4', 1, 'busy', new Date(+now + 60_000), false);
  const second = await records.due(now, 3, first.next ?? undefined);
  expect(ids(second)).toEqual(['m-3', 'm-5', 'm-6']);
  expect(second.next).toEqual({ createdAt: queued[6].createdAt, _id: 'm-6' });
  const last = await records.due(now, 3, second.next ?? undefined);
  expect(last).toEqual({ records: [], next: null });
  // Its place in the queue kept, the one waiting is read from the head once due.
  expect(ids(await records.due(new Date(+now + 60_000), 3))).toEqual(['m-1', 'm-2', 'm-3']);
});

it('queues a message once however often it is queued at the same time', async () => {
  const one = message(new Date());
  const outcomes = await Promise.all(Array.from({ length: 5 }, () => records.enqueueOnce(one)));
  expect(outcomes.filter(Boolean)).toHaveLength(1);
  await Promise.all(Array.from({ length: 3 }, () => records.enqueue([one])));
  expect(await models.messages.countDocuments()).toBe(1);
  expect(await models.places.countDocuments()).toBe(1);
});

it('lets go of a place whose message was never stored, not of one being stored', async () => {
  const now = Date.now();
  const lost = {
    _id: randomUUID(),
    dueAt: new Date(now - MARK_GRACE_MS - 1),
    createdAt: new Date(now - MARK_GRACE_MS - 1),
  };
  const storing = { _id: randomUUID(), dueAt: new Date(now - 1), createdAt: new Date(now - 1) };
  await models.places.create([lost, storing]);
  expect(await records.due(new Date(now), 50)).toEqual({ records: [], next: null });
  expect((await models.places.find().lean()).map((p) => p._id)).toEqual([storing._id]);
  // Its message arrives: it is due.
  await models.messages.create(message(storing.createdAt, storing._id));
  expect(ids(await records.due(new Date(now), 50))).toEqual([storing._id]);
});

it('keeps a place from its own first write, however old its message, until the message lands', async () => {
  const now = Date.now();
  // Queued long after it was made (a retry): its place is written now.
  const late = message(new Date(now - 3 * MARK_GRACE_MS));
  await records.enqueue([late]);
  const place = await models.places.findById(late._id).lean();
  expect(Date.now() - new Date(place?.markedAt as Date).getTime()).toBeLessThan(60_000);
  // Its insert not landed yet (held by the database): the place waits for it.
  await models.messages.deleteOne({ _id: late._id });
  expect(await records.due(new Date(), 50)).toEqual({ records: [], next: null });
  expect(await models.places.exists({ _id: late._id })).not.toBeNull();
  await models.messages.create(late);
  expect(ids(await records.due(new Date(), 50))).toEqual([late._id]);
});

it('queues the messages stored before places existed, once', async () => {
  const old = [message(new Date(Date.now() - 2000)), message(new Date(Date.now() - 1000))];
  await models.messages.insertMany([...old, { ...message(new Date()), status: 'SENT' }] as never[]);
  expect(await records.due(new Date(), 50)).toEqual({ records: [], next: null });
  await Promise.all([records.placeStoredMessages(), records.placeStoredMessages()]);
  expect(ids(await records.due(new Date(), 50))).toEqual(ids(old));
  // Done once per deployment: a message stored without a place later is not looked for.
  await models.messages.create(message(new Date(Date.now() - 500)));
  await records.placeStoredMessages();
  expect(ids(await records.due(new Date(), 50))).toEqual(ids(old));
});

it('withdraws only messages still PENDING and not under way, taking them off the queue', async () => {
  const now = new Date();
  const [waiting, retrying, held, sent] = Array.from({ length: 4 }, () => message(now));
  await records.enqueue([waiting, retrying, held, sent]);
  await records.markAttemptFailed(retrying._id, 1, 'provider busy', new Date(+now + 60_000), false);
  await records.claimAttempt(held._id, 1, now); // a sender is at work on it
  await records.markSent(sent._id, 1, 'ada@example.com', false);

  const all = ids([waiting, retrying, held, sent]);
  const withdrawn = await records.supersede(all, now, true);
  expect(withdrawn.sort()).toEqual(ids([waiting, retrying]).sort());
  for (const m of [waiting, retrying]) {
    expect(await records.get(m._id)).toMatchObject({ status: 'SUPERSEDED', text: null });
  }
  expect(await records.get(held._id)).toMatchObject({ status: 'PENDING', text: held.text });
  expect(await records.get(sent._id)).toMatchObject({ status: 'SENT' });
  // Off the queue: only the held one is still due, for its sender to record.
  expect(ids(await records.due(new Date(+now + 120_000), 50))).toEqual([held._id]);
  // Withdrawing again changes nothing.
  expect(await records.supersede(all, now, true)).toEqual([]);
});
