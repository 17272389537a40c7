import { randomUUID } from 'node:crypto';
import { NIGERIA_COUNTRY_TARIFF } from '../../../services/pricing/nigeria-tariff';
import type { TierRevisionRecord } from '../../../services/pricing/store';
import { scopeKey, type TierScope } from '../../../services/pricing/tariff';
import { createTierActions } from '../../../services/pricing/tier-admin';
import { scopeFields } from '../../../services/pricing/tier-store';
import { rejectionOf } from '../helpers';

/**
 * The tier actions over revisions held in memory: the queries they make, answered as the
 * database would (a unique `_id` and a unique revision per place).
 */
function tierModels(records: TierRevisionRecord[]) {
  const query = <T>(result: () => T) => {
    const chain = { sort: () => chain, lean: async () => result() };
    return chain;
  };
  const copy = (r: TierRevisionRecord | undefined) => (r ? structuredClone(r) : null);
  const TierRevision = {
    findById: (id: string) => query(() => copy(records.find((r) => r._id === id))),
    find: () => query(() => records.map((r) => structuredClone(r))),
    findOne: (filter: { scopeKey: string }) =>
      query(() =>
        copy(
          records
            .filter((r) => r.scopeKey === filter.scopeKey)
            .sort((a, b) => b.revision - a.revision)[0],
        ),
      ),
    async create(fields: Partial<TierRevisionRecord>) {
      const record = {
        _id: randomUUID(),
        label: null,
        note: null,
        deleted: false,
        createdAt: new Date(),
        ...fields,
      } as TierRevisionRecord;
      if (
        records.some(
          (r) =>
            r._id === record._id ||
            (r.scopeKey === record.scopeKey && r.revision === record.revision),
        )
      ) {
        throw Object.assign(new Error('E11000 duplicate key'), { code: 11000 });
      }
      records.push(record);
      return { toObject: () => structuredClone(record) };
    },
  };
  return { TierRevision };
}

function stored(scope: TierScope, rates: object, revision = 1): TierRevisionRecord {
  return {
    _id: randomUUID(),
    ...scopeFields(scope),
    revision,
    rates,
    deleted: false,
    label: null,
    note: null,
    createdAt: new Date(),
  } as TierRevisionRecord;
}

const ng = { countryCode: 'NG' };
const lagos = { countryCode: 'NG', state: 'Lagos' };
const ikeja = { countryCode: 'NG', state: 'Lagos', city: 'Ikeja' };

/** The actions over `records`, with what they logged and announced. */
function tierAdmin(
  records: TierRevisionRecord[],
  failing: { reload?: boolean; broadcast?: boolean } = {},
) {
  const warnings: string[] = [];
  const announced: string[] = [];
  const actions = createTierActions({ models: tierModels(records) } as never, {
    reload: async () => {
      if (failing.reload) throw new Error('database away');
    },
  });
  const ctx = (params: object) => ({
    params,
    service: { logger: { warn: (message: string) => warnings.push(message) } },
    broadcast: async (event: string) => {
      if (failing.broadcast) throw new Error('transporter away');
      announced.push(event);
    },
  });
  const run = (name: string, params: object) =>
    (actions[name] as { handler: (ctx: unknown) => Promise<unknown> }).handler(ctx(params));
  return { run, warnings, announced };
}

