import { randomUUID } from 'node:crypto';
import { CheckoutStore, defineCheckoutModels } from '../../services/payment/checkout-store';
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
