import { TARIFF_CHANGED_EVENT } from '../../libs/contracts/pricing';
import Joi from '../../libs/joi';
import { badRequest, conflict, notFound, validationError, WaybillError } from '../../libs/errors';
import { isDuplicateKey, type ServiceDatabase } from '../../libs/mongo';
import { areaName } from '../../libs/contracts/geo';
import {
  countryCode,
  documented,
  fromUrl,
  pageParams,
  plainText,
  schemaOf,
  uuid,
  view,
} from '../../libs/schemas';
import { action, type ServiceActions, type WaybillContext } from '../../libs/service';
import { VALIDATION_OPTIONS } from '../../libs/validation';
import type { PricingModels, TierRevisionRecord } from './store';
import { announceStored } from '../../libs/announce';
import { findArea, missingPlace } from './places';
import {
  TIER_LEVELS,
  levelOf,
  scopeKey,
  type Tariff,
  type TariffOverride,
  type TierScope,
} from './tariff';
import type { TariffBook } from './tariff-book';
import { tierIdsView } from './schemas';
import {
  completeTariffSchema,
  tariffOverrideSchema,
  tariffOverrideView,
  tariffRatesView,
  tariffView,
} from './tariff-schema';
import { changeId, latestRevision, readBook, scopeFields, scopeOf } from './tier-store';

type Db = ServiceDatabase<PricingModels>;

/**
 * Tiers a page of `GET /admin/pricing/tiers` holds at most: the largest tier (a fee for each
 * fleet type there may be, the longest label and note) is some 10.5 KB, and a page is one
 * NATS reply (test/unit/pricing/list-size.test.ts).
 */
export const TIER_PAGE_MAX = 50;

/**
 * `current`: the latest revision of its place; `tierRemoved`: that latest revision is a
 * removal, so no revision of the tier prices trips now.
 */
export function toTierView(
  record: TierRevisionRecord,
  { current, tierRemoved }: { current: boolean; tierRemoved: boolean },
) {
  return {
    id: record._id,
    level: record.level,
    countryCode: record.countryCode,
    state: record.state ?? null,
    city: record.city ?? null,
    label: record.label ?? null,
    revision: record.revision,
    current,
    deleted: record.deleted,
    tierRemoved,
    rates: record.rates,
    note: record.note ?? null,
    createdAt: record.createdAt.toISOString(),
  };
}

const tierView = view('PricingTier', {
  id: uuid(),
  level: Joi.string().valid(...TIER_LEVELS),
  countryCode: Joi.string(),
  state: Joi.string().allow(null),
  city: Joi.string().allow(null).description('An LGA in Nigeria: the `lgaOrCity` of addresses'),
  label: Joi.string().allow(null),
  revision: Joi.number().integer(),
  current: Joi.boolean(),
  deleted: Joi.boolean().description('This revision removed the tier'),
  tierRemoved: Joi.boolean().description(
    'The tier is removed now (its current revision is a removal): this revision, still what priced the quotes that name it, prices nothing more',
  ),
  rates: tariffRatesView.required(),
  note: Joi.string().allow(null),
  createdAt: Joi.string().isoDate(),
});

const scopeParams = {
  countryCode: countryCode().required(),
  state: areaName(),
  city: areaName().description('LGA or city, as addresses carry it in `lgaOrCity`; needs `state`'),
};

/**
 * The scope with the names spelled as resolved addresses spell them (geo checks they exist).
 * A place that does not exist is a 404: the place is what the request addresses, a tier.
 */
async function canonicalScope(ctx: WaybillContext<unknown>, scope: TierScope): Promise<TierScope> {
  const area = await findArea(ctx, { ...scope, lgaOrCity: scope.city }).catch((err: unknown) => {
    const missing = missingPlace(err);
    if (!missing) throw err;
    const field = missing.part === 'lgaOrCity' ? 'city' : missing.part;
    throw new WaybillError('NOT_FOUND', missing.message, {
      errors: [{ field, message: missing.message }],
    });
  });
  return {
    countryCode: area.countryCode,
    ...(area.state ? { state: area.state } : {}),
    ...(area.lgaOrCity ? { city: area.lgaOrCity } : {}),
  };
}

function validateRates(scope: TierScope, rates: unknown): Tariff | TariffOverride {
  const schema = levelOf(scope) === 'country' ? completeTariffSchema : tariffOverrideSchema;
  const { value, error } = schema.validate(rates, VALIDATION_OPTIONS);
  if (error) {
    const errors = error.details.map((d) => ({
      field: ['rates', ...d.path].join('.'),
      message: d.message,
    }));
    throw validationError(errors, errors[0].message);
  }
  return value as Tariff | TariffOverride;
}

