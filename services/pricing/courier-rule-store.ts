import { nameBasedId } from '../../libs/ids';
import { isDuplicateKey } from '../../libs/mongo';
import { CourierRuleBook, type Area, type CourierRule } from './courier-rules';
import type { CourierRuleRecord, CourierRuleRevisionRecord, PricingModels } from './store';

/**
 * Courier rules in the database (decision 123): a rule's document is its revision 1, as
 * created; each change stores the whole rule again as revision n + 1, a deletion too. What
 * stands is a rule's latest revision.
 */

/** A rule as it stands: its latest revision. */
export interface StoredRule {
  rule: CourierRule;
  revision: number;
  deleted: boolean;
  /** When that revision was stored. */
  updatedAt: Date;
}

/**
 * The id of a rule's revision `revision`: one id per (rule, revision), so that of two changes
 * made on the same revision only the first to insert lands (decision 16).
 */
export function ruleRevisionId(ruleId: string, revision: number): string {
  return nameBasedId('courier pricing rule revision', ruleId, String(revision));
}

type RuleFields = Omit<CourierRuleRecord, '_id' | 'createdAt' | 'updatedAt'>;

function toRule(id: string, fields: RuleFields, createdAt: Date): CourierRule {
  const area = (a: { state: string; lgaOrCity?: string | null }): Area => ({
    state: a.state,
    ...(a.lgaOrCity ? { lgaOrCity: a.lgaOrCity } : {}),
  });
  return {
    id,
    courierId: fields.courierId,
    capBy: 'LOCATION',
    countryCode: fields.countryCode,
    from: area(fields.from),
    to: area(fields.to),
    withinKmRadius: fields.withinKmRadius ?? null,
    isPerKg: fields.isPerKg,
    amountKobo: fields.amountKobo,
    priority: fields.priority,
    createdAt,
  };
}

/**
 * Each rule as its latest revision leaves it, deleted ones too. A revision whose rule is not
 * there (deleted by a version before revisions) is nobody's.
 */
function latest(
  records: readonly CourierRuleRecord[],
  revisions: readonly CourierRuleRevisionRecord[],
): StoredRule[] {
  const rules = new Map<string, StoredRule>(
    records.map((r) => [
      r._id,
      { rule: toRule(r._id, r, r.createdAt), revision: 1, deleted: false, updatedAt: r.updatedAt },
    ]),
  );
  for (const r of revisions) {
    const held = rules.get(r.ruleId);
    if (!held || held.revision > r.revision) continue;
    rules.set(r.ruleId, {
      rule: toRule(r.ruleId, r, held.rule.createdAt),
      revision: r.revision,
      deleted: r.deleted,
      updatedAt: r.createdAt,
    });
  }
  return [...rules.values()];
}

async function standing(models: PricingModels, filter: { courierId?: string }) {
  const [records, revisions] = await Promise.all([
    models.CourierRule.find(filter).lean<CourierRuleRecord[]>(),
    models.CourierRuleRevision.find(filter).lean<CourierRuleRevisionRecord[]>(),
  ]);
  return latest(records, revisions).filter((r) => !r.deleted);
}

/** One rule as it stands, deleted or not; null when it never existed. */
export async function readRule(models: PricingModels, ruleId: string): Promise<StoredRule | null> {
  const [record, revisions] = await Promise.all([
    models.CourierRule.findById(ruleId).lean<CourierRuleRecord>(),
    models.CourierRuleRevision.find({ ruleId }).lean<CourierRuleRevisionRecord[]>(),
  ]);
  return record ? (latest([record], revisions)[0] ?? null) : null;
}

/**
 * The rules standing, of one courier or all, by courier, priority and age: an operators' list.
 * (The order depends on the latest revisions, so it is made here rather than by the query.)
 */
export async function listRules(models: PricingModels, courierId?: string): Promise<StoredRule[]> {
  const rules = await standing(models, courierId ? { courierId } : {});
  return rules.sort(
    (a, b) =>
      a.rule.courierId.localeCompare(b.rule.courierId) ||
      a.rule.priority - b.rule.priority ||
      a.rule.createdAt.getTime() - b.rule.createdAt.getTime() ||
      a.rule.id.localeCompare(b.rule.id),
  );
}

/**
 * One courier's rules, from the database: for operators' changes, which check a rule against
 * the others as stored. Quotes read them from memory (`readCourierRuleBook`).
 */
export async function loadCourierRules(
  models: PricingModels,
  courierId: string,
): Promise<CourierRule[]> {
  return (await standing(models, { courierId })).map((r) => r.rule);
}

/** Every courier's rules, read whole: what each replica keeps for quotes (decision 114). */
export async function readCourierRuleBook(models: PricingModels): Promise<CourierRuleBook> {
  return new CourierRuleBook((await standing(models, {})).map((r) => r.rule));
}

/** Stores a new rule: its revision 1. */
export async function createRule(
  models: PricingModels,
  fields: Omit<CourierRule, 'id' | 'createdAt'>,
): Promise<StoredRule> {
  const created = (await models.CourierRule.create(fields)).toObject() as CourierRuleRecord;
  return latest([created], [])[0];
}

/**
 * Stores `rule` (deleted or not) as the revision after `on`; null when another change took
 * that revision first, to be made again on the rule as it now stands.
 */
export async function storeRevision(
  models: PricingModels,
  on: StoredRule,
  rule: CourierRule,
  deleted: boolean,
): Promise<StoredRule | null> {
  const revision = on.revision + 1;
  const { id, createdAt, ...fields } = rule;
  try {
    const stored = (
      await models.CourierRuleRevision.create({
        _id: ruleRevisionId(id, revision),
        ruleId: id,
        revision,
        ...fields,
        from: { lgaOrCity: null, ...fields.from },
        to: { lgaOrCity: null, ...fields.to },
        deleted,
      })
    ).toObject() as CourierRuleRevisionRecord;
    return { rule: toRule(id, stored, createdAt), revision, deleted, updatedAt: stored.createdAt };
  } catch (err) {
    if (isDuplicateKey(err)) return null;
    throw err;
  }
}
