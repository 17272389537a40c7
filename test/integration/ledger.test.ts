import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import type mongoose from 'mongoose';
import type { ServiceBroker } from 'moleculer';
import type { CollectedOnDelivery, Posting } from '../../libs/contracts/payment';
import { defineLedgerModels, LedgerStore } from '../../services/payment/ledger-store';
import { adminHeaders, createUserWithKey, expectErrorEnvelope, request } from '../support/http';
import { count, samples as metric } from '../support/metrics';
import {
  dropDatabases,
  isolation,
  startClient,
  startNode,
  type NodeProcess,
  openServiceDatabase,
} from '../support/stack';

/**
 * Wallets on the ledger (issue 11): the gateway and account in one process, two payment
 * replicas in two others, all over NATS, so that concurrent postings race across processes
 * on the same FerretDB. Internal actions are called by a broker of the test's own.
 */
const iso = isolation();
const nodes: NodeProcess[] = [];
let gateway: NodeProcess;
let client: ServiceBroker;
let db: mongoose.Connection;
let merchant: { userId: string; key: string };

beforeAll(async () => {
  gateway = await startNode({ services: 'gateway,account', iso });
  nodes.push(gateway);
  for (let i = 0; i < 2; i++) nodes.push(await startNode({ services: 'payment', iso }));
  client = await startClient(iso, ['payment']);
  merchant = await createUserWithKey(gateway.url);
  db = await openServiceDatabase(iso, 'payment');
});

afterAll(async () => {
  await db?.close();
  await client?.stop();
  await Promise.all(nodes.map((n) => n.stop()));
  await dropDatabases(iso);
});

const debit = (userId: string, amountKobo: number, reference: string = randomUUID()) =>
  client.call('payment.debit', { userId, amountKobo, reference }) as Promise<Posting>;
const credit = (userId: string, amountKobo: number, reference: string = `test:${randomUUID()}`) =>
  client.call('payment.credit', { userId, amountKobo, reference }) as Promise<Posting>;
const refund = (userId: string, debitReference: string) =>
  client.call('payment.refund', { userId, debitReference }) as Promise<Posting>;

const adminCredit = (userId: string, json: unknown) =>
  request(gateway.url, 'POST', `/admin/users/${userId}/wallet/credit`, {
    headers: adminHeaders,
    json,
  });
const adminDebit = (userId: string, json: unknown) =>
  request(gateway.url, 'POST', `/admin/users/${userId}/wallet/debit`, {
    headers: adminHeaders,
    json,
  });
const adminWallet = (userId: string) =>
  request(gateway.url, 'GET', `/admin/users/${userId}/wallet`, { headers: adminHeaders });
const verify = () => request(gateway.url, 'GET', '/admin/ledger/verify', { headers: adminHeaders });
const transactions = (key: string, query = '') =>
  request(gateway.url, 'GET', `/api/wallet/transactions${query}`, { headers: { 'api-key': key } });

/** Entries of a wallet as stored, by their `_id`s' sequence. */
async function storedEntries(walletId: string) {
  const entries = await db
    .collection('ledger_entries')
    .find({ walletId })
    .sort({ sequence: 1 })
    .toArray();
  return entries as unknown as { _id: string; sequence: number; reference: string }[];
}

/** The node ids of the two payment replicas. */
function paymentReplicas(): string[] {
  const services = client.registry.getServiceList({ onlyAvailable: true }) as {
    name: string;
    nodeID: string;
  }[];
  const replicas = services.filter((s) => s.name === 'payment').map((s) => s.nodeID);
  expect(replicas).toHaveLength(2);
  return replicas;
}

/** The claim a debit leaves before it writes its entry (right after a wallet's first entry). */
async function insertDebitClaim(walletId: string, reference: string, amountKobo: number) {
  await db.collection('ledger_references').insertOne({
    _id: reference as unknown as mongoose.mongo.ObjectId,
    walletId,
    type: 'DEBIT',
    amountKobo,
    fromSequence: 2,
    checkedThrough: 1,
    entrySequence: null,
    description: null,
  });
}

