import { randomUUID } from 'node:crypto';
import { refundReference, type Posting } from '../../libs/contracts/payment';
import { Turns } from '../../libs/turns';
import {
  defineLedgerModels,
  LedgerStore,
  type LedgerModels,
} from '../../services/payment/ledger-store';
import { bulkCredits } from '../support/ledger';
import { useStoreDatabase } from '../support/store-database';

/**
 * A debit still posting on one payment replica when the order sweep's refund, on another, gives
 * it up (docs/payments.md, decision 115): the debit's walk stalls (the database's write lock)
 * after its claim; the refund finds the claim, cannot post the debit (the balance is short) and
 * answers that nothing was taken; a credit lands and the stalled walk writes the debit. Each
 * replica is a store of its own over the real server, and each point where one waits for the
 * other is a gate the test opens, so every order of the writes is played, not hoped for.
 */
const db = useStoreDatabase('ledger_given_up', defineLedgerModels);

/** A point where a replica waits: `reached` once it is there, then until `open()`. */
function gate() {
  let reach!: () => void;
  let open!: () => void;
  const reached = new Promise<void>((resolve) => (reach = resolve));
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { reached, open, pass: () => (reach(), opened) };
}
type Gate = ReturnType<typeof gate>;

/**
 * The models as a replica sees them, with `pause(collection, _id, when)` called around each
 * insert (before it is sent, and after it is acknowledged).
 */
function pausing(
  pause: (collection: string, id: string, when: 'before' | 'after') => Promise<void> | undefined,
): LedgerModels {
  const hooked = Object.entries(db.models).map(([name, model]) => {
    const wrapped = Object.create(model) as typeof model;
    const collection = model.collection.collectionName;
    wrapped.create = (async (doc: { _id: string }) => {
      await pause(collection, doc._id, 'before');
      const created = await (model.create as (d: unknown) => Promise<unknown>)(doc);
      await pause(collection, doc._id, 'after');
      return created;
    }) as unknown as typeof model.create;
    return [name, wrapped];
  });
  return Object.fromEntries(hooked) as LedgerModels;
}

/** A replica whose debit under `reference` stalls at `stalled` once it has claimed it. */
function stallingAfterClaim(reference: string) {
  const stalled = gate();
  const debitReplica = new LedgerStore(
    () =>
      pausing((collection, id, when) =>
        collection === 'ledger_references' && id === reference && when === 'after'
          ? stalled.pass()
          : undefined,
      ),
    new Turns(),
  );
  return { stalled, debitReplica };
}

const credit = (store: LedgerStore, walletId: string, amountKobo: number) =>
  store.post({ walletId, type: 'CREDIT', amountKobo, reference: `test:${randomUUID()}` });

/** What the payment service's `payment.refund` asks for: all of the debit, for an undone request. */
const undo = (store: LedgerStore, walletId: string, reference: string) =>
  store.refundDebit(walletId, reference, 'Delivery request not completed');

/** How the two calls ended: the posting, or the error's status. */
const settle = (p: Promise<Posting | null>) =>
  p.then(
    (posting) => ({ posting }),
    (err: { code?: number; message?: string }) => ({ code: err.code, message: err.message }),
  );

async function entriesOf(walletId: string) {
  return db.models.Entry.find({ walletId }).sort({ sequence: 1 }).lean();
}

/**
 * Plays one debit of 1,000 kobo on a wallet holding 500: the debit (replica A) claims its
 * reference and stalls; the refund (replica B) runs up to `refundStops` (its given-up mark,
 * before or after writing it) or to its answer; 1,000 more is credited; the debit goes on to
 * its answer, then the refund to its own.
 */
