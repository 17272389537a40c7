import { call, type Caller } from '../../libs/contracts';
import { badRequest, notFound } from '../../libs/errors';
import { formatKg, formatNaira, kgToGrams, nairaToKobo } from '../../libs/money';
import type { WaybillContext } from '../../libs/service';
import { matchRule, type CourierRule } from './courier-rules';
import { computeFees } from './fees';
import { chooseFleet, type FleetOption } from './fleet-choice';
import { readQuoteRequest, type QuoteRequest, type QuoteRequestParams } from './quote-request';
import { scheduleProblem } from './schedule';
import type { TariffBook } from './tariff-book';
import { toDeliveryCost, toModeAQuote, type PricedLoad } from './views';

/** What a quote needs besides the request: the tariff, the fleet types, a courier's rules. */
export interface QuoteSources {
  book(): TariffBook;
  fleets(): Promise<FleetOption[]>;
  courierRules(courierId: string): Promise<CourierRule[]>;
}

/** The requested fleet type if it can carry the load, else the smallest active one that can. */
async function pickFleet(sources: QuoteSources, fleetTypeId: string | undefined, load: PricedLoad) {
  const all = await sources.fleets();
  const requested = fleetTypeId ? all.find((f) => f.id === fleetTypeId) : undefined;
  if (fleetTypeId && !requested) throw notFound('Fleet type not found');
  const fleet = chooseFleet(
    all.filter((f) => f.active),
    requested,
    load.weightGrams,
  );
  if (!fleet) throw badRequest(`No active fleet type can carry ${formatKg(load.weightGrams)} kg`);
  return fleet;
}

/** Mode B states the totals; Mode A adds up the caller's saved packages. */
async function loadOf(caller: Caller, userId: string | undefined, request: QuoteRequest) {
  if (request.pricing.mode === 'totals') {
    return {
      weightGrams: kgToGrams(request.pricing.totalWeight),
      valueKobo: nairaToKobo(request.pricing.totalValue),
    };
  }
  const selection = await call(caller, 'package.resolveSelection', {
    // readQuoteRequest refuses Mode A without a user.
    userId: userId as string,
    packageIds: request.pricing.packageIds,
  });
  return { weightGrams: selection.totalWeightGrams, valueKobo: selection.totalValueKobo };
}

/** A delivery's price (docs/pricing.md): route, tariff, schedule and insurance checks, fees. */
export async function quote(ctx: WaybillContext<QuoteRequestParams>, sources: QuoteSources) {
  const params = ctx.params;
  const userId = ctx.meta.user?.id;
  const request = readQuoteRequest(params, Boolean(userId));
  const load = await loadOf(ctx, userId, request);
  const fleet = await pickFleet(sources, params.fleetTypeId, load);
  const route = await call(ctx, 'geo.route', {
    origin: params.origin,
    destination: params.destination,
    fleetTypeId: fleet.id,
  });

  const book = sources.book();
  const choice = book.choose(route.origin);
  if (!choice) {
    throw badRequest(
      `No tariff covers deliveries from ${route.origin.country}; deliveries can start in: ${book.countries().join(', ') || 'nowhere yet (an operator must add a country tariff)'}`,
      [{ field: 'origin', message: 'outside the areas this service prices' }],
    );
  }
  const { tariff } = choice;
  if (request.schedule) {
    const { date, slot } = request.schedule;
    const problem = scheduleProblem(date, slot, new Date(), tariff.timezone);
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

  const rules = request.courierId ? await sources.courierRules(request.courierId) : [];
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
  const deliveryCost = toDeliveryCost({ route, choice, fees, load, rule, fleet });
  if (request.pricing.mode === 'totals') return deliveryCost;
  return toModeAQuote(deliveryCost, fees, load, params);
}