describe('200 concurrent debits against a wallet funded for exactly 50', () => {
  it('lets exactly 50 through, across two replicas, and leaves 0.00', async () => {
    const { userId, key } = await createUserWithKey(gateway.url);
    // 50 debits of NGN 123.45.
    const funded = await adminCredit(userId, { amount: 6172.5, reference: 'float-1' });
    expect(funded.status).toBe(201);
    expect(funded.body.data.balance).toBe('6172.50');

    const outcomes = await Promise.allSettled(
      Array.from({ length: 200 }, () => debit(userId, 12345)),
    );

    const succeeded = outcomes.filter((o) => o.status === 'fulfilled');
    const refused = outcomes.filter((o) => o.status === 'rejected');
    expect(succeeded).toHaveLength(50);
    expect(refused).toHaveLength(150);
    for (const r of refused) {
      expect((r as PromiseRejectedResult).reason).toMatchObject({
        code: 422,
        type: 'UNPROCESSABLE',
        message: 'Insufficient balance',
      });
    }
    const wallet = await adminWallet(userId);
    expect(wallet.body.data).toEqual({
      userId,
      balance: '0.00',
      currency: 'NGN',
      updatedAt: expect.any(String),
    });
    const page = await transactions(key, '?limit=100');
    expect(page.body.data).toHaveLength(51);
    expect(page.body.data.filter((t: { type: string }) => t.type === 'DEBIT')).toHaveLength(50);
    expect((await storedEntries(userId)).map((e) => e.sequence)).toEqual(
      Array.from({ length: 51 }, (_, i) => i + 1),
    );
    // Both replicas took part in the race.
    for (const replica of nodes.slice(1)) {
      const handled = await metric(replica.opsUrl, 'moleculer_request_total');
      expect(count(handled, { action: 'payment.debit' })).toBeGreaterThan(0);
    }
    const report = await verify();
    expect(report.status).toBe(200);
    expect(report.body.data).toMatchObject({ clean: true, problems: [] });
  });
});

