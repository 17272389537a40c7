import { announceStored } from '../../../libs/announce';
import type { WaybillContext } from '../../../libs/service';

/** A context whose broadcast fails (NATS gone a moment), logging what it is told. */
function failingContext() {
  const warned: string[] = [];
  const broadcasts: unknown[] = [];
  const ctx = {
    broadcast: async (event: string, payload: unknown) => {
      broadcasts.push([event, payload]);
      throw new Error('NATS connection closed');
    },
    service: { logger: { warn: (message: string) => void warned.push(message) } },
  } as unknown as WaybillContext<unknown>;
  return { ctx, warned, broadcasts };
}

describe('announceStored', () => {
  it('tells the others of a stored change, and only logs what fails: the change stands', async () => {
    const { ctx, warned, broadcasts } = failingContext();
    const reload = jest.fn(async () => {
      throw new Error('database busy');
    });
    await expect(
      announceStored(ctx, 'geo.fleetTypesChanged', { fleetTypeId: 'f-1' }, reload),
    ).resolves.toBeUndefined();
    expect(reload).toHaveBeenCalledTimes(1);
    expect(broadcasts).toEqual([['geo.fleetTypesChanged', { fleetTypeId: 'f-1' }]]);
    expect(warned).toEqual([
      'geo.fleetTypesChanged: changed, but this replica could not reread it',
      'geo.fleetTypesChanged: changed, but the other replicas were not told',
    ]);
  });
});
