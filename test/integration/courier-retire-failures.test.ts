import { randomUUID } from 'node:crypto';
import type { ServiceBroker } from 'moleculer';
import type mongoose from 'mongoose';
import {
  COURIER_CHANGED_EVENT,
  COURIER_TOKENS_CHANGED_EVENT,
  hashCourierToken,
} from '../../libs/contracts/matching';
import { offerId as offerIdOf } from '../../services/courier-matching/matching-rules';
import { SearchStore } from '../../services/courier-matching/search-store';
import { CourierStore } from '../../services/courier-matching/store';
import { dropDatabases, inProcessBroker, isolation, openServiceDatabase } from '../support/stack';

/**
 * A retirement (`PATCH {active: false}`) that fails part-way on a busy database leaves the
 * courier at work as they were, or retired and announced, never retired unannounced while they
 * may still accept the offer they hold; and the operator's retry finishes it. Services in this
 * process, so that one call of the stores can be made to fail.
 */
const iso = isolation();
let broker: ServiceBroker;
let db: mongoose.Connection;
/** Couriers whose tokens the gateways were told to drop, and couriers replicas were told of. */
const tokensChanged: { courierId: string; hashes: string[] }[] = [];
const courierChanged: string[] = [];

beforeAll(async () => {
  ({ broker } = inProcessBroker(iso, ['account', 'geo', 'courier-matching']));
  broker.createService({
    name: 'gateway-stand-in',
    events: {
      [COURIER_TOKENS_CHANGED_EVENT]: (ctx: { params: (typeof tokensChanged)[number] }) =>
        void tokensChanged.push(ctx.params),
      [COURIER_CHANGED_EVENT]: (ctx: { params: { courierId: string } }) =>
        void courierChanged.push(ctx.params.courierId),
    },
  });
  await broker.start();
  db = await openServiceDatabase(iso, 'matching');
});

afterAll(async () => {
  await db?.close();
  await broker?.stop();
  await dropDatabases(iso);
});

interface Offered {
  courierId: string;
  hash: string;
  deliveryId: string;
  offerId: string;
}

let couriers = 0;

/** A courier at work with a token, holding an open offer (as a search's step leaves it). */
async function courierWithOffer(): Promise<Offered> {
  const types = await broker.call<{ id: string }[], unknown>('geo.listFleetTypes', {});
  couriers += 1;
  const courier = await broker.call<{ id: string }, unknown>('courier-matching.createCourier', {
    name: 'Tunde Bakare',
    phone: '+2348031234567',
    fleet: {
      typeId: types[0].id,
      regNo: `RTF-${couriers}`,
      make: 'Bajaj',
      model: 'Boxer',
      colour: 'Red',
    },
  });
  const { token } = await broker.call<{ token: string }, unknown>(
    'courier-matching.createCourierToken',
    { courierId: courier.id },
  );
  const deliveryId = randomUUID();
  const offerId = offerIdOf(deliveryId, 1);
  const at = new Date();
  const expiresAt = new Date(at.getTime() + 30_000);
  await db.collection('offers').insertOne({
    _id: offerId as never,
    deliveryId,
    n: 1,
    courierId: courier.id,
    offeredAt: at,
    expiresAt,
  });
  await db
    .collection('courier_holds')
    .insertOne({ _id: courier.id as never, deliveryId, offerId, kind: 'OFFER', at });
  return { courierId: courier.id, hash: hashCourierToken(token), deliveryId, offerId };
}

type StoreMethod = (this: unknown, ...args: unknown[]) => Promise<unknown>;

/**
 * Has the `nth` call of a store's method whose first argument is `key` fail as a busy database
 * would (the calls of the sweep and of other couriers run as they are); restored by the caller.
 */
function failNth(prototype: object, method: string, key: string, nth = 1) {
  const methods = prototype as Record<string, StoreMethod>;
  const real = methods[method];
  let calls = 0;
  return jest.spyOn(methods, method).mockImplementation(function (
    this: unknown,
    ...args: unknown[]
  ) {
    if (args[0] === key && ++calls === nth) return Promise.reject(new Error('database busy'));
    return real.apply(this, args);
  });
}

/** `change` sent while `failing` fails its call, restored after. */
async function patchFailing(
  courierId: string,
  failing: jest.SpyInstance[],
  change: object = { active: false },
): Promise<unknown> {
  try {
    return await broker.call('courier-matching.updateCourier', { courierId, ...change }).then(
      () => 'answered',
      (err: unknown) => err,
    );
  } finally {
    for (const spy of failing) spy.mockRestore();
  }
}

const patch = (courierId: string, change: object = { active: false }) =>
  broker.call<{ active: boolean; name: string }, unknown>('courier-matching.updateCourier', {
    courierId,
    ...change,
  });

async function isActive(courierId: string): Promise<boolean | undefined> {
  const found = await db
    .collection<{ _id: string; active: boolean }>('couriers')
    .findOne({ _id: courierId });
  return found?.active;
}