async function play(
  refundStops: 'before-mark' | 'after-mark' | 'answer',
  /** What happens elsewhere while the refund is stopped. */
  meanwhile: (reference: string) => Promise<unknown> = async () => undefined,
) {
  const walletId = randomUUID();
  const reference = randomUUID();
  const { stalled, debitReplica } = stallingAfterClaim(reference);
  const refundGate = gate();
  const refundReplica = new LedgerStore(
    () =>
      pausing((collection, id, when) =>
        collection === 'ledger_given_up' &&
        id === reference &&
        refundStops === (when === 'before' ? 'before-mark' : 'after-mark')
          ? refundGate.pass()
          : undefined,
      ),
    new Turns(),
  );
  const third = new LedgerStore(() => db.models, new Turns());
  await credit(third, walletId, 500);

  const debiting = settle(
    debitReplica.post({ walletId, type: 'DEBIT', amountKobo: 1_000, reference }),
  );
  await stalled.reached;
  const refunding = settle(undo(refundReplica, walletId, reference));
  // Without a mark to stop at (before the fix) the refund answers straight away.
  await Promise.race([refundGate.reached, refunding]);
  await meanwhile(reference);
  await credit(third, walletId, 1_000);
  stalled.open();
  const debited = await debiting;
  refundGate.open();
  const refunded = await refunding;

  const entries = await entriesOf(walletId);
  const balance = await third.balance(walletId);
  const problems = (await third.verify()).problems.filter((p) => p.walletId === walletId);
  return { walletId, reference, debited, refunded, entries, balance, problems };
}

describe('a debit given up by its refund while it was still posting', () => {
  it('is given back by the debit itself when it is written after the refund answered', async () => {
    const { reference, debited, refunded, entries, balance, problems } = await play('answer');
    expect(refunded).toEqual({ posting: null });
    expect(debited).toEqual({
      code: 409,
      message: expect.stringMatching(/given up while this debit was being posted.*given back/),
    });
    expect(entries.map((e) => [e.type, e.amountKobo, e.reference])).toEqual([
      ['CREDIT', 500, expect.stringMatching(/^test:/)],
      ['CREDIT', 1_000, expect.stringMatching(/^test:/)],
      ['DEBIT', -1_000, reference],
      ['REFUND', 1_000, `refund:${reference}`],
    ]);
    expect(balance.balanceKobo).toBe(1_500);
    expect(problems).toEqual([]);
    // Its mark was listed open for the repair sweep, which settles it.
    const listed = await db.models.OpenGivenUp.findById(reference).lean();
    expect(listed?.recheckAt).toBeInstanceOf(Date);
    expect(await db.models.GivenUp.findById(reference).lean()).toMatchObject({
      recordedFirst: true,
    });
  });

  it('is given back once when both the refund (after its mark) and the debit see it', async () => {
    const { reference, debited, refunded, entries, balance } = await play('after-mark');
    // The debit wrote its entry after the mark, the refund walked after the entry.
    expect(debited).toMatchObject({ code: 409 });
    expect(refunded).toMatchObject({
      posting: { replayed: true, entry: { type: 'REFUND', amountKobo: 1_000 } },
    });
    expect(entries.filter((e) => e.reference === `refund:${reference}`)).toHaveLength(1);
    expect(entries.filter((e) => e.reference === reference)).toHaveLength(1);
    expect(entries).toHaveLength(4);
    expect(balance.balanceKobo).toBe(1_500);
  });

  it('is given back by the refund when the debit was written before the mark', async () => {
    const { reference, debited, refunded, entries, balance, problems } = await play('before-mark');
    // The debit read no mark and kept its answer; the refund's walk met its entry.
    expect(debited).toMatchObject({ posting: { replayed: false, entry: { type: 'DEBIT' } } });
    expect(refunded).toMatchObject({
      posting: {
        replayed: false,
        entry: { type: 'REFUND', amountKobo: 1_000, balanceKobo: 1_500 },
      },
    });
    expect(entries.filter((e) => e.reference === `refund:${reference}`)).toHaveLength(1);
    expect(entries).toHaveLength(4);
    expect(balance.balanceKobo).toBe(1_500);
    expect(problems).toEqual([]);
  });

  it('lists its mark again when a sweep dropped its open entry while the mark was being made', async () => {
    // Listed, and stalled before its mark long enough for a sweep to take the entry for an
    // orphan's (a clock behind, a failover) and drop it.
    const { reference, problems } = await play('before-mark', (stalled) =>
      db.models.OpenGivenUp.deleteOne({ _id: stalled }),
    );
    expect(problems).toEqual([]);
    expect((await db.models.OpenGivenUp.findById(reference).lean())?.recheckAt).toBeInstanceOf(
      Date,
    );
  });

  it('gives back twenty stalled debits on one wallet, each once, when the refunds answered first', async () => {
    const walletId = randomUUID();
    const references = Array.from({ length: 20 }, () => randomUUID());
    const stalls = new Map<string, Gate>(references.map((r) => [r, gate()]));
    // Twenty requests' debits, each on a replica of its own, all stalled after their claims.
    const debiting = references.map((reference) =>
      settle(
        new LedgerStore(
          () =>
            pausing((collection, id, when) =>
              collection === 'ledger_references' && id === reference && when === 'after'
                ? stalls.get(reference)?.pass()
                : undefined,
            ),
          new Turns(),
        ).post({ walletId, type: 'DEBIT', amountKobo: 1_000, reference }),
      ),
    );
    await Promise.all([...stalls.values()].map((g) => g.reached));
    const refunder = new LedgerStore(() => db.models, new Turns());
    const refunded = await Promise.all(references.map((r) => settle(undo(refunder, walletId, r))));
    expect(refunded.every((r) => 'posting' in r && r.posting === null)).toBe(true);
    await credit(refunder, walletId, 20_000);
    for (const g of stalls.values()) g.open();
    const debited = await Promise.all(debiting);
    expect(debited.map((d) => ('code' in d ? d.code : 'kept'))).toEqual(references.map(() => 409));
    const entries = await entriesOf(walletId);
    expect(entries.filter((e) => e.type === 'DEBIT')).toHaveLength(20);
    expect(entries.filter((e) => e.type === 'REFUND')).toHaveLength(20);
    expect(new Set(entries.map((e) => e.reference)).size).toBe(entries.length);
    expect((await refunder.balance(walletId)).balanceKobo).toBe(20_000);
    expect((await refunder.verify()).problems.filter((p) => p.walletId === walletId)).toEqual([]);
  });
});

