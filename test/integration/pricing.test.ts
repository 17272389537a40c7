import { randomUUID } from 'node:crypto';
import { computeFees, toCosts } from '../../services/pricing/fees';
import { localNow } from '../../services/pricing/schedule';
import type { Tariff } from '../../services/pricing/tariff';
import { MODE_NEEDS_USER } from '../../services/pricing/quote-request';
import { modeAResponse, modeBResponse } from '../../services/pricing/schemas';
import { eventually } from '../support/eventually';
import { adminHeaders, expectErrorEnvelope, request } from '../support/http';
import { newCourier } from '../support/couriers';
import { useMerchantStack } from '../support/merchant-stack';
import { openServiceDatabase, startNode } from '../support/stack';

const CDN = 'https://cdn.waybill.test';
const stack = useMerchantStack({ internal: ['pricing'], env: { CDN_BASE_URL: CDN } });

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MONEY = /^\d+\.\d{2}$/;
const IKEJA = { lat: 6.6018, lon: 3.3515 };
const LEKKI = 'Lekki, Lagos';

const price = (json: object, who: { key: string } = stack.alice) =>
  request(stack.node.url, 'POST', '/api/pricing', { headers: { 'api-key': who.key }, json });
const admin = (method: string, path: string, json?: object) =>
  request(stack.node.url, method, path, { headers: adminHeaders, json });
const modeB = (extra: object = {}) =>
  price({ origin: IKEJA, destination: LEKKI, totalWeight: 3, totalValue: 20000, ...extra });

const cents = (s: string) => Number(s.replace('.', ''));

function expectConsistentCosts(costs: Record<string, string>, breakdown: Record<string, unknown>) {
  for (const value of Object.values(costs)) expect(value).toMatch(MONEY);
  expect(cents(costs.deliverySubtotal)).toBe(
    ['base', 'weight', 'fleet', 'surcharge', 'insurance'].reduce((s, k) => s + cents(costs[k]), 0),
  );
  expect(cents(costs.total)).toBe(
    cents(costs.deliverySubtotal) + cents(costs.serviceFee) + cents(costs.hubCommission),
  );
  expect(breakdown.baseCharge).toBe(costs.base);
  expect(breakdown.weightCharge).toBe(costs.weight);
  expect(breakdown.fleetCharge).toBe(costs.fleet);
  expect(breakdown.surchargeCharge).toBe(costs.surcharge);
  expect(breakdown.serviceFeeCharge).toBe(costs.serviceFee);
  expect([costs.insurance, null]).toContain(breakdown.insuranceCharge);
}

