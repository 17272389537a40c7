import type { PackageView } from '../../libs/contracts/package';
import type { CheckoutStart } from '../../libs/contracts/payment';
import type { PricedDelivery } from '../../libs/contracts/pricing';
import type { ResolvedAddress } from '../../libs/contracts/geo';
import { validate } from '../../libs/validation';
import type { CourierOnDelivery } from '../../services/order/courier-view';
import {
  buildDelivery,
  paidByWallet,
  withCheckout,
  type DeliveryRecord,
  type ProofType,
  type StoredAddress,
} from '../../services/order/delivery-record';
import type { LifecycleEvent } from '../../services/order/lifecycle';
import { readDeliveryRequest, type RequestParams } from '../../services/order/request-input';
import { requestParams } from '../../services/order/schemas';
import { deliveryFeeBlock } from '../../services/pricing/fee-blocks';
import { fold, nextTransition } from '../../services/order/transitions';

/**
 * Deliveries as the order service builds and records them, in every state that changes the
 * shape of their views, for the unit tests of those views.
 */
const USER = '6f1d2c3b-4a59-4e8d-9c7b-1a2b3c4d5e6f';
const PROFILE = '1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f';
const API_KEY = '2b3c4d5e-6f70-4182-93a4-b5c6d7e8f901';
const PACKAGE = '3c4d5e6f-7081-4293-a4b5-c6d7e8f90a12';
const FLEET_TYPE = '4d5e6f70-8192-43a4-b5c6-d7e8f90a1b23';
const COURIER = '5e6f7081-92a3-44b5-86d7-e8f90a1b2c34';
const TIER = '6f708192-a3b4-45c6-97e8-f90a1b2c3d45';
export const NOW = new Date('2030-03-04T10:00:00.000Z');
const owner = { name: 'Shop Owner', phone: '+2348012345678', email: 'shop@example.com' };

const place = (lgaOrCity: string, lat: number, lon: number) => ({
  addressLine1: `${lgaOrCity}, Lagos`,
  lat,
  lon,
  country: 'Nigeria',
  countryCode: 'NG',
  state: 'Lagos',
  lgaOrCity,
  h3Index: '8965a5a0c2fffff',
  phrase: 'apple.river.stone',
  resolution: 9,
});

/** A trip's two stops as pricing resolved them. */
export interface Stops {
  origin: ResolvedAddress;
  destination: ResolvedAddress;
}

const LAGOS_TRIP: Stops = {
  origin: place('Ikeja', 6.6018, 3.3515),
  destination: place('Eti-Osa', 6.4474, 3.4723),
};

/** What pricing answers for the load, with `creator` and `recipient` owing these shares. */
function priced(shares: { creator: number; recipient: number }, stops: Stops): PricedDelivery {
  const fees = {
    base: 150000,
    weight: 20000,
    fleet: 0,
    surcharge: 0,
    insurance: 5000,
    deliverySubtotal: 175000,
    serviceFee: 10000,
    hubCommission: 0,
    total: 185000,
  };
  const payer = shares.recipient === 0 ? 'CREATOR' : shares.creator === 0 ? 'RECIPIENT' : 'SPLIT';
  const deliveryFee = deliveryFeeBlock(fees, payer);
  const tierIds = { countryPricingId: TIER, statePricingId: null, cityPricingId: null };
  return {
    quote: {
      deliveryCost: { tierIds, tariffVersion: 'NG:1' },
      promotion: null,
      deliveryFee,
      matchingEligible: false,
      payOnDelivery: { enabled: false, collectAmount: '0.00', collectTarget: 'PACKAGE_VALUE' },
    },
    fees,
    shares,
    route: {
      distance: { distanceKm: 18.4, etaSeconds: 2700 },
      routeType: 'INTER_CITY',
      ...stops,
    },
    fleetType: { id: FLEET_TYPE, name: 'Bike', icon: null },
    tierIds,
    tariffVersion: 'NG:1',
    slotStartsAt: null,
    slotEndsAt: null,
    timeZone: 'Africa/Lagos',
  };
}