describe('GET /admin/ledger/verify and a debit given up', () => {
  const store = new LedgerStore(() => db.models, new Turns());

  /**
   * A debit written, its refund's mark inserted, and no `refund:` entry: what a posting killed
   * between its entry and its read of the mark leaves (decision 115's "Left"), its entry written
   * `ageMs` ago.
   */
  async function keptDebit(ageMs: number) {
    const walletId = randomUUID();
    const reference = randomUUID();
    await credit(store, walletId, 1_500);
    const { entry } = await store.post({ walletId, type: 'DEBIT', amountKobo: 1_000, reference });
    await markGivenUp(walletId, reference);
    await db.models.Entry.updateOne(
      { _id: entry.id },
      { $set: { createdAt: new Date(Date.now() - ageMs) } },
    );
    return { walletId, reference };
  }
  /** A debit's mark as this version's refund makes it: listed open first. */
  async function markGivenUp(walletId: string, reference: string) {
    const now = new Date();
    await db.models.OpenGivenUp.create({ _id: reference, recheckAt: now });
    await db.models.GivenUp.create({
      _id: reference,
      walletId,
      createdAt: now,
      recordedFirst: true,
    });
  }
  /** When the repair sweep looks at a mark next; null once it is off the open list. */
  const recheckOf = async (reference: string) =>
    (await db.models.OpenGivenUp.findById(reference).lean())?.recheckAt ?? null;
  const problemsOf = async (walletId: string) =>
    (await store.verify()).problems.filter((p) => p.walletId === walletId);

  it('reports a debit given up and still taken, and how to give it back', async () => {
    const { walletId, reference } = await keptDebit(10 * 60_000);
    expect(await problemsOf(walletId)).toEqual([
      {
        walletId,
        kind: 'UNREFUNDED',
        sequence: 2,
        detail: expect.stringContaining(`--reference refund:${reference}`),
      },
    ]);
    // The operator's credit under the refund's reference (`waybill wallet credit`) is posted as
    // the refund itself: a late retry of the request's undoing then gives nothing more.
    const refund = await creditedAsItsRefund(walletId, reference, 999);
    await Promise.all([
      undo(store, walletId, reference),
      store.creditByOperator(walletId, refund, 1_000),
    ]);
    expect((await entriesOf(walletId)).map((e) => e.type)).toEqual(['CREDIT', 'DEBIT', 'REFUND']);
    expect((await store.balance(walletId)).balanceKobo).toBe(1_500);
    expect(await problemsOf(walletId)).toEqual([]);
  });

  it('counts a repair made before, under the admin reference, as the refund', async () => {
    const { walletId, reference } = await keptDebit(10 * 60_000);
    await store.post({
      walletId,
      type: 'CREDIT',
      amountKobo: 1_000,
      reference: `admin:${refundReference(reference)}`,
    });
    expect(await problemsOf(walletId)).toEqual([]);
  });

  it("refuses a refund's credit to another wallet than the debit's, and counts none made there as its repair", async () => {
    const { walletId, reference } = await keptDebit(10 * 60_000);
    const refund = refundReference(reference);
    const other = randomUUID();
    await expect(store.creditByOperator(other, refund, 1_000)).rejects.toMatchObject({
      code: 409,
      message: expect.stringContaining(`taken from wallet ${walletId}, not this one`),
    });
    expect(await entriesOf(other)).toEqual([]);
    // One made there before this refusal gave the debit's wallet nothing: still reported, and
    // given back by the sweep.
    await store.post({
      walletId: other,
      type: 'CREDIT',
      amountKobo: 1_000,
      reference: `admin:${refund}`,
    });
    expect(await problemsOf(walletId)).toEqual([
      expect.objectContaining({ walletId, kind: 'UNREFUNDED' }),
    ]);
    expect(await store.repairGivenUp()).toBeGreaterThanOrEqual(1);
    expect((await entriesOf(walletId)).map((e) => [e.type, e.reference])).toEqual([
      ['CREDIT', expect.any(String)],
      ['DEBIT', reference],
      ['REFUND', refund],
    ]);
    expect(await problemsOf(walletId)).toEqual([]);
  });

  it('refuses to give back a debit undone before it took anything, and credits any other reference', async () => {
    const walletId = randomUUID();
    await credit(store, walletId, 500);
    // Given up before its claim (voided), and given up claimed but never written.
    const voided = randomUUID();
    expect(await undo(store, walletId, voided)).toBeNull();
    const unwritten = randomUUID();
    await claimUnwritten(walletId, unwritten);
    await db.models.GivenUp.create({ _id: unwritten, walletId, createdAt: new Date() });
    for (const debit of [voided, unwritten]) {
      await expect(
        store.creditByOperator(walletId, refundReference(debit), 1_000),
      ).rejects.toMatchObject({ code: 409, message: expect.stringContaining('took nothing') });
    }
    const plain = await store.creditByOperator(walletId, 'bonus-1', 200);
    expect(plain.entry).toMatchObject({ type: 'CREDIT', reference: 'admin:bonus-1' });
    expect((await store.balance(walletId)).balanceKobo).toBe(700);
  });

  /**
   * An operator's credit under the NGN 10 debit's refund: refused for `wrongKobo` (409), posted
   * as that refund for what the debit took. Its reference.
   */
  async function creditedAsItsRefund(walletId: string, reference: string, wrongKobo: number) {
    const refund = refundReference(reference);
    await expect(store.creditByOperator(walletId, refund, wrongKobo)).rejects.toMatchObject({
      code: 409,
      message: expect.stringContaining('took NGN 10.00'),
    });
    const given = await store.creditByOperator(walletId, refund, 1_000);
    expect(given.entry).toMatchObject({ type: 'REFUND', reference: refund, amountKobo: 1_000 });
    return refund;
  }

  /** A debit of NGN 10 claimed on a wallet holding NGN 5, and not written. */
  const claimUnwritten = (walletId: string, reference: string) =>
    db.models.Reference.create({
      _id: reference,
      walletId,
      type: 'DEBIT',
      amountKobo: 1_000,
      fromSequence: 2,
      checkedThrough: 1,
    });

  /** A wallet of NGN 15 from which a debit of NGN 10 was taken, its delivery not ended. */
  async function standingDebit() {
    const walletId = randomUUID();
    const reference = randomUUID();
    await credit(store, walletId, 1_500);
    await store.post({ walletId, type: 'DEBIT', amountKobo: 1_000, reference });
    return { walletId, reference };
  }

  it("posts an operator's credit of a standing debit's refund as that refund: its delivery's end gives nothing more", async () => {
    const { walletId, reference } = await standingDebit();
    // The merchant complains while the delivery still searches; support gives the fee back.
    const refund = await creditedAsItsRefund(walletId, reference, 400);
    // The delivery ends unserved, and its refund is asked for: met, not posted again.
    const [ended, again] = await Promise.all([
      undo(store, walletId, reference),
      store.creditByOperator(walletId, refund, 1_000),
    ]);
    expect([ended?.replayed, again.replayed]).toEqual([true, true]);
    expect((await entriesOf(walletId)).map((e) => e.type)).toEqual(['CREDIT', 'DEBIT', 'REFUND']);
    expect((await store.balance(walletId)).balanceKobo).toBe(1_500);
  });

  it("counts a credit an operator posted apart under a standing debit's refund before, as its refund", async () => {
    const { walletId, reference } = await standingDebit();
    await store.post({
      walletId,
      type: 'CREDIT',
      amountKobo: 1_000,
      reference: `admin:${refundReference(reference)}`,
    });
    expect((await undo(store, walletId, reference))?.replayed).toBe(true);
    // The operator's credit sent again to a node of this version: that credit, not another.
    const again = await store.creditByOperator(walletId, refundReference(reference), 1_000);
    expect(again).toMatchObject({ replayed: true, entry: { type: 'CREDIT' } });
    expect((await store.balance(walletId)).balanceKobo).toBe(1_500);
  });

  it("refuses an operator's refund of a debit still being taken: it may yet be written", async () => {
    const walletId = randomUUID();
    await credit(store, walletId, 500);
    const posting = randomUUID();
    await claimUnwritten(walletId, posting);
    await expect(
      store.creditByOperator(walletId, refundReference(posting), 1_000),
    ).rejects.toMatchObject({
      code: 409,
      message: expect.stringContaining('has taken nothing: its request is still posting it'),
    });
    expect((await store.balance(walletId)).balanceKobo).toBe(500);
  });

  it('leaves a debit written a moment ago to its own posting, which gives it back', async () => {
    const { walletId } = await keptDebit(1_000);
    expect(await problemsOf(walletId)).toEqual([]);
  });

  it('is given back by the sweep, once, however many replicas sweep at once', async () => {
    const { walletId, reference } = await keptDebit(10 * 60_000);
    // A mark stored before marks had `settledAt`, and before the open list (or by a node of the
    // version before it), is listed by the backfill and swept too.
    const legacy = await keptDebit(10 * 60_000);
    await db.models.GivenUp.collection.updateOne(
      { _id: legacy.reference as never },
      { $unset: { settledAt: '', recordedFirst: '' } },
    );
    await db.models.OpenGivenUp.deleteOne({ _id: legacy.reference });
    await store.listOpenGivenUp('after-rollout');
    // A mark the sweep cannot repair (its refund's reference taken by a part of another amount)
    // holds up none of the others, and is looked at again by the next sweep.
    const blocked = await keptDebit(10 * 60_000);
    await store.post({
      walletId: blocked.walletId,
      type: 'REFUND',
      amountKobo: 400,
      reference: refundReference(blocked.reference),
    });
    const failures: string[] = [];
    const replicas = [0, 1, 2].map(() => new LedgerStore(() => db.models, new Turns()));
    await Promise.all(
      replicas.map((replica) =>
        replica.repairGivenUp({ onError: (reference) => failures.push(reference) }),
      ),
    );
    // Each replica that read it before another set its next look fails on it, a minute apart.
    expect(failures.length).toBeGreaterThan(0);
    expect(new Set(failures)).toEqual(new Set([blocked.reference]));
    const blockedMark = await db.models.GivenUp.findById(blocked.reference).lean();
    expect(blockedMark?.settledAt).toBeNull();
    expect((await recheckOf(blocked.reference))?.getTime()).toBeGreaterThan(Date.now() + 30_000);
    for (const kept of [{ walletId, reference }, legacy]) {
      const entries = await entriesOf(kept.walletId);
      expect(entries.map((e) => [e.type, e.reference])).toEqual([
        ['CREDIT', expect.any(String)],
        ['DEBIT', kept.reference],
        ['REFUND', refundReference(kept.reference)],
      ]);
      expect((await store.balance(kept.walletId)).balanceKobo).toBe(1_500);
      expect(await problemsOf(kept.walletId)).toEqual([]);
      // Settled: not read again, and a late undo of the request gives nothing more.
      const mark = await db.models.GivenUp.findById(kept.reference).lean();
      expect(mark?.settledAt).toBeInstanceOf(Date);
      expect(await recheckOf(kept.reference)).toBeNull();
      await undo(store, kept.walletId, kept.reference);
      expect(await entriesOf(kept.walletId)).toHaveLength(3);
    }
  });

  it('leaves to the sweep nothing to give back for a debit just written, repaired or never written', async () => {
    const recent = await keptDebit(1_000);
    const repaired = await keptDebit(10 * 60_000);
    await store.post({
      walletId: repaired.walletId,
      type: 'CREDIT',
      amountKobo: 1_000,
      reference: `admin:${refundReference(repaired.reference)}`,
    });
    // Claimed, given up, not written (yet: a retry of its request may still write it).
    const unwritten = { walletId: randomUUID(), reference: randomUUID() };
    await credit(store, unwritten.walletId, 500);
    await db.models.Reference.create({
      _id: unwritten.reference,
      walletId: unwritten.walletId,
      type: 'DEBIT',
      amountKobo: 1_000,
      fromSequence: 2,
      checkedThrough: 1,
    });
    await markGivenUp(unwritten.walletId, unwritten.reference);
    await store.repairGivenUp();
    expect((await entriesOf(recent.walletId)).map((e) => e.type)).toEqual(['CREDIT', 'DEBIT']);
    expect((await entriesOf(repaired.walletId)).map((e) => e.type)).toEqual([
      'CREDIT',
      'DEBIT',
      'CREDIT',
    ]);
    expect((await entriesOf(unwritten.walletId)).map((e) => e.type)).toEqual(['CREDIT']);
    // The one just written and the unwritten one are looked at again a minute later, not at
    // every sweep; the repaired one is settled.
    const markOf = async (reference: string) => db.models.GivenUp.findById(reference).lean();
    for (const open of [recent, unwritten]) {
      expect((await markOf(open.reference))?.settledAt).toBeNull();
      expect((await recheckOf(open.reference))?.getTime()).toBeGreaterThan(Date.now() + 30_000);
    }
    expect((await markOf(repaired.reference))?.settledAt).toBeInstanceOf(Date);
    expect(await recheckOf(repaired.reference)).toBeNull();
  });

  it('reads only the open marks: a settled one is not listed again, one listed first is not read by the backfill', async () => {
    // Settled by a node of the version before (no open entry): never listed again.
    const settled = await keptDebit(10 * 60_000);
    await db.models.OpenGivenUp.deleteOne({ _id: settled.reference });
    await db.models.GivenUp.updateOne(
      { _id: settled.reference },
      { $set: { settledAt: new Date() }, $unset: { recordedFirst: '' } },
    );
    // Listed first and taken off the list: the backfill does not put it back.
    const recorded = await keptDebit(10 * 60_000);
    await db.models.OpenGivenUp.deleteOne({ _id: recorded.reference });
    // Listed, its mark not made (its give-up stopped in between) a while ago: dropped.
    const orphan = randomUUID();
    await db.models.OpenGivenUp.create({
      _id: orphan,
      recheckAt: new Date(Date.now() - 2 * 60_000),
    });
    await store.listOpenGivenUp('after-rollout');
    expect(await recheckOf(settled.reference)).toBeNull();
    expect(await recheckOf(recorded.reference)).toBeNull();
    await store.repairGivenUp();
    for (const { walletId } of [settled, recorded]) {
      expect((await entriesOf(walletId)).map((e) => e.type)).toEqual(['CREDIT', 'DEBIT']);
    }
    expect(await db.models.OpenGivenUp.findById(orphan).lean()).toBeNull();
  });

  it('reads a refused debit’s wallet at each recheck from where the last one stopped', async () => {
    // A request refused for want of balance, then undone: its debit is given up, unwritten.
    const walletId = randomUUID();
    const reference = randomUUID();
    await credit(store, walletId, 500);
    await expect(
      store.post({ walletId, type: 'DEBIT', amountKobo: 1_000, reference }),
    ).rejects.toMatchObject({ code: 422 });
    expect(await undo(store, walletId, reference)).toBeNull();
    const readFrom = async () =>
      (await db.models.Reference.findById(reference).lean())?.checkedThrough;
    expect(await readFrom()).toBe(1);
    const due = () =>
      db.models.OpenGivenUp.updateOne({ _id: reference }, { $set: { recheckAt: new Date(0) } });
    for (const [credits, through] of [
      [5, 6],
      [2, 8],
    ]) {
      for (let i = 0; i < credits; i++) await credit(store, walletId, 1);
      await due();
      await store.repairGivenUp();
      // Not written, and the entries read are remembered: the next recheck reads only new ones.
      expect(await readFrom()).toBe(through);
      expect((await recheckOf(reference))?.getTime()).toBeGreaterThan(Date.now());
    }
    expect((await entriesOf(walletId)).map((e) => e.type)).not.toContain('DEBIT');
  });

  it('reports nothing for a debit given up and never written', async () => {
    const walletId = randomUUID();
    const reference = randomUUID();
    await credit(store, walletId, 500);
    await markGivenUp(walletId, reference);
    expect(await problemsOf(walletId)).toEqual([]);
  });
});

