import Joi from 'joi';
import { ROUTE_TYPES } from './tariff';
import { FEE_PAYERS } from './fee-blocks';

/** Shapes of the pricing answers, for the OpenAPI document. */

const money = () => Joi.string().pattern(/^\d+\.\d{2}$/);

const costs = Joi.object({
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

const breakdown = Joi.object({
  baseCharge: money(),
  weightCharge: money(),
  insuranceCharge: money().allow(null).description('null when no value is declared'),
  fleetCharge: money(),
  surchargeCharge: money(),
  serviceFeeCharge: money(),
});

const courierPricingRule = Joi.object({
  id: Joi.string().uuid(),
  capBy: Joi.string().valid('LOCATION'),
  from: Joi.string(),
  to: Joi.string(),
  withinKmRadius: Joi.number().allow(null),
  isPerKg: Joi.boolean(),
}).allow(null);

export const modeBResponse = Joi.object({
  distance: Joi.object({ distanceKm: Joi.number(), etaSeconds: Joi.number() }),
  routeType: Joi.string().valid(...ROUTE_TYPES),
  tierIds: Joi.object({
    countryPricingId: Joi.string().uuid(),
    statePricingId: Joi.string().uuid().allow(null),
    cityPricingId: Joi.string().uuid().allow(null),
  }),
  costs,
  breakdown,
  courierPricingRule,
  fleetType: Joi.object({
    id: Joi.string().uuid(),
    name: Joi.string(),
    icon: Joi.string().allow(null),
  }).description('The fleet type priced: the requested one, or the first that can carry the load'),
  tariffVersion: Joi.string().description('Revision of each tier used, e.g. NG@3/lagos@1/ikeja@2'),
}).description('Mode B');

const party = Joi.object({
  amount: money(),
  paymentRequired: Joi.boolean(),
  paid: Joi.boolean(),
});

export const modeAResponse = Joi.object({
  deliveryCost: modeBResponse.keys({
    totalWeight: Joi.number().description('kg'),
    totalValue: Joi.number().description('NGN'),
  }),
  promotion: Joi.valid(null),
  deliveryFee: Joi.object({
    payer: Joi.string().valid(...FEE_PAYERS),
    gross: Joi.object({
      delivery: money(),
      serviceFee: money(),
      hubCommission: money(),
      bundledTotal: money(),
    }),
    creator: party,
    recipient: party.keys({ checkoutUrl: Joi.string().allow(null) }),
    promotion: Joi.object({
      settlementMode: Joi.string().allow(null),
      platformFunded: Joi.boolean(),
      settledAmount: money(),
      discountAmount: money(),
      isApplied: Joi.boolean(),
    }),
  }).description('SPLIT: the recipient pays half rounded down, the creator the rest'),
  matchingEligible: Joi.boolean().description('true when the creator alone pays'),
  payOnDelivery: Joi.object({
    enabled: Joi.boolean(),
    collectAmount: money(),
    collectTarget: Joi.string().valid('PACKAGE_VALUE'),
  }),
}).description('Mode A');
