import fc from 'fast-check';
import { call } from '../../libs/contracts';
import type { AddressInput } from '../../libs/contracts/geo';
import {
  FEE_PAYERS,
  type PricedDelivery,
  type QuoteLoadParams,
  type UrgencyType,
} from '../../libs/contracts/pricing';
import { formatNaira } from '../../libs/money';
import { toCosts } from '../../services/pricing/fees';
import { localNow } from '../../services/pricing/schedule';
import { rejectionOf } from '../unit/helpers';
import { adminHeaders, request, type Reply } from '../support/http';
import { newCourier } from '../support/couriers';
import { clearOfDayEnd } from '../support/day-edge';
import { eventually } from '../support/eventually';
import { useMerchantStack } from '../support/merchant-stack';

/**
 * `pricing.quote` prices a load a delivery took exactly as Mode A of `POST /api/pricing`
 * prices the same packages: same answer, same amounts, same errors.
 */
const stack = useMerchantStack({ internal: ['pricing', 'package'] });

const IKEJA = { lat: 6.6018, lon: 3.3515 };
const LEKKI = 'Lekki, Lagos';
const UNKNOWN_FLEET = '5b0e1a34-9f1c-4d0e-8a7b-3c2d1e0f9a8b';
const UNKNOWN_COURIER = '0d9c8b7a-6f5e-4d3c-8b2a-1f0e9d8c7b6a';
/** A courier of the directory with a price of their own (set before the tests). */
let COURIER: string;

/** Trips the Nigerian tariff prices: within a city, between states, regions and countries. */
const ROUTES: [AddressInput, AddressInput][] = [
  [IKEJA, LEKKI],
  [LEKKI, 'Ikeja'],
  ['Ikeja, Lagos', 'Abeokuta, Ogun'],
  ['Ikeja, Lagos', 'Kano'],
  ['Wuse 2, Abuja', 'Port Harcourt, Rivers'],
  ['Lagos', 'Accra, Ghana'],
];

const SLOTS = ['08:00 - 10:00', '09:00 - 12:00', '17:30 - 21:00', '06:00 - 07:15'];

/** Packages of several sizes, quantities and values, declared values with kobo included. */
const POOL = [
  { size: 'SMALL', quantity: 1, value: 0 },
  { size: 'SMALL', quantity: 3, value: 1250.75 },
  { size: 'MEDIUM', quantity: 2, value: 45000.5 },
  { size: 'LARGE', quantity: 1, value: 99999.99 },
  { size: 'MEDIUM', quantity: 5, value: 7.01 },
  { size: 'LARGE', quantity: 4, value: 350000 },
];

interface Case {
  route: [AddressInput, AddressInput];
  urgencyType: UrgencyType;
  deliveryDate?: string;
  deliverySlot?: string;
  fleetTypeId?: string;
  courierId?: string;
  deliveryFeePayer: QuoteLoadParams['deliveryFeePayer'];
  payOnDelivery: boolean;
}

let packageIds: string[] = [];
/** Mode A's `courier` of COURIER (made by `newCourier`). */
const QUOTED_COURIER = () => ({
  id: COURIER,
  name: 'Tunde Bakare',
  profilePhoto: null,
  fleet: { typeId: expect.any(String), make: 'Bajaj', model: 'Boxer', colour: 'Red' },
});
let fleetIds: string[] = [];

