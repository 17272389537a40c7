import { randomUUID } from 'node:crypto';
import { CheckoutStore, defineCheckoutModels } from '../../services/payment/checkout-store';
import type { LedgerStore } from '../../services/payment/ledger-store';
import { Reversals } from '../../services/payment/reversals';
import { useStoreDatabase } from '../support/store-database';

/** The checkout store's record of a reversal (decision 146), on the real server. */
const db = useStoreDatabase('payment', defineCheckoutModels);

describe('what is counted of a reversal', () => {
  it('takes the later count of as many parts when it is lower (a part given up since), never an earlier one', async () => {
    const store = new CheckoutStore(() => db.models);
    const id = randomUUID();
    await store.recordReversal(
      {
        _id: id,
        providerReference: `ck-${id}`,
        checkoutReference: `ck-${id}`,
        userId: randomUUID(),
        amountKobo: 10_000,
        receivedAt: new Date(),
        credited: null,
        takenKobo: 0,
        parts: 0,
        settledAt: null,
      },
      60_000,
    );
    const progress = (takenKobo: number, parts: number) =>
      store.reversalProgress(id, { credited: true, takenKobo, parts, nextCheckAt: new Date() });
    const counted = async () => {
      const r = await store.reversal(id);
      return [r?.takenKobo, r?.parts];
    };
    await progress(10_000, 3);
    await progress(3_000, 3);
    expect(await counted()).toEqual([3_000, 3]);
    // A count of fewer parts, written late by another caller, changes nothing.
    await progress(2_000, 2);
    expect(await counted()).toEqual([3_000, 3]);
    await progress(10_000, 4);
    expect(await counted()).toEqual([10_000, 4]);
  });
});

describe('a reversal listed whose record never comes', () => {
  it('is dropped once listed 5 minutes, however often the sweep looked at it meanwhile', async () => {
    const store = new CheckoutStore(() => db.models);
    const reversals = new Reversals({
      store,
      ledger: {} as LedgerStore, // never asked: there is no record to settle
      logger: () => ({ info: () => undefined, warn: () => undefined, error: () => undefined }),
      recheckMs: 60_000,
      creditWaitMs: 60_000,
    });
    const [old, fresh] = [randomUUID(), randomUUID()];
    // Listed six minutes ago (a webhook stopped before storing the record), and looked at by
    // every sweep since, each moving its next look on.
    await store.rescheduleReversal(old, new Date());
    await db.models.OpenReversal.updateOne(
      { _id: old },
      { $set: { listedAt: new Date(Date.now() - 6 * 60_000) } },
    );
    await store.rescheduleReversal(old, new Date(Date.now() - 1_000));
    await store.rescheduleReversal(fresh, new Date(Date.now() - 1_000));
    await reversals.sweep(100);
    expect(await db.models.OpenReversal.findById(old).lean()).toBeNull();
    // One listed a moment ago may still be getting its record: behind the others meanwhile.
    const kept = await db.models.OpenReversal.findById(fresh).lean<{ nextCheckAt: Date }>();
    expect(kept?.nextCheckAt.getTime()).toBeGreaterThan(Date.now() + 30_000);
  });

  it('starts the wait of a listing made before listings kept when, at its first look', async () => {
    const store = new CheckoutStore(() => db.models);
    const reversals = new Reversals({
      store,
      ledger: {} as LedgerStore,
      logger: () => ({ info: () => undefined, warn: () => undefined, error: () => undefined }),
      recheckMs: 60_000,
      creditWaitMs: 60_000,
    });
    const old = randomUUID();
    await db.models.OpenReversal.create({ _id: old, nextCheckAt: new Date(Date.now() - 1_000) });
    const before = Date.now();
    await reversals.sweep(100);
    const noted = await db.models.OpenReversal.findById(old).lean<{ listedAt?: Date }>();
    expect(noted?.listedAt?.getTime()).toBeGreaterThanOrEqual(before);
    // Five minutes on, and looked at again: dropped, as one listed then would be.
    await db.models.OpenReversal.updateOne(
      { _id: old },
      { $set: { listedAt: new Date(Date.now() - 6 * 60_000), nextCheckAt: new Date() } },
    );
    await reversals.sweep(100);
    expect(await db.models.OpenReversal.findById(old).lean()).toBeNull();
  });
});
