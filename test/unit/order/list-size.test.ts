import {
  addressInput,
  ADDRESS_TEXT_LIMITS,
  AREA_NAME_MAX,
  PRESERVED_STRINGS,
} from '../../../libs/contracts/geo';
import { PERSON_NAME_MAX } from '../../../libs/schemas';
import { validate } from '../../../libs/validation';
import { COURIER_TEXT_LIMITS } from '../../../services/courier-matching/schemas';
import { resolvePlace } from '../../../services/geo/address';
import type { CourierOnDelivery } from '../../../services/order/courier-view';
import type { DeliveryRecord, StoredAddress } from '../../../services/order/delivery-record';
import {
  DELIVERIES_ALWAYS_FIT,
  DELIVERY_PAGE_MAX,
  listParams,
} from '../../../services/order/schemas';
import { pageInOneReply } from '../../../libs/reply-size';
import { toAddressView, toDeliveryView } from '../../../services/order/views';
import { deliveries } from '../../support/built-deliveries';
import { largestAddressInput, LARGEST_REQUEST_TEXTS } from '../../support/largest-address';
import {
  largestAllowed,
  NATS_MAX_PAYLOAD,
  PACKET_ALLOWANCE,
  widest,
} from '../../support/message-size';

/** The largest stop validation lets through, as geo resolves it. */
const largestStop = (field: 'origin' | 'destination') =>
  resolvePlace(validate(addressInput(), largestAddressInput(6.6018, 3.3515)), field);

/** The largest courier a delivery may show: the directory's limits, geo's longest names. */
const largestCourier: CourierOnDelivery = {
  name: widest(PERSON_NAME_MAX),
  phone: '+234803123456789',
  profilePhoto: `https://${'p'.repeat(COURIER_TEXT_LIMITS.profilePhoto - 8)}`,
  currentLocation: {
    country: widest(AREA_NAME_MAX),
    state: widest(AREA_NAME_MAX),
    lgaOrCity: widest(AREA_NAME_MAX),
    lat: -Number.MIN_VALUE * 3e15,
    lon: -Number.MAX_VALUE / 3,
  },
  eta: { from: '2030-03-04T10:40:00.000Z', to: '2030-03-04T10:55:00.000Z' },
  fleet: {
    regNo: 'R'.repeat(COURIER_TEXT_LIMITS.regNo),
    make: widest(COURIER_TEXT_LIMITS.make),
    model: widest(COURIER_TEXT_LIMITS.model),
    colour: widest(COURIER_TEXT_LIMITS.colour),
    typeId: '4d5e6f70-8192-43a4-b5c6-d7e8f90a1b23',
  },
};

/** The largest delivery view of any state. */
function toDeliveryViews() {
  const stops = { origin: largestStop('origin'), destination: largestStop('destination') };
  const cases = deliveries(stops, LARGEST_REQUEST_TEXTS);
  // What the cases leave short: a fleet type named before names were plain text, with the
  // longest icon; the longest failure, tariff version and payment links (2,048-character URLs).
  const link = `https://${'l'.repeat(2048 - 8)}`;
  const largest = (delivery: DeliveryRecord): DeliveryRecord => ({
    ...delivery,
    fleetType: { ...delivery.fleetType, name: '\u0001'.repeat(60), icon: link },
    failure: { reason: widest(300), at: new Date() },
    tariffVersion: `NG@${Number.MAX_SAFE_INTEGER}/${widest(AREA_NAME_MAX)}@${Number.MAX_SAFE_INTEGER}/${widest(AREA_NAME_MAX)}@${Number.MAX_SAFE_INTEGER}`,
    payment: {
      ...delivery.payment,
      creator: { ...delivery.payment.creator, checkoutUrl: link },
      recipient: { ...delivery.payment.recipient, checkoutUrl: link },
    },
  });
  const views = Object.values(cases).map(({ delivery, addresses }) =>
    toDeliveryView(largest(delivery), addresses, largestCourier),
  );
  const bytes = (view: object) => Buffer.byteLength(JSON.stringify(view));
  return views.reduce((a, b) => (bytes(b) > bytes(a) ? b : a));
}

describe('the largest GET /api/deliveries', () => {
  const largest = toDeliveryViews();
  const page = (count: number) => Array.from({ length: count }, () => largest);

  it(`answers ${DELIVERIES_ALWAYS_FIT} deliveries of the largest there may be in one NATS message`, () => {
    const bytes = Buffer.byteLength(JSON.stringify(page(DELIVERIES_ALWAYS_FIT)));
    expect(bytes + PACKET_ALLOWANCE).toBeLessThan(NATS_MAX_PAYLOAD);
    expect(
      pageInOneReply(page(DELIVERIES_ALWAYS_FIT), DELIVERIES_ALWAYS_FIT, 'deliveries'),
    ).toHaveLength(DELIVERIES_ALWAYS_FIT);
  });

  it('refuses a larger page of them with a 400 naming the largest limit that fits', () => {
    expect(largestAllowed(listParams.extract('limit'))).toBe(DELIVERY_PAGE_MAX);
    const fit = Math.floor(
      (NATS_MAX_PAYLOAD - PACKET_ALLOWANCE - 1) / (Buffer.byteLength(JSON.stringify(largest)) + 1),
    );
    expect(fit).toBeGreaterThanOrEqual(DELIVERIES_ALWAYS_FIT);
    expect(fit).toBeLessThan(DELIVERY_PAGE_MAX);
    expect(pageInOneReply(page(fit), DELIVERIES_ALWAYS_FIT, 'deliveries')).toHaveLength(fit);
    for (const count of [fit + 1, DELIVERY_PAGE_MAX]) {
      expect(() => pageInOneReply(page(count), DELIVERIES_ALWAYS_FIT, 'deliveries')).toThrow(
        expect.objectContaining({
          code: 400,
          message: `limit: these ${count} deliveries are too large to answer at once; ask for them with limit=${fit} or less`,
        }),
      );
    }
  });

  it('takes no control characters in a stop’s texts, which would be six bytes each', () => {
    const texts = [...Object.keys(ADDRESS_TEXT_LIMITS), ...PRESERVED_STRINGS];
    for (const name of texts) {
      const { error } = addressInput().validate({ lat: 6.6, lon: 3.3, [name]: 'a\u0001b' });
      expect(error?.message).toMatch(/must be plain text/);
    }
    expect(addressInput().validate('Allen\u001b Avenue').error?.message).toMatch(/plain text/);
  });

  it('shows texts stored before stops were plain text no larger than plain text', () => {
    const stored = (text: string): StoredAddress => ({
      _id: '0b6f7c1e-2d3a-4b5c-8d9e-0f1a2b3c4d5e',
      userId: '1c7e8d2f-3e4b-4c6d-9e0f-1a2b3c4d5e6f',
      deliveryId: '2d8f9e3a-4f5c-4d7e-8f1a-2b3c4d5e6f7a',
      role: 'origin',
      fields: { ...largestStop('origin'), addressLine1: text, note: text },
      createdAt: new Date(),
      updatedAt: new Date(),
    });
    const length = ADDRESS_TEXT_LIMITS.additionalNote;
    const view = toAddressView(stored('\u0001\u001b\u007f\u0085\ud800'.repeat(length / 5)));
    expect(view.addressLine1).toBe('␁␛␡\ufffd\ufffd'.repeat(length / 5));
    expect(Buffer.byteLength(JSON.stringify(view))).toBeLessThanOrEqual(
      Buffer.byteLength(JSON.stringify(toAddressView(stored(widest(length))))),
    );
  });
});
