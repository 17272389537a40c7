import { randomUUID } from 'node:crypto';
import type mongoose from 'mongoose';
import { Turns } from '../../libs/turns';
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
  const reversalId = randomUUID();
  const replicas = [0, 1].map(() => new LedgerStore(() => models, new Turns()));
  const takeAll = () =>
    Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        replicas[i % 2].takeBack(walletId, reversalId, 1_000, 'taken back'),
      ),
    );
  const parts = async () =>
    (await models.Entry.find({ walletId }).sort({ sequence: 1 }).lean())
      .filter((e) => e.reference.startsWith(`reversal:${reversalId}:`))
      .map((e) => e.amountKobo);
  await replicas[0].post({ walletId, type: 'CREDIT', amountKobo: 700, reference: randomUUID() });
  expect(Math.max(...(await takeAll()))).toBe(700);
  expect(await parts()).toEqual([-700]);
  expect((await replicas[0].balance(walletId)).balanceKobo).toBe(0);

  await replicas[1].post({ walletId, type: 'CREDIT', amountKobo: 500, reference: randomUUID() });
  expect(await takeAll()).toEqual(Array.from({ length: 10 }, () => 1_000));
  expect(await parts()).toEqual([-700, -300]);
  expect((await replicas[0].balance(walletId)).balanceKobo).toBe(200);
  expect((await replicas[0].verify()).problems).toEqual([]);
});
