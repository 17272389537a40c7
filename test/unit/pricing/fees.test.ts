import fc from 'fast-check';
import { computeFees, toBreakdown, toCosts, type FeeInput } from '../../../services/pricing/fees';
import { deliveryFeeBlock, splitTotal } from '../../../services/pricing/fee-blocks';
import { FEE_PAYERS, URGENCY_TYPES } from '../../../libs/contracts/pricing';
import { NIGERIA_COUNTRY_TARIFF, nigeriaTierSeeds } from '../../../services/pricing/nigeria-tariff';
import { ROUTE_TYPES } from '../../../libs/contracts/geo';
import { mergeTariff, type Tariff } from '../../../services/pricing/tariff';

const tariff = NIGERIA_COUNTRY_TARIFF;
const naira = (s: string) => Math.round(Number(s) * 100);

const baseInput: FeeInput = {
  distanceKm: 12.5,
  routeType: 'INTER_CITY',
  weightGrams: 3_000,
  valueKobo: 0,
  fleetCode: 'bike',
  urgency: 'STANDARD',
};

describe('fee engine on the Nigerian starting tariff', () => {
  it('prices a 12.5 km bike trip in a city: base + 7.5 km, nothing else but the service fee', () => {
    const fees = computeFees(baseInput, tariff);
    // ₦1,500 + 7.5 km × ₦150 = ₦2,625; 5 % service fee = ₦131.25
    expect(fees).toEqual({
      base: 262_500,
      weight: 0,
      fleet: 0,
      surcharge: 0,
      insurance: 0,
      deliverySubtotal: 262_500,
      serviceFee: 13_125,
      hubCommission: 0,
      total: 275_625,
    });
  });

  it('charges per started kg above 5 kg, the fleet fee, and insurance on declared value', () => {
    const fees = computeFees(
      { ...baseInput, weightGrams: 7_200, fleetCode: 'car', valueKobo: naira('50000') },
      tariff,
    );
    expect(fees.weight).toBe(3 * 10_000); // 2.2 kg above → 3 started kg × ₦100
    expect(fees.fleet).toBe(150_000);
    expect(fees.insurance).toBe(25_000); // 0.5 % of ₦50,000
  });

  it('applies the insurance minimum to small declared values', () => {
    expect(computeFees({ ...baseInput, valueKobo: 1_000 }, tariff).insurance).toBe(10_000);
  });

  it('unknown fleet codes pay the default fleet fee', () => {
    expect(computeFees({ ...baseInput, fleetCode: 'boat' }, tariff).fleet).toBe(300_000);
    // Names every object has are no fleet's fee either.
    for (const fleetCode of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      expect(computeFees({ ...baseInput, fleetCode }, tariff).fleet).toBe(300_000);
    }
  });

  it('PRIORITY adds 35 % of trip, load and fleet, at least ₦1,000', () => {
    const fees = computeFees({ ...baseInput, distanceKm: 20, urgency: 'PRIORITY' }, tariff);
    expect(fees.surcharge).toBe(131_250); // 35 % of ₦1,500 + 15 km × ₦150
    const short = computeFees({ ...baseInput, distanceKm: 1, urgency: 'PRIORITY' }, tariff);
    expect(short.surcharge).toBe(100_000);
  });

  it('SCHEDULED adds ₦500, and ₦1,000 more for a slot outside 08:00-18:00', () => {
    const inHours = { start: 9 * 60, end: 12 * 60 };
    const late = { start: 17 * 60, end: 19 * 60 };
    expect(
      computeFees({ ...baseInput, urgency: 'SCHEDULED', slot: inHours }, tariff).surcharge,
    ).toBe(50_000);
    expect(computeFees({ ...baseInput, urgency: 'SCHEDULED', slot: late }, tariff).surcharge).toBe(
      150_000,
    );
  });

  it('keeps the service fee between ₦100 and ₦2,500', () => {
    expect(computeFees({ ...baseInput, distanceKm: 0 }, tariff).serviceFee).toBe(10_000);
    const far = computeFees(
      { ...baseInput, routeType: 'INTER_CONTINENT', distanceKm: 9000 },
      tariff,
    );
    expect(far.serviceFee).toBe(250_000);
  });

  it('adds a hub commission on inter-state trips only', () => {
    const trip = { ...baseInput, routeType: 'INTER_STATE' as const, distanceKm: 120 };
    const fees = computeFees(trip, tariff);
    // ₦4,500 + 100 km × ₦35 = ₦8,000 → 5 % = ₦400
    expect(fees.base).toBe(800_000);
    expect(fees.hubCommission).toBe(40_000);
    expect(fees.total).toBe(fees.deliverySubtotal + fees.serviceFee + fees.hubCommission);
  });

  it('a courier rate replaces the trip fee and zeroes weight, fleet and surcharge', () => {
    const input: FeeInput = {
      ...baseInput,
      weightGrams: 12_500,
      fleetCode: 'car',
      urgency: 'PRIORITY',
      valueKobo: naira('10000'),
    };
    const flat = computeFees(
      { ...input, courierRate: { amountKobo: 300_000, isPerKg: false } },
      tariff,
    );
    expect([flat.base, flat.weight, flat.fleet, flat.surcharge]).toEqual([300_000, 0, 0, 0]);
    expect(flat.insurance).toBe(10_000);
    const perKg = computeFees(
      { ...input, courierRate: { amountKobo: 20_000, isPerKg: true } },
      tariff,
    );
    expect(perKg.base).toBe(250_000); // 12.5 kg × ₦200
  });

  it('rounds each component once, half up', () => {
    // 5.001 km: 0.001 km × 15,000 kobo = 15 kobo exactly; 5.0001 km → 1.5 kobo → 2 kobo
    expect(computeFees({ ...baseInput, distanceKm: 5.0001 }, tariff).base).toBe(150_002);
  });
});

