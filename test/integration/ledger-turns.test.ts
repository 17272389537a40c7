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
