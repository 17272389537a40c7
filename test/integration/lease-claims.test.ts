import { randomUUID } from 'node:crypto';
import mongoose from 'mongoose';
import { claimLease, holds, RELEASE_MARGIN_MS, releaseLease } from '../../libs/mongo';
import { useStoreDatabase } from '../support/store-database';

/**
 * Leases (`claimLease`, libs/mongo) on the real server: one holder at a time across callers,
 * a claim left by a holder that stopped taken over once its lease runs out, and a holder past
 * its lease never giving back a claim another may have taken over beside it.
 */
const leaseSchema = new mongoose.Schema(
  { _id: { type: String, required: true }, startedAt: { type: Date, required: true } },
  { versionKey: false },
);
const db = useStoreDatabase('leases', (connection) => ({
  Leases: connection.model('TestLease', leaseSchema, 'test_leases'),
}));

const LEASE_MS = 60_000;

it('gives the work to one of many callers at once, and to the next once given back', async () => {
  const name = randomUUID();
  const claims = await Promise.all(
    Array.from({ length: 10 }, () => claimLease(db.models.Leases, name, LEASE_MS)),
  );
  const held = claims.filter((c) => c !== null);
  expect(held).toHaveLength(1);
  expect(held[0]?.name).toBe(name);
  expect(await claimLease(db.models.Leases, name, LEASE_MS)).toBeNull();
  await releaseLease(db.models.Leases, held[0] as NonNullable<(typeof held)[0]>);
  expect((await claimLease(db.models.Leases, name, LEASE_MS))?.name).toBe(name);
});

it('takes over a claim whose lease ran out, once, and the holder past it gives nothing back', async () => {
  const name = randomUUID();
  const long = new Date(Date.now() - 2 * LEASE_MS);
  // A holder that stalled past its lease.
  const stalled = await claimLease(db.models.Leases, name, LEASE_MS, long);
  expect(stalled && holds(stalled)).toBe(false);
  const takers = await Promise.all(
    Array.from({ length: 5 }, () => claimLease(db.models.Leases, name, LEASE_MS)),
  );
  const took = takers.filter((t) => t !== null);
  expect(took.map((t) => t?.name)).toEqual([`${name}~1`]);
  // Woken, the stalled holder does not delete its claim: a third caller would claim `name`
  // beside the one that took over.
  await releaseLease(db.models.Leases, stalled as NonNullable<typeof stalled>);
  expect(await claimLease(db.models.Leases, name, LEASE_MS)).toBeNull();
});

it('gives nothing back so near its lease’s end that the delete could land after another took over', async () => {
  const name = randomUUID();
  const near = new Date(Date.now() - LEASE_MS + RELEASE_MARGIN_MS / 2);
  const holder = await claimLease(db.models.Leases, name, LEASE_MS, near);
  expect(holder && holds(holder)).toBe(true);
  await releaseLease(db.models.Leases, holder as NonNullable<typeof holder>);
  // Still claimed: once it runs out, the next caller takes over its next turn, never `name`.
  expect(await claimLease(db.models.Leases, name, LEASE_MS)).toBeNull();
  const later = await claimLease(db.models.Leases, name, LEASE_MS, new Date(Date.now() + LEASE_MS));
  expect(later?.name).toBe(`${name}~1`);
});

it('keeps the work with the turn that took it over when an earlier holder’s delete lands late', async () => {
  const name = randomUUID();
  const long = new Date(Date.now() - 2 * LEASE_MS);
  const stalled = await claimLease(db.models.Leases, name, LEASE_MS, long);
  const took = await claimLease(db.models.Leases, name, LEASE_MS);
  expect(took?.name).toBe(`${name}~1`);
  // The stalled holder's delete, sent while its lease held, lands only now.
  await db.models.Leases.deleteOne({ _id: stalled?.name });
  const claims = await Promise.all(
    Array.from({ length: 5 }, () => claimLease(db.models.Leases, name, LEASE_MS)),
  );
  expect(claims.filter((c) => c !== null)).toEqual([]);
  expect(await db.models.Leases.findById(name).lean()).toBeNull();
  // Given back by the turn that took over, the work is the next caller's.
  await releaseLease(db.models.Leases, took as NonNullable<typeof took>);
  expect((await claimLease(db.models.Leases, name, LEASE_MS))?.name).toBe(name);
});

it('lets one caller at most hold when a late delete frees the turn another is taking over from', async () => {
  const name = randomUUID();
  const stalled = await claimLease(
    db.models.Leases,
    name,
    LEASE_MS,
    new Date(Date.now() - 2 * LEASE_MS),
  );
  const staleTurn = await db.models.Leases.findById(name).lean();
  // The stalled holder's delete lands; a caller then claims the freed turn, no later one held.
  await db.models.Leases.deleteOne({ _id: stalled?.name });
  const first = await claimLease(db.models.Leases, name, LEASE_MS);
  expect(first?.name).toBe(name);
  // Another read the turn stale just before the delete landed: it goes on to take turn 1.
  let asReadBefore = true;
  const real = db.models.Leases;
  const Leases = {
    create: (doc: { _id: string; startedAt: Date }) => real.create(doc),
    deleteOne: (filter: { _id: string }) => real.deleteOne(filter),
    findById: (id: string) =>
      id === name && asReadBefore
        ? ((asReadBefore = false), { lean: async () => staleTurn })
        : real.findById(id),
  } as unknown as typeof real;
  expect(await claimLease(Leases, name, LEASE_MS)).toBeNull();
  expect(await db.models.Leases.findById(`${name}~1`).lean()).toBeNull();
  expect(await db.models.Leases.findById(name).lean()).not.toBeNull();
});

it('refuses a lease too short to be given back before its end', async () => {
  await expect(claimLease(db.models.Leases, randomUUID(), RELEASE_MARGIN_MS)).rejects.toThrow(
    RangeError,
  );
});
