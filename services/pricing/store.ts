import { randomUUID } from 'node:crypto';
import { Schema, type Connection, type InferSchemaType } from 'mongoose';

/**
 * Tier revisions are never changed, only added: a change to a tier inserts revision n + 1
 * with a new id. So `tierIds` of a quote name exactly the rates it used, for ever, and the
 * unique (scopeKey, revision) index makes two concurrent edits of one tier fail one of them
 * instead of both landing (FerretDB does not make a read-then-update atomic). The `_id`, named
 * after the country's change number, does the same for edits of two tiers of one country
 * (decision 113).
 */
const tierRevisionSchema = new Schema(
  {
    _id: { type: String, default: () => randomUUID() },
    scopeKey: { type: String, required: true },
    revision: { type: Number, required: true },
    level: { type: String, required: true, enum: ['country', 'state', 'city'] },
    countryCode: { type: String, required: true },
    state: { type: String, default: null },
    city: { type: String, default: null },
    /** Human name, e.g. the city an LGA belongs to ("Ibadan" for "Ibadan North"). */
    label: { type: String, default: null },
    /** A complete Tariff for a country, an override for a state or city (tariff.ts). */
    rates: { type: Schema.Types.Mixed, required: true },
    /** A removed state or city tier: the scope falls back to the wider tiers. */
    deleted: { type: Boolean, required: true, default: false },
    note: { type: String, default: null },
    /**
     * The number of the change of the country's tiers that stored it; the `_id` is named after
     * it (tier-store `changeId`), so two changes of one country at once cannot both land.
     * Null on the starting tariff and on revisions stored before changes were numbered.
     */
    change: { type: Number, default: null },
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false, minimize: false },
);
tierRevisionSchema.index({ scopeKey: 1, revision: 1 }, { unique: true });

const areaSchema = new Schema(
  { state: { type: String, required: true }, lgaOrCity: { type: String, default: null } },
  { _id: false },
);

/** What a courier rule prices: its revisions carry the same fields. */
const courierRuleFields = {
  courierId: { type: String, required: true },
  capBy: { type: String, required: true, enum: ['LOCATION'] },
  countryCode: { type: String, required: true },
  from: { type: areaSchema, required: true },
  to: { type: areaSchema, required: true },
  withinKmRadius: { type: Number, default: null },
  isPerKg: { type: Boolean, required: true },
  amountKobo: { type: Number, required: true },
  priority: { type: Number, required: true },
} as const;

/**
 * A courier rule as created: its revision 1, never written again (decision 123). Its `_id` is
 * the rule's id; its changes are revisions (below).
 */
const courierRuleSchema = new Schema(
  { _id: { type: String, default: () => randomUUID() }, ...courierRuleFields },
  { timestamps: true, versionKey: false },
);
courierRuleSchema.index({ courierId: 1 });

/**
 * A change of a courier rule: the whole rule after it (a deletion: `deleted`). Revision n's
 * `_id` is named after (rule, n) (courier-rule-store `ruleRevisionId`), so of two changes made
 * on the same revision only the first to insert lands (decisions 16, 123).
 */
const courierRuleRevisionSchema = new Schema(
  {
    _id: { type: String, required: true },
    ruleId: { type: String, required: true },
    revision: { type: Number, required: true },
    ...courierRuleFields,
    deleted: { type: Boolean, required: true, default: false },
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false },
);
courierRuleRevisionSchema.index({ ruleId: 1, revision: 1 }, { unique: true });
courierRuleRevisionSchema.index({ courierId: 1 });

export type TierRevisionRecord = InferSchemaType<typeof tierRevisionSchema> & {
  createdAt: Date;
};
export type CourierRuleRecord = InferSchemaType<typeof courierRuleSchema> & {
  createdAt: Date;
  updatedAt: Date;
};
export type CourierRuleRevisionRecord = InferSchemaType<typeof courierRuleRevisionSchema> & {
  createdAt: Date;
};

export function definePricingModels(connection: Connection) {
  return {
    TierRevision: connection.model('TierRevision', tierRevisionSchema, 'pricing_tiers'),
    CourierRule: connection.model('CourierRule', courierRuleSchema, 'courier_pricing_rules'),
    CourierRuleRevision: connection.model(
      'CourierRuleRevision',
      courierRuleRevisionSchema,
      'courier_pricing_rule_revisions',
    ),
  };
}

export type PricingModels = ReturnType<typeof definePricingModels>;