describe('references', () => {
  it('posts one debit for the same reference sent 20 times at once, and answers it each time', async () => {
    const userId = randomUUID();
    await credit(userId, 100_000);
    const reference = randomUUID();
    const postings = await Promise.all(
      Array.from({ length: 20 }, () => debit(userId, 2500, reference)),
    );
    expect(new Set(postings.map((p) => p.entry.id)).size).toBe(1);
    expect(postings.filter((p) => !p.replayed)).toHaveLength(1);
    expect(postings[0].entry).toMatchObject({
      type: 'DEBIT',
      amountKobo: -2500,
      balanceKobo: 97_500,
    });
    const entries = await storedEntries(userId);
    expect(entries.filter((e) => e.reference === reference)).toHaveLength(1);
    expect(entries).toHaveLength(2);
  });

  it('refunds a debit once, however often and however concurrently asked', async () => {
    const userId = randomUUID();
    await credit(userId, 10_000);
    const reference = randomUUID();
    await debit(userId, 4_000, reference);
    const [first, second] = await Promise.all([
      refund(userId, reference),
      refund(userId, reference),
    ]);
    expect(first.entry.id).toBe(second.entry.id);
    expect(first.entry).toMatchObject({
      type: 'REFUND',
      amountKobo: 4_000,
      balanceKobo: 10_000,
      reference: `refund:${reference}`,
    });
    const again = await refund(userId, reference);
    expect(again).toMatchObject({ replayed: true, entry: { id: first.entry.id } });
    expect(await storedEntries(userId)).toHaveLength(3);
  });

  it('refunds a debit whole, of its own wallet only, and nothing that was not debited', async () => {
    const userId = randomUUID();
    await credit(userId, 10_000);
    const reference = randomUUID();
    await debit(userId, 4_000, reference);
    await expect(refund(userId, randomUUID())).rejects.toMatchObject({ code: 404 });
    await expect(refund(randomUUID(), reference)).rejects.toMatchObject({ code: 404 });
    // A part is not asked for: the contract gives a debit back whole (decision 163).
    await expect(
      client.call('payment.refund', { userId, debitReference: reference, amountKobo: 1_500 }),
    ).rejects.toMatchObject({ code: 400 });
    const whole = await refund(userId, reference);
    expect(whole.entry).toMatchObject({ amountKobo: 4_000, balanceKobo: 10_000 });
  });

  it('gives up a debit refunded before it came: it takes nothing when it comes (409)', async () => {
    // The order sweep undoes a request whose debit is still on its way (decision 46).
    const userId = randomUUID();
    await credit(userId, 10_000);
    const reference = randomUUID();
    await expect(refund(userId, reference)).rejects.toMatchObject({ code: 404 });
    await expect(debit(userId, 4_000, reference)).rejects.toMatchObject({
      code: 409,
      message: expect.stringMatching(/given up before this debit came.*nothing was taken/),
    });
    await expect(refund(userId, reference)).rejects.toMatchObject({ code: 404 });
    expect((await storedEntries(userId)).map((e) => e.reference)).toEqual([
      expect.stringMatching(/^test:/),
    ]);
    expect((await verify()).body.data).toMatchObject({ clean: true });
  });

  it('gives up a debit claimed but not written yet, the wallet able to pay it: nothing taken, its posting given back (409)', async () => {
    const userId = randomUUID();
    await credit(userId, 5_000);
    const reference = randomUUID();
    // The claim of a debit still posting (on another replica, or dead half-way).
    await insertDebitClaim(userId, reference, 1_000);
    await expect(refund(userId, reference)).rejects.toMatchObject({ code: 404 });
    expect((await storedEntries(userId)).map((e) => e.reference)).toEqual([
      expect.stringMatching(/^test:/),
    ]);
    // Its posting, should it come, takes it and gives it back at once.
    await expect(debit(userId, 1_000, reference)).rejects.toMatchObject({
      code: 409,
      message: expect.stringMatching(/given up/),
    });
    const after = await storedEntries(userId);
    expect(after.map((e) => e.reference)).toEqual([
      expect.stringMatching(/^test:/),
      reference,
      `refund:${reference}`,
    ]);
    expect(after.at(-1)).toMatchObject({ balanceKobo: 5_000 });
    expect((await verify()).body.data).toMatchObject({ clean: true });
  });

  it('takes nothing for a request refused for want of balance and undone once the wallet was funded', async () => {
    const userId = randomUUID();
    await credit(userId, 500);
    const reference = randomUUID();
    await expect(debit(userId, 1_000, reference)).rejects.toMatchObject({ code: 422 });
    // The wallet is funded before the order service's undo of the refused request runs.
    await credit(userId, 10_000);
    await expect(refund(userId, reference)).rejects.toMatchObject({ code: 404 });
    const entries = await storedEntries(userId);
    expect(entries.map((e) => e.reference)).toEqual([
      expect.stringMatching(/^test:/),
      expect.stringMatching(/^test:/),
    ]);
    expect(entries.at(-1)).toMatchObject({ balanceKobo: 10_500 });
    expect((await verify()).body.data).toMatchObject({ clean: true });
  });

  it('leaves a claimed debit the balance does not cover as it is: nothing taken, nothing given back', async () => {
    const userId = randomUUID();
    await credit(userId, 500);
    const reference = randomUUID();
    await insertDebitClaim(userId, reference, 1_000);
    await expect(refund(userId, reference)).rejects.toMatchObject({ code: 404 });
    expect(await storedEntries(userId)).toHaveLength(1);
  });

  it('takes a debit and its refund racing on two replicas either both or neither, and answers a debit taken as given back', async () => {
    const userId = randomUUID();
    await credit(userId, 100_000);
    const [first, second] = paymentReplicas();
    const references = Array.from({ length: 20 }, () => randomUUID());
    const raced = await Promise.all(
      references.map(async (reference, i) => {
        const [d, r] = await Promise.allSettled([
          client.call(
            'payment.debit',
            { userId, amountKobo: 1_000, reference },
            { nodeID: i % 2 ? first : second },
          ),
          client.call(
            'payment.refund',
            { userId, debitReference: reference },
            { nodeID: i % 2 ? second : first },
          ),
        ]);
        return { debited: d.status === 'fulfilled', refunded: r.status === 'fulfilled' };
      }),
    );
    // A debit answered taken was given back. A refund that met its debit claimed and not
    // written gave it up: the debit, written after all, gave itself back and answered 409
    // (decision 184), the refund answering 200 or 404 as it saw the entry or not.
    for (const { debited, refunded } of raced) if (debited) expect(refunded).toBe(true);
    const wallet = (await client.call('payment.balance', { userId })) as { balanceKobo: number };
    expect(wallet.balanceKobo).toBe(100_000);
    // Each debit in the ledger has its refund, once; none other is there.
    const written = (await storedEntries(userId)).map((e) => e.reference);
    for (const reference of references) {
      const debits = written.filter((r) => r === reference).length;
      expect([reference, written.filter((r) => r === `refund:${reference}`).length]).toEqual([
        reference,
        debits,
      ]);
      expect(debits).toBeLessThanOrEqual(1);
    }
    expect(written.length).toBe(1 + 2 * references.filter((r) => written.includes(r)).length);
    expect((await verify()).body.data).toMatchObject({ clean: true });
  });

  it('takes a debit and its refund racing on one replica either both or neither', async () => {
    const userId = randomUUID();
    await credit(userId, 100_000);
    const on = { nodeID: paymentReplicas()[0] };
    const references = Array.from({ length: 20 }, () => randomUUID());
    const raced = await Promise.all(
      references.map(async (reference, i) => {
        const debiting = () =>
          client.call('payment.debit', { userId, amountKobo: 1_000, reference }, on);
        const refunding = () =>
          client.call('payment.refund', { userId, debitReference: reference }, on);
        // Every other pair has its refund asked first.
        const [r, d] = await Promise.allSettled(
          i % 2 ? [refunding(), debiting()] : [debiting(), refunding()].reverse(),
        );
        return { debited: d.status === 'fulfilled', refunded: r.status === 'fulfilled', d, r };
      }),
    );
    for (const { debited, refunded, d, r } of raced) {
      expect({ debited, refunded }).toEqual(
        debited ? { debited, refunded: true } : { debited, refunded: false },
      );
      if (!debited) {
        expect((d as PromiseRejectedResult).reason).toMatchObject({ code: 409 });
        expect((r as PromiseRejectedResult).reason).toMatchObject({ code: 404 });
      }
    }
    const wallet = (await client.call('payment.balance', { userId })) as { balanceKobo: number };
    expect(wallet.balanceKobo).toBe(100_000);
    const posted = raced.filter((x) => x.debited).length;
    expect(await storedEntries(userId)).toHaveLength(1 + 2 * posted);
    // Both ways came about: refunds asked first gave their debits up.
    expect(posted).toBeGreaterThan(0);
    expect(posted).toBeLessThan(references.length);
  });

  it('refuses a reference reused for another amount or another wallet (409)', async () => {
    const userId = randomUUID();
    await credit(userId, 10_000);
    const reference = randomUUID();
    await debit(userId, 1_000, reference);
    await expect(debit(userId, 1_001, reference)).rejects.toMatchObject({ code: 409 });
    await expect(debit(randomUUID(), 1_000, reference)).rejects.toMatchObject({ code: 409 });
  });

  it('refuses a refused debit again while the balance is short, and posts it once funded', async () => {
    const userId = randomUUID();
    const reference = randomUUID();
    await expect(debit(userId, 700, reference)).rejects.toMatchObject({ code: 422 });
    await credit(userId, 1_000);
    const posted = await debit(userId, 700, reference);
    expect(posted).toMatchObject({ replayed: false, entry: { sequence: 2, balanceKobo: 300 } });
  });
});

