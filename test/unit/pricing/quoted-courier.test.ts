import { badRequest, serviceUnavailable } from '../../../libs/errors';
import { quotedCourier, type QuoteSources } from '../../../services/pricing/quote';
import { TariffBook } from '../../../services/pricing/tariff-book';
import type { CourierRule } from '../../../services/pricing/courier-rules';
import { rejectionOf } from '../helpers';

const COURIER_ID = '5b0c6a58-3f3e-4d8e-9a53-2b7c1f0e9d11';

/** Sources whose courier has `rules`; the directory answers `directory()` to getCourier. */
function mode(rules: number, directory: () => Promise<unknown>) {
  const asked: string[] = [];
  const ctx = {
    meta: {},
    call: async (action: string) => {
      asked.push(action);
      return directory();
    },
  };
  const sources: QuoteSources = {
    book: () => new TariffBook([]),
    fleets: async () => [],
    courierRules: async () => Array.from({ length: rules }, () => ({}) as CourierRule),
    fleetsReadLately: async () => [],
    fleetsReadSince: async () => [],
    quotes: { secret: 'a-quote-key-of-32-characters-abc', ttlMs: 60_000 },
  };
  return { asked, modeB: () => quotedCourier(ctx, sources, COURIER_ID, true) };
}

const active = { id: COURIER_ID, active: true, virtual: false };

describe('the courier a Mode B cost is priced for', () => {
  it('is the one named, without asking the directory, when it has no rules', async () => {
    const { asked, modeB } = mode(0, async () => active);
    expect(await modeB()).toEqual({ courierId: COURIER_ID });
    expect(asked).toEqual([]);
  });

  it('is the one named when the directory has it active, and none when it is retired or virtual', async () => {
    expect(await mode(1, async () => active).modeB()).toEqual({ courierId: COURIER_ID });
    for (const courier of [{ ...active, active: false }, { ...active, virtual: true }, null]) {
      expect(await mode(1, async () => courier).modeB()).toEqual({ courierId: undefined });
    }
  });

  it('is the one named, its rules applying as before, while the directory cannot answer', async () => {
    const { asked, modeB } = mode(2, async () => {
      throw serviceUnavailable('courier-matching is away');
    });
    expect(await modeB()).toEqual({ courierId: COURIER_ID });
    expect(asked).toEqual(['courier-matching.getCourier']);
    // A refusal of the question itself is no outage: it is answered.
    const refused = mode(2, async () => {
      throw badRequest('courierId: bad');
    });
    expect(await rejectionOf(refused.modeB)).toMatchObject({ code: 400 });
  });
});