async function outcomeOf(offerId: string): Promise<string | null> {
  const found = await db
    .collection<{ _id: string; outcome: string }>('offer_outcomes')
    .findOne({ _id: offerId });
  return found?.outcome ?? null;
}

const announced = (c: Offered) => ({
  tokens: tokensChanged.filter((t) => t.courierId === c.courierId && t.hashes.includes(c.hash))
    .length,
  courier: courierChanged.filter((id) => id === c.courierId).length,
});

it.each([
  [
    'its hold cannot be read',
    (c: Offered) => failNth(SearchStore.prototype, 'hold', c.courierId, 2),
  ],
  [
    'its offer cannot be withdrawn',
    (c: Offered) => failNth(SearchStore.prototype, 'claimOfferOutcome', c.offerId),
  ],
])(
  'leaves the courier at work (503) when %s, the offer still theirs, and a retry retires them',
  async (_, fail) => {
    const c = await courierWithOffer();
    const failed = await patchFailing(c.courierId, [fail(c)]);

    expect(failed).toMatchObject({ code: 503, message: expect.stringMatching(/not retired/) });
    expect(await isActive(c.courierId)).toBe(true);
    expect(await outcomeOf(c.offerId)).toBeNull();
    // Whatever read them retired meanwhile (a gateway, a replica) is told to read them again.
    expect(announced(c)).toEqual({ tokens: 1, courier: 1 });

    expect(await patch(c.courierId)).toMatchObject({ active: false });
    expect(await isActive(c.courierId)).toBe(false);
    expect(await outcomeOf(c.offerId)).toBe('WITHDRAWN');
    expect(announced(c)).toEqual({ tokens: 2, courier: 2 });
  },
);

it('announces the courier retired (503) when putting them back fails too, and a retry withdraws the offer', async () => {
  const c = await courierWithOffer();
  const failed = await patchFailing(c.courierId, [
    failNth(SearchStore.prototype, 'claimOfferOutcome', c.offerId),
    // The retirement's write runs; putting them back does not.
    failNth(CourierStore.prototype, 'update', c.courierId, 2),
  ]);

  expect(failed).toMatchObject({ code: 503, message: expect.stringMatching(/is retired/) });
  expect(await isActive(c.courierId)).toBe(false);
  // The gateways stop taking their token, so the offer left open cannot be accepted.
  expect(announced(c)).toEqual({ tokens: 1, courier: 1 });
  expect(await outcomeOf(c.offerId)).toBeNull();

  expect(await patch(c.courierId)).toMatchObject({ active: false });
  expect(await outcomeOf(c.offerId)).toBe('WITHDRAWN');
});

it('puts back to work at the retry (409) a courier who had accepted when putting them back failed', async () => {
  const c = await courierWithOffer();
  // The courier's accept, claimed after the check for a delivery they hold and before the
  // retirement's withdrawal (at its write); putting them back, the second write, fails.
  const methods = CourierStore.prototype as unknown as Record<string, StoreMethod>;
  const real = methods.update;
  let calls = 0;
  const accepting = jest.spyOn(methods, 'update').mockImplementation(async function (
    this: unknown,
    ...args: unknown[]
  ) {
    if (args[0] === c.courierId && ++calls === 1) {
      await db
        .collection('offer_outcomes')
        .insertOne({ _id: c.offerId as never, outcome: 'ACCEPTED', at: new Date() });
    }
    if (args[0] === c.courierId && calls === 2) throw new Error('database busy');
    return real.apply(this, args);
  });
  const failed = await patchFailing(c.courierId, [accepting]);
  expect(failed).toMatchObject({
    code: 503,
    message: expect.stringMatching(`taking delivery ${c.deliveryId}`),
  });

  await expect(patch(c.courierId)).rejects.toMatchObject({
    code: 409,
    message: expect.stringMatching(`taking delivery ${c.deliveryId}`),
  });
  expect(await isActive(c.courierId)).toBe(true);
  expect(announced(c).tokens).toBeGreaterThan(0);
  expect(await outcomeOf(c.offerId)).toBe('ACCEPTED');
});

it('answers 503 when the rest of a change fails once the retirement stands, announced; a retry writes the rest', async () => {
  const c = await courierWithOffer();
  const change = { active: false, name: 'Tunde Bakare-Ojo' };
  const failed = await patchFailing(
    c.courierId,
    [failNth(CourierStore.prototype, 'update', c.courierId, 2)],
    change,
  );

  expect(failed).toMatchObject({ code: 503, message: expect.stringMatching(/is retired/) });
  expect(await isActive(c.courierId)).toBe(false);
  expect(await outcomeOf(c.offerId)).toBe('WITHDRAWN');
  expect(announced(c)).toEqual({ tokens: 1, courier: 1 });

  expect(await patch(c.courierId, change)).toMatchObject({
    active: false,
    name: 'Tunde Bakare-Ojo',
  });
});