describe('a posting interrupted by a crash', () => {
  it('of a pay-on-delivery between the debt and the credit: the retry posts the credit, the debt once', async () => {
    const [merchant, courierId, deliveryId] = [randomUUID(), randomUUID(), randomUUID()];
    const collect = () =>
      client.call('payment.collectOnDelivery', {
        deliveryId,
        courierId,
        remitToUserId: merchant,
        amountKobo: 250_000,
      }) as Promise<CollectedOnDelivery>;
    await collect();
    // As if the call had died after claiming the credit's reference, before its entry.
    const byId = (id: string) => ({ _id: id as unknown as mongoose.mongo.ObjectId });
    await db.collection('ledger_entries').deleteOne(byId(`${merchant}:1`));
    await db.collection('wallets').deleteOne(byId(merchant));
    await db
      .collection('ledger_references')
      .updateOne(byId(`pod:${deliveryId}`), { $set: { entrySequence: null } });
    const retried = await collect();
    expect(retried.collected).toMatchObject({ replayed: true, entry: { balanceKobo: -250_000 } });
    expect(retried.credited).toMatchObject({ replayed: false, entry: { sequence: 1 } });
    expect(await storedEntries(`cash:${courierId}`)).toHaveLength(1);
    expect(await storedEntries(merchant)).toHaveLength(1);
  });

  it('is written once by its retry when the crash came before its entry', async () => {
    const userId = randomUUID();
    await credit(userId, 5_000);
    const reference = randomUUID();
    // The claim of a request that died before writing its entry.
    await insertDebitClaim(userId, reference, 1_000);
    const retried = await debit(userId, 1_000, reference);
    expect(retried).toMatchObject({ replayed: false, entry: { sequence: 2, balanceKobo: 4_000 } });
    expect(await storedEntries(userId)).toHaveLength(2);
  });

  it('is answered, not written again, when the crash came after its entry', async () => {
    const userId = randomUUID();
    await credit(userId, 5_000);
    const reference = randomUUID();
    await debit(userId, 1_000, reference);
    await credit(userId, 10);
    // As if the request had died between its entry and recording it on the claim.
    await db
      .collection('ledger_references')
      .updateOne(
        { _id: reference as unknown as mongoose.mongo.ObjectId },
        { $set: { entrySequence: null, checkedThrough: 1 } },
      );
    const retried = await debit(userId, 1_000, reference);
    expect(retried).toMatchObject({ replayed: true, entry: { sequence: 2 } });
    expect(await storedEntries(userId)).toHaveLength(3);
  });
});

