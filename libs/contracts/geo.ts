import Joi from '../joi';
import { countryCode, e164Phone, email, fromUrl, plainText, uuid, view } from '../schemas';
import type { Retry } from './retry';

/** What other services may know of the geo service. */

/** Broadcast after a fleet type is added or changed, so that caches of them are dropped. */
export const FLEET_TYPES_CHANGED_EVENT = 'geo.fleetTypesChanged';

/**
 * Fleet types there may be, the defaults and inactive ones included: every list of them (the
 * admin's, the integrators', the caches of pricing and matching) is one NATS reply, and so is
 * a tariff's fee per fleet type (test/unit/geo/list-size.test.ts, pricing's).
 */
export const FLEET_TYPES_MAX = 100;

export interface GeoEvents {
  [FLEET_TYPES_CHANGED_EVENT]: { fleetTypeId: string };
}

/** From the nearest to the farthest; pricing tiers are keyed by these names. */
export const ROUTE_TYPES = [
  'INTER_CITY',
  'INTER_STATE',
  'INTER_REGION',
  'INTER_COUNTRY',
  'INTER_CONTINENT',
] as const;
export type RouteType = (typeof ROUTE_TYPES)[number];

/** Fields of a resolved address that geo never computes but keeps when a client sends them. */
export const PRESERVED_STRINGS = [
  'addressLine2',
  'label',
  'zoneOrDistrict',
  'region',
  'regionName',
  'subregion',
  'zipCode',
  'timezone',
  'adminUnitId',
  'adminUnitName',
  'adminUnitType',
  'adminUnitParentId',
  'admin3Id',
  'admin3Name',
  'operationalRegionId',
] as const;
export const PRESERVED_NUMBERS = ['swLat', 'swLon', 'neLat', 'neLon'] as const;

/** Fields geo computes; a full object from an earlier answer may carry them, they are redone. */
export const COMPUTED_FIELDS = [
  'country',
  'countryCode',
  'countryCodeAlpha3',
  'state',
  'lgaOrCity',
  'regionalZone',
  'continentCode',
  'continentName',
  'admin1Id',
  'admin1Name',
  'admin2Id',
  'admin2Name',
  'h3Index',
  'resolution',
  'createdAt',
  'updatedAt',
  'deletedAt',
] as const;

/** The specification's 404 for a fleet type that is unknown or inactive. */
export const FLEET_TYPE_NOT_FOUND = 'Fleet type not found';

/** Why there is no fleet type to price or time a trip with when none is active: the 404's problem. */
export const NO_ACTIVE_FLEET_TYPE = {
  field: 'fleetTypeId',
  message: 'none is active on this platform; an operator adds one with POST /admin/fleet-types',
};

export const latitude = () => Joi.number().min(-90).max(90);
export const longitude = () => Joi.number().min(-180).max(180);
/**
 * The longest each text of an address input may be, in characters. Plain text: a stop's texts
 * are stored and listed with its delivery, and each character is then at most four bytes of a
 * list's one NATS message (a control character would be six).
 */
export const ADDRESS_TEXT_LIMITS = {
  address: 300,
  addressLine1: 300,
  mapPlaceId: 200,
  phrase: 100,
  floor: 60,
  contactName: 120,
  additionalNote: 500,
} as const;
/** The longest each of `PRESERVED_STRINGS` may be. */
export const PRESERVED_STRING_MAX = 200;

const text = (field: keyof typeof ADDRESS_TEXT_LIMITS) =>
  plainText(ADDRESS_TEXT_LIMITS[field]).min(1);

const addressObject = Joi.object({
  id: uuid(),
  address: text('address'),
  addressLine1: text('addressLine1'),
  lat: latitude(),
  lon: longitude(),
  mapPlaceId: text('mapPlaceId'),
  phrase: text('phrase'),
  floor: text('floor'),
  contactName: text('contactName'),
  contactPhone: e164Phone(),
  contactEmail: email(),
  additionalNote: text('additionalNote'),
  // What an earlier answer says of the stop, kept when it is sent back: its note (named by
  // `additionalNote`), and where a text it was found by put it (`lat`/`lon` equal to these:
  // the centre of what the text named, not a point the caller chose; the caller's word).
  note: text('additionalNote'),
  centerLat: latitude(),
  centerLon: longitude(),
  ...Object.fromEntries(PRESERVED_STRINGS.map((f) => [f, plainText(PRESERVED_STRING_MAX)])),
  // The corners of the place's bounding box: coordinates, kept as they are sent.
  ...Object.fromEntries(
    PRESERVED_NUMBERS.map((f) => [f, f.endsWith('Lat') ? latitude() : longitude()]),
  ),
  ...Object.fromEntries(COMPUTED_FIELDS.map((f) => [f, Joi.any()])),
})
  .and('lat', 'lon')
  .or('id', 'address', 'addressLine1', 'lat', 'mapPlaceId', 'phrase')
  .messages({
    'object.missing':
      '{{#label}} needs an address, lat and lon, a mapPlaceId, a phrase or a saved address id',
  });

/**
 * An address input, as every service that takes addresses accepts it: a plain string, a
 * minimal object, or a full resolved object from an earlier answer.
 */