function daysFromTodayInLagos(days: number): string {
  const today = localNow(new Date(), 'Africa/Lagos').date;
  return new Date(Date.parse(`${today}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
}

/** Mode A of the same case, over HTTP as an integrator sends it. */
function modeA(ids: string[], c: Case) {
  const { route, courierId, ...rest } = c;
  return request(stack.node.url, 'POST', '/api/pricing', {
    headers: { 'api-key': stack.alice.key },
    json: {
      origin: route[0],
      destination: route[1],
      packagesId: ids,
      ...rest,
      ...(courierId ? { courierSelection: 'SPECIFIC', courierId } : {}),
    },
  });
}

/**
 * `pricing.quote` of the same case, with the totals `package.resolveSelection` answers; as a
 * request of `userId` (alice by default) naming `quoteId` when given.
 */
async function quoteOf(
  ids: string[],
  c: Case,
  quoted: { quoteId?: string; userId?: string } = {},
): Promise<PricedDelivery> {
  const selection = await call(stack.client, 'package.resolveSelection', {
    userId: stack.alice.userId,
    packageIds: ids,
  });
  const { route, ...rest } = c;
  const { quoteId, userId = stack.alice.userId } = quoted;
  return call(
    stack.client,
    'pricing.quote',
    {
      origin: route[0],
      destination: route[1],
      load: { weightGrams: selection.totalWeightGrams, valueKobo: selection.totalValueKobo },
      ...rest,
      ...(quoteId ? { quoteId } : {}),
    },
    { meta: { user: { id: userId } } },
  );
}

/** An error as the gateway answers it, and as a service meets it. */
const httpError = (reply: Reply) => {
  const body = reply.body as { message: string; errors?: unknown };
  return { status: reply.status, message: body.message, errors: body.errors };
};
const callError = (err: unknown) => {
  const e = err as { code: number; message: string; data?: { errors?: unknown } };
  return { status: e.code, message: e.message, errors: e.data?.errors };
};

async function savePackage(body: object): Promise<string> {
  const reply = await request(stack.node.url, 'POST', '/api/package', {
    headers: { 'api-key': stack.alice.key },
    json: { packageType: 'Parcel', name: 'Box', ...body },
  });
  expect(reply.status).toBe(201);
  return reply.body.data.id as string;
}

beforeAll(async () => {
  packageIds = [];
  for (const body of POOL) packageIds.push(await savePackage(body));
  const fleets = await request(stack.node.url, 'GET', '/api/fleet-types', {
    headers: { 'api-key': stack.alice.key },
  });
  fleetIds = (fleets.body.data as { id: string }[]).map((f) => f.id);
  // The courier's own price within Lagos, by the kg: it replaces the trip fee there only.
  COURIER = await newCourier(stack.node.url);
  const rule = await request(stack.node.url, 'POST', '/admin/pricing/courier-rules', {
    headers: adminHeaders,
    json: { courierId: COURIER, from: 'Lagos', to: 'Lagos', amountKobo: 12_345, isPerKg: true },
  });
  expect(rule.status).toBe(201);
});

describe('pricing.quote', () => {
  it('answers what Mode A answers for the same packages, whatever the trip and options (property)', async () => {
    const caseArb: fc.Arbitrary<Case> = fc
      .record({
        route: fc.constantFrom(...ROUTES),
        urgency: fc.oneof(
          fc.constantFrom<UrgencyType>('STANDARD', 'PRIORITY').map((urgencyType) => ({
            urgencyType,
          })),
          fc.record({
            urgencyType: fc.constant<UrgencyType>('SCHEDULED'),
            // Three days ahead at least: a slot a trip (Ikeja to Kano by bike, some 40 h) would
            // no longer reach is refused (pricing-quote's own cases below).
            deliveryDate: fc.integer({ min: 3, max: 30 }).map(daysFromTodayInLagos),
            deliverySlot: fc.constantFrom(...SLOTS),
          }),
        ),
        fleetTypeId: fc.option(fc.constantFrom(...fleetIds), { nil: undefined }),
        courierId: fc.option(fc.constant(COURIER), { nil: undefined }),
        deliveryFeePayer: fc.constantFrom(...FEE_PAYERS),
        payOnDelivery: fc.boolean(),
      })
      .map(({ urgency, fleetTypeId, courierId, ...rest }) => ({
        ...rest,
        ...urgency,
        ...(fleetTypeId ? { fleetTypeId } : {}),
        ...(courierId ? { courierId } : {}),
      }));
    const selectionArb = fc.shuffledSubarray(packageIds, { minLength: 1 });

    await fc.assert(
      fc.asyncProperty(selectionArb, caseArb, async (ids, c) => {
        const [http, priced] = await Promise.all([modeA(ids, c), quoteOf(ids, c)]);
        expect(http.status).toBe(200);
        const { courier, ...quoted } = http.body.data;
        const { quoteId, quoteExpiresAt, ...costOfPackages } = quoted.deliveryCost;
        expect(priced.quote).toEqual({ ...quoted, deliveryCost: costOfPackages });
        // The courier named, when SPECIFIC.
        expect(courier).toEqual(c.courierId ? QUOTED_COURIER() : undefined);
        expect(Date.parse(quoteExpiresAt) - Date.now()).toBeGreaterThan(14 * 60_000);
        // A request naming the quote is priced the same.
        expect(await quoteOf(ids, c, { quoteId })).toEqual(priced);

        // The rest of the answer is the same quote in kobo, and the route it was priced for.
        const cost = priced.quote.deliveryCost;
        expect(toCosts(priced.fees)).toEqual(cost.costs);
        expect(priced.shares.creator + priced.shares.recipient).toBe(priced.fees.total);
        expect(formatNaira(priced.shares.creator)).toBe(priced.quote.deliveryFee.creator.amount);
        expect(formatNaira(priced.shares.recipient)).toBe(
          priced.quote.deliveryFee.recipient.amount,
        );
        expect(priced.route.distance).toEqual(cost.distance);
        expect(priced.route.routeType).toBe(cost.routeType);
        expect(priced.route.origin).toMatchObject({ h3Index: expect.any(String) });
        expect(priced.route.destination).toMatchObject({ h3Index: expect.any(String) });
        expect(priced.fleetType).toEqual(cost.fleetType);
        expect(priced.tierIds).toEqual(cost.tierIds);
        expect(priced.tariffVersion).toBe(cost.tariffVersion);
        // The slot's opening and close, in Lagos (UTC+1 all year): 09:00 there is 08:00 UTC.
        const slot = c.deliverySlot;
        const utc = (time: string) =>
          `${c.deliveryDate}T${String(Number(time.slice(0, 2)) - 1).padStart(2, '0')}:${time.slice(3, 5)}:00.000Z`;
        expect(priced.slotStartsAt).toBe(slot ? utc(slot.slice(0, 5)) : null);
        expect(priced.slotEndsAt).toBe(slot ? utc(slot.slice(-5)) : null);
      }),
      { numRuns: 40 },
    );
  });

  /** A Mode B cost of 2 kg from Ikeja to Lekki, naming `courierId`. */
  const modeBFor = (courierId: string) =>
    request(stack.node.url, 'POST', '/api/pricing', {
      headers: { 'api-key': stack.alice.key },
      json: {
        origin: IKEJA,
        destination: LEKKI,
        totalWeight: 2,
        totalValue: 1000,
        courierSelection: 'SPECIFIC',
        courierId,
      },
    });

  it('names a SPECIFIC courier in Mode A, and refuses one no request may name (404), as the request does', async () => {
    const c = base({ courierId: COURIER });
    const named = await modeA(packageIds.slice(0, 1), c);
    expect(named.status).toBe(200);
    expect(named.body.data.courier).toEqual(QUOTED_COURIER());

    const retired = await newCourier(stack.node.url);
    const retiring = await request(stack.node.url, 'PATCH', `/admin/couriers/${retired}`, {
      headers: adminHeaders,
      json: { active: false },
    });
    expect(retiring.status).toBe(200);
    for (const courierId of [retired, UNKNOWN_COURIER]) {
      const refused = await modeA(packageIds.slice(0, 1), base({ courierId }));
      expect(refused.status).toBe(404);
      expect(refused.body.message).toBe('Courier not found');
      expect(refused.body.errors).toEqual([
        { field: 'courierId', message: `no active courier ${courierId}` },
      ]);
    }
    // Before the packages, as the request: none of these is the caller's.
    const both = await modeA([UNKNOWN_FLEET], base({ courierId: UNKNOWN_COURIER }));
    expect(both.status).toBe(404);
    expect(both.body.message).toBe('Courier not found');
    // Mode B names no courier, and prices by the rules alone.
    const totals = await modeBFor(UNKNOWN_COURIER);
    expect(totals.status).toBe(200);
    expect(totals.body.data.courier).toBeUndefined();
  });

  it('leaves the rule of a courier no request may name out of a Mode B cost', async () => {
    const retired = await newCourier(stack.node.url);
    const rule = await request(stack.node.url, 'POST', '/admin/pricing/courier-rules', {
      headers: adminHeaders,
      json: { courierId: retired, from: 'Lagos', to: 'Lagos', amountKobo: 123_400, priority: 1 },
    });
    expect(rule.status).toBe(201);
    const cost = () => modeBFor(retired);
    const active = await cost();
    expect(active.status).toBe(200);
    expect(active.body.data.courierPricingRule).toMatchObject({ id: rule.body.data.id });
    const retiring = await request(stack.node.url, 'PATCH', `/admin/couriers/${retired}`, {
      headers: adminHeaders,
      json: { active: false },
    });
    expect(retiring.status).toBe(200);
    // Priced as the request would be: the request refuses the courier, and no rule of theirs.
    const after = await eventually(async () => {
      const reply = await cost();
      expect(reply.body.data.courierPricingRule).toBeNull();
      return reply;
    });
    expect(after.status).toBe(200);
  });

  it('applies a SPECIFIC courier’s own price where its rule matches', async () => {
    const c: Case = {
      route: [IKEJA, LEKKI],
      urgencyType: 'STANDARD',
      courierId: COURIER,
      deliveryFeePayer: 'CREATOR',
      payOnDelivery: false,
    };
    const priced = await quoteOf(packageIds.slice(0, 2), c);
    expect(priced.quote.deliveryCost.courierPricingRule).toMatchObject({ isPerKg: true });
    expect([priced.fees.weight, priced.fees.fleet, priced.fees.surcharge]).toEqual([0, 0, 0]);
  });

  const base = (c: Partial<Case>): Case => ({
    route: [IKEJA, LEKKI],
    urgencyType: 'STANDARD',
    deliveryFeePayer: 'CREATOR',
    payOnDelivery: false,
    ...c,
  });

  it.each<[string, () => Case]>([
    ['an unknown fleet type (404)', () => base({ fleetTypeId: UNKNOWN_FLEET })],
    ['SCHEDULED without date or slot', () => base({ urgencyType: 'SCHEDULED' })],
    [
      'SCHEDULED without a slot',
      () => base({ urgencyType: 'SCHEDULED', deliveryDate: daysFromTodayInLagos(1) }),
    ],
    [
      'a date that is no calendar date',
      () => base({ urgencyType: 'SCHEDULED', deliveryDate: '2026-02-30', deliverySlot: SLOTS[0] }),
    ],
    [
      'a date in the past',
      () =>
        base({
          urgencyType: 'SCHEDULED',
          deliveryDate: daysFromTodayInLagos(-1),
          deliverySlot: SLOTS[0],
        }),
    ],
    [
      'a date too far ahead',
      () =>
        base({
          urgencyType: 'SCHEDULED',
          // Well past the 30 days bookable, so that a midnight in between changes nothing.
          deliveryDate: daysFromTodayInLagos(40),
          deliverySlot: SLOTS[0],
        }),
    ],
    [
      'a slot that ends before it starts',
      () =>
        base({
          urgencyType: 'SCHEDULED',
          deliveryDate: daysFromTodayInLagos(1),
          deliverySlot: '12:00 - 09:00',
        }),
    ],
    [
      'tomorrow’s slot, a trip of some 40 h away (Ikeja to Kano by bike)',
      () =>
        base({
          route: ['Ikeja, Lagos', 'Kano'],
          fleetTypeId: fleetIds[0],
          urgencyType: 'SCHEDULED',
          deliveryDate: daysFromTodayInLagos(1),
          deliverySlot: '06:00 - 07:15',
        }),
    ],
    [
      'a date without SCHEDULED',
      () => base({ urgencyType: 'PRIORITY', deliveryDate: daysFromTodayInLagos(1) }),
    ],
    ['a trip from where no tariff applies', () => base({ route: ['Accra, Ghana', LEKKI] })],
    ['the same place at both ends', () => base({ route: [IKEJA, IKEJA] })],
  ])('refuses %s exactly as Mode A does', async (_name, make) => {
    // Both answers are given on one day in Lagos: the messages of dates name today.
    await clearOfDayEnd(10_000, 'Africa/Lagos');
    const c = make();
    const http = await modeA(packageIds.slice(0, 2), c);
    expect(http.status).toBeGreaterThanOrEqual(400);
    expect(http.status).toBeLessThan(500);
    const err = await rejectionOf(() => quoteOf(packageIds.slice(0, 2), c));
    expect(callError(err)).toEqual(httpError(http));
  });

  it('refuses a declared value above the insurable maximum as Mode A does', async () => {
    const ids = [await savePackage({ size: 'SMALL', quantity: 1, value: 10_000_000.01 })];
    const c = base({});
    const http = await modeA(ids, c);
    expect(http.status).toBe(400);
    expect(http.body.errors).toEqual([
      expect.objectContaining({ field: 'packagesId', message: expect.stringMatching(/at most/) }),
    ]);
    const err = await rejectionOf(() => quoteOf(ids, c));
    expect(callError(err)).toEqual(httpError(http));
  });

  it('refuses a price more than one payment can be (422), as Mode A does', async () => {
    // A courier's own price set past all sense: ₦10 billion a kg.
    const dear = await newCourier(stack.node.url);
    const rule = await request(stack.node.url, 'POST', '/admin/pricing/courier-rules', {
      headers: adminHeaders,
      json: { courierId: dear, from: 'Lagos', to: 'Lagos', amountKobo: 1e12, isPerKg: true },
    });
    expect(rule.status).toBe(201);
    const c = base({ courierId: dear });
    const http = await modeA(packageIds.slice(0, 2), c);
    expect(http.status).toBe(422);
    expect(http.body.message).toMatch(/more than one payment can be \(10000000000\.00 NGN\)/);
    const err = await rejectionOf(() => quoteOf(packageIds.slice(0, 2), c));
    expect(callError(err)).toEqual(httpError(http));
  });
});
