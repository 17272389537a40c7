import { loadConfig } from '../../../libs/config';
import { notFound } from '../../../libs/errors';
import { createCourierAdminActions } from '../../../services/courier-matching/courier-admin';
import type { CourierAdminDeps } from '../../../services/courier-matching/courier-admin';

describe('a courier’s registration number', () => {
  it('is given back when taking it failed after its claim may have landed', async () => {
    const claims = new Map<string, string>();
    const store = {
      find: async () => null,
      // The claim is written, then the answer is lost (the database went away).
      takeRegNo: async (regNo: string, courierId: string) => {
        claims.set(regNo, courierId);
        throw new Error('connection closed');
      },
      releaseRegNo: async (regNo: string, courierId: string) => {
        if (claims.get(regNo) === courierId) claims.delete(regNo);
      },
    } as unknown as CourierAdminDeps['store'];
    const actions = createCourierAdminActions({
      config: loadConfig({}),
      store,
    } as unknown as CourierAdminDeps);
    const create = (actions.createCourier as { handler: (ctx: unknown) => Promise<unknown> })
      .handler;
    const ctx = {
      params: {
        name: 'Tunde Bakare',
        phone: '+2348031234567',
        fleet: { typeId: 'f', regNo: 'LSD-482-XY', make: 'Bajaj', model: 'Boxer', colour: 'Red' },
      },
      meta: {},
      // No user has the id; geo has the fleet type.
      call: async (action: string) => {
        if (action === 'account.getUser') throw notFound('User not found');
        return {};
      },
    };
    await expect(create(ctx)).rejects.toThrow('connection closed');
    expect(claims.size).toBe(0);
    // With an id of the caller's choosing, a twin request creating that courier may hold the
    // claim: left, for the grace to settle.
    const chosen = {
      ...ctx,
      params: { ...ctx.params, id: '0b8f9c1e-3a52-4f8e-9d6b-2c7e4a1f5b30' },
    };
    await expect(create(chosen)).rejects.toThrow('connection closed');
    expect(claims).toEqual(new Map([['LSD-482-XY', chosen.params.id]]));
  });
});
