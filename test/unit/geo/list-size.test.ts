import { FLEET_TYPES_MAX } from '../../../libs/contracts/geo';
import type { FleetTypeRecord } from '../../../services/geo/store';
import { toFleetTypeDetail, toFleetTypeItem } from '../../../services/geo/views';
import { NATS_MAX_PAYLOAD, PACKET_ALLOWANCE } from '../../support/message-size';

describe('the largest lists of fleet types', () => {
  // Names and descriptions of control characters (six bytes each in JSON), as stored before
  // they were plain text; the longest https URL an icon may be.
  const largest: FleetTypeRecord = {
    _id: '0b6f7c1e-2d3a-4b5c-8d9e-0f1a2b3c4d5e',
    code: `c${'-'.repeat(31)}`,
    name: '\u0001'.repeat(60),
    icon: `https://${'i'.repeat(2048 - 8)}`,
    description: '\u0001'.repeat(280),
    maxWeightGrams: 100_000_000,
    averageSpeedKmh: 199.99999999999997,
    active: false,
    createdAt: new Date(),
    updatedAt: new Date(),
  };
  const bytes = (view: (record: FleetTypeRecord) => object) =>
    Buffer.byteLength(JSON.stringify(Array.from({ length: FLEET_TYPES_MAX }, () => view(largest))));

  it.each([
    [
      'the operators’ (GET /admin/fleet-types, the caches of pricing and matching)',
      toFleetTypeDetail,
    ],
    ['the integrators’ (GET /api/fleet-types)', toFleetTypeItem],
  ])('fit in one NATS message: %s', (_, view) => {
    // With a margin for operators adding types at the same moment (counted before the insert).
    expect(bytes(view) * 2 + PACKET_ALLOWANCE).toBeLessThan(NATS_MAX_PAYLOAD);
  });
});
