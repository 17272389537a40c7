import { loadConfig } from '../../../libs/config';
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
      call: async () => ({}),
    };
    await expect(create(ctx)).rejects.toThrow('connection closed');
    expect(claims.size).toBe(0);
  });
});
