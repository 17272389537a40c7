import Joi from '../../libs/joi';
import { uuid, view } from '../../libs/schemas';
import { distanceView } from '../../libs/contracts/geo';
import { ROUTE_TYPES } from '../../libs/contracts/geo';
import { feeBlockView, money, QUOTE_ID } from '../../libs/contracts/pricing';

/** Shapes of the pricing answers, for the OpenAPI document. */

const costs = view('Costs', {
  base: money(),
  fleet: money(),
  deliverySubtotal: money().description('base + weight + fleet + surcharge + insurance'),
  total: money().description('deliverySubtotal + serviceFee + hubCommission'),
  weight: money(),
  insurance: money(),
  surcharge: money(),
  serviceFee: money(),
  hubCommission: money().description('Kept by the hubs of inter-state and longer trips'),
});

const breakdown = view('CostBreakdown', {
  baseCharge: money(),
  weightCharge: money(),
  insuranceCharge: money().allow(null).description('null when no value is declared'),
  fleetCharge: money(),
  surchargeCharge: money(),
  serviceFeeCharge: money(),
});

const courierPricingRule = view('AppliedCourierRule', {
  id: uuid(),
  capBy: Joi.string().valid('LOCATION'),
  from: Joi.string(),
  to: Joi.string(),
  withinKmRadius: Joi.number().allow(null),
  isPerKg: Joi.boolean(),
})
  .description("The courier's own price that replaced the base fee")
  .allow(null);

/** The tiers that priced a trip: its country's, and its state's and city's where they exist. */
export const tierIdsView = view('TierIds', {
  countryPricingId: uuid(),
  statePricingId: uuid().allow(null),
  cityPricingId: uuid().allow(null),
});

const deliveryCostFields = {
  distance: distanceView,
  routeType: Joi.string().valid(...ROUTE_TYPES),
  tierIds: tierIdsView,
  costs,
  breakdown,
  courierPricingRule,
  fleetType: Joi.object({
    id: uuid(),
    name: Joi.string(),
    icon: Joi.string().allow(null),
  }).description('The fleet type priced: the requested one, or the first that can carry the load'),
  tariffVersion: Joi.string().description('Revision of each tier used, e.g. NG@3/lagos@1/ikeja@2'),
};

/** Mode B (totals): the cost alone. */
export const modeBResponse = view('DeliveryCost', deliveryCostFields).description(
  'Mode B: the price of a delivery of the given totals',
);

/** Mode A (saved packages): the cost with the load, and who pays what. */
export const modeAResponse = view('Quote', {
  deliveryCost: view('DeliveryCostOfPackages', {
    ...deliveryCostFields,
    totalWeight: Joi.number().description('kg'),
    totalValue: Joi.number().description('NGN'),
    quoteId: Joi.string()
      .pattern(QUOTE_ID.pattern)
      .description(
        'Name it in POST /api/request (`quoteId`) before `quoteExpiresAt`: the request is priced on this route distance, and refused (409) rather than charged another total',
      ),
    quoteExpiresAt: Joi.string().isoDate(),
  }),
  promotion: Joi.valid(null),
  deliveryFee: feeBlockView(),
  matchingEligible: Joi.boolean().description('true when the creator alone pays'),
  courier: view('QuotedCourier', {
    id: uuid(),
    name: Joi.string(),
    profilePhoto: Joi.string().allow(null),
    fleet: Joi.object({
      typeId: uuid(),
      make: Joi.string(),
      model: Joi.string(),
      colour: Joi.string(),
    }),
  })
    .optional()
    .description(
      'When courierSelection is SPECIFIC: the courier named, an active one (else 404 Courier not found). Its phone, plate and position show on the delivery once the courier is assigned',
    ),
  payOnDelivery: view('PayOnDelivery', {
    enabled: Joi.boolean(),
    collectAmount: money(),
    collectTarget: Joi.string().valid('PACKAGE_VALUE'),
  }),
}).description('Mode A: the price of a delivery of saved packages');
