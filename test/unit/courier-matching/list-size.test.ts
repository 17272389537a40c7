import { pageParams } from '../../../libs/schemas';
import {
  COURIER_TEXT_LIMITS,
  MERCHANT_COURIERS_MAX,
} from '../../../services/courier-matching/schemas';
import type { CourierRecord } from '../../../services/courier-matching/store';
import { toCourierView } from '../../../services/courier-matching/views';
import {
  NATS_MAX_PAYLOAD,
  PACKET_ALLOWANCE,
  largestAllowed,
  widest,
} from '../../support/message-size';

describe('the largest courier lists', () => {
  const largest: CourierRecord = {
    _id: '0b6f7c1e-2d3a-4b5c-8d9e-0f1a2b3c4d5e',
    name: widest(COURIER_TEXT_LIMITS.name),
    phone: '+234803123456789',
    // ASCII only (schemas.ts).
    profilePhoto: `https://${'p'.repeat(COURIER_TEXT_LIMITS.profilePhoto - 8)}`,
    fleet: {
      typeId: '1c7e8d2f-3e4b-4c6d-9e0f-1a2b3c4d5e6f',
      regNo: 'R'.repeat(COURIER_TEXT_LIMITS.regNo),
      make: widest(COURIER_TEXT_LIMITS.make),
      model: widest(COURIER_TEXT_LIMITS.model),
      colour: widest(COURIER_TEXT_LIMITS.colour),
    },
    active: false,
    // The longest numbers JSON writes: 17 significant digits, a sign and an exponent.
    lastLocation: { lat: -Number.MIN_VALUE * 3e15, lon: -Number.MAX_VALUE / 3, at: new Date() },
    createdAt: new Date(),
    updatedAt: new Date(),
  };
  const bytes = (count: number) =>
    Buffer.byteLength(JSON.stringify(Array.from({ length: count }, () => toCourierView(largest))));

  it('fit in one NATS message: the largest admin page', () => {
    const largestPage = largestAllowed(pageParams().limit);
    expect(largestPage).toBe(500);
    expect(bytes(largestPage) + PACKET_ALLOWANCE).toBeLessThan(NATS_MAX_PAYLOAD);
  });

  it("fit in one NATS message: a merchant's full list", () => {
    expect(bytes(MERCHANT_COURIERS_MAX) + PACKET_ALLOWANCE).toBeLessThan(NATS_MAX_PAYLOAD);
  });
});
