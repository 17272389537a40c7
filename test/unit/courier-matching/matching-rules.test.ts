import fc from 'fast-check';
import { kgToGrams } from '../../../libs/money';
import {
  ableToCarry,
  carryingFleetTypes,
  nextWideningMs,
  offerId,
  searchRadiusKm,
  simulatedAcceptAt,
  withinCashLimit,
  type FleetTypeCapacity,
} from '../../../services/courier-matching/matching-rules';

const BIKE = '11111111-1111-4111-8111-111111111111';
const CAR = '22222222-2222-4222-8222-222222222222';
const VAN = '33333333-3333-4333-8333-333333333333';
const RETIRED_VAN = '44444444-4444-4444-8444-444444444444';

const TYPES: FleetTypeCapacity[] = [
  { id: BIKE, maxWeight: '20.00000', active: true },
  { id: CAR, maxWeight: '150.00000', active: true },
  { id: VAN, maxWeight: '800.00000', active: true },
  { id: RETIRED_VAN, maxWeight: '800.00000', active: false },
];

describe('ableToCarry', () => {
  const named = (
    id: string,
    typeId: string,
    more: { active?: boolean; virtual?: boolean } = {},
  ) => ({
    _id: id,
    fleet: { typeId },
    active: more.active ?? true,
    ...(more.virtual ? { virtual: true } : {}),
  });
  const couriers = [
    named('b', BIKE),
    named('v', VAN),
    named('r', RETIRED_VAN),
    named('c', CAR),
    named('gone', VAN, { active: false }),
    named('sandbox', VAN, { virtual: true }),
  ];

  it('keeps the couriers at work whose fleet type carries the load, in the order given', () => {
    expect(ableToCarry(couriers, TYPES, CAR, 30_000)).toEqual(['v', 'c']);
    expect(ableToCarry(couriers, TYPES, BIKE, 5_000)).toEqual(['b', 'v', 'c']);
    // The type it was priced for takes it whatever its limit.
    expect(ableToCarry(couriers, TYPES, RETIRED_VAN, 900_000)).toEqual(['r']);
  });
});

describe('carryingFleetTypes', () => {
  it('keeps the priced type and every active type that carries the weight', () => {
    expect(carryingFleetTypes(TYPES, BIKE, 5_000)).toEqual([BIKE, CAR, VAN].sort());
    expect(carryingFleetTypes(TYPES, CAR, 100_000)).toEqual([CAR, VAN].sort());
  });

  it('never a smaller vehicle than the load, nor a retired type other than the priced one', () => {
    expect(carryingFleetTypes(TYPES, VAN, 500_000)).toEqual([VAN]);
    expect(carryingFleetTypes(TYPES, RETIRED_VAN, 500_000)).toEqual([RETIRED_VAN, VAN].sort());
  });

  it('reads a limit in exact decimals, as pricing does: a load of exactly the limit is carried', () => {
    const limit = { id: CAR, maxWeight: '2.01000', active: true };
    expect(carryingFleetTypes([limit], BIKE, 2_010)).toEqual([BIKE, CAR].sort());
    expect(carryingFleetTypes([limit], BIKE, 2_011)).toEqual([BIKE]);
  });

  it('keeps the priced type even when geo no longer lists it', () => {
    const gone = '55555555-5555-4555-8555-555555555555';
    expect(carryingFleetTypes(TYPES, gone, 1_000)).toContain(gone);
  });

  it('answers only types that carry the load, apart from the priced one (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1_000_000 }),
        fc.constantFrom(BIKE, CAR, VAN),
        (grams, priced) => {
          const ids = carryingFleetTypes(TYPES, priced, grams);
          expect(ids).toContain(priced);
          for (const id of ids) {
            if (id === priced) continue;
            const type = TYPES.find((t) => t.id === id) as FleetTypeCapacity;
            expect(type.active).toBe(true);
            expect(kgToGrams(type.maxWeight)).toBeGreaterThanOrEqual(grams);
          }
        },
      ),
    );
  });
});

describe('searchRadiusKm', () => {
  const reach = { startKm: 3, stepKm: 3, maxKm: 15, widenEveryMs: 60_000 };

  it('starts at the first radius and grows by a step each round up to the most', () => {
    expect(searchRadiusKm(reach, 0)).toBe(3);
    expect(searchRadiusKm(reach, 59_999)).toBe(3);
    expect(searchRadiusKm(reach, 60_000)).toBe(6);
    expect(searchRadiusKm(reach, 10 * 60_000)).toBe(15);
  });

  it('never shrinks as time passes and stays within its bounds (property)', () => {
    fc.assert(
      fc.property(fc.nat(10_000_000), fc.nat(10_000_000), (a, b) => {
        const [early, late] = a <= b ? [a, b] : [b, a];
        expect(searchRadiusKm(reach, early)).toBeLessThanOrEqual(searchRadiusKm(reach, late));
        expect(searchRadiusKm(reach, late)).toBeLessThanOrEqual(reach.maxKm);
        expect(searchRadiusKm(reach, early)).toBeGreaterThanOrEqual(reach.startKm);
      }),
    );
  });
});