/**
 * Each scope the change reaches (itself and every narrower tier under it) must still merge
 * into a consistent tariff; `book` is the tiers as they would be after it. The problems are
 * the request's `field`: the rates sent, or the tier removed.
 */
function checkConsistency(book: TariffBook, scope: TierScope, field: 'rates' | 'tierId') {
  const problems = book.problemsUnder(scope);
  if (problems.length > 0) {
    throw badRequest(
      problems[0],
      problems.map((message) => ({ field, message })),
    );
  }
}

export function createTierActions(db: Db, hooks: { reload: () => Promise<void> }): ServiceActions {
  const models = () => db.models;

  /**
   * Stores a revision made against `book`, as the country's next change, once the tiers as it
   * leaves them hold (a 400 naming `field` otherwise): it lands only if no other change of the
   * country's tiers landed since `book` was read, so the consistency checked against `book` is
   * the consistency stored.
   */
  async function insertRevision(
    ctx: WaybillContext<unknown>,
    book: TariffBook,
    scope: TierScope,
    field: 'rates' | 'tierId',
    fields: {
      revision: number;
      rates: Tariff | TariffOverride;
      deleted: boolean;
      label: string | null;
      note: string | null;
    },
  ) {
    const proposed = {
      ...fields,
      id: 'proposed',
      scopeKey: scopeKey(scope),
      level: levelOf(scope),
      scope,
    };
    checkConsistency(book.with(proposed), scope, field);
    const change = book.lastChange(scope.countryCode) + 1;
    let created: TierRevisionRecord;
    try {
      created = (
        await models().TierRevision.create({
          _id: changeId(scope.countryCode, change),
          ...scopeFields(scope),
          ...fields,
          change,
        })
      ).toObject() as TierRevisionRecord;
    } catch (err) {
      if (isDuplicateKey(err)) {
        throw conflict(
          `The ${scope.countryCode} tariff changed while this change of ${scopeKey(scope)} was made; read it again and retry`,
        );
      }
      throw err;
    }
    await announceStored(ctx, TARIFF_CHANGED_EVENT, {}, hooks.reload);
    return created;
  }

  return {
    listTiers: action({
      retry: 'safe',
      http: {
        group: 'admin',
        method: 'GET',
        path: '/pricing/tiers',
        message: 'Pricing tiers retrieved',
        summary: 'The current pricing tiers (country, state, city)',
        description: `By place (country, then its states and cities), \`limit\` (at most ${TIER_PAGE_MAX}) and \`offset\` at a time.`,
        response: Joi.array().items(tierView).max(TIER_PAGE_MAX),
      },
      params: Joi.object({
        countryCode: countryCode(),
        level: Joi.string().valid(...TIER_LEVELS),
        includeDeleted: fromUrl(Joi.boolean().default(false)),
        ...pageParams(),
        limit: pageParams().limit.max(TIER_PAGE_MAX).default(TIER_PAGE_MAX),
      }),
      async handler(ctx) {
        const { countryCode, level, includeDeleted, limit, offset } = ctx.params;
        const records = await models()
          .TierRevision.find({
            ...(countryCode ? { countryCode } : {}),
            ...(level ? { level } : {}),
          })
          .sort({ scopeKey: 1, revision: -1 })
          .lean<TierRevisionRecord[]>();
        const seen = new Set<string>();
        return records
          .filter((r) => !seen.has(r.scopeKey) && seen.add(r.scopeKey))
          .filter((r) => includeDeleted || !r.deleted)
          .slice(offset, offset + limit)
          .map((r) => toTierView(r, { current: true, tierRemoved: r.deleted }));
      },
    }),

    getTier: action({
      retry: 'safe',
      http: {
        group: 'admin',
        method: 'GET',
        path: '/pricing/tiers/:tierId',
        message: 'Pricing tier retrieved',
        summary: 'One tier revision, current or past: the rates a quote with this id used',
        description:
          'Every revision stays readable, a removed tier’s too (`tierRemoved`), so that the `tierIds` of any quote or delivery can be explained; `GET /admin/pricing/tiers?includeDeleted=true` lists the removals.',
        response: tierView,
      },
      params: Joi.object({ tierId: uuid().required() }),
      async handler(ctx) {
        const record = await models()
          .TierRevision.findById(ctx.params.tierId)
          .lean<TierRevisionRecord>();
        if (!record) throw notFound('Pricing tier not found');
        const latest = await latestRevision(models(), scopeOf(record));
        return toTierView(record, {
          current: latest?.id === record._id,
          tierRemoved: latest?.deleted ?? false,
        });
      },
    }),

    effectiveTariff: action({
      retry: 'safe',
      http: {
        group: 'admin',
        method: 'GET',
        path: '/pricing/tariff',
        message: 'Tariff retrieved',
        summary: 'The merged tariff that prices trips starting in a place',
        description: 'Country, state and city tiers merged field by field, with the tiers used.',
        response: view('EffectiveTariff', {
          tariff: tariffView,
          tierIds: tierIdsView,
          tariffVersion: Joi.string(),
        }),
        errors: { 404: 'No such country, state or LGA, or no tariff covers it' },
      },
      params: Joi.object(scopeParams).with('city', 'state'),
      async handler(ctx) {
        const scope = await canonicalScope(ctx, ctx.params);
        const choice = (await readBook(models())).choose({
          countryCode: scope.countryCode,
          state: scope.state,
          lgaOrCity: scope.city,
        });
        if (!choice) throw notFound(`No tariff covers ${scope.countryCode}`);
        return choice;
      },
    }),

    putTier: action({
      // Each put appends a revision.
      retry: 'never',
      http: {
        group: 'admin',
        method: 'PUT',
        path: '/pricing/tiers',
        status: 201,
        message: 'Pricing tier saved',
        creates: 'tierId',
        summary: 'Set the rates of a country, state or city tier (a new revision)',
        description:
          'A country tier needs every rate; a state or city tier only the rates it overrides, and replaces its previous overrides as a whole. Money is integer kobo (`...Kobo`), shares are decimals ("0.05"). Send `expectedRevision` to refuse the change if someone else changed the tier first.',
        response: tierView,
        errors: {
          404: 'No such country, state or LGA',
          409: 'The tier, or another tier of its country, changed meanwhile',
        },
      },
      // `rates` is checked by validateRates, after the place is known.
      params: documented(
        Joi.object({
          ...scopeParams,
          label: plainText(100).allow(null),
          note: plainText(500).allow(null),
          expectedRevision: Joi.number().integer().min(0),
          rates: Joi.object().required(),
        })
          .with('city', 'state')
          .example({
            countryCode: 'NG',
            state: 'Lagos',
            label: 'Lagos',
            rates: { priority: { rate: '0.3', minimumKobo: 100000 } },
          }),
        {
          if: { required: ['state'] },
          then: { properties: { rates: schemaOf(tariffOverrideView) } },
          else: { properties: { rates: schemaOf(tariffView) } },
        },
      ),
      async handler(ctx) {
        const { expectedRevision, label, note, rates, ...requested } = ctx.params;
        const scope = await canonicalScope(ctx, requested);
        const checked = validateRates(scope, rates);
        const book = await readBook(models());
        const latest = book.latest(scope);
        const currentRevision = latest?.revision ?? 0;
        if (expectedRevision !== undefined && expectedRevision !== currentRevision) {
          throw conflict(
            `The ${scopeKey(scope)} tier is at revision ${currentRevision}, not ${expectedRevision}; read it again`,
          );
        }
        if (levelOf(scope) !== 'country' && !book.choose({ countryCode: scope.countryCode })) {
          throw badRequest(`${scope.countryCode} has no country tier yet; set that first`);
        }
        const created = await insertRevision(ctx, book, scope, 'rates', {
          revision: currentRevision + 1,
          rates: checked,
          deleted: false,
          // Kept unless sent: `null` clears it.
          label: 'label' in ctx.params ? (label ?? null) : (latest?.label ?? null),
          note: note ?? null,
        });
        return toTierView(created, { current: true, tierRemoved: false });
      },
    }),

    deleteTier: action({
      retry: 'never',
      http: {
        group: 'admin',
        method: 'DELETE',
        path: '/pricing/tiers/:tierId',
        status: 204,
        message: 'Pricing tier removed',
        summary: 'Remove a state or city tier; its places fall back to the wider tiers',
        errors: {
          400: 'A country tier, or the tiers under it would no longer merge into a consistent tariff',
          409: 'Not the current revision of its tier, or another tier of its country changed meanwhile',
        },
      },
      params: Joi.object({ tierId: uuid().required() }),
      async handler(ctx) {
        const record = await models()
          .TierRevision.findById(ctx.params.tierId)
          .lean<TierRevisionRecord>();
        if (!record || record.deleted) throw notFound('Pricing tier not found');
        const scope = scopeOf(record);
        if (levelOf(scope) === 'country') {
          throw badRequest('A country tier cannot be removed; change its rates instead');
        }
        const book = await readBook(models());
        const latest = book.latest(scope);
        if (latest?.id !== record._id) {
          throw conflict(
            `Tier ${record._id} is revision ${record.revision}; the current revision is ${latest?.revision} (${latest?.id})`,
          );
        }
        // Its places fall back to the wider tiers, under which the narrower ones must still hold.
        await insertRevision(ctx, book, scope, 'tierId', {
          revision: record.revision + 1,
          rates: {},
          deleted: true,
          label: record.label ?? null,
          note: 'Removed',
        });
        return null;
      },
    }),
  };
}