const checkoutStart = (reference: string): CheckoutStart => ({
  status: true,
  message: 'Authorization URL created',
  data: {
    authorization_url: `https://checkout.example.com/pay/${reference}`,
    access_code: `access-${reference}`,
    reference,
  },
});

/** A delivery just created from `body` (over a minimal request), paid as `requests.ts` pays. */
export function created(
  body: Partial<RequestParams> = {},
  shares = { creator: 185000, recipient: 0 },
  stops = LAGOS_TRIP,
) {
  const params = validate(requestParams, {
    origin: 'Ikeja, Lagos',
    destination: 'Lekki, Lagos',
    destinationContactName: 'Ada Obi',
    destinationContactPhone: '+2348031234567',
    destinationContactEmail: 'ada@example.com',
    packagesId: [PACKAGE],
    type: 'DROP_OFF',
    courierSelection: 'ANYONE',
    ...body,
  }) as RequestParams;
  const request = readDeliveryRequest(params, owner);
  const built = buildDelivery({
    deliveryId: '7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d',
    trackingId: 'P2P-7K3M9Q2W5X8Z',
    owner: { id: USER, profileId: PROFILE },
    apiKeyId: API_KEY,
    recipientUserId: null,
    request,
    assigned: {
      deliveryId: '7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d',
      packages: [{ id: PACKAGE } as PackageView],
      totalWeightGrams: 2000,
      totalValueKobo: 500000,
      totalWeight: '2.00000',
      totalValue: '5000.00',
    },
    priced: priced(shares, stops),
    proofHashes: { COLLECTION: 'hash-c', DELIVERY: 'hash-d' },
    now: NOW,
  });
  let delivery = built.delivery;
  if (delivery.payment.creator.method === 'CHECKOUT') {
    delivery = withCheckout(delivery, 'creator', checkoutStart('creator-ref'));
  }
  if (delivery.payment.recipient.amountKobo > 0) {
    delivery = withCheckout(delivery, 'recipient', checkoutStart('recipient-ref'));
  }
  if (delivery.payment.creator.method === 'WALLET') delivery = paidByWallet(delivery);
  const addresses = new Map<string, StoredAddress>(built.addresses.map((a) => [a._id, a]));
  return { delivery, addresses };
}

let minute = 0;
/** The delivery after `events`, each recorded as the order service records it. */
export function after(delivery: DeliveryRecord, ...events: LifecycleEvent[]): DeliveryRecord {
  let record = delivery;
  for (const event of events) {
    const next = nextTransition(record, event, new Date(NOW.getTime() + ++minute * 60000));
    if (typeof next === 'string') throw new Error(next);
    record = fold(record, [next]);
  }
  return record;
}

export const proofOf = (delivery: DeliveryRecord, type: ProofType, code: string) => ({
  id: delivery.proofs.find((p) => p.type === type)?.id as string,
  code,
});

export const courierAway: CourierOnDelivery = {
  name: 'Amaka Nwosu',
  phone: '+2348031234567',
  profilePhoto: null,
  currentLocation: null,
  eta: null,
  fleet: { regNo: 'LAG-123', make: 'Bajaj', model: 'Boxer', colour: 'Red', typeId: FLEET_TYPE },
};
export const courierUnderWay: CourierOnDelivery = {
  ...courierAway,
  profilePhoto: 'https://cdn.example.com/files/amaka.png',
  currentLocation: { country: 'Nigeria', state: 'Lagos', lgaOrCity: 'Yaba', lat: 6.5, lon: 3.37 },
  eta: { from: '2030-03-04T10:40:00.000Z', to: '2030-03-04T10:55:00.000Z' },
};

export const ASSIGN: LifecycleEvent = { kind: 'COURIER_ASSIGNED', courierId: COURIER };

/**
 * Deliveries in every state that changes the shape of their views, between `stops`; each
 * request is also given `common`'s fields, over its own.
 */