describe('operators’ credits through the admin API', () => {
  it('credits once per reference and answers the wallet each time', async () => {
    const { userId } = await createUserWithKey(gateway.url);
    const first = await adminCredit(userId, { amount: 2500.75, reference: 'top-up-7' });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ success: true, message: 'Wallet credited' });
    expect(first.body.data).toEqual({
      userId,
      balance: '2500.75',
      currency: 'NGN',
      updatedAt: expect.any(String),
    });
    const again = await adminCredit(userId, { amount: 2500.75, reference: 'top-up-7' });
    expect(again.status).toBe(201);
    expect(again.body.data).toEqual(first.body.data);
    const other = await adminCredit(userId, { amount: 10, reference: 'top-up-8' });
    expect(other.body.data.balance).toBe('2510.75');
    expectErrorEnvelope(
      await adminCredit(userId, { amount: 99, reference: 'top-up-7' }),
      409,
      /Reference admin:top-up-7 was already used/,
    );
    expect((await adminWallet(userId)).body.data.balance).toBe('2510.75');
  });

  it('takes back a credit made by mistake once per reference, ten at once, never below zero, saying why to the owner', async () => {
    const owner = await createUserWithKey(gateway.url);
    const { userId } = owner;
    const typo = await adminCredit(userId, {
      amount: 25_000,
      reference: 'receipt-41',
      note: 'Bank transfer, receipt 41',
    });
    expect(typo.body.data.balance).toBe('25000.00');
    const correction = {
      amount: 22_500,
      reference: 'receipt-41-fix',
      note: 'Receipt 41 was NGN 2,500, not 25,000',
    };
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => adminDebit(userId, correction)),
    );
    expect(answers.map((a) => [a.status, a.body.data.balance])).toEqual(
      Array(10).fill([201, '2500.00']),
    );
    const entries = (await transactions(owner.key)).body.data;
    expect(
      entries.map((e: { type: string; description: string }) => [e.type, e.description]),
    ).toEqual([
      ['DEBIT', 'Receipt 41 was NGN 2,500, not 25,000'],
      ['CREDIT', 'Bank transfer, receipt 41'],
    ]);
    // Another amount under the reference, more than the wallet holds, or no reason: refused.
    expectErrorEnvelope(await adminDebit(userId, { ...correction, amount: 1 }), 409);
    const tooMuch = { amount: 2_500.01, reference: 'too-much', note: 'x' };
    expectErrorEnvelope(await adminDebit(userId, tooMuch), 422);
    // Refused, its reference is spent: once the wallet holds enough, the same debit sent again
    // takes nothing (the operator may have settled it another way since).
    await adminCredit(userId, { amount: 1, reference: 'top-up-after-refusal' });
    expectErrorEnvelope(await adminDebit(userId, tooMuch), 409, /refused when it came/);
    expect((await adminWallet(userId)).body.data.balance).toBe('2501.00');
    await adminDebit(userId, { amount: 1, reference: 'top-up-after-refusal-back', note: 'z' });
    expectErrorEnvelope(await adminDebit(userId, { amount: 1, reference: 'no-why' }), 400);
    expectErrorEnvelope(await adminDebit(randomUUID(), { ...correction, reference: 'r' }), 404);
    // A debit's reference is its own: the same name as a credit's takes nothing of it.
    expect(
      (await adminDebit(userId, { amount: 500, reference: 'receipt-41', note: 'y' })).status,
    ).toBe(201);
    expect((await adminWallet(userId)).body.data.balance).toBe('2000.00');
    expect(
      (await verify()).body.data.problems.filter(
        (p: { walletId: string }) => p.walletId === userId,
      ),
    ).toEqual([]);
  });

  it('refuses amounts that are not NGN to the kobo, not positive, or not numbers', async () => {
    const { userId } = await createUserWithKey(gateway.url);
    for (const amount of [10.005, 0, -5, '10', null]) {
      const reply = await adminCredit(userId, { amount, reference: `bad-${String(amount)}` });
      expectErrorEnvelope(reply, 400);
    }
    expectErrorEnvelope(await adminCredit(userId, { amount: 10 }), 400);
    expectErrorEnvelope(await adminCredit(userId, { amount: 10, reference: 'a b' }), 400);
    expect((await adminWallet(userId)).body.data.balance).toBe('0.00');
  });

  it('answers 404 for a user that does not exist, 400 for an id that is not one', async () => {
    expectErrorEnvelope(await adminCredit(randomUUID(), { amount: 1, reference: 'x' }), 404);
    expectErrorEnvelope(await adminWallet(randomUUID()), 404);
    expectErrorEnvelope(await adminWallet('nope'), 400);
  });

  it('is refused without the admin token', async () => {
    const reply = await request(gateway.url, 'GET', `/admin/users/${merchant.userId}/wallet`);
    expectErrorEnvelope(reply, 401);
  });
});

