import Joi from 'joi';
import { ROUTE_TYPES } from '../../libs/contracts/geo';
import { countryCode, uuid } from '../../libs/schemas';

/** Params and answers of the geo actions; the answers are what /openapi.json documents. */

export const placeQuery = Joi.object<{ search?: string; countryCode?: string }, true>({
  search: Joi.string().trim().max(100).allow(''),
  countryCode: countryCode(),
});

export const countryQuery = placeQuery.fork(['countryCode'], (f) => f.forbidden());

const resolvedAddress = Joi.object({
  country: Joi.string().required(),
  lat: Joi.number().required(),
  lon: Joi.number().required(),
  h3Index: Joi.string().required(),
  phrase: Joi.string().required(),
  resolution: Joi.number().required(),
}).unknown(true);

export const routeView = Joi.object({
  distance: Joi.object({ distanceKm: Joi.number(), etaSeconds: Joi.number() }),
  routeType: Joi.string().valid(...ROUTE_TYPES),
  origin: resolvedAddress,
  destination: resolvedAddress,
});

export const fleetTypeItem = Joi.object({
  id: Joi.string().uuid(),
  name: Joi.string(),
  icon: Joi.string().uri().allow(null),
  description: Joi.string().allow(null),
});

export const fleetTypeDetail = fleetTypeItem.keys({
  code: Joi.string(),
  maxWeight: Joi.string().description('kg, five decimals'),
  averageSpeedKmh: Joi.number(),
  active: Joi.boolean(),
  createdAt: Joi.string().isoDate(),
  updatedAt: Joi.string().isoDate(),
});

const fleetTypeFields = {
  name: Joi.string().trim().min(1).max(60),
  icon: Joi.string()
    .uri({ scheme: ['https'] })
    .max(2048)
    .allow(null),
  description: Joi.string().trim().max(280).allow(null),
  maxWeightKg: Joi.number().positive().max(100_000),
  averageSpeedKmh: Joi.number().positive().max(200),
  active: Joi.boolean(),
};

export interface NewFleetType {
  code: string;
  name: string;
  icon: string | null;
  description: string | null;
  maxWeightKg: number;
  averageSpeedKmh: number;
  active: boolean;
}

export const createFleetTypeParams = Joi.object<NewFleetType, true>({
  code: Joi.string()
    .trim()
    .lowercase()
    .pattern(/^[a-z][a-z0-9-]{1,31}$/)
    .required(),
  name: fleetTypeFields.name.required(),
  icon: fleetTypeFields.icon.default(null),
  description: fleetTypeFields.description.default(null),
  maxWeightKg: fleetTypeFields.maxWeightKg.required(),
  averageSpeedKmh: fleetTypeFields.averageSpeedKmh.required(),
  active: fleetTypeFields.active.default(true),
});

export type FleetTypeChanges = Partial<Omit<NewFleetType, 'code'>> & { fleetTypeId: string };

export const updateFleetTypeParams = Joi.object<FleetTypeChanges, true>({
  fleetTypeId: uuid().required(),
  ...fleetTypeFields,
}).or(...Object.keys(fleetTypeFields));
