import { priceLoad, type LoadToPrice } from '../../../services/pricing/quote';
import { TariffBook } from '../../../services/pricing/tariff-book';
import type { FleetOption } from '../../../services/pricing/fleet-choice';
import { FLEET_TYPE_NOT_FOUND } from '../../../libs/contracts/geo';
import { notFound } from '../../../libs/errors';
import { CachedValue } from '../../../libs/cache';
import { rejectionOf } from '../helpers';

const fleet = (id: string, code: string, maxWeight: string, active = true): FleetOption => ({
  id,
  code,
  name: code,
  icon: null,
  maxWeight,
  active,
});
const bike = fleet('6f1d2c3b-4a5e-4f6d-8c7b-9a0e1d2c3b4a', 'bike', '20', false);
const car = fleet('7a2e3d4c-5b6f-4a7e-9d8c-0b1f2e3d4c5b', 'car', '100');

const QUOTES = { secret: 'a-quote-key-of-32-characters-abc', ttlMs: 60_000 };

/** 3 kg from Ikeja to Lekki, on `fleetTypeId` or on the one chosen. */
const threeKg = (fleetTypeId: string | undefined): LoadToPrice => ({
  origin: 'Ikeja, Lagos',
  destination: 'Lekki, Lagos',
  load: { weightGrams: 3_000, valueKobo: 0 },
  urgencyType: 'STANDARD',
  fleetTypeId,
  valueField: 'totalValue',
});

/** Prices 3 kg with `fleetTypeId`; the routes asked of geo are kept. */
async function price(fleetTypeId: string | undefined) {
  const routesAsked: unknown[] = [];
  const caller = {
    meta: {},
    call: async (action: string, params: unknown) => {
      routesAsked.push(params);
      throw new Error(`no ${action} in this test`);
    },
  };
  const sources = {
    book: () => new TariffBook([]),
    fleets: async () => [bike, car],
    courierRules: async () => [],
    fleetsReadLately: async () => [bike, car],
    fleetsReadSince: async () => [bike, car],
    quotes: QUOTES,
  };
  const outcome = await rejectionOf(() => priceLoad(caller, sources, threeKg(fleetTypeId)));
  return { outcome, routesAsked };
}

/**
 * A caller whose geo has the bike no longer (404 for its route) and answers any other type's
 * route with an error naming it; each type asked noted in `asked`.
 */
const geoWithoutTheBike = (asked: string[]) => ({
  meta: {},
  call: async (_action: string, params: unknown) => {
    const { fleetTypeId: asking } = params as { fleetTypeId: string };
    asked.push(asking);
    if (asking === bike.id) throw notFound(FLEET_TYPE_NOT_FOUND);
    throw new Error(`priced with ${asking}`);
  },
});

/**
 * Prices 3 kg with `fleetTypeId` where this replica's copy of the fleet types, read a moment
 * ago, still has the bike active and geo has it inactive (deactivated since, the change not
 * yet told): the pricing service's own cache over geo's list.
 */
async function priceWithStaleFleets(fleetTypeId: string | undefined) {
  let atGeo = [{ ...bike, active: true }, car];
  const asked: string[] = [];
  const copy = new CachedValue(async () => {
    asked.push('read');
    return atGeo;
  }, 60_000);
  await copy.get();
  // A moment later (its read not a second old): deactivated at geo.
  await new Promise((resolve) => setTimeout(resolve, 5));
  atGeo = [bike, car];
  asked.length = 0;
  const caller = geoWithoutTheBike(asked);
  const sources = {
    book: () => new TariffBook([]),
    fleets: () => copy.get(),
    courierRules: async () => [],
    fleetsReadLately: () => copy.within(1_000),
    fleetsReadSince: (ms: number) => copy.since(ms),
    quotes: QUOTES,
  };
  const outcome = await rejectionOf(() => priceLoad(caller, sources, threeKg(fleetTypeId)));
  return { outcome, asked };
}

describe('the fleet type of a quote', () => {
  it('is never another one when the one asked for is inactive: 404, as for an unknown id', async () => {
    const { outcome, routesAsked } = await price(bike.id);
    expect(outcome).toMatchObject({ code: 404, message: 'Fleet type not found' });
    expect(routesAsked).toEqual([]);
  });

  it('is chosen again from the types read again when geo has the one chosen no longer, none asked for', async () => {
    const { outcome, asked } = await priceWithStaleFleets(undefined);
    // Read again, though the copy is not a second old: geo refused what it holds.
    expect(asked).toEqual([bike.id, 'read', car.id]);
    expect(outcome).toMatchObject({ message: `priced with ${car.id}` });
  });

  it('is chosen again from the types another quote read again meanwhile, without a read of its own', async () => {
    const asked: string[] = [];
    const caller = geoWithoutTheBike(asked);
    // The bike active as this quote chose, inactive by the time geo refused it.
    const copies = [
      [{ ...bike, active: true }, car],
      [bike, car],
    ];
    const sources = {
      book: () => new TariffBook([]),
      fleets: async () => copies.shift() ?? [bike, car],
      courierRules: async () => [],
      fleetsReadLately: async () => [bike, car],
      fleetsReadSince: async () => {
        asked.push('read');
        return [bike, car];
      },
      quotes: QUOTES,
    };
    const outcome = await rejectionOf(() => priceLoad(caller, sources, threeKg(undefined)));
    expect(asked).toEqual([bike.id, car.id]);
    expect(outcome).toMatchObject({ message: `priced with ${car.id}` });
  });

  it('is not another one when the one asked for is gone at geo: its 404 stands', async () => {
    const { outcome, asked } = await priceWithStaleFleets(bike.id);
    expect(asked).toEqual([bike.id]);
    expect(outcome).toMatchObject({ code: 404, message: FLEET_TYPE_NOT_FOUND });
  });

  it('is the smallest active one that carries the load when none is asked for', async () => {
    const { routesAsked } = await price(undefined);
    expect(routesAsked).toEqual([expect.objectContaining({ fleetTypeId: car.id })]);
  });
});