describe('offerId', () => {
  it('names the n-th offer of a delivery the same every time, and no other offer so', () => {
    const delivery = '66666666-6666-4666-8666-666666666666';
    expect(offerId(delivery, 1)).toBe(offerId(delivery, 1));
    expect(offerId(delivery, 1)).not.toBe(offerId(delivery, 2));
    expect(offerId(delivery, 1)).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
  });
});

describe('nextWideningMs', () => {
  const reach = { startKm: 3, stepKm: 3, maxKm: 15, widenEveryMs: 60_000 };

  it('names the next round until the radius is at its widest', () => {
    expect(nextWideningMs(reach, 0)).toBe(60_000);
    expect(nextWideningMs(reach, 60_000)).toBe(120_000);
    expect(nextWideningMs(reach, 3 * 60_000 + 1)).toBe(4 * 60_000);
    expect(nextWideningMs(reach, 4 * 60_000)).toBeUndefined();
  });

  it('is the first moment after now at which the radius grows (property)', () => {
    fc.assert(
      fc.property(
        fc.record({
          startKm: fc.integer({ min: 1, max: 10 }),
          stepKm: fc.integer({ min: 0, max: 5 }),
          extraKm: fc.integer({ min: 0, max: 30 }),
          widenEveryMs: fc.integer({ min: 1_000, max: 120_000 }),
        }),
        fc.nat(2_000_000),
        ({ startKm, stepKm, extraKm, widenEveryMs }, elapsed) => {
          const r = { startKm, stepKm, maxKm: startKm + extraKm, widenEveryMs };
          const now = searchRadiusKm(r, elapsed);
          const next = nextWideningMs(r, elapsed);
          if (next === undefined) {
            expect(now).toBe(r.maxKm);
            return;
          }
          expect(next).toBeGreaterThan(elapsed);
          expect(next - elapsed).toBeLessThanOrEqual(widenEveryMs);
          // Unchanged until then (a step of 0 km never widens: the round still ends there).
          expect(searchRadiusKm(r, next - 1)).toBe(now);
          if (stepKm > 0) expect(searchRadiusKm(r, next)).toBeGreaterThan(now);
        },
      ),
    );
  });
});

describe('the cash a courier may owe with a pay-on-delivery offered', () => {
  it('is the limit, past which nobody who owes is offered one; any for one who owes nothing', () => {
    expect(withinCashLimit(4_000_000, 2_000_000, 6_000_000)).toBe(true);
    expect(withinCashLimit(4_000_001, 2_000_000, 6_000_000)).toBe(false);
    expect(withinCashLimit(0, 900_000_000, 6_000_000)).toBe(true);
    expect(withinCashLimit(1e12, 1e12, 0)).toBe(true);
  });

  it('never lets an offer take what a courier owes past the limit', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1e12 }),
        fc.integer({ min: 1, max: 1e12 }),
        fc.integer({ min: 1, max: 1e12 }),
        (owed, collect, limit) => {
          if (withinCashLimit(owed, collect, limit)) {
            expect(owed === 0 || owed + collect <= limit).toBe(true);
          } else {
            expect(owed + collect).toBeGreaterThan(limit);
          }
        },
      ),
    );
  });
});

describe('simulatedAcceptAt', () => {
  const offer = (lifeMs: number) => ({
    offeredAt: new Date(1_000_000),
    expiresAt: new Date(1_000_000 + lifeMs),
  });

  it('takes the offer after its moment, or half-way through an offer shorter than that', () => {
    expect(simulatedAcceptAt(offer(60_000), 20_000)).toBe(1_020_000);
    expect(simulatedAcceptAt(offer(15_000), 20_000)).toBe(1_007_500);
    // At SIMULATOR_TIME_SCALE 60: a third of a second, well within a 30 s offer.
    expect(simulatedAcceptAt(offer(30_000), 20_000 / 60)).toBeCloseTo(1_000_333.33, 1);
  });

  it('always before the offer expires (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 600_000 }),
        fc.double({ min: 0, max: 1e6, noNaN: true }),
        (life, ms) => {
          const at = simulatedAcceptAt(offer(life), ms);
          expect(at).toBeGreaterThanOrEqual(1_000_000);
          expect(at).toBeLessThan(1_000_000 + life);
        },
      ),
    );
  });
});
