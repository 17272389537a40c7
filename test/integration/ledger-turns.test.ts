import { randomUUID } from 'node:crypto';
import type mongoose from 'mongoose';
import { Turns } from '../../libs/turns';
import { reversalReference } from '../../services/payment/ledger';
import { defineLedgerModels, LedgerStore } from '../../services/payment/ledger-store';
import { isolation, openServiceDatabase } from '../support/stack';

/**
 * A wallet's postings on the real server (services/payment/ledger-store): those of one process
 * take turns, so each entry is inserted at its first try; two replicas, each taking turns only
 * with its own, still post every entry once, in one unbroken chain (test/integration/
 * ledger.test.ts races replicas in processes of their own through the gateway).
 */
const iso = isolation();
let conn: mongoose.Connection;
let models: ReturnType<typeof defineLedgerModels>;

beforeAll(async () => {
  conn = await openServiceDatabase(iso, 'ledger_turns');
  models = defineLedgerModels(conn);
  await Promise.all(Object.values(models).map((m) => m.createIndexes()));
});

afterAll(async () => {
  await conn?.dropDatabase();
  await conn?.close();
});

const credit = (store: LedgerStore, walletId: string) =>
  store.post({ walletId, type: 'CREDIT', amountKobo: 100, reference: randomUUID() });

it('inserts each entry at its first try when one process posts to a wallet at once', async () => {
  const walletId = randomUUID();
  const inserts = jest.spyOn(models.Entry, 'create');
  try {
    const store = new LedgerStore(() => models);
    await Promise.all(Array.from({ length: 20 }, () => credit(store, walletId)));
    expect(inserts).toHaveBeenCalledTimes(20);
    expect((await store.balance(walletId)).balanceKobo).toBe(2_000);
  } finally {
    inserts.mockRestore();
  }
});

it('posts every entry once, in one chain, when two replicas post to a wallet at once', async () => {
  const walletId = randomUUID();
  const replicas = [0, 1].map(() => new LedgerStore(() => models, new Turns()));
  await Promise.all(Array.from({ length: 20 }, (_, i) => credit(replicas[i % 2], walletId)));
  const balance = await replicas[0].balance(walletId);
  expect(balance).toMatchObject({ balanceKobo: 2_000, sequence: 20 });
  expect((await replicas[0].verify()).problems).toEqual([]);
});

it('takes a reversal back once when replicas take it at once: what the wallet holds, then the rest', async () => {
  const walletId = randomUUID();
  const reversal = { id: randomUUID(), amountKobo: 1_000, description: 'taken back' };
  const replicas = [0, 1].map(() => new LedgerStore(() => models, new Turns()));
  const takeAll = async () =>
    (
      await Promise.all(
        Array.from({ length: 10 }, (_, i) => replicas[i % 2].takeBack(walletId, reversal)),
      )
    ).map((t) => t.takenKobo);
  await replicas[0].post({ walletId, type: 'CREDIT', amountKobo: 700, reference: randomUUID() });
  expect(Math.max(...(await takeAll()))).toBe(700);
  expect(await partsOf(walletId, reversal.id)).toEqual([-700]);
  expect((await replicas[0].balance(walletId)).balanceKobo).toBe(0);

  await replicas[1].post({ walletId, type: 'CREDIT', amountKobo: 500, reference: randomUUID() });
  expect(await takeAll()).toEqual(Array.from({ length: 10 }, () => 1_000));
  expect(await partsOf(walletId, reversal.id)).toEqual([-700, -300]);
  expect((await replicas[0].balance(walletId)).balanceKobo).toBe(200);
  // Going on from what an earlier call counted; the total is counted again from the ledger
  // before it is answered whole, so a hint that counted too much is put right.
  expect(
    await replicas[0].takeBack(walletId, reversal, { from: { takenKobo: 1_000, parts: 1 } }),
  ).toEqual({ takenKobo: 1_000, parts: 2 });
  expect((await replicas[0].verify()).problems).toEqual([]);
});

it('gives up a part of a reversal the wallet no longer covers, and takes what it holds instead', async () => {
  const walletId = randomUUID();
  const store = new LedgerStore(() => models);
  const reversal = { id: randomUUID(), amountKobo: 10_000, description: 'taken back' };
  const part1 = reversalReference(reversal.id, 1);
  await store.post({ walletId, type: 'CREDIT', amountKobo: 3_000, reference: randomUUID() });
  // Part 1 claimed for 7,000 by a replica that read the balance before a debit elsewhere spent
  // 4,000 of it: its claim stands, unwritten.
  await expect(
    store.post({ walletId, type: 'DEBIT', amountKobo: 7_000, reference: part1 }),
  ).rejects.toMatchObject({ type: 'UNPROCESSABLE' });
  expect(await store.takeBack(walletId, reversal)).toEqual({ takenKobo: 3_000, parts: 2 });
  expect(await partsOf(walletId, reversal.id)).toEqual([-3_000]);
  expect((await store.balance(walletId)).balanceKobo).toBe(0);
  // The replica that claimed part 1 writes it once the wallet is credited: it is given back.
  await store.post({ walletId, type: 'CREDIT', amountKobo: 8_000, reference: randomUUID() });
  await expect(
    store.post({ walletId, type: 'DEBIT', amountKobo: 7_000, reference: part1 }),
  ).rejects.toMatchObject({ type: 'CONFLICT' });
  expect((await store.balance(walletId)).balanceKobo).toBe(8_000);
  // The rest is taken from what it holds; the given-up part counts for nothing.
  expect(await store.takeBack(walletId, reversal)).toEqual({ takenKobo: 10_000, parts: 3 });
  expect(await partsOf(walletId, reversal.id)).toEqual([-3_000, -7_000, -7_000]);
  expect((await store.balance(walletId)).balanceKobo).toBe(1_000);

  // A counted part given up afterwards (by a caller that ran past its turn, whose write of it
  // came after this caller counted it) is counted for nothing when the whole is counted again:
  // the reversal is not settled short.
  const part3 = reversalReference(reversal.id, 3);
  await models.GivenUp.create({ _id: part3, walletId, createdAt: new Date() });
  await store.post({ walletId, type: 'REFUND', amountKobo: 7_000, reference: `refund:${part3}` });
  expect(
    await store.takeBack(walletId, reversal, { from: { takenKobo: 10_000, parts: 3 } }),
  ).toEqual({ takenKobo: 3_000, parts: 3 });
  // The next call takes the rest from what the wallet holds.
  expect(
    await store.takeBack(walletId, reversal, { from: { takenKobo: 3_000, parts: 3 } }),
  ).toEqual({ takenKobo: 10_000, parts: 4 });
  expect((await store.balance(walletId)).balanceKobo).toBe(1_000);
  expect((await store.verify()).problems).toEqual([]);
});

