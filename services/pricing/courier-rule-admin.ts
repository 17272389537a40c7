import { call } from '../../libs/contracts';
import Joi, { characterCount } from '../../libs/joi';
import { badRequest, conflict, notFound, type FieldError } from '../../libs/errors';
import type { ServiceDatabase } from '../../libs/mongo';
import { Turns } from '../../libs/turns';
import {
  BLANK,
  CONTROL_CHARACTERS,
  NOT_PLAIN_TEXT,
  TRIMMED_CHARACTERS,
  countryCode,
  documented,
  pageParams,
  uuid,
  view,
} from '../../libs/schemas';
import { action, type ServiceActions, type WaybillContext } from '../../libs/service';
import { ambiguousWith, formatArea, parseArea, type Area, type CourierRule } from './courier-rules';
import {
  createRule,
  listRules,
  loadCourierRules,
  readRule,
  storeRevision,
  type StoredRule,
} from './courier-rule-store';
import type { PricingModels } from './store';
import { AREA_NAME_MAX } from '../../libs/contracts/geo';
import { UNSHOWN } from '../../libs/text';
import { COURIER_RULES_CHANGED_EVENT } from '../../libs/contracts/pricing';
import { announceStored } from '../../libs/announce';
import { findArea, missingPlace } from './places';

type Db = ServiceDatabase<PricingModels>;

/**
 * How often a change of a rule is made again on the rule as another change left it before it
 * gives up with a 409. Each time it lost, another change landed, so giving up takes that many
 * changes of one rule landing within one change's few round trips.
 */
const REVISION_ATTEMPTS = 5;

function toAdminView({ rule, updatedAt }: StoredRule) {
  return {
    id: rule.id,
    courierId: rule.courierId,
    capBy: rule.capBy,
    countryCode: rule.countryCode,
    from: formatArea(rule.from),
    to: formatArea(rule.to),
    withinKmRadius: rule.withinKmRadius,
    isPerKg: rule.isPerKg,
    amountKobo: rule.amountKobo,
    priority: rule.priority,
    createdAt: rule.createdAt.toISOString(),
    updatedAt: updatedAt.toISOString(),
  };
}

const ruleView = view('CourierPricingRule', {
  id: uuid(),
  courierId: uuid(),
  capBy: Joi.string().valid('LOCATION'),
  countryCode: Joi.string(),
  from: Joi.string().description('A state ("Lagos") or an LGA of one ("Ikeja, Lagos")'),
  to: Joi.string(),
  withinKmRadius: Joi.number().allow(null),
  isPerKg: Joi.boolean(),
  amountKobo: Joi.number().integer(),
  priority: Joi.number().integer(),
  createdAt: Joi.string().isoDate(),
  updatedAt: Joi.string().isoDate(),
});

const kept = `[^,${TRIMMED_CHARACTERS}${CONTROL_CHARACTERS}]`;
/** One name of an area: up to AREA_NAME_MAX characters of plain text once trimmed, no comma. */
const areaName = `${BLANK}*${kept}(?:[^,${CONTROL_CHARACTERS}]{0,${AREA_NAME_MAX - 2}}${kept})?${BLANK}*`;

/** "Lagos" or "Ikeja, Lagos", read into an area; the pattern is what is accepted. */
const areaText = () =>
  documented(Joi.string().trim().max(200), { pattern: `^${areaName}(?:,${areaName})?$` })
    .custom((text: string, helpers) => {
      const area = parseArea(text);
      if (!area) return helpers.error('any.invalid');
      const names = [area.state, area.lgaOrCity].filter((n) => n !== undefined);
      // Plain text, as geo.findArea takes names: its refusal would name fields the rule has not.
      if (names.some((n) => n.search(UNSHOWN) >= 0)) return helpers.error('string.plainText');
      const long = names.some((n) => characterCount(n) > AREA_NAME_MAX);
      return long ? helpers.error('string.areaName') : area;
    })
    .messages({
      'any.invalid': '{{#label}} must be a state ("Lagos") or "LGA, state" ("Ikeja, Lagos")',
      'string.areaName': `{{#label}}: a state or LGA name has at most ${AREA_NAME_MAX} characters`,
      'string.plainText': NOT_PLAIN_TEXT,
    });

const ruleFields = {
  countryCode: countryCode(),
  from: areaText(),
  to: areaText(),
  withinKmRadius: Joi.number().positive().max(20_000).allow(null),
  isPerKg: Joi.boolean(),
  amountKobo: Joi.number().integer().min(0).max(1e12).description('Per kg when isPerKg'),
  priority: Joi.number()
    .integer()
    .min(0)
    .max(1000)
    .description('Lower first; overlapping rules of a courier need different priorities'),
};