export const addressInput = () =>
  Joi.alternatives()
    .try(text('address'), addressObject)
    .description(
      'Text naming a place, a full object from an earlier answer, or a minimal one: lat and lon, a mapPlaceId, a phrase, a saved address id. Text written as three words joined by dots (word.word.word) is read as a phrase: a word not in the list is a 400 naming it, never searched for as a place.',
    );

export type AddressInput =
  | string
  | (Partial<Record<string, string | number>> & {
      id?: string;
      address?: string;
      addressLine1?: string;
      lat?: number;
      lon?: number;
      mapPlaceId?: string;
      phrase?: string;
      floor?: string;
      contactName?: string;
      contactPhone?: string;
      contactEmail?: string;
      additionalNote?: string;
      note?: string;
    });

/** An address resolved by geo: always its country, position, res-9 H3 cell and phrase. */
export interface ResolvedAddress {
  [field: string]: string | number | undefined;
  country: string;
  countryCode?: string;
  state?: string;
  lgaOrCity?: string;
  lat: number;
  lon: number;
  h3Index: string;
  phrase: string;
  resolution: number;
}

/** A place an operator names (a pricing tier, a courier rule), spelled as addresses are. */
export interface Area {
  countryCode: string;
  country: string;
  state?: string;
  lgaOrCity?: string;
}

/** What operators and other services see of a fleet type. */
export interface FleetTypeDetail {
  id: string;
  name: string;
  icon: string | null;
  description: string | null;
  code: string;
  /** kg with five decimals. */
  maxWeight: string;
  averageSpeedKmh: number;
  active: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface Route {
  distance: { distanceKm: number; etaSeconds: number };
  routeType: RouteType;
  origin: ResolvedAddress;
  destination: ResolvedAddress;
}

/** A route as services price it: with whether its road distance was measured. */
export interface Trip extends Route {
  /**
   * A routing server measured the road; false: the straight-line estimate stands in for it;
   * undefined: not known (a geo of the version before answered `geo.route`).
   */
  roadMeasured: boolean | undefined;
}

/** A trip as the API shows a route: without `roadMeasured`. */
export function routeOf({ roadMeasured: _, ...route }: Trip): Route {
  return route;
}

export interface ResolveAddressParams {
  address: AddressInput;
  field?: string;
}

export const resolveAddressParams = Joi.object<ResolveAddressParams, true>({
  address: addressInput().required(),
  field: Joi.string().default('address'),
});

export interface FindAreaParams {
  countryCode: string;
  state?: string;
  lgaOrCity?: string;
}

/** Longest state or LGA name `geo.findArea` takes; callers bound their own fields by it. */
export const AREA_NAME_MAX = 100;

/** A state or LGA/city name as `geo.findArea` takes it. */
export const areaName = () => plainText(AREA_NAME_MAX).min(1);

export const findAreaParams = Joi.object<FindAreaParams, true>({
  countryCode: countryCode().required(),
  state: areaName(),
  lgaOrCity: areaName(),
}).with('lgaOrCity', 'state');

/** Distance and time of a route (geo.route answers it; pricing quotes it), for the document. */
export const distanceView = view('Distance', {
  distanceKm: Joi.number(),
  etaSeconds: Joi.number(),
});

export interface RouteParams {
  origin: AddressInput;
  destination: AddressInput;
  fleetTypeId?: string;
}

export const routeParams = Joi.object<RouteParams, true>({
  origin: addressInput().required(),
  destination: addressInput().required(),
  fleetTypeId: uuid(),
}).example({
  origin: 'Admiralty Way, Lekki, Lagos',
  destination: 'Wuse 2, Abuja',
});

export interface ListFleetTypesParams {
  activeOnly?: boolean;
}

export const listFleetTypesParams = Joi.object<ListFleetTypesParams, true>({
  activeOnly: fromUrl(Joi.boolean().default(false)),
});

export interface GetFleetTypeParams {
  fleetTypeId: string;
}

export const getFleetTypeParams = Joi.object<GetFleetTypeParams, true>({
  fleetTypeId: uuid().required(),
});

export interface GeoActions {
  /** An address input to a resolved address (400 naming `field` when it cannot be). */
  'geo.resolveAddress': { params: ResolveAddressParams; answer: ResolvedAddress };
  /**
   * A country, state and LGA/city spelled as addresses spell them; 404 with a suggestion,
   * its field error naming the part not found (`countryCode`, `state` or `lgaOrCity`).
   */
  'geo.findArea': { params: FindAreaParams; answer: Area };
  'geo.route': { params: RouteParams; answer: Route };
  /** `geo.route` with `roadMeasured`, for pricing; not on the API. */
  'geo.trip': { params: RouteParams; answer: Trip };
  /** Smallest first. */
  'geo.listFleetTypes': { params: ListFleetTypesParams; answer: FleetTypeDetail[] };
  'geo.getFleetType': { params: GetFleetTypeParams; answer: FleetTypeDetail };
}

/** Which geo actions may be repeated on another node: all of them read. */
export const GEO_RETRY = {
  'geo.resolveAddress': 'safe',
  'geo.findArea': 'safe',
  'geo.route': 'safe',
  'geo.trip': 'safe',
  'geo.listFleetTypes': 'safe',
  'geo.getFleetType': 'safe',
} as const satisfies Record<keyof GeoActions, Retry>;
