import { AREA_NAME_MAX, FLEET_TYPES_MAX } from '../../../libs/contracts/geo';
import { MAX_AMOUNT_KOBO } from '../../../libs/contracts/payment';
import { validate } from '../../../libs/validation';
import { NIGERIA_COUNTRY_TARIFF } from '../../../services/pricing/nigeria-tariff';
import type { TierRevisionRecord } from '../../../services/pricing/store';
import { completeTariffSchema } from '../../../services/pricing/tariff-schema';
import { TIER_PAGE_MAX, toTierView } from '../../../services/pricing/tier-admin';
import { NATS_MAX_PAYLOAD, PACKET_ALLOWANCE, widest } from '../../support/message-size';

/** A fleet type's longest code, `n` of them, each different. */
const code = (n: number) => `f${String(n).padStart(31, '-')}`;

/** The largest rates a tier may hold: a complete tariff, every fleet type its own fee. */
const largestRates = () => {
  const fleetFeesKobo = Object.fromEntries([
    ['default', MAX_AMOUNT_KOBO],
    ...Array.from({ length: FLEET_TYPES_MAX }, (_, n) => [code(n), MAX_AMOUNT_KOBO]),
  ]);
  return validate(completeTariffSchema, { ...NIGERIA_COUNTRY_TARIFF, fleetFeesKobo });
};

describe('the largest GET /admin/pricing/tiers', () => {
  it(`takes a default and ${FLEET_TYPES_MAX} fleet fees, no more`, () => {
    const rates = largestRates();
    expect(Object.keys(rates.fleetFeesKobo)).toHaveLength(FLEET_TYPES_MAX + 1);
    const more = { ...rates.fleetFeesKobo, [code(FLEET_TYPES_MAX)]: 1 };
    expect(() =>
      validate(completeTariffSchema, { ...NIGERIA_COUNTRY_TARIFF, fleetFeesKobo: more }),
    ).toThrow(/takes at most 101 fees: `default` and one for each fleet type there may be \(100\)/);
  });

  it(`fits in one NATS message at the largest page, ${TIER_PAGE_MAX} tiers`, () => {
    // Label and note of control characters (six bytes each), as stored before plain text.
    const largest: TierRevisionRecord = {
      _id: '0b6f7c1e-2d3a-4b5c-8d9e-0f1a2b3c4d5e',
      scopeKey: 'unused by the view',
      revision: Number.MAX_SAFE_INTEGER,
      level: 'city',
      countryCode: 'NG',
      state: widest(AREA_NAME_MAX),
      city: widest(AREA_NAME_MAX),
      label: '\u0001'.repeat(100),
      rates: largestRates(),
      deleted: false,
      note: '\u0001'.repeat(500),
      change: Number.MAX_SAFE_INTEGER,
      createdAt: new Date(),
    };
    const view = toTierView(largest, { current: true, tierRemoved: false });
    const page = JSON.stringify(Array.from({ length: TIER_PAGE_MAX }, () => view));
    expect(Buffer.byteLength(page) + PACKET_ALLOWANCE).toBeLessThan(NATS_MAX_PAYLOAD);
  });
});
