import type { CourierStore } from '../../../services/courier-matching/store';
import type { CourierTokenStore } from '../../../services/courier-matching/token-store';
import { createTokenActions } from '../../../services/courier-matching/courier-tokens';

describe('a courier token looked up by the gateway', () => {
  it('is answered without waiting for its use to be noted (the database too busy to take it)', async () => {
    const touched: string[] = [];
    const tokens = {
      findByHash: async () => ({ _id: 'hash', tokenId: 't1', courierId: 'c1', lastUsedAt: null }),
      // The database holds the write for ever.
      touch: (id: string) => {
        touched.push(id);
        return new Promise<void>(() => undefined);
      },
    } as unknown as CourierTokenStore;
    const couriers = {
      find: async () => ({ _id: 'c1', active: true, virtual: false }),
    } as unknown as CourierStore;
    const actions = createTokenActions({ couriers, tokens });
    const authenticate = (
      actions.authenticateCourier as { handler: (ctx: unknown) => Promise<unknown> }
    ).handler;
    const answer = authenticate({ params: { tokenHash: 'hash' } });
    const late = new Promise((resolve) => setTimeout(resolve, 1_000, 'held up'));
    expect(await Promise.race([answer, late])).toEqual({ courierId: 'c1', tokenId: 't1' });
    expect(touched).toEqual(['hash']);
  });
});