describe('a tier change once stored', () => {
  it.each([
    [{ reload: true }, /could not reread/],
    [{ broadcast: true }, /other replicas were not told/],
    [{ reload: true, broadcast: true }, /could not reread/],
  ])(
    'is answered as done when %j fails after it, and the failure is logged',
    async (failing, logged) => {
      const records = [stored(ng, NIGERIA_COUNTRY_TARIFF), stored(lagos, { includedWeightKg: 2 })];
      const admin = tierAdmin(records, failing);
      expect(await admin.run('deleteTier', { tierId: records[1]._id })).toBeNull();
      expect(records.at(-1)).toMatchObject({
        scopeKey: scopeKey(lagos),
        revision: 2,
        deleted: true,
      });
      expect(admin.warnings[0]).toMatch(logged);
      expect(admin.warnings).toHaveLength(Object.keys(failing).length);
    },
  );

  it('is announced to the other replicas', async () => {
    const records = [stored(ng, NIGERIA_COUNTRY_TARIFF), stored(lagos, { includedWeightKg: 2 })];
    const admin = tierAdmin(records);
    await admin.run('deleteTier', { tierId: records[1]._id });
    expect(admin.announced).toEqual(['pricing.tariffChanged']);
    expect(admin.warnings).toEqual([]);
  });
});

describe('removing a tier', () => {
  /** The state opens early and charges little; its city relies on both. */
  const leaning = () => [
    stored(ng, NIGERIA_COUNTRY_TARIFF),
    stored(lagos, {
      scheduled: { openingTime: '05:00' },
      serviceFee: { minimumKobo: 5_000, maximumKobo: 300_000 },
    }),
    stored(ikeja, { scheduled: { closingTime: '07:00' }, serviceFee: { maximumKobo: 6_000 } }),
  ];

  it('is refused, as a change would be, when a tier under it would no longer merge', async () => {
    const records = leaning();
    const admin = tierAdmin(records);
    const refused = await rejectionOf(() => admin.run('deleteTier', { tierId: records[1]._id }));
    expect(refused).toMatchObject({
      code: 400,
      message: 'NG/lagos/ikeja: scheduled.openingTime (08:00) must be before closingTime (07:00)',
      data: {
        errors: [
          { field: 'tierId', message: expect.stringMatching(/^NG\/lagos\/ikeja: scheduled/) },
          { field: 'tierId', message: expect.stringMatching(/^NG\/lagos\/ikeja: serviceFee/) },
        ],
      },
    });
    expect(records).toHaveLength(3);
    expect(admin.announced).toEqual([]);
  });

  it('goes through when the tiers under it hold on their own', async () => {
    const records = leaning();
    const admin = tierAdmin(records);
    expect(await admin.run('deleteTier', { tierId: records[2]._id })).toBeNull();
    expect(await admin.run('deleteTier', { tierId: records[1]._id })).toBeNull();
    expect(records.filter((r) => r.deleted).map((r) => r.scopeKey)).toEqual([
      'NG/lagos/ikeja',
      'NG/lagos',
    ]);
  });
});

describe("changes of one country's tiers at once", () => {
  it('only one lands, whichever tiers they change: each was checked without the other', async () => {
    const etiOsa = { countryCode: 'NG', state: 'Lagos', city: 'Eti Osa' };
    const records = [
      stored(ng, NIGERIA_COUNTRY_TARIFF),
      stored(lagos, { includedWeightKg: 2 }),
      stored(ikeja, { includedWeightKg: 3 }),
      stored(etiOsa, { includedWeightKg: 4 }),
    ];
    const admin = tierAdmin(records);
    const outcomes = await Promise.allSettled([
      admin.run('deleteTier', { tierId: records[2]._id }),
      admin.run('deleteTier', { tierId: records[3]._id }),
    ]);
    expect(outcomes.map((o) => o.status).sort()).toEqual(['fulfilled', 'rejected']);
    const refused = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult;
    expect(refused.reason).toMatchObject({
      code: 409,
      message: expect.stringMatching(/^The NG tariff changed while this change of NG\/lagos\//),
    });
    expect(records.filter((r) => r.deleted)).toHaveLength(1);
    // Made again against the tiers as they now are, it lands.
    const tierId = records[outcomes[0].status === 'rejected' ? 2 : 3]._id;
    expect(await admin.run('deleteTier', { tierId })).toBeNull();
    expect(records.filter((r) => r.deleted).map((r) => r.change)).toEqual([1, 2]);
  });
});
