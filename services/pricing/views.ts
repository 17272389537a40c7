import type { Route } from '../../libs/contracts/geo';
import type { CourierView } from '../../libs/contracts/matching';
import type {
  FeeAmounts,
  FeePayer,
  ModeAQuote,
  PricedLoadParams,
} from '../../libs/contracts/pricing';
import { toRuleView, type CourierRule } from './courier-rules';
import { deliveryFeeBlock, isMatchingEligible, payOnDeliveryBlock } from './fee-blocks';
import { toBreakdown, toCosts } from './fees';
import type { FleetOption } from './fleet-choice';
import type { TariffChoice } from './tariff-book';

/** A priced trip: what every answer of the pricing service is made from. */
export interface PricedTrip {
  route: Route;
  choice: TariffChoice;
  fees: FeeAmounts;
  load: PricedLoadParams;
  rule: CourierRule | null;
  fleet: FleetOption;
}

/** Who pays, and whether the courier collects the declared value at the door. */
export interface Payment {
  deliveryFeePayer: FeePayer;
  payOnDelivery: boolean;
}

/** Mode B's answer, and Mode A's `deliveryCost` before its totals. */
export function toDeliveryCost({ route, choice, fees, load, rule, fleet }: PricedTrip) {
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

/**
 * Mode A's `courier` when SPECIFIC: who would carry it, and on what. Not how to reach them, nor
 * their plate or whereabouts: a courier's id may be known beyond the merchants they work for,
 * and the delivery shows those once the courier is assigned.
 */
export function toQuotedCourier(courier: CourierView) {
  const { typeId, make, model, colour } = courier.fleet;
  return {
    id: courier.id,
    name: courier.name,
    profilePhoto: courier.profilePhoto,
    fleet: { typeId, make, model, colour },
  };
}

/** Mode A's answer: the cost with the load's totals, and who pays what. */
export function toModeAQuote(trip: PricedTrip, payment: Payment) {
  const { fees, load } = trip;
  return {
    deliveryCost: {
      ...toDeliveryCost(trip),
      totalWeight: load.weightGrams / 1000,
      totalValue: load.valueKobo / 100,
    },
    promotion: null,
    deliveryFee: deliveryFeeBlock(fees, payment.deliveryFeePayer),
    matchingEligible: isMatchingEligible(payment.deliveryFeePayer),
    payOnDelivery: payOnDeliveryBlock(payment.payOnDelivery, load.valueKobo),
  } satisfies ModeAQuote;
}
