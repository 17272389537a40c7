import Joi from 'joi';
import { CachedValue } from '../../libs/cache';
import type { Config } from '../../libs/config';
import { badRequest, notFound } from '../../libs/errors';
import { formatKg, formatNaira, kgToGrams, nairaToKobo } from '../../libs/money';
import { ServiceDatabase } from '../../libs/mongo';
import { action, type ServiceDefinition, type WaybillContext } from '../../libs/service';
import { FLEET_TYPES_CHANGED_EVENT } from '../geo/geo.service';
import { matchRule, toRuleView } from './courier-rules';
import { createCourierRuleActions, loadCourierRules } from './courier-rule-admin';
import { deliveryFeeBlock, isMatchingEligible, payOnDeliveryBlock } from './fee-blocks';
import { computeFees, toBreakdown, toCosts } from './fees';
import { chooseFleet, type FleetOption } from './fleet-choice';
import { definePricingModels } from './models';
import {
  quoteRequestSchema,
  readQuoteRequest,
  type QuoteRequest,
  type QuoteRequestParams,
} from './quote-request';
import { modeAResponse, modeBResponse } from './quote-views';
import { scheduleProblem } from './schedule';
import type { RouteType } from './tariff';
import { TariffBook } from './tariff-book';
import { createTierActions, TARIFF_CHANGED_EVENT } from './tier-admin';
import { readBook, seedTiers } from './tier-store';

/** Fleet types change rarely and geo announces changes; this bounds a missed announcement. */
const FLEET_CACHE_MS = 30_000;
/** A lost `pricing.tariffChanged` is repaired within this time. */
const BOOK_REFRESH_MS = 60_000;

/** The part of a resolved address that pricing reads. */
interface RoutedPlace {
  country: string;
  countryCode?: string;
  state?: string;
  lgaOrCity?: string;
}

/** What `geo.route` answers. */
interface Route {
  distance: { distanceKm: number; etaSeconds: number };
  routeType: RouteType;
  origin: RoutedPlace;
  destination: RoutedPlace;
}

interface Load {
  weightGrams: number;
  valueKobo: number;
}

