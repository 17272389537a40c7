import { randomUUID } from 'node:crypto';
import mongoose from 'mongoose';
import { claimLease, holds, releaseLease } from '../../libs/mongo';
import { isolation, openServiceDatabase } from '../support/stack';

/**
 * Leases (`claimLease`, libs/mongo) on the real server: one holder at a time across callers,
 * a claim left by a holder that stopped taken over once its lease runs out, and a holder past
 * its lease never giving back a claim another may have taken over beside it.
 */
const iso = isolation();
let conn: mongoose.Connection;
const leaseSchema = new mongoose.Schema(
  { _id: { type: String, required: true }, startedAt: { type: Date, required: true } },
  { versionKey: false },
);
const defineLeases = (connection: mongoose.Connection) =>
  connection.model('TestLease', leaseSchema, 'test_leases');
let Leases: ReturnType<typeof defineLeases>;

beforeAll(async () => {
  conn = await openServiceDatabase(iso, 'leases');
  Leases = defineLeases(conn);
  await Leases.init();
});
afterAll(async () => {
  await conn?.dropDatabase();
  await conn?.close();
});

const LEASE_MS = 60_000;

it('gives the work to one of many callers at once, and to the next once given back', async () => {
  const name = randomUUID();
  const claims = await Promise.all(
    Array.from({ length: 10 }, () => claimLease(Leases, name, LEASE_MS)),
  );
  const held = claims.filter((c) => c !== null);
  expect(held).toHaveLength(1);
  expect(held[0]?.name).toBe(name);
  expect(await claimLease(Leases, name, LEASE_MS)).toBeNull();
  await releaseLease(Leases, held[0] as NonNullable<(typeof held)[0]>);
  expect((await claimLease(Leases, name, LEASE_MS))?.name).toBe(name);
});

it('takes over a claim whose lease ran out, once, and the holder past it gives nothing back', async () => {
  const name = randomUUID();
  const long = new Date(Date.now() - 2 * LEASE_MS);
  // A holder that stalled past its lease.
  const stalled = await claimLease(Leases, name, LEASE_MS, long);
  expect(stalled && holds(stalled)).toBe(false);
  const takers = await Promise.all(
    Array.from({ length: 5 }, () => claimLease(Leases, name, LEASE_MS)),
  );
  const took = takers.filter((t) => t !== null);
  expect(took.map((t) => t?.name)).toEqual([`${name}~1`]);
  // Woken, the stalled holder does not delete its claim: a third caller would claim `name`
  // beside the one that took over.
  await releaseLease(Leases, stalled as NonNullable<typeof stalled>);
  expect(await claimLease(Leases, name, LEASE_MS)).toBeNull();
});