export function deliveries(stops = LAGOS_TRIP, common: Partial<RequestParams> = {}) {
  const build = (
    body: Partial<RequestParams> = {},
    shares?: { creator: number; recipient: number },
  ) => created({ ...body, ...common }, shares, stops);
  const wallet = build();
  const { delivery: d, addresses } = wallet;
  const collected = after(
    d,
    ASSIGN,
    { kind: 'ARRIVED_AT_PICKUP' },
    { kind: 'COLLECTED', proof: proofOf(d, 'COLLECTION', '123456') },
  );
  const withAddresses = (delivery: DeliveryRecord) => ({ delivery, addresses });
  return {
    'wallet, no courier yet': wallet,
    checkout: build({ paymentMethodType: 'CHECKOUT' }),
    'checkout, paid': (() => {
      const c = build({ paymentMethodType: 'CHECKOUT' });
      return { ...c, delivery: after(c.delivery, { kind: 'PAID', share: 'creator' }) };
    })(),
    'pay on delivery to the merchant’s wallet': build({ payOnDelivery: true }),
    'pay on delivery to a courier’s wallet': build({
      payOnDelivery: true,
      podRemitTo: 'COURIER_WALLET',
      podCourierProfileId: COURIER,
    }),
    'split with the recipient': build(
      { deliveryFeePayer: 'SPLIT' },
      { creator: 92500, recipient: 92500 },
    ),
    'the recipient pays': build(
      { deliveryFeePayer: 'RECIPIENT' },
      { creator: 0, recipient: 185000 },
    ),
    'scheduled, noted, specific courier, no proofs': build({
      urgencyType: 'SCHEDULED',
      deliveryDate: '2030-03-06',
      deliverySlot: '09:00 - 12:00',
      note: 'Fragile: glass',
      courierSelection: 'SPECIFIC',
      courierId: COURIER,
      requireCollectionProofCode: false,
      requireDeliveryProofCode: false,
      link3rdPartyByContactInfo: true,
    }),
    'courier assigned': withAddresses(after(d, ASSIGN)),
    'arrived at the pickup': withAddresses(after(d, ASSIGN, { kind: 'ARRIVED_AT_PICKUP' })),
    'collected, its proof scanned': withAddresses(collected),
    'in transit': withAddresses(after(collected, { kind: 'IN_TRANSIT' })),
    'arrived at the drop-off': withAddresses(
      after(collected, { kind: 'IN_TRANSIT' }, { kind: 'ARRIVED_AT_DROPOFF' }),
    ),
    'delivered, both proofs scanned': withAddresses(
      after(
        collected,
        { kind: 'IN_TRANSIT' },
        { kind: 'ARRIVED_AT_DROPOFF' },
        { kind: 'DELIVERED', proof: proofOf(d, 'DELIVERY', '654321') },
      ),
    ),
    'failed before collection': withAddresses(
      after(d, ASSIGN, { kind: 'FAILED', reason: 'Flat tyre' }),
    ),
    returning: withAddresses(after(collected, { kind: 'FAILED', reason: 'Nobody at the door' })),
    returned: withAddresses(
      after(collected, { kind: 'FAILED', reason: 'Nobody at the door' }, { kind: 'RETURNED' }),
    ),
    'returned, its return proof scanned': (() => {
      const back = after(collected, { kind: 'FAILED', reason: 'Nobody at the door' });
      const proof = proofOf(back, 'RETURN', '246810');
      return withAddresses(after(back, { kind: 'RETURNED', proof }));
    })(),
    cancelled: withAddresses(after(d, { kind: 'CANCEL' })),
    'no courier found': withAddresses(after(d, { kind: 'NO_COURIER_FOUND' })),
    'checkout failed': (() => {
      const c = build({ paymentMethodType: 'CHECKOUT' });
      return { ...c, delivery: after(c.delivery, { kind: 'PAYMENT_FAILED', share: 'creator' }) };
    })(),
  };
}