export function createPricingService(config: Config): ServiceDefinition {
  const db = new ServiceDatabase(config, 'pricing', definePricingModels);
  let book = new TariffBook([]);
  let refreshTimer: NodeJS.Timeout | undefined;
  /** Geo owns the fleet types; made in `created`, when the broker exists. */
  let fleets: CachedValue<FleetOption[]>;

  async function reloadBook(): Promise<void> {
    book = await readBook(db.models);
  }

  async function pickFleet(fleetTypeId: string | undefined, load: Load) {
    const all = await fleets.get();
    const requested = fleetTypeId ? all.find((f) => f.id === fleetTypeId) : undefined;
    if (fleetTypeId && !requested) throw notFound('Fleet type not found');
    const fleet = chooseFleet(
      all.filter((f) => f.active),
      requested,
      load.weightGrams,
    );
    if (!fleet) {
      throw badRequest(`No active fleet type can carry ${formatKg(load.weightGrams)} kg`);
    }
    return fleet;
  }

  async function loadOf(ctx: WaybillContext<QuoteRequestParams>, request: QuoteRequest) {
    if (request.pricing.mode === 'totals') {
      return {
        weightGrams: kgToGrams(request.pricing.totalWeight),
        valueKobo: nairaToKobo(request.pricing.totalValue),
      };
    }
    const selection: { totalWeightGrams: number; totalValueKobo: number } = await ctx.call(
      'package.resolveSelection',
      { userId: ctx.meta.user?.id, packageIds: request.pricing.packageIds },
    );
    return { weightGrams: selection.totalWeightGrams, valueKobo: selection.totalValueKobo };
  }

  async function quote(ctx: WaybillContext<QuoteRequestParams>) {
    const params = ctx.params;
    const request = readQuoteRequest(params, Boolean(ctx.meta.user?.id));
    const load = await loadOf(ctx, request);
    const fleet = await pickFleet(params.fleetTypeId, load);
    const route: Route = await ctx.call('geo.route', {
      origin: params.origin,
      destination: params.destination,
      fleetTypeId: fleet.id,
    });

    const choice = book.choose(route.origin);
    if (!choice) {
      throw badRequest(
        `No tariff covers deliveries from ${route.origin.country}; deliveries can start in: ${book.countries().join(', ') || 'nowhere yet (an operator must add a country tariff)'}`,
        [{ field: 'origin', message: 'outside the areas this service prices' }],
      );
    }
    const { tariff } = choice;
    if (request.schedule) {
      const problem = scheduleProblem(
        request.schedule.date,
        request.schedule.slot,
        new Date(),
        tariff.timezone,
      );
      if (problem) throw badRequest(problem.message, [problem]);
    }
    if (load.valueKobo > tariff.insurance.maxDeclaredValueKobo) {
      const cap = formatNaira(tariff.insurance.maxDeclaredValueKobo);
      throw badRequest(`The declared value is above the insurable maximum of ${cap} NGN`, [
        {
          field: request.pricing.mode === 'totals' ? 'totalValue' : 'packagesId',
          message: `at most ${cap}; split the goods over several deliveries`,
        },
      ]);
    }

    const rules = request.courierId ? await loadCourierRules(db.models, request.courierId) : [];
    const rule = matchRule(rules, { ...route, distanceKm: route.distance.distanceKm });
    const fees = computeFees(
      {
        distanceKm: route.distance.distanceKm,
        routeType: route.routeType,
        weightGrams: load.weightGrams,
        valueKobo: load.valueKobo,
        fleetCode: fleet.code,
        urgency: params.urgencyType,
        slot: request.schedule?.slot,
        courierRate: rule ? { amountKobo: rule.amountKobo, isPerKg: rule.isPerKg } : undefined,
      },
      tariff,
    );
    const deliveryCost = {
      distance: route.distance,
      routeType: route.routeType,
      tierIds: choice.tierIds,
      costs: toCosts(fees),
      breakdown: toBreakdown(fees, load.valueKobo > 0),
      courierPricingRule: rule ? toRuleView(rule) : null,
      fleetType: { id: fleet.id, name: fleet.name, icon: fleet.icon },
      tariffVersion: choice.tariffVersion,
    };
    if (request.pricing.mode === 'totals') return deliveryCost;
    return {
      deliveryCost: {
        ...deliveryCost,
        totalWeight: load.weightGrams / 1000,
        totalValue: load.valueKobo / 100,
      },
      promotion: null,
      deliveryFee: deliveryFeeBlock(fees, params.deliveryFeePayer),
      matchingEligible: isMatchingEligible(params.deliveryFeePayer),
      payOnDelivery: payOnDeliveryBlock(params.payOnDelivery, load.valueKobo),
    };
  }

  return {
    name: 'pricing',
    mixins: [db.mixin()],
    created() {
      fleets = new CachedValue(
        () => this.broker.call('geo.listFleetTypes', { activeOnly: false }),
        FLEET_CACHE_MS,
      );
    },
    async started() {
      const models = await db.connect();
      await seedTiers(models);
      await reloadBook();
      refreshTimer = setInterval(() => {
        reloadBook().catch((err: unknown) =>
          this.logger.warn('Could not refresh the tariff; keeping the last one', { err }),
        );
      }, BOOK_REFRESH_MS);
      refreshTimer.unref();
    },
    stopped() {
      clearInterval(refreshTimer);
    },
    events: {
      [TARIFF_CHANGED_EVENT]: reloadBook,
      [FLEET_TYPES_CHANGED_EVENT]() {
        fleets.invalidate();
      },
    },
    actions: {
      price: action({
        http: {
          group: 'api',
          method: 'POST',
          path: '/pricing',
          message: 'Delivery priced',
          summary: 'Price a delivery: by saved packages (Mode A) or by totals (Mode B)',
          description:
            'Mode A (`packagesId`) answers `deliveryCost`, `deliveryFee`, `matchingEligible` and `payOnDelivery`; Mode B (`totalWeight` + `totalValue`) answers the cost alone. The same inputs and tariff always give the same amounts; `tierIds` and `tariffVersion` name the tariff revisions used. See docs/pricing.md for the formula.',
          response: Joi.alternatives(modeBResponse, modeAResponse),
          errors: {
            404: 'Fleet type not found',
          },
        },
        params: quoteRequestSchema,
        handler: (ctx) => quote(ctx as WaybillContext<QuoteRequestParams>),
      }),
      ...createTierActions(db, { reload: reloadBook }),
      ...createCourierRuleActions(db),
    },
  };
}