describe('GET /api/wallet and /api/wallet/transactions', () => {
  it('shows the caller its own wallet and entries, newest first, page by page', async () => {
    const { userId, key } = await createUserWithKey(gateway.url);
    const empty = await request(gateway.url, 'GET', '/api/wallet', { headers: { 'api-key': key } });
    expect(empty.body.data).toEqual({ userId, balance: '0.00', currency: 'NGN', updatedAt: null });
    expect((await transactions(key)).body.data).toEqual([]);

    for (let i = 1; i <= 5; i++) await credit(userId, i * 100, `test:${userId}:${i}`);
    await debit(userId, 250, `delivery-${userId}`);
    const wallet = await request(gateway.url, 'GET', '/api/wallet', {
      headers: { 'api-key': key },
    });
    expect(wallet.body.data.balance).toBe('12.50');

    const first = await transactions(key, '?limit=4');
    expect(first.status).toBe(200);
    expect(first.body.data.map((t: { sequence: number }) => t.sequence)).toEqual([6, 5, 4, 3]);
    expect(first.body.data[0]).toEqual({
      id: `${userId}:6`,
      sequence: 6,
      type: 'DEBIT',
      amount: '-2.50',
      balance: '12.50',
      reference: `delivery-${userId}`,
      description: null,
      createdAt: expect.any(String),
    });
    const next = await transactions(key, '?limit=4&before=3');
    expect(next.body.data.map((t: { sequence: number }) => t.sequence)).toEqual([2, 1]);
    expect(next.body.data[1]).toMatchObject({ type: 'CREDIT', amount: '1.00', balance: '1.00' });
    // A `before` past the newest entry reads from the newest, never an empty page.
    for (const before of [8, 500]) {
      const past = await transactions(key, `?limit=2&before=${before}`);
      expect(past.body.data.map((t: { sequence: number }) => t.sequence)).toEqual([6, 5]);
    }

    // Another merchant sees only their own.
    expect((await transactions(merchant.key)).body.data).toEqual([]);
    expectErrorEnvelope(await transactions(key, '?limit=0'), 400);
    expectErrorEnvelope(await transactions(key, '?limit=101'), 400);
    expectErrorEnvelope(await transactions(key, '?before=x'), 400);
    expectErrorEnvelope(await request(gateway.url, 'GET', '/api/wallet'), 401);
  });
});