const slotArb = fc
  .tuple(fc.integer({ min: 0, max: 1438 }), fc.integer({ min: 1, max: 600 }))
  .map(([start, length]) => ({ start, end: Math.min(start + length, 1439) }));

const inputArb: fc.Arbitrary<FeeInput> = fc.record({
  distanceKm: fc.double({ min: 0, max: 20_000, noNaN: true }),
  routeType: fc.constantFrom(...ROUTE_TYPES),
  weightGrams: fc.integer({ min: 0, max: 5_000_000 }),
  valueKobo: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 1_000_000_000 })),
  fleetCode: fc.constantFrom('bike', 'car', 'van', 'truck', 'drone'),
  urgency: fc.constantFrom(...URGENCY_TYPES),
  slot: slotArb,
  courierRate: fc.option(
    fc.record({ amountKobo: fc.integer({ min: 0, max: 10_000_000 }), isPerKg: fc.boolean() }),
    { nil: undefined },
  ),
});

/** Every tariff a tier of the starting tariff produces, so overrides are exercised too. */
const tariffArb: fc.Arbitrary<Tariff> = fc.constantFrom(
  ...nigeriaTierSeeds().map((seed) =>
    seed.scope.state === undefined ? tariff : mergeTariff(tariff, seed.rates),
  ),
);

const MONEY = /^\d+\.\d{2}$/;

