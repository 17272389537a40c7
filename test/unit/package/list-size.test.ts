import { loadConfig } from '../../../libs/config';
import { PACKAGE_TEXT_LIMITS } from '../../../services/package/schemas';
import type { PackageRecord } from '../../../services/package/store';
import { toPackageView } from '../../../services/package/views';
import { LARGEST_PACKAGE_TEXTS } from '../../support/largest-package';
import { NATS_MAX_PAYLOAD, PACKET_ALLOWANCE } from '../../support/message-size';

describe('the largest GET /api/packages', () => {
  const largest: PackageRecord = {
    _id: '0b6f7c1e-2d3a-4b5c-8d9e-0f1a2b3c4d5e',
    userId: '1c7e8d2f-3e4b-4c6d-9e0f-1a2b3c4d5e6f',
    ...LARGEST_PACKAGE_TEXTS,
    image: `https://${'c'.repeat(PACKAGE_TEXT_LIMITS.image - 8)}`,
    quantity: 10_000,
    size: 'LARGE',
    valueKobo: 1e13,
    p2pDeliveryId: null,
    deletedAt: null,
    createdAt: new Date(),
    updatedAt: new Date(),
  };

  it('fits in one NATS message at the highest PACKAGE_MAX_OPEN there may be', () => {
    expect(() => loadConfig({ PACKAGE_MAX_OPEN: '401' })).toThrow(/PACKAGE_MAX_OPEN/);
    const highest = loadConfig({ PACKAGE_MAX_OPEN: '400' }).packageMaxOpen;
    const list = JSON.stringify(Array.from({ length: highest }, () => toPackageView(largest)));
    expect(Buffer.byteLength(list) + PACKET_ALLOWANCE).toBeLessThan(NATS_MAX_PAYLOAD);
  });
});