describe('random sequences of credits, debits and refunds (property, on the real ledger)', () => {
  it('never take a wallet below zero and keep it equal to the sum of its entries', async () => {
    const operation = fc.oneof(
      fc.record({ kind: fc.constant('credit' as const), kobo: fc.integer({ min: 1, max: 5_000 }) }),
      fc.record({ kind: fc.constant('debit' as const), kobo: fc.integer({ min: 1, max: 5_000 }) }),
      fc.record({ kind: fc.constant('refund' as const), which: fc.nat(20) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { minLength: 1, maxLength: 12 }), async (ops) => {
        const userId = randomUUID();
        const debited: string[] = [];
        let expected = 0;
        for (const op of ops) {
          if (op.kind === 'credit') {
            await credit(userId, op.kobo);
            expected += op.kobo;
          } else if (op.kind === 'debit') {
            const reference = randomUUID();
            const outcome = await debit(userId, op.kobo, reference).catch(
              (e: { code?: number }) => e,
            );
            if ('entry' in outcome) {
              debited.push(reference);
              expected -= op.kobo;
            } else {
              expect(outcome.code).toBe(422);
              expect(expected).toBeLessThan(op.kobo);
            }
          } else if (debited.length > 0) {
            const posting = await refund(userId, debited[op.which % debited.length]);
            if (!posting.replayed) expected += posting.entry.amountKobo;
          }
          const balance = (await client.call('payment.balance', { userId })) as {
            balanceKobo: number;
          };
          expect(balance.balanceKobo).toBe(expected);
          expect(balance.balanceKobo).toBeGreaterThanOrEqual(0);
        }
        const entries = (await storedEntries(userId)) as unknown as { amountKobo: number }[];
        expect(entries.reduce((sum, e) => sum + e.amountKobo, 0)).toBe(expected);
      }),
      { numRuns: 12 },
    );
  });
});

