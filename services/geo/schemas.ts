import Joi from '../../libs/joi';
import {
  COMPUTED_FIELDS,
  PRESERVED_NUMBERS,
  PRESERVED_STRINGS,
  ROUTE_TYPES,
  distanceView,
} from '../../libs/contracts/geo';
import {
  countryCode,
  httpsUrl,
  kilograms,
  plainText,
  trimmedMatch,
  uuid,
  view,
} from '../../libs/schemas';

/** Params and answers of the geo actions; the answers are what /openapi.json documents. */

export const placeQuery = Joi.object<{ search?: string; countryCode?: string }, true>({
  search: Joi.string().trim().max(100).allow(''),
  countryCode: countryCode(),
});

export const countryQuery = placeQuery.fork(['countryCode'], (f) => f.forbidden());

const optional = (schema: Joi.Schema) => schema.optional();
const text = () => optional(Joi.string());
const number = () => optional(Joi.number());

export const countryView = view('Country', {
  value: Joi.string().description('ISO 3166-1 alpha-2 code'),
  name: Joi.string(),
  type: Joi.string().valid('INTER_COUNTRY'),
  country: Joi.string(),
  countryCode: Joi.string(),
  countryCodeAlpha3: Joi.string(),
  continentCode: Joi.string(),
  continentName: Joi.string(),
  lat: number().description('Centroid, when known'),
  lon: number(),
});

export const stateView = view('State', {
  value: Joi.string().description('State route identifier (admin1Id)'),
  name: Joi.string(),
  type: Joi.string().valid('INTER_STATE'),
  state: Joi.string(),
  country: Joi.string(),
  countryCode: Joi.string(),
  continentCode: Joi.string(),
  continentName: Joi.string(),
  regionalZone: Joi.string(),
  admin1Id: Joi.string(),
  admin1Name: Joi.string(),
  lat: Joi.number(),
  lon: Joi.number(),
});

export const cityView = view('City', {
  value: Joi.string().description('The locationId; a mapPlaceId of addresses'),
  locationId: Joi.string(),
  name: Joi.string(),
  country: Joi.string(),
  countryCode: Joi.string(),
  countryCodeAlpha3: Joi.string(),
  lat: Joi.number(),
  lon: Joi.number(),
  lgaOrCity: Joi.string(),
  state: text(),
  regionalZone: Joi.string(),
  adminUnitName: text(),
});

/** Input fields a resolved address carries back as the client sent them. */
const KEPT_INPUT = [
  'addressLine1',
  'floor',
  'mapPlaceId',
  'contactName',
  'contactPhone',
  'contactEmail',
];
const RESOLVED_NUMBERS: string[] = [...PRESERVED_NUMBERS, 'centerLat', 'centerLon'];
/** Described one by one below: always there, numbers or not strings. */
const DESCRIBED = new Set(['country', 'h3Index', 'resolution', ...RESOLVED_NUMBERS]);
const RESOLVED_STRINGS = [
  ...KEPT_INPUT,
  // The input's additionalNote (or an earlier answer's note sent back).
  'note',
  ...PRESERVED_STRINGS,
  ...COMPUTED_FIELDS.filter((field) => !DESCRIBED.has(field)),
];

/** Fields that were not geocoded are absent, never null. `id` and dates: saved addresses. */
const resolvedAddressView = view('ResolvedAddress', {
  id: optional(uuid()),
  country: Joi.string(),
  lat: Joi.number(),
  lon: Joi.number(),
  h3Index: Joi.string().description('Res-9 H3 cell'),
  phrase: Joi.string().description('Three dot-separated words naming the H3 cell'),
  resolution: Joi.number(),
  ...Object.fromEntries(RESOLVED_STRINGS.map((f) => [f, text()])),
  ...Object.fromEntries(RESOLVED_NUMBERS.map((f) => [f, number()])),
});

export const routeView = view('Route', {
  distance: distanceView,
  routeType: Joi.string().valid(...ROUTE_TYPES),
  origin: resolvedAddressView,
  destination: resolvedAddressView,
});

const fleetTypeViewFields = {
  id: uuid(),
  name: Joi.string(),
  icon: Joi.string().uri().allow(null),
  description: Joi.string().allow(null),
};

export const fleetTypeItem = view('FleetType', fleetTypeViewFields);

export const fleetTypeDetail = view('FleetTypeDetail', {
  ...fleetTypeViewFields,
  code: Joi.string(),
  maxWeight: Joi.string().description('kg, five decimals'),
  averageSpeedKmh: Joi.number(),
  active: Joi.boolean(),
  createdAt: Joi.string().isoDate(),
  updatedAt: Joi.string().isoDate(),
});

const fleetTypeFields = {
  name: plainText(60).min(1),
  icon: httpsUrl().allow(null),
  description: plainText(280).allow(null),
  // At least a gram and a walking pace: a tiny positive speed made ETAs infinite (null).
  maxWeightKg: kilograms().min(0.001).max(100_000),
  averageSpeedKmh: Joi.number().min(1).max(200),
  active: Joi.boolean(),
};

interface NewFleetType {
  code: string;
  name: string;
  icon: string | null;
  description: string | null;
  maxWeightKg: number;
  averageSpeedKmh: number;
  active: boolean;
}

/**
 * A fleet type's code, stored trimmed and lower-case, as a courier's `regNo` is stored trimmed
 * and upper-case: a letter, then letters, digits and hyphens (`keke`, `cargo-bike`).
 */
const fleetCode = () =>
  trimmedMatch(
    Joi.string().trim().lowercase(),
    'fleetCode',
    '[A-Za-z][A-Za-z0-9-]{1,31}',
    'must be a letter, then 1 to 31 letters, digits or hyphens, like cargo-bike',
  );

export const createFleetTypeParams = Joi.object<NewFleetType, true>({
  code: fleetCode().required(),
  name: fleetTypeFields.name.required(),
  icon: fleetTypeFields.icon.default(null),
  description: fleetTypeFields.description.default(null),
  maxWeightKg: fleetTypeFields.maxWeightKg.required(),
  averageSpeedKmh: fleetTypeFields.averageSpeedKmh.required(),
  active: fleetTypeFields.active.default(true),
}).example({
  code: 'keke',
  name: 'Tricycle',
  description: 'Keke for small loads across town',
  maxWeightKg: 150,
  averageSpeedKmh: 25,
});

export type FleetTypeChanges = Partial<Omit<NewFleetType, 'code'>> & { fleetTypeId: string };

export const updateFleetTypeParams = Joi.object<FleetTypeChanges, true>({
  fleetTypeId: uuid().required(),
  ...fleetTypeFields,
}).or(...Object.keys(fleetTypeFields));
