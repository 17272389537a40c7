import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { defineWriterLockModels, WriterLocks } from '../../libs/writer-locks';
import { useStoreDatabase } from '../support/store-database';

/**
 * One writer at a time (libs/writer-locks) on the real server: waiters wait by reading, not by
 * trying the insert over and over, and an insert whose answer was lost is not left holding.
 */
const db = useStoreDatabase('writer_locks', (connection) =>
  defineWriterLockModels(connection, 'things', 'Thing'),
);
const locks = () => WriterLocks.named(() => db.models, 'Thing', 'Thing');

it('keeps waiters to a read at a time while a change runs, and lets each through in turn', async () => {
  const id = randomUUID();
  const order: string[] = [];
  const inserted = await db.idsInserted('things_locks', async () => {
    const running = locks().holding(id, async () => {
      order.push('first');
      await sleep(400);
    });
    await sleep(20);
    const waiting = Array.from({ length: 5 }, (_, i) =>
      locks().holding(id, async () => {
        order.push(`waiter ${i}`);
      }),
    );
    await Promise.all([running, ...waiting]);
  });
  expect(order[0]).toBe('first');
  expect(order).toHaveLength(6);
  // The first's insert, one refused insert per waiter as it came, and each waiter's takes once
  // the lock was free (a few lost races at most): not one insert every 25 ms for 400 ms each.
  expect(inserted.length).toBeLessThanOrEqual(1 + 5 + 5 * 3);
});

it('holds the lock an insert took whose answer was lost, and lets it go', async () => {
  const id = randomUUID();
  const Lock = db.models.ThingLock;
  const cut = new Error('connection reset while the insert was answered');
  // The insert lands; its answer never comes.
  const models = {
    ...db.models,
    ThingLock: Object.assign(Object.create(Lock), {
      create: async (doc: { _id: string; at: Date; token: string }) => {
        await Lock.create(doc);
        throw cut;
      },
    }) as typeof Lock,
  };
  const cutLocks = WriterLocks.named(() => models, 'Thing', 'Thing');
  const token = await cutLocks.acquire(id);
  expect(token).toEqual(expect.any(String));
  expect(await Lock.findById(id).lean()).toMatchObject({ token });
  await cutLocks.release(id, token as string);
  expect(await Lock.findById(id).lean()).toBeNull();
});

it('waits for the lock whose insert answered nothing and did not land, as for any', async () => {
  const id = randomUUID();
  const Lock = db.models.ThingLock;
  let cuts = 0;
  // The first insert is cut before it reaches the server; the next goes through.
  const models = {
    ...db.models,
    ThingLock: Object.assign(Object.create(Lock), {
      create: async (doc: { _id: string; at: Date; token: string }) => {
        if (cuts++ === 0) throw new Error('connection reset before the insert was sent');
        return Lock.create(doc);
      },
    }) as typeof Lock,
  };
  const cutLocks = WriterLocks.named(() => models, 'Thing', 'Thing');
  const token = await cutLocks.acquire(id);
  expect(cuts).toBe(2);
  expect(await Lock.findById(id).lean()).toMatchObject({ token });
  await cutLocks.release(id, token as string);
});