describe("an operator's correcting debit refused for want of balance", () => {
  const store = new LedgerStore(() => db.models, new Turns());
  const other = new LedgerStore(() => db.models, new Turns());

  it('takes nothing when sent again once the wallet holds enough', async () => {
    const walletId = randomUUID();
    await credit(store, walletId, 500);
    await expect(
      store.debitByOperator(walletId, 'fix-1', 1_000, { note: 'typo' }),
    ).rejects.toMatchObject({
      code: 422,
    });
    await credit(store, walletId, 1_000);
    await expect(
      store.debitByOperator(walletId, 'fix-1', 1_000, { note: 'typo' }),
    ).rejects.toMatchObject({
      code: 409,
      message: expect.stringContaining('refused when it came'),
    });
    expect((await store.balance(walletId)).balanceKobo).toBe(1_500);
  });

  it('is taken once, and stands, when a copy sent at the same moment found the balance', async () => {
    const walletId = randomUUID();
    await credit(store, walletId, 500);
    await expect(
      store.debitByOperator(walletId, 'fix-2', 1_000, { note: 'typo' }),
    ).rejects.toMatchObject({
      code: 422,
    });
    // The copy on another replica read no refusal before this one recorded it, and a credit
    // landed in between: it takes the debit, as its answer says.
    await credit(store, walletId, 1_000);
    const copy = await other.post({
      walletId,
      type: 'DEBIT',
      amountKobo: 1_000,
      reference: 'admin-debit:fix-2',
      description: 'typo',
    });
    expect(copy.replayed).toBe(false);
    // Sent again, it is answered as taken; nothing gives it back, not the repair sweep either.
    const again = await store.debitByOperator(walletId, 'fix-2', 1_000, { note: 'typo' });
    expect(again).toMatchObject({ replayed: true, entry: { reference: 'admin-debit:fix-2' } });
    await store.repairGivenUp();
    expect((await entriesOf(walletId)).map((e) => e.type)).toEqual(['CREDIT', 'CREDIT', 'DEBIT']);
    expect((await store.balance(walletId)).balanceKobo).toBe(500);
  });
});

describe('the ledger verify held to a deadline', () => {
  const store = new LedgerStore(() => db.models, new Turns());

  it('stops at it with a 503 naming the CLI, and reads it all without one', async () => {
    await db.models.Entry.insertMany(bulkCredits(randomUUID(), 2_500));
    await expect(store.verify(undefined, Date.now())).rejects.toMatchObject({
      code: 503,
      message: expect.stringContaining('waybill ledger verify'),
    });
    const whole = await store.verify();
    expect(whole.entries).toBeGreaterThanOrEqual(2_500);
  });
});