async function tomorrowInLagos(): Promise<string> {
  const today = localNow(new Date(), 'Africa/Lagos').date;
  return new Date(Date.parse(`${today}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
}

describe('POST /api/pricing, Mode B (totals)', () => {
  it('answers distance, route type, tiers, costs and breakdown, priced by the tariff', async () => {
    const reply = await modeB();
    expect(reply.status).toBe(200);
    expect(reply.body.success).toBe(true);
    expect(reply.body.message).toBe('Delivery priced');
    const data = reply.body.data;
    expect(Object.keys(data).sort()).toEqual(
      [
        'breakdown',
        'costs',
        'courierPricingRule',
        'distance',
        'fleetType',
        'routeType',
        'tariffVersion',
        'tierIds',
      ].sort(),
    );
    expect(data.routeType).toBe('INTER_CITY');
    expect(data.distance).toEqual({
      distanceKm: expect.any(Number),
      etaSeconds: expect.any(Number),
    });
    expect(data.tierIds).toEqual({
      countryPricingId: expect.stringMatching(UUID),
      statePricingId: expect.stringMatching(UUID),
      cityPricingId: expect.stringMatching(UUID),
    });
    expect(data.tariffVersion).toBe('NG@1/lagos@1/ikeja@1');
    // The OpenAPI document describes exactly this shape.
    expect(modeBResponse.validate(data, { presence: 'required' }).error).toBeUndefined();
    expect(data.courierPricingRule).toBeNull();
    expect(data.fleetType).toEqual({ id: expect.stringMatching(UUID), name: 'Bike', icon: null });
    expectConsistentCosts(data.costs, data.breakdown);
    expect(data.breakdown.insuranceCharge).toBe('100.00'); // 0.5 % of ₦20,000

    // The same amounts as the fee engine on the merged tariff and geo's distance.
    const tariff = await admin(
      'GET',
      '/admin/pricing/tariff?countryCode=NG&state=Lagos&city=Ikeja',
    );
    expect(tariff.status).toBe(200);
    expect(tariff.body.data.tierIds).toEqual(data.tierIds);
    const fees = computeFees(
      {
        distanceKm: data.distance.distanceKm,
        routeType: 'INTER_CITY',
        weightGrams: 3000,
        valueKobo: 2_000_000,
        fleetCode: 'bike',
        urgency: 'STANDARD',
      },
      tariff.body.data.tariff as Tariff,
    );
    expect(data.costs).toEqual(toCosts(fees));
  });

  it('is reproducible: the same request gives the same answer', async () => {
    const [a, b] = await Promise.all([modeB(), modeB()]);
    expect(a.body.data).toEqual(b.body.data);
  });

  it('leaves insuranceCharge null when nothing is declared', async () => {
    const reply = await modeB({ totalValue: 0 });
    expect(reply.body.data.breakdown.insuranceCharge).toBeNull();
    expect(reply.body.data.costs.insurance).toBe('0.00');
  });

  it('prices a trip to another zone as INTER_REGION with a hub commission', async () => {
    const reply = await price({
      origin: 'Ikeja, Lagos',
      destination: 'Wuse, Abuja',
      totalWeight: 12,
      totalValue: 150000,
    });
    expect(reply.status).toBe(200);
    const { routeType, costs, breakdown, distance } = reply.body.data;
    expect(routeType).toBe('INTER_REGION');
    expect(distance.distanceKm).toBeGreaterThan(500);
    expect(cents(costs.hubCommission)).toBeGreaterThan(0);
    expect(cents(costs.weight)).toBe(7 * 35_000); // 7 started kg above 5 at ₦350
    expectConsistentCosts(costs, breakdown);
  });

  it('adds a surcharge for PRIORITY and for an off-hours SCHEDULED slot', async () => {
    const standard = (await modeB()).body.data.costs;
    const priority = (await modeB({ urgencyType: 'PRIORITY' })).body.data.costs;
    expect(cents(priority.surcharge)).toBeGreaterThanOrEqual(100_000);
    expect(cents(priority.total)).toBeGreaterThan(cents(standard.total));
    const scheduled = await modeB({
      urgencyType: 'SCHEDULED',
      deliveryDate: await tomorrowInLagos(),
      slot: '18:00 - 20:00',
    });
    expect(scheduled.status).toBe(200);
    expect(scheduled.body.data.costs.surcharge).toBe('1500.00');
  });

  it('uses the first fleet type that can carry the load when the requested one cannot', async () => {
    const fleets = (
      await request(stack.node.url, 'GET', '/api/fleet-types', {
        headers: { 'api-key': stack.alice.key },
      })
    ).body.data as { id: string; name: string }[];
    const bike = fleets.find((f) => f.name === 'Bike');
    const reply = await modeB({ totalWeight: 60, fleetTypeId: bike?.id });
    expect(reply.status).toBe(200);
    expect(reply.body.data.fleetType.name).toBe('Car');
    expect(reply.body.data.costs.fleet).toBe('2000.00'); // Lagos state: car ₦2,000
    const asked = await modeB({ fleetTypeId: bike?.id });
    expect(asked.body.data.fleetType.id).toBe(bike?.id);
  });

  it('404 Fleet type not found for an unknown fleet type', async () => {
    expectErrorEnvelope(
      await modeB({ fleetTypeId: '5b0e1a34-9f1c-4d0e-8a7b-3c2d1e0f9a8b' }),
      404,
      'Fleet type not found',
    );
  });

  it.each([
    [{}, /Provide packagesId, or both totalWeight and totalValue/],
    [{ totalWeight: 2 }, /Provide packagesId/],
    [{ totalValue: 2 }, /Provide packagesId/],
  ])('400 when the totals are incomplete: %j', async (body, message) => {
    const reply = await price({ origin: IKEJA, destination: LEKKI, ...body });
    expectErrorEnvelope(reply, 400, message);
  });

  it.each([
    [{ totalWeight: -1 }, /totalWeight/],
    [{ totalWeight: 'heavy' }, /totalWeight/],
    [{ totalValue: -5 }, /totalValue/],
    [{ urgencyType: 'YESTERDAY' }, /urgencyType/],
    [{ urgencyType: 'SCHEDULED' }, /deliveryDate is required/],
    [
      { urgencyType: 'SCHEDULED', deliveryDate: '2020-01-01', slot: '09:00 - 12:00' },
      /in the past/,
    ],
    [
      { urgencyType: 'SCHEDULED', deliveryDate: '2026-02-30', slot: '09:00 - 12:00' },
      /calendar date/,
    ],
    [
      { urgencyType: 'SCHEDULED', deliveryDate: '2030-01-01', deliverySlot: '12:00 - 09:00' },
      /time window/,
    ],
    [{ deliveryDate: '2030-01-01' }, /only when urgencyType is SCHEDULED/],
    [{ courierSelection: 'SPECIFIC' }, /courierId is required/],
    [{ deliveryFeePayer: 'NOBODY' }, /deliveryFeePayer/],
    [{ totalWeight: 6000 }, /No active fleet type can carry 6000.00000 kg/],
    [{ totalValue: 20_000_000 }, /insurable maximum of 10000000.00/],
  ])('400 for %j', async (body, message) => {
    expectErrorEnvelope(await modeB(body), 400, message);
  });

  it('400 when origin and destination are the same place', async () => {
    const reply = await price({ origin: IKEJA, destination: IKEJA, totalWeight: 1, totalValue: 1 });
    expectErrorEnvelope(reply, 400, 'Origin and destination cannot be the same');
  });

  it('400 for a trip starting where no tariff applies', async () => {
    const reply = await price({
      origin: 'Accra, Ghana',
      destination: LEKKI,
      totalWeight: 1,
      totalValue: 1,
    });
    expectErrorEnvelope(
      reply,
      400,
      /No tariff covers deliveries from Ghana; deliveries can start in: NG/,
    );
  });

  it('401 without an API key', async () => {
    const reply = await request(stack.node.url, 'POST', '/api/pricing', {
      json: { origin: IKEJA },
    });
    expectErrorEnvelope(reply, 401, 'API key is required');
  });
});

describe('POST /api/pricing, Mode A (saved packages)', () => {
  async function savePackage(who: { key: string }, body: object) {
    const reply = await request(stack.node.url, 'POST', '/api/package', {
      headers: { 'api-key': who.key },
      json: {
        packageType: 'Parcel',
        name: 'Box',
        quantity: 1,
        size: 'SMALL',
        value: 1000,
        ...body,
      },
    });
    expect(reply.status).toBe(201);
    return reply.body.data.id as string;
  }

  it('prices saved packages with the deliveryFee and payOnDelivery blocks', async () => {
    const ids = [
      await savePackage(stack.alice, { size: 'MEDIUM', quantity: 2, value: 45000.5 }),
      await savePackage(stack.alice, { size: 'SMALL', value: 4999.49 }),
    ];
    const reply = await price({ origin: IKEJA, destination: LEKKI, packagesId: ids });
    expect(reply.status).toBe(200);
    const data = reply.body.data;
    expect(Object.keys(data).sort()).toEqual(
      ['deliveryCost', 'deliveryFee', 'matchingEligible', 'payOnDelivery', 'promotion'].sort(),
    );
    expect(data.promotion).toBeNull();
    expect(data.matchingEligible).toBe(true);
    expect(modeAResponse.validate(data, { presence: 'required' }).error).toBeUndefined();
    expect(data.deliveryCost.totalWeight).toBe(16);
    expect(data.deliveryCost.totalValue).toBe(49999.99);
    expect(data.deliveryCost.routeType).toBe('INTER_CITY');
    expectConsistentCosts(data.deliveryCost.costs, data.deliveryCost.breakdown);
    const { costs } = data.deliveryCost;
    expect(data.deliveryFee).toEqual({
      payer: 'CREATOR',
      gross: {
        delivery: costs.deliverySubtotal,
        serviceFee: costs.serviceFee,
        hubCommission: costs.hubCommission,
        bundledTotal: costs.total,
      },
      creator: { amount: costs.total, paymentRequired: true, paid: false },
      recipient: { amount: '0.00', paymentRequired: false, paid: false, checkoutUrl: null },
      promotion: {
        settlementMode: null,
        platformFunded: false,
        settledAmount: '0.00',
        discountAmount: '0.00',
        isApplied: false,
      },
    });
    expect(data.payOnDelivery).toEqual({
      enabled: false,
      collectAmount: '49999.99',
      collectTarget: 'PACKAGE_VALUE',
    });

    // Mode B with the same totals prices exactly the same.
    const b = await modeB({ totalWeight: 16, totalValue: 49999.99 });
    const { totalWeight, totalValue, quoteId, quoteExpiresAt, ...cost } = data.deliveryCost;
    expect([totalWeight, totalValue]).toEqual([16, 49999.99]);
    expect(cost).toEqual(b.body.data);
    // The quote's id, for a request to name (docs/pricing.md "Holding a quoted price").
    expect(quoteId).toMatch(/^q1\./);
    expect(Date.parse(quoteExpiresAt)).toBeGreaterThan(Date.now());
  });

  it('SPLIT divides the total, the odd kobo to the creator; RECIPIENT waits for the recipient', async () => {
    const ids = [await savePackage(stack.alice, {})];
    const split = (
      await price({ origin: IKEJA, destination: LEKKI, packagesId: ids, deliveryFeePayer: 'SPLIT' })
    ).body.data;
    const total = cents(split.deliveryFee.gross.bundledTotal);
    expect(cents(split.deliveryFee.creator.amount)).toBe(Math.ceil(total / 2));
    expect(cents(split.deliveryFee.recipient.amount)).toBe(Math.floor(total / 2));
    expect(split.matchingEligible).toBe(false);
    const recipient = (
      await price({
        origin: IKEJA,
        destination: LEKKI,
        packagesId: ids,
        deliveryFeePayer: 'RECIPIENT',
        payOnDelivery: true,
      })
    ).body.data;
    expect(recipient.deliveryFee.creator).toEqual({
      amount: '0.00',
      paymentRequired: false,
      paid: false,
    });
    expect(recipient.deliveryFee.recipient.amount).toBe(recipient.deliveryFee.gross.bundledTotal);
    expect(recipient.matchingEligible).toBe(false);
    expect(recipient.payOnDelivery.enabled).toBe(true);
  });

  it("400 Invalid packages selection for someone else's or a deleted package", async () => {
    const bobs = await savePackage(stack.bob, {});
    expectErrorEnvelope(
      await price({ origin: IKEJA, destination: LEKKI, packagesId: [bobs] }),
      400,
      'Invalid packages selection',
    );
    const gone = await savePackage(stack.alice, {});
    await request(stack.node.url, 'DELETE', `/api/package/${gone}`, {
      headers: { 'api-key': stack.alice.key },
    });
    expectErrorEnvelope(
      await price({ origin: IKEJA, destination: LEKKI, packagesId: [gone] }),
      400,
      'Invalid packages selection',
    );
  });

  it('400 for packagesId together with totals', async () => {
    const ids = [await savePackage(stack.alice, {})];
    expectErrorEnvelope(
      await price({
        origin: IKEJA,
        destination: LEKKI,
        packagesId: ids,
        totalWeight: 1,
        totalValue: 1,
      }),
      400,
      /not both/,
    );
  });

  it('400 when pricing by packagesId without an authenticated user (internal call)', async () => {
    const err = await stack.client
      .call('pricing.price', {
        origin: IKEJA,
        destination: LEKKI,
        packagesId: ['0d4f3f7a-8a0e-4b51-9a43-6c6f3b0a1e21'],
      })
      .then(
        () => null,
        (e: { code: number; message: string }) => e,
      );
    expect(err).toMatchObject({ code: 400, message: MODE_NEEDS_USER });
  });
});

describe('tariff administration', () => {
  it('lists the starting tiers a page at a time: the country, every state, the big cities', async () => {
    const tiers: { id: string; level: string; state: string; city: string }[] = [];
    for (let offset = 0; ; offset += 50) {
      const reply = await admin('GET', `/admin/pricing/tiers?countryCode=NG&offset=${offset}`);
      expect(reply.status).toBe(200);
      expect(reply.body.data.length).toBeLessThanOrEqual(50);
      tiers.push(...reply.body.data);
      if (reply.body.data.length < 50) break;
    }
    expect(tiers.length).toBeGreaterThan(50);
    expect(new Set(tiers.map((t) => t.id)).size).toBe(tiers.length);
    expect(tiers.filter((t) => t.level === 'country')).toHaveLength(1);
    expect(tiers.filter((t) => t.level === 'state')).toHaveLength(37);
    expect(tiers.some((t) => t.city === 'Eti Osa' && t.state === 'Lagos')).toBe(true);
    const few = await admin('GET', '/admin/pricing/tiers?countryCode=NG&limit=3&offset=1');
    expect(few.body.data.map((t: { id: string }) => t.id)).toEqual(
      tiers.slice(1, 4).map((t) => t.id),
    );
    expectErrorEnvelope(await admin('GET', '/admin/pricing/tiers?limit=51'), 400, /limit/);
  });

  it('a new revision changes prices, and the old one stays readable', async () => {
    const before = (await modeB()).body.data;
    const saved = await admin('PUT', '/admin/pricing/tiers', {
      countryCode: 'ng',
      state: 'lagos',
      expectedRevision: 1,
      note: 'Fuel price rise',
      rates: { includedWeightKg: 2, routes: { INTER_CITY: { baseFeeKobo: 1, perKmFeeKobo: 1 } } },
    });
    expect(saved.status).toBe(201);
    expect(saved.body.data).toMatchObject({
      level: 'state',
      state: 'Lagos',
      label: 'Lagos', // kept from the revision it replaces
      revision: 2,
      current: true,
      note: 'Fuel price rise',
    });
    const after = (await modeB()).body.data;
    expect(after.tariffVersion).toBe('NG@1/lagos@2/ikeja@1');
    expect(after.tierIds.statePricingId).toBe(saved.body.data.id);
    // Field by field: Ikeja's own base and per-km rates still win; the weight allowance is Lagos's.
    expect(after.costs.base).toBe(before.costs.base);
    expect([before.costs.weight, after.costs.weight]).toEqual(['0.00', '100.00']);

    const old = await admin('GET', `/admin/pricing/tiers/${before.tierIds.statePricingId}`);
    expect(old.body.data).toMatchObject({ revision: 1, current: false });

    expectErrorEnvelope(
      await admin('PUT', '/admin/pricing/tiers', {
        countryCode: 'NG',
        state: 'Lagos',
        expectedRevision: 1,
        rates: { includedWeightKg: 3 },
      }),
      409,
      /revision 2, not 1/,
    );
  });

  it('a label is kept unless sent, and cleared by null', async () => {
    const put = (extra: object) =>
      admin('PUT', '/admin/pricing/tiers', {
        countryCode: 'NG',
        state: 'Sokoto',
        rates: { includedWeightKg: 4 },
        ...extra,
      });
    expect((await put({ label: 'Sokoto state' })).body.data.label).toBe('Sokoto state');
    expect((await put({})).body.data.label).toBe('Sokoto state');
    const cleared = await put({ label: null });
    expect(cleared.status).toBe(201);
    expect(cleared.body.data.label).toBeNull();
    expect(
      (await admin('GET', `/admin/pricing/tiers/${cleared.body.data.id}`)).body.data.label,
    ).toBeNull();
  });

  it('simultaneous changes of one revision: exactly one lands, the others answer 409', async () => {
    const change = (km: number) =>
      admin('PUT', '/admin/pricing/tiers', {
        countryCode: 'NG',
        state: 'Ogun',
        expectedRevision: 1,
        rates: { routes: { INTER_CITY: { includedKm: km } } },
      });
    const replies = await Promise.all([6, 7, 8, 9, 10, 11].map(change));
    const statuses = replies.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 409, 409, 409, 409, 409]);
    const winner = replies.find((r) => r.status === 201)?.body.data;
    const tariff = await admin('GET', '/admin/pricing/tariff?countryCode=NG&state=Ogun');
    expect(tariff.body.data.tierIds.statePricingId).toBe(winner.id);
    expect(tariff.body.data.tariff.routes.INTER_CITY.includedKm).toBe(
      winner.rates.routes.INTER_CITY.includedKm,
    );
  });

  it('simultaneous changes of two tiers of one country never store a combination neither checked', async () => {
    // Each change holds with the other's tier as it was; together the city would close (07:00)
    // before the state's opening falls back to the country's 08:00.
    const places = [
      ['Enugu', 'Enugu North'],
      ['Kaduna', 'Kaduna North'],
      ['Plateau', 'Jos North'],
      ['Kwara', 'Ilorin East'],
      ['Edo', 'Oredo'],
    ];
    for (const [state, city] of places) {
      const early = await admin('PUT', '/admin/pricing/tiers', {
        countryCode: 'NG',
        state,
        rates: { scheduled: { openingTime: '05:00' } },
      });
      expect(early.status).toBe(201);
      const replies = await Promise.all([
        admin('PUT', '/admin/pricing/tiers', {
          countryCode: 'NG',
          state,
          rates: { includedWeightKg: 3 },
        }),
        admin('PUT', '/admin/pricing/tiers', {
          countryCode: 'NG',
          state,
          city,
          rates: { scheduled: { closingTime: '07:00' } },
        }),
      ]);
      // The later one is refused: 409 if it was checked before the other landed, else 400.
      const [landed, refused] = replies.map((r) => r.status).sort();
      expect(landed).toBe(201);
      expect([400, 409]).toContain(refused);
      const merged = await admin(
        'GET',
        `/admin/pricing/tariff?countryCode=NG&state=${state}&city=${encodeURIComponent(city)}`,
      );
      const { openingTime, closingTime } = merged.body.data.tariff.scheduled;
      expect(openingTime < closingTime).toBe(true);
    }
  });

  it('removing a city tier falls back to the state', async () => {
    const { tierIds } = (await modeB()).body.data;
    const removed = await admin('DELETE', `/admin/pricing/tiers/${tierIds.cityPricingId}`);
    expect(removed.status).toBe(204);
    expect(removed.text).toBe('');
    const after = (await modeB()).body.data;
    expect(after.tierIds.cityPricingId).toBeNull();
    expect(after.tariffVersion).toBe('NG@1/lagos@2');
    // The revision that priced earlier quotes still explains them, marked as of a removed tier.
    const priced = await admin('GET', `/admin/pricing/tiers/${tierIds.cityPricingId}`);
    expect(priced.status).toBe(200);
    expect(priced.body.data).toMatchObject({
      id: tierIds.cityPricingId,
      city: 'Ikeja',
      current: false,
      deleted: false,
      tierRemoved: true,
      rates: { routes: { INTER_CITY: expect.any(Object) } },
    });
    const listed = await admin('GET', '/admin/pricing/tiers?level=city&includeDeleted=true');
    const removal = listed.body.data.find((t: { city: string }) => t.city === 'Ikeja');
    expect(removal).toMatchObject({ deleted: true, current: true, tierRemoved: true, rates: {} });
    expect((await admin('GET', `/admin/pricing/tiers/${removal.id}`)).body.data).toEqual(removal);
    expectErrorEnvelope(
      await admin('DELETE', `/admin/pricing/tiers/${tierIds.cityPricingId}`),
      409,
    );
    expectErrorEnvelope(
      await admin('DELETE', `/admin/pricing/tiers/${tierIds.countryPricingId}`),
      400,
      /country tier cannot be removed/,
    );
  });

  it('refuses invalid rates, unknown places and inconsistent merges', async () => {
    expectErrorEnvelope(
      await admin('PUT', '/admin/pricing/tiers', {
        countryCode: 'NG',
        state: 'Kano',
        rates: { routes: { INTER_CITY: { baseFeeKobo: -100 } } },
      }),
      400,
      /baseFeeKobo.*greater than or equal to 0/,
    );
    expectErrorEnvelope(
      await admin('PUT', '/admin/pricing/tiers', {
        countryCode: 'NG',
        rates: { includedWeightKg: 2 },
      }),
      400,
      /required/,
    );
    const noSuchState = await admin('PUT', '/admin/pricing/tiers', {
      countryCode: 'NG',
      state: 'Lagoss',
      rates: { includedWeightKg: 2 },
    });
    expectErrorEnvelope(noSuchState, 404, /Lagoss/);
    expect(noSuchState.body.errors).toEqual([
      { field: 'state', message: 'State "Lagoss" not found in Nigeria; did you mean Lagos?' },
    ]);
    const noSuchCity = await admin('PUT', '/admin/pricing/tiers', {
      countryCode: 'NG',
      state: 'Lagos',
      city: 'Ikejaa',
      rates: { includedWeightKg: 2 },
    });
    expectErrorEnvelope(noSuchCity, 404, /Ikejaa/);
    expect(noSuchCity.body.errors.map((e: { field: string }) => e.field)).toEqual(['city']);
    expectErrorEnvelope(
      await admin('PUT', '/admin/pricing/tiers', {
        countryCode: 'NG',
        state: 'Kano',
        rates: { scheduled: { openingTime: '19:00' } },
      }),
      400,
      /openingTime \(19:00\) must be before closingTime/,
    );
    const fleetFeesKobo = Object.fromEntries(
      Array.from({ length: 101 }, (_, n) => [`fleet-${n}`, 100]),
    );
    expectErrorEnvelope(
      await admin('PUT', '/admin/pricing/tiers', {
        countryCode: 'NG',
        state: 'Kano',
        rates: { fleetFeesKobo: { default: 0, ...fleetFeesKobo } },
      }),
      400,
      /fleetFeesKobo takes at most 101 fees: `default` and one for each fleet type there may be \(100\)/,
    );
    expectErrorEnvelope(
      await admin('PUT', '/admin/pricing/tiers', {
        countryCode: 'NG',
        state: 'Kano',
        label: 'Kano\u001b[2J',
        rates: { includedWeightKg: 2 },
      }),
      400,
      /label must be plain text/,
    );
    expectErrorEnvelope(await request(stack.node.url, 'GET', '/admin/pricing/tiers'), 401);
  });
});

describe('courier pricing rules', () => {
  // Couriers of the directory: a rule names one.
  let courierId: string;
  let specific: { courierSelection: 'SPECIFIC'; courierId: string };
  beforeAll(async () => {
    courierId = await newCourier(stack.node.url);
    specific = { courierSelection: 'SPECIFIC', courierId };
  });

  it('a matching rule prices the trip; weight, fleet and surcharge are zero', async () => {
    const created = await admin('POST', '/admin/pricing/courier-rules', {
      courierId,
      from: 'lagos',
      to: 'Eti-Osa, Lagos',
      withinKmRadius: 60,
      amountKobo: 300_000,
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({
      from: 'Lagos',
      to: 'Eti Osa, Lagos',
      priority: 0,
      isPerKg: false,
    });

    const reply = await modeB({ ...specific, totalWeight: 12, urgencyType: 'PRIORITY' });
    expect(reply.status).toBe(200);
    const { costs, courierPricingRule } = reply.body.data;
    expect(courierPricingRule).toEqual({
      id: created.body.data.id,
      capBy: 'LOCATION',
      from: 'Lagos',
      to: 'Eti Osa, Lagos',
      withinKmRadius: 60,
      isPerKg: false,
    });
    expect([costs.base, costs.weight, costs.fleet, costs.surcharge]).toEqual([
      '3000.00',
      '0.00',
      '0.00',
      '0.00',
    ]);

    // Another courier, or no courier, pays the tariff.
    const anyone = (await modeB({ totalWeight: 12 })).body.data;
    expect(anyone.courierPricingRule).toBeNull();
  });

  it('quotes read the rules kept in memory, reread when a change is announced', async () => {
    // A courier of the directory: a retired or unknown one is priced without rules.
    const unseen = await newCourier(stack.node.url);
    const quote = () => modeB({ courierSelection: 'SPECIFIC', courierId: unseen });
    const db = await openServiceDatabase(stack.iso, 'pricing');
    try {
      // Stored behind the admin API's back: no replica is told of it.
      await db.collection('courier_pricing_rules').insertOne({
        _id: randomUUID() as never,
        courierId: unseen,
        capBy: 'LOCATION',
        countryCode: 'NG',
        from: { state: 'Lagos', lgaOrCity: null },
        to: { state: 'Lagos', lgaOrCity: null },
        withinKmRadius: null,
        isPerKg: false,
        amountKobo: 77_700,
        priority: 0,
        createdAt: new Date(),
        updatedAt: new Date(),
      });
      expect((await quote()).body.data.courierPricingRule).toBeNull();
      await stack.client.broadcast('pricing.courierRulesChanged', {});
      await eventually(async () => expect((await quote()).body.data.costs.base).toBe('777.00'), {
        interval: 50,
      });
    } finally {
      await db.close();
    }
  });

  it('refuses an overlapping rule with the same priority, accepts it with another', async () => {
    const overlapping = { courierId, from: 'Ikeja, Lagos', to: 'Lagos', amountKobo: 100 };
    expectErrorEnvelope(
      await admin('POST', '/admin/pricing/courier-rules', overlapping),
      409,
      /covering the same trips/,
    );
    const second = await admin('POST', '/admin/pricing/courier-rules', {
      ...overlapping,
      priority: 1,
      isPerKg: true,
    });
    expect(second.status).toBe(201);
    const updated = await admin('PATCH', `/admin/pricing/courier-rules/${second.body.data.id}`, {
      priority: 0,
    });
    expectErrorEnvelope(updated, 409);
    const repriced = await admin('PATCH', `/admin/pricing/courier-rules/${second.body.data.id}`, {
      amountKobo: 5000,
      to: 'Lagos Island, Lagos',
    });
    expect(repriced.status).toBe(200);
    expect(repriced.body.data).toMatchObject({
      amountKobo: 5000,
      to: 'Lagos Island, Lagos',
      priority: 1,
      isPerKg: true,
    });
    // A country whose places the rule does not name: the rule is there, its places (both,
    // at once) are wrong.
    const abroad = await admin('PATCH', `/admin/pricing/courier-rules/${second.body.data.id}`, {
      countryCode: 'GH',
    });
    expectErrorEnvelope(abroad, 400, /not found in Ghana: the rule's from is not in that country/);
    expect(abroad.body.errors.map((e: { field: string }) => e.field)).toEqual(['from', 'to']);
    const unknownTo = await admin('PATCH', `/admin/pricing/courier-rules/${second.body.data.id}`, {
      to: 'Atlantis',
    });
    expectErrorEnvelope(unknownTo, 400, /^State "Atlantis" not found in Nigeria$/);
    expect(unknownTo.body.errors.map((e: { field: string }) => e.field)).toEqual(['to']);
    expectErrorEnvelope(
      await admin('PATCH', '/admin/pricing/courier-rules/6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d', {
        priority: 3,
      }),
      404,
      /Courier pricing rule not found/,
    );
    const listed = await admin('GET', `/admin/pricing/courier-rules?courierId=${courierId}`);
    expect(listed.body.data).toHaveLength(2);
    expect(
      (await admin('DELETE', `/admin/pricing/courier-rules/${second.body.data.id}`)).status,
    ).toBe(204);
    expectErrorEnvelope(
      await admin('DELETE', `/admin/pricing/courier-rules/${second.body.data.id}`),
      404,
    );
  });

  /** A rule of the courier's within each of five states (₦10 each); their ids. */
  const rulesInFiveStates = (courierId: string) =>
    Promise.all(
      ['Kano', 'Kaduna', 'Oyo', 'Enugu', 'Rivers'].map(async (state) => {
        const created = await admin('POST', '/admin/pricing/courier-rules', {
          courierId,
          from: state,
          to: state,
          amountKobo: 1000,
        });
        expect(created.status).toBe(201);
        return created.body.data.id as string;
      }),
    );

  it('changes of different fields of a rule made at once through two replicas all land', async () => {
    const second = await startNode({ services: 'pricing', iso: stack.iso });
    const db = await openServiceDatabase(stack.iso, 'pricing');
    try {
      const racer = await newCourier(stack.node.url);
      const rules = await rulesInFiveStates(racer);
      const pricingNodes = () =>
        (
          stack.client.registry.getServiceList({ onlyAvailable: true }) as {
            name: string;
            nodeID: string;
          }[]
        )
          .filter((s) => s.name === 'pricing')
          .map((s) => s.nodeID);
      await eventually(async () => expect(pricingNodes()).toHaveLength(2));
      const replicas = pricingNodes();
      const patch = (nodeID: string, ruleId: string, change: object) =>
        stack.client.call('pricing.updateCourierRule', { ruleId, ...change }, { nodeID });
      await Promise.all(
        rules.flatMap((ruleId, i) => [
          patch(replicas[0], ruleId, { amountKobo: 2000 + i }),
          patch(replicas[1], ruleId, { priority: 10 + i }),
          patch(replicas[i % 2], ruleId, { withinKmRadius: 50 + i }),
        ]),
      );
      const listed = await admin('GET', `/admin/pricing/courier-rules?courierId=${racer}`);
      for (const [i, id] of rules.entries()) {
        expect(listed.body.data.find((r: { id: string }) => r.id === id)).toMatchObject({
          amountKobo: 2000 + i,
          priority: 10 + i,
          withinKmRadius: 50 + i,
        });
        // Each change took one revision of its own, after the rule as created.
        const revisions = await db
          .collection('courier_pricing_rule_revisions')
          .find({ ruleId: id })
          .toArray();
        expect(revisions.map((r) => r.revision).sort()).toEqual([2, 3, 4]);
      }
    } finally {
      await db.close();
      await second.stop();
    }
  });

  it('lists rules a page at a time, in a stable order', async () => {
    const pager = await newCourier(stack.node.url);
    await rulesInFiveStates(pager);
    const page = (query: string) =>
      admin('GET', `/admin/pricing/courier-rules?courierId=${pager}&${query}`);
    const all = (await page('limit=500')).body.data.map((r: { id: string }) => r.id);
    expect(all).toHaveLength(5);
    const first = (await page('limit=2')).body.data.map((r: { id: string }) => r.id);
    const second = (await page('limit=2&offset=2')).body.data.map((r: { id: string }) => r.id);
    const last = (await page('limit=2&offset=4')).body.data.map((r: { id: string }) => r.id);
    expect([...first, ...second, ...last]).toEqual(all);
    expect(
      (await admin('GET', '/admin/pricing/courier-rules')).body.data.length,
    ).toBeLessThanOrEqual(100);
    expectErrorEnvelope(await page('limit=501'), 400, /limit/);
    expectErrorEnvelope(await page('offset=-1'), 400, /offset/);
  });

  it('validates rules', async () => {
    expectErrorEnvelope(
      await admin('POST', '/admin/pricing/courier-rules', {
        courierId,
        from: 'Lagos',
        to: 'Lagos',
        amountKobo: -1,
      }),
      400,
      /amountKobo/,
    );
    const atlantis = await admin('POST', '/admin/pricing/courier-rules', {
      courierId,
      from: 'Atlantis',
      to: 'Lagos',
      amountKobo: 1,
    });
    expectErrorEnvelope(atlantis, 400, /Atlantis/);
    expect(atlantis.body.errors).toEqual([
      { field: 'from', message: 'State "Atlantis" not found in Nigeria' },
    ]);
    const nowhere = await admin('POST', '/admin/pricing/courier-rules', {
      courierId,
      countryCode: 'XX',
      from: 'Lagos',
      to: 'Lagos',
      amountKobo: 1,
    });
    expectErrorEnvelope(nowhere, 400, /Country "XX" not found/);
    expect(nowhere.body.errors.map((e: { field: string }) => e.field)).toEqual(['countryCode']);
    expectErrorEnvelope(
      await admin('POST', '/admin/pricing/courier-rules', {
        courierId,
        from: 'a, b, c',
        to: 'Lagos',
        amountKobo: 1,
      }),
      400,
      /state/,
    );
    // An id no courier has (a user's, a typo) would price nothing: refused, nothing stored.
    const stranger = stack.alice.userId;
    const unknown = await admin('POST', '/admin/pricing/courier-rules', {
      courierId: stranger,
      from: 'Lagos',
      to: 'Lagos',
      amountKobo: 1,
    });
    expectErrorEnvelope(
      unknown,
      400,
      `No courier has id ${stranger}; add the courier first (POST /admin/couriers) and use the id it answers`,
    );
    expect(unknown.body.errors).toEqual([
      { field: 'courierId', message: 'no courier has this id' },
    ]);
    const listed = await admin('GET', `/admin/pricing/courier-rules?courierId=${stranger}`);
    expect(listed.body.data).toEqual([]);
  });
});

describe('fleet type changes', () => {
  it('reach pricing at once: a deactivated fleet type is no longer priced, and asked for is not found', async () => {
    const fleets = (await admin('GET', '/admin/fleet-types')).body.data as {
      id: string;
      code: string;
    }[];
    const bike = fleets.find((f) => f.code === 'bike');
    expect((await modeB()).body.data.fleetType.id).toBe(bike?.id);
    expect((await admin('PATCH', `/admin/fleet-types/${bike?.id}`, { active: false })).status).toBe(
      200,
    );
    try {
      // The announcement is asynchronous; it arrives within moments, far inside the cache time.
      await eventually(async () => expect((await modeB()).body.data.fleetType.name).toBe('Car'), {
        interval: 50,
      });
      // Not a price for another vehicle: not found, as geo's route answers for it.
      expectErrorEnvelope(await modeB({ fleetTypeId: bike?.id }), 404, 'Fleet type not found');
    } finally {
      await admin('PATCH', `/admin/fleet-types/${bike?.id}`, { active: true });
    }
  });
});