export function createCourierRuleActions(
  db: Db,
  hooks: { reload: () => Promise<unknown> },
): ServiceActions {
  const models = () => db.models;
  const announce = (ctx: WaybillContext<unknown>) =>
    announceStored(ctx, COURIER_RULES_CHANGED_EVENT, {}, hooks.reload);
  /**
   * A rule's changes and its deletion take turns in this replica, so that they do not race for
   * one revision here; replicas race, and the revision's insert decides (decision 123).
   */
  const edits = new Turns();

  /**
   * Stores what `change` makes of the rule as it stands as its next revision (a deletion when
   * `deleted`). A change that loses the revision to another is made again on the rule as the
   * other left it, checks and all, so that both land.
   */
  function revise(
    ctx: WaybillContext<unknown>,
    ruleId: string,
    change: (current: CourierRule) => Promise<CourierRule>,
    deleted = false,
  ): Promise<StoredRule> {
    return edits.run(ruleId, async () => {
      for (let attempt = 1; ; attempt++) {
        const current = await readRule(models(), ruleId);
        if (!current || current.deleted) throw notFound('Courier pricing rule not found');
        const stored = await storeRevision(models(), current, await change(current.rule), deleted);
        if (stored) {
          await announce(ctx);
          return stored;
        }
        if (attempt === REVISION_ATTEMPTS) {
          throw conflict(
            `Courier pricing rule ${ruleId} kept changing while this change was made; read it again and retry`,
          );
        }
      }
    });
  }

  /**
   * A rule's `from` and `to` spelled as addresses spell them. A place that is not in the
   * rule's country is a 400 naming the field (both at once), not a 404: the request addresses
   * the rule, which exists (a 404 on a rule's route means the rule does not); its places are
   * values the body sets. Each comes with whether the body named it or the rule kept its own
   * (a change of `countryCode` alone), which the message then says.
   */
  async function canonicalPlaces(
    ctx: WaybillContext<unknown>,
    countryCode: string,
    places: Record<'from' | 'to', [Area, boolean]>,
  ): Promise<Record<'from' | 'to', Area>> {
    const fields = ['from', 'to'] as const;
    const found = await Promise.allSettled(
      fields.map((field) => findArea(ctx, { countryCode, ...places[field][0] })),
    );
    const errors: FieldError[] = [];
    const areas = fields.map((field, i) => {
      const outcome = found[i];
      if (outcome.status === 'fulfilled') {
        const area = places[field][0];
        return {
          state: outcome.value.state ?? area.state,
          ...(outcome.value.lgaOrCity ? { lgaOrCity: outcome.value.lgaOrCity } : {}),
        };
      }
      const missing = missingPlace(outcome.reason);
      if (!missing) throw outcome.reason;
      const named = missing.part === 'countryCode' ? 'countryCode' : field;
      const kept = !places[field][1] && named !== 'countryCode';
      const message = kept
        ? `${missing.message}: the rule's ${field} is not in that country; send from and to of it with countryCode`
        : missing.message;
      // An unknown country is one problem, however many places name it.
      if (!errors.some((e) => e.field === named)) errors.push({ field: named, message });
      return places[field][0];
    });
    if (errors.length > 0) throw badRequest(errors[0].message, errors);
    return { from: areas[0], to: areas[1] };
  }

  /**
   * A rule is for a courier of the directory: one for an id nobody has (a user's, a typo)
   * would be stored and never price anything. Retired couriers keep theirs (they may return).
   */
  async function refuseUnknownCourier(ctx: WaybillContext<unknown>, courierId: string) {
    if (await call(ctx, 'courier-matching.getCourier', { courierId })) return;
    throw badRequest(
      `No courier has id ${courierId}; add the courier first (POST /admin/couriers) and use the id it answers`,
      [{ field: 'courierId', message: 'no courier has this id' }],
    );
  }

  async function refuseAmbiguity(rule: CourierRule) {
    const [clash] = ambiguousWith(rule, await loadCourierRules(models(), rule.courierId));
    if (clash) {
      throw conflict(
        `Courier ${rule.courierId} has rule ${clash.id} (${formatArea(clash.from)} → ${formatArea(clash.to)}) with priority ${clash.priority} covering the same trips; give one of them another priority`,
      );
    }
  }

  return {
    listCourierRules: action({
      retry: 'safe',
      http: {
        group: 'admin',
        method: 'GET',
        path: '/pricing/courier-rules',
        message: 'Courier pricing rules retrieved',
        summary: 'Courier pricing rules, of one courier or all, a page at a time',
        description:
          'Ordered by courier, priority and age; page with `offset` (the next page starts at `offset + limit`).',
        response: Joi.array().items(ruleView),
      },
      params: Joi.object({
        courierId: uuid(),
        ...pageParams(),
      }),
      async handler(ctx) {
        const { courierId, limit, offset } = ctx.params;
        const rules = await listRules(models(), courierId);
        return rules.slice(offset, offset + limit).map(toAdminView);
      },
    }),

    createCourierRule: action({
      retry: 'never',
      http: {
        group: 'admin',
        method: 'POST',
        path: '/pricing/courier-rules',
        status: 201,
        message: 'Courier pricing rule created',
        creates: 'ruleId',
        summary: "Add a courier's own price for trips between two areas",
        description:
          'When a delivery names this courier (`courierSelection: SPECIFIC`) and the trip goes from `from` to `to` (within `withinKmRadius` km when set), `amountKobo` (per kg when `isPerKg`) replaces the base fee, and weight, fleet and urgency fees are zero. Among matching rules the lowest `priority` wins.',
        response: ruleView,
        errors: {
          400: 'Invalid input, no courier has `courierId`, or `from` or `to` is not a place of `countryCode` (`errors` names the field)',
          409: 'Overlaps a rule with the same priority',
        },
      },
      params: Joi.object({
        courierId: uuid().required(),
        capBy: Joi.string().valid('LOCATION').default('LOCATION'),
        ...ruleFields,
        countryCode: ruleFields.countryCode.default('NG'),
        from: ruleFields.from.required(),
        to: ruleFields.to.required(),
        withinKmRadius: ruleFields.withinKmRadius.default(null),
        isPerKg: ruleFields.isPerKg.default(false),
        amountKobo: ruleFields.amountKobo.required(),
        priority: ruleFields.priority.default(0),
      }).example({
        courierId: '3f1c2a8e-9b7d-4c6e-8f0a-1b2c3d4e5f60',
        from: 'Lagos',
        to: 'Ikeja, Lagos',
        amountKobo: 120000,
      }),
      async handler(ctx) {
        const { from, to, ...fields } = ctx.params;
        await refuseUnknownCourier(ctx, fields.courierId);
        const rule = {
          ...fields,
          ...(await canonicalPlaces(ctx, fields.countryCode, {
            from: [from, true],
            to: [to, true],
          })),
        };
        await refuseAmbiguity({ ...rule, id: 'new', capBy: 'LOCATION', createdAt: new Date() });
        const created = await createRule(models(), { ...rule, capBy: 'LOCATION' });
        await announce(ctx);
        return toAdminView(created);
      },
    }),

    updateCourierRule: action({
      retry: 'never',
      http: {
        group: 'admin',
        method: 'PATCH',
        path: '/pricing/courier-rules/:ruleId',
        message: 'Courier pricing rule updated',
        summary: 'Change a courier pricing rule',
        description:
          'Only the fields sent change. The rule as changed must hold: its `from` and `to` must be places of its `countryCode`, so a new country needs places of it too.',
        response: ruleView,
        errors: {
          400: 'Invalid input, or the changed rule’s `from` or `to` is not a place of its `countryCode` (`errors` names the field)',
          404: 'No such courier pricing rule',
          409: 'Overlaps a rule with the same priority, or the rule kept changing while this change was made',
        },
      },
      params: Joi.object({ ruleId: uuid().required(), ...ruleFields }).or(
        ...Object.keys(ruleFields),
      ),
      async handler(ctx) {
        const { ruleId, from, to, ...fields } = ctx.params;
        const changed = await revise(ctx, ruleId, async (current) => {
          const countryCode = fields.countryCode ?? current.countryCode;
          const rule: CourierRule = {
            ...current,
            ...fields,
            countryCode,
            // Checked again even when unchanged: the country may have changed under them.
            ...(await canonicalPlaces(ctx, countryCode, {
              from: [from ?? current.from, from !== undefined],
              to: [to ?? current.to, to !== undefined],
            })),
          };
          await refuseAmbiguity(rule);
          return rule;
        });
        return toAdminView(changed);
      },
    }),

    deleteCourierRule: action({
      retry: 'never',
      http: {
        group: 'admin',
        method: 'DELETE',
        path: '/pricing/courier-rules/:ruleId',
        status: 204,
        message: 'Courier pricing rule deleted',
        summary: 'Delete a courier pricing rule',
        errors: {
          404: 'No such courier pricing rule',
          409: 'The rule kept changing while it was deleted',
        },
      },
      params: Joi.object({ ruleId: uuid().required() }),
      async handler(ctx) {
        await revise(ctx, ctx.params.ruleId, async (current) => current, true);
        return null;
      },
    }),
  };
}
