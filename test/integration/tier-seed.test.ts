import { nigeriaTierSeeds } from '../../services/pricing/nigeria-tariff';
import { definePricingModels } from '../../services/pricing/store';
import { seedTiers } from '../../services/pricing/tier-store';
import { useStoreDatabase } from '../support/store-database';

const db = useStoreDatabase('tier_seed', definePricingModels);

describe('the starting tariff', () => {
  it('is seeded once by replicas starting together, even before the unique index exists', async () => {
    const { TierRevision } = db.models;
    // A new database whose (scopeKey, revision) index is not built yet.
    await TierRevision.collection.dropIndex('scopeKey_1_revision_1');
    await Promise.all([seedTiers(db.models), seedTiers(db.models), seedTiers(db.models)]);
    const stored = await TierRevision.find({}).lean();
    const seeds = nigeriaTierSeeds();
    expect(stored).toHaveLength(seeds.length);
    expect(new Set(stored.map((r) => r.scopeKey)).size).toBe(seeds.length);
    expect(stored.every((r) => r.revision === 1)).toBe(true);
    // Seeding again writes nothing.
    await seedTiers(db.models);
    expect(await TierRevision.countDocuments({})).toBe(seeds.length);
  });
});
