import type { Route } from '../../libs/contracts/geo';
import { toRuleView, type CourierRule } from './courier-rules';
import { deliveryFeeBlock, isMatchingEligible, payOnDeliveryBlock } from './fee-blocks';
import { toBreakdown, toCosts, type FeeComponents } from './fees';
import type { FleetOption } from './fleet-choice';
import type { QuoteRequestParams } from './quote-request';
import type { TariffChoice } from './tariff-book';

/** What a quote carries: weight and declared value, in grams and kobo. */
export interface PricedLoad {
  weightGrams: number;
  valueKobo: number;
}

/** Mode B's answer, and Mode A's `deliveryCost` before its totals. */
export function toDeliveryCost(quote: {
  route: Route;
  choice: TariffChoice;
  fees: FeeComponents;
  load: PricedLoad;
  rule: CourierRule | null;
  fleet: FleetOption;
}) {
  const { route, choice, fees, load, rule, fleet } = quote;
  return {
    distance: route.distance,
    routeType: route.routeType,
    tierIds: choice.tierIds,
    costs: toCosts(fees),
    breakdown: toBreakdown(fees, load.valueKobo > 0),
    courierPricingRule: rule ? toRuleView(rule) : null,
    fleetType: { id: fleet.id, name: fleet.name, icon: fleet.icon },
    tariffVersion: choice.tariffVersion,
  };
}

/** Mode A's answer: the cost with the selection's totals, and who pays what. */
export function toModeAQuote(
  deliveryCost: ReturnType<typeof toDeliveryCost>,
  fees: FeeComponents,
  load: PricedLoad,
  params: Pick<QuoteRequestParams, 'deliveryFeePayer' | 'payOnDelivery'>,
) {
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
