import type { ServiceBroker } from 'moleculer';
import { COURIER_TOKENS_CHANGED_EVENT, hashCourierToken } from '../../libs/contracts/matching';
import * as places from '../../libs/places';
import { dropDatabases, inProcessBroker, isolation } from '../support/stack';

/**
 * A revoked courier token reaches every gateway by event. A revocation whose later bookkeeping
 * fails (its place given back on a busy database) must still have sent that event: a repeat
 * answers 404 (the token is gone), so nothing would send it after.
 */
const iso = isolation();
let broker: ServiceBroker;
const changed: { courierId: string; hashes: string[] }[] = [];

beforeAll(async () => {
  ({ broker } = inProcessBroker(iso, ['account', 'geo', 'courier-matching']));
  broker.createService({
    name: 'gateway-stand-in',
    events: {
      [COURIER_TOKENS_CHANGED_EVENT]: (ctx: { params: (typeof changed)[number] }) =>
        void changed.push(ctx.params),
    },
  });
  await broker.start();
});

afterAll(async () => {
  await broker?.stop();
  await dropDatabases(iso);
});

/** A new courier of the directory, on a plate of its own, and a token of theirs. */
async function courierWithToken(regNo: string) {
  const types = await broker.call<{ id: string }[], unknown>('geo.listFleetTypes', {});
  const courier = await broker.call<{ id: string }, unknown>('courier-matching.createCourier', {
    name: 'Tunde Bakare',
    phone: '+2348031234567',
    fleet: { typeId: types[0].id, regNo, make: 'Bajaj', model: 'Boxer', colour: 'Red' },
  });
  const created = await broker.call<{ id: string; token: string }, unknown>(
    'courier-matching.createCourierToken',
    { courierId: courier.id },
  );
  return { courier, created };
}

it('tells the gateways of a revoked token even when its place cannot be given back', async () => {
  const { courier, created } = await courierWithToken('REV-001');
  const busy = jest
    .spyOn(places, 'givePlaceBack')
    .mockRejectedValueOnce(Object.assign(new Error('database busy'), { code: 503 }));
  try {
    await expect(
      broker.call('courier-matching.revokeCourierToken', { tokenId: created.id }),
    ).rejects.toThrow('database busy');
  } finally {
    busy.mockRestore();
  }
  const told = { courierId: courier.id, hashes: [hashCourierToken(created.token)] };
  expect(changed).toEqual([told, told]);
  // Gone: a repeat finds nothing to revoke.
  await expect(
    broker.call('courier-matching.revokeCourierToken', { tokenId: created.id }),
  ).rejects.toMatchObject({ code: 404 });
});

it('keeps a token whose revocation could not be told to the gateways, for the revocation to be sent again', async () => {
  const { courier, created } = await courierWithToken('REV-002');
  const revoke = () => broker.call('courier-matching.revokeCourierToken', { tokenId: created.id });
  const cut = jest
    .spyOn(broker, 'broadcast')
    .mockRejectedValueOnce(Object.assign(new Error('NATS away'), { code: 503 }));
  try {
    await expect(revoke()).rejects.toThrow('NATS away');
  } finally {
    cut.mockRestore();
  }
  changed.length = 0;
  await revoke();
  expect(changed).toContainEqual({
    courierId: courier.id,
    hashes: [hashCourierToken(created.token)],
  });
});