// Last: it damages the ledger on purpose.
describe('GET /admin/ledger/verify', () => {
  it('refuses a query it does not take with 400', async () => {
    const reply = await request(gateway.url, 'GET', '/admin/ledger/verify?wallet=x', {
      headers: adminHeaders,
    });
    expectErrorEnvelope(reply, 400, /wallet/);
  });

  it('reports a changed balance, a missing entry and a doubled reference', async () => {
    const userId = randomUUID();
    for (let i = 0; i < 4; i++) await credit(userId, 1_000, `test:${userId}:${i}`);
    const entries = db.collection('ledger_entries');
    const byId = (id: string) => ({ _id: id as unknown as mongoose.mongo.ObjectId });
    await entries.updateOne(byId(`${userId}:2`), { $set: { balanceKobo: 999_999 } });
    await entries.deleteOne(byId(`${userId}:3`));
    await entries.updateOne(byId(`${userId}:4`), { $set: { reference: `test:${userId}:0` } });

    const report = await verify();
    expect(report.body.data.clean).toBe(false);
    const mine = report.body.data.problems.filter(
      (p: { walletId: string }) => p.walletId === userId,
    );
    const kinds = mine.map((p: { kind: string; sequence: number }) => `${p.kind}@${p.sequence}`);
    expect(kinds).toEqual(expect.arrayContaining(['MISMATCH@2', 'GAP@4', 'DUPLICATE@4']));
  });

  it('reports a head naming an entry that is not there, but not entries posted while it runs', async () => {
    const ahead = randomUUID();
    await credit(ahead, 1_000);
    await db
      .collection<{ _id: string; sequence: number }>('wallets')
      .updateOne({ _id: ahead }, { $set: { sequence: 3 } });
    // Money moves between the scan of the entries and the read of the heads.
    const busy = randomUUID();
    await credit(busy, 100);
    const models = defineLedgerModels(db);
    const Wallet = Object.create(models.Wallet) as typeof models.Wallet;
    Wallet.find = ((filter: object) => ({
      lean: () => ({
        cursor: async function* () {
          await credit(busy, 100);
          yield* models.Wallet.find(filter).lean().cursor();
        },
      }),
    })) as unknown as typeof Wallet.find;
    const report = await new LedgerStore(() => ({ ...models, Wallet })).verify();
    expect(report.problems.filter((p) => p.walletId === ahead)).toEqual([
      expect.objectContaining({ kind: 'MISMATCH', sequence: 3 }),
    ]);
    expect(report.problems.filter((p) => p.walletId === busy)).toEqual([]);
  });

  it('lists the problems the scan cannot see first, and counts every problem past the most it lists', async () => {
    const ahead = randomUUID();
    await credit(ahead, 1_000);
    await db
      .collection<{ _id: string; sequence: number }>('wallets')
      .updateOne({ _id: ahead }, { $set: { sequence: 3 } });
    // Pay-on-delivery credits from before cash accounts: UNMATCHED, as many as the most listed.
    const merchant = randomUUID();
    for (let i = 0; i < 3; i++) await credit(merchant, 100, `pod:${randomUUID()}`);
    const store = new LedgerStore(() => defineLedgerModels(db));
    const all = await store.verify();
    const at = (walletId: string, kind: string) =>
      all.problems.findIndex((p) => p.walletId === walletId && p.kind === kind);
    expect(at(ahead, 'MISMATCH')).toBeGreaterThanOrEqual(0);
    expect(at(ahead, 'MISMATCH')).toBeLessThan(at(merchant, 'UNMATCHED'));
    expect(all.problemCount).toBe(all.problems.length);
    // Listed at most 2: the rest counted, not listed.
    const few = await store.verify(2);
    expect(few.problems).toEqual(all.problems.slice(0, 2));
    expect(few.problemCount).toBe(all.problemCount);
    expect(few.clean).toBe(false);
  });

  it('reads an entry by `_id` only for a reference the scan did not find posted there', async () => {
    // Every reference's entry was read by `_id`: 20,000 reads after a 30-minute soak, and the
    // gateway's timeout (504) before the report.
    const userId = randomUUID();
    for (let i = 0; i < 3; i++) await credit(userId, 1_000, `test:${userId}:${i}`);
    await db
      .collection<{ _id: string; entrySequence: number }>('ledger_references')
      .updateOne({ _id: `test:${userId}:0` }, { $set: { entrySequence: 2 } });
    const models = defineLedgerModels(db);
    const Entry = Object.create(models.Entry) as typeof models.Entry;
    const read: string[] = [];
    Entry.findById = ((id: string) => {
      read.push(id);
      return models.Entry.findById(id);
    }) as typeof Entry.findById;
    const report = await new LedgerStore(() => ({ ...models, Entry })).verify();
    expect(report.problems.filter((p) => p.walletId === userId)).toEqual([
      expect.objectContaining({
        kind: 'MISMATCH',
        sequence: 2,
        detail: `reference test:${userId}:0 names this entry, which holds test:${userId}:1`,
      }),
    ]);
    expect(read.filter((id) => id.startsWith(userId))).toEqual([`${userId}:2`]);
  });

  it('reports money collected on delivery that no courier owes, and a courier owing below zero as no problem', async () => {
    const [merchant, courierId, paired] = [randomUUID(), randomUUID(), randomUUID()];
    await client.call('payment.collectOnDelivery', {
      deliveryId: paired,
      courierId,
      remitToUserId: merchant,
      amountKobo: 700_000,
    });
    // A credit as pay-on-delivery was posted before couriers' cash accounts: from nowhere.
    const orphan = randomUUID();
    await credit(merchant, 300_000, `pod:${orphan}`);
    const report = (await verify()).body.data;
    expect(report.cashAccounts).toBeGreaterThanOrEqual(1);
    const problems = report.problems.filter(
      (p: { walletId: string }) => p.walletId === merchant || p.walletId === `cash:${courierId}`,
    );
    expect(problems).toEqual([
      {
        walletId: merchant,
        kind: 'UNMATCHED',
        sequence: 2,
        detail: `collected on delivery ${orphan}: credited 300000 kobo, but no courier's cash account was debited for it`,
      },
    ]);
  });
});