it('gives a reversal back once when replicas give it back at once: each part kept, none after', async () => {
  const walletId = randomUUID();
  const replicas = [0, 1].map(() => new LedgerStore(() => models, new Turns()));
  const [store] = replicas;
  const reversal = { id: randomUUID(), amountKobo: 10_000, description: 'taken back' };
  await store.post({ walletId, type: 'CREDIT', amountKobo: 3_000, reference: randomUUID() });
  // Part 1 claimed for 7,000 and never written (the wallet held less): given up; part 2 takes
  // the 3,000 it holds.
  const part = (n: number) => reversalReference(reversal.id, n);
  await expect(
    store.post({ walletId, type: 'DEBIT', amountKobo: 7_000, reference: part(1) }),
  ).rejects.toMatchObject({ type: 'UNPROCESSABLE' });
  expect(await store.takeBack(walletId, reversal)).toEqual({ takenKobo: 3_000, parts: 2 });
  await store.post({ walletId, type: 'CREDIT', amountKobo: 500, reference: randomUUID() });
  expect(await store.takeBack(walletId, reversal)).toEqual({ takenKobo: 3_500, parts: 3 });
  expect((await store.balance(walletId)).balanceKobo).toBe(0);

  const back = { id: reversal.id, description: 'given back' };
  const answers = await Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      replicas[i % 2].giveBackReversal(walletId, back, () => true),
    ),
  );
  expect(answers).toEqual(Array.from({ length: 10 }, () => 3_500));
  expect((await store.balance(walletId)).balanceKobo).toBe(3_500);
  const refunds = (await models.Entry.find({ walletId }).lean()).filter((e) =>
    e.reference.startsWith(`refund:reversal:${reversal.id}:`),
  );
  expect(refunds.map((e) => [e.reference, e.amountKobo]).sort()).toEqual([
    [`refund:${part(2)}`, 3_000],
    [`refund:${part(3)}`, 500],
  ]);
  // The first part never claimed is the end, for good: none after it.
  expect(await models.Reference.findById(part(4)).lean()).toMatchObject({ type: 'VOIDED' });
  expect(await models.Reference.findById(part(5)).lean()).toBeNull();
  // A caller past its turn writing it afterwards takes nothing.
  await expect(
    store.post({ walletId, type: 'DEBIT', amountKobo: 100, reference: part(4) }),
  ).rejects.toMatchObject({ type: 'CONFLICT' });
  expect(await store.giveBackReversal(walletId, back, () => true)).toBe(3_500);
  expect(await store.giveBackReversal(walletId, back, () => false)).toBeNull();
  expect((await store.balance(walletId)).balanceKobo).toBe(3_500);
  expect((await store.verify()).problems).toEqual([]);
});

it('gives up a part of a reversal claimed and not written when it is given back: its late write takes nothing', async () => {
  const walletId = randomUUID();
  const store = new LedgerStore(() => models);
  const reversalId = randomUUID();
  const part1 = reversalReference(reversalId, 1);
  await store.post({ walletId, type: 'CREDIT', amountKobo: 1_000, reference: randomUUID() });
  await expect(
    store.post({ walletId, type: 'DEBIT', amountKobo: 5_000, reference: part1 }),
  ).rejects.toMatchObject({ type: 'UNPROCESSABLE' });
  const back = { id: reversalId, description: 'given back' };
  expect(await store.giveBackReversal(walletId, back, () => true)).toBe(0);
  await store.post({ walletId, type: 'CREDIT', amountKobo: 10_000, reference: randomUUID() });
  await expect(
    store.post({ walletId, type: 'DEBIT', amountKobo: 5_000, reference: part1 }),
  ).rejects.toMatchObject({ type: 'CONFLICT' });
  expect((await store.balance(walletId)).balanceKobo).toBe(11_000);
  expect((await store.verify()).problems).toEqual([]);
});

/** The amounts a reversal's parts moved, in the order written (a part given back included). */
async function partsOf(walletId: string, reversalId: string) {
  return (await models.Entry.find({ walletId }).sort({ sequence: 1 }).lean())
    .filter((e) => e.reference.startsWith(`reversal:${reversalId}:`))
    .map((e) => e.amountKobo);
}