describe('fee engine invariants (property-based)', () => {
  it('holds for thousands of generated trips', () => {
    fc.assert(
      fc.property(inputArb, tariffArb, (input, t) => {
        const fees = computeFees(input, t);
        const parts = [fees.base, fees.weight, fees.fleet, fees.surcharge, fees.insurance];
        // integer kobo, nothing negative
        for (const amount of Object.values(fees)) {
          expect(Number.isSafeInteger(amount)).toBe(true);
          expect(amount).toBeGreaterThanOrEqual(0);
        }
        expect(fees.deliverySubtotal).toBe(parts.reduce((a, b) => a + b, 0));
        expect(fees.total).toBe(fees.deliverySubtotal + fees.serviceFee + fees.hubCommission);

        const costs = toCosts(fees);
        for (const value of Object.values(costs)) expect(value).toMatch(MONEY);
        const cents = (s: string) => Number(s.replace('.', ''));
        expect(cents(costs.deliverySubtotal)).toBe(
          cents(costs.base) +
            cents(costs.weight) +
            cents(costs.fleet) +
            cents(costs.surcharge) +
            cents(costs.insurance),
        );
        expect(cents(costs.total)).toBe(
          cents(costs.deliverySubtotal) + cents(costs.serviceFee) + cents(costs.hubCommission),
        );

        const breakdown = toBreakdown(fees, input.valueKobo > 0);
        expect(breakdown).toEqual({
          baseCharge: costs.base,
          weightCharge: costs.weight,
          insuranceCharge: input.valueKobo > 0 ? costs.insurance : null,
          fleetCharge: costs.fleet,
          surchargeCharge: costs.surcharge,
          serviceFeeCharge: costs.serviceFee,
        });
        if (input.valueKobo === 0) expect(fees.insurance).toBe(0);
        if (input.courierRate) {
          expect([fees.weight, fees.fleet, fees.surcharge]).toEqual([0, 0, 0]);
        }
        if (input.urgency === 'STANDARD') expect(fees.surcharge).toBe(0);
      }),
      { numRuns: 5_000 },
    );
  });

  it('is deterministic: the same inputs and tariff give the same amounts', () => {
    fc.assert(
      fc.property(inputArb, tariffArb, (input, t) => {
        expect(computeFees(structuredClone(input), structuredClone(t))).toEqual(
          computeFees(input, t),
        );
      }),
      { numRuns: 1_000 },
    );
  });

  it('never charges less for a longer or heavier trip', () => {
    fc.assert(
      fc.property(
        inputArb,
        fc.double({ min: 0, max: 500, noNaN: true }),
        fc.integer({ min: 0, max: 100_000 }),
        (input, moreKm, moreGrams) => {
          const near = computeFees(input, tariff);
          const far = computeFees(
            {
              ...input,
              distanceKm: input.distanceKm + moreKm,
              weightGrams: input.weightGrams + moreGrams,
            },
            tariff,
          );
          expect(far.total).toBeGreaterThanOrEqual(near.total);
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('the deliveryFee block splits the total exactly, the odd kobo to the creator', () => {
    fc.assert(
      fc.property(inputArb, fc.constantFrom(...FEE_PAYERS), (input, payer) => {
        const fees = computeFees(input, tariff);
        const { creator, recipient } = splitTotal(fees.total, payer);
        expect(creator + recipient).toBe(fees.total);
        expect(creator - recipient).toBeGreaterThanOrEqual(payer === 'SPLIT' ? 0 : -fees.total);
        if (payer === 'SPLIT') expect(creator - recipient).toBeLessThanOrEqual(1);
        const block = deliveryFeeBlock(fees, payer);
        expect(block.gross.bundledTotal).toBe(toCosts(fees).total);
        expect(block.creator.paymentRequired).toBe(creator > 0);
        expect(block.recipient.paymentRequired).toBe(recipient > 0);
        expect(block.recipient.checkoutUrl).toBeNull();
      }),
      { numRuns: 2_000 },
    );
  });
});

describe('fee blocks', () => {
  it('SPLIT of an odd total gives the extra kobo to the creator', () => {
    expect(splitTotal(1001, 'SPLIT')).toEqual({ creator: 501, recipient: 500 });
    expect(splitTotal(1000, 'RECIPIENT')).toEqual({ creator: 0, recipient: 1000 });
    expect(splitTotal(1000, 'CREATOR')).toEqual({ creator: 1000, recipient: 0 });
  });
});

describe('the worked example of docs/pricing.md', () => {
  it('prices 3 kg, ₦20,000, 24 km from Ikeja at ₦6,720.00', () => {
    const seeds = nigeriaTierSeeds();
    const rates = (state?: string, city?: string) =>
      seeds.find((s) => s.scope.state === state && s.scope.city === city)?.rates ?? {};
    const ikeja = mergeTariff(tariff, rates('Lagos'), rates('Lagos', 'Ikeja'));
    const fees = computeFees({ ...baseInput, distanceKm: 24, valueKobo: naira('20000') }, ikeja);
    expect(toCosts(fees)).toMatchObject({
      base: '6300.00',
      insurance: '100.00',
      deliverySubtotal: '6400.00',
      serviceFee: '320.00',
      hubCommission: '0.00',
      total: '6720.00',
    });
  });
});
