import { nameBasedId } from '../../libs/ids';
import { isDuplicateKey } from '../../libs/mongo';
import type { PricingModels, TierRevisionRecord } from './store';
import { nigeriaTierSeeds } from './nigeria-tariff';
import { levelOf, scopeKey, type Tariff, type TariffOverride, type TierScope } from './tariff';
import { TariffBook, type TierRevision } from './tariff-book';

/** Tier revisions in the database: how a scope is stored, read back, and first seeded. */

/** The fields that place a revision: its scope, key and level. */
export function scopeFields(scope: TierScope) {
  return {
    scopeKey: scopeKey(scope),
    level: levelOf(scope),
    countryCode: scope.countryCode,
    state: scope.state ?? null,
    city: scope.city ?? null,
  };
}

/**
 * The id of the revision stored by change `change` of a country's tiers: one id per change, so
 * that of two changes made against the same book only the first to insert lands (decision 16).
 */
export function changeId(countryCode: string, change: number): string {
  return nameBasedId('pricing tier change', countryCode.toUpperCase(), String(change));
}

export function scopeOf(
  record: Pick<TierRevisionRecord, 'countryCode' | 'state' | 'city'>,
): TierScope {
  return {
    countryCode: record.countryCode,
    ...(record.state ? { state: record.state } : {}),
    ...(record.city ? { city: record.city } : {}),
  };
}

const toRevision = (record: TierRevisionRecord): TierRevision => ({
  id: record._id,
  scopeKey: record.scopeKey,
  revision: record.revision,
  level: record.level as TierRevision['level'],
  rates: record.rates as Tariff | TariffOverride,
  deleted: record.deleted,
  scope: scopeOf(record),
  label: record.label ?? null,
  change: record.change ?? null,
});

export async function readBook(models: PricingModels): Promise<TariffBook> {
  const records = await models.TierRevision.find({}).lean<TierRevisionRecord[]>();
  return new TariffBook(records.map(toRevision));
}

/** The newest revision of one scope's tier, removed or not; null when it never had one. */
export async function latestRevision(
  models: PricingModels,
  scope: TierScope,
): Promise<TierRevision | null> {
  const record = await models.TierRevision.findOne({ scopeKey: scopeKey(scope) })
    .sort({ revision: -1 })
    .lean<TierRevisionRecord>();
  return record ? toRevision(record) : null;
}

/**
 * Fills every scope of the starting tariff that has never had a tier; replicas may race. Each
 * seed's `_id` is named after its scope, so replicas starting together on a new database insert
 * it once (decision 16), whether or not the unique (scopeKey, revision) index is built yet.
 */
export async function seedTiers(models: PricingModels): Promise<void> {
  const present = new Set<string>(await models.TierRevision.distinct('scopeKey'));
  for (const seed of nigeriaTierSeeds()) {
    const key = scopeKey(seed.scope);
    if (present.has(key)) continue;
    try {
      await models.TierRevision.create({
        _id: nameBasedId('pricing tier seed', key),
        ...scopeFields(seed.scope),
        revision: 1,
        label: seed.label,
        rates: seed.rates,
        note: 'Starting tariff (services/pricing/nigeria-tariff.ts)',
      });
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
    }
  }
}
