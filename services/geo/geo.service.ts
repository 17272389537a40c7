import { randomUUID } from 'node:crypto';
import Joi from 'joi';
import type { Config } from '../../libs/config';
import { CachedValue } from '../../libs/cache';
import { badRequest, conflict, notFound } from '../../libs/errors';
import { kgToGrams } from '../../libs/money';
import { ServiceDatabase, isDuplicateKey } from '../../libs/mongo';
import { uuid } from '../../libs/schemas';
import { action, type ServiceDefinition, type WaybillContext } from '../../libs/service';
import { DEFAULT_FLEET_TYPES, byCapacity, toFleetTypeDetail, toFleetTypeItem } from './fleet-types';
import {
  SAME_PLACE_MESSAGE,
  addressInput,
  resolveAddress,
  samePlace,
  type AddressInput,
  type ResolvedAddress,
} from './address';
import {
  LIST_LIMITS,
  findArea,
  findCountry,
  warmGazetteer,
  listCities,
  listCountries,
  listStates,
  searchCities,
  searchCountries,
  searchStates,
} from './gazetteer';
import { createNominatimGeocoder, type TextGeocoder } from './external-geocoder';
import { defineGeoModels, type GeoModels } from './models';
import { version } from '../../package.json';
import { toCityItem, toCountryItem, toStateItem } from './places';
import { ROUTE_TYPES } from './route-type';
import { Router } from './routing';

/** Broadcast after a fleet type is added or changed, so that caches of them are dropped. */
export const FLEET_TYPES_CHANGED_EVENT = 'geo.fleetTypesChanged';
const FLEET_CACHE_MS = 30_000;

const placeQuery = Joi.object({
  search: Joi.string().trim().max(100).allow(''),
  countryCode: Joi.string().trim().uppercase().length(2),
});

const resolvedAddressSchema = Joi.object({
  country: Joi.string().required(),
  lat: Joi.number().required(),
  lon: Joi.number().required(),
  h3Index: Joi.string().required(),
  phrase: Joi.string().required(),
  resolution: Joi.number().required(),
}).unknown(true);

const fleetTypeItem = Joi.object({
  id: Joi.string().uuid(),
  name: Joi.string(),
  icon: Joi.string().uri().allow(null),
  description: Joi.string().allow(null),
});

const fleetTypeDetail = fleetTypeItem.keys({
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

/** Inserts the default fleet types that are missing; never touches existing ones. */
async function ensureDefaultFleetTypes(models: GeoModels): Promise<void> {
  for (const seed of DEFAULT_FLEET_TYPES) {
    try {
      await models.FleetType.updateOne(
        { code: seed.code },
        { $setOnInsert: { _id: randomUUID(), ...seed, icon: null, active: true } },
        { upsert: true },
      );
    } catch (err) {
      // Another replica inserted it at the same moment.
      if (!isDuplicateKey(err)) throw err;
    }
  }
}

export function createGeoService(config: Config): ServiceDefinition {
  const db = new ServiceDatabase(config, 'geo', defineGeoModels);
  let router: Router;
  let geocoder: TextGeocoder | undefined;

  const countryOf = (code: string) => {
    const country = findCountry(code);
    if (!country) throw new Error(`gazetteer has no country ${code}`);
    return country;
  };

  /** The order service owns saved addresses; until it runs, no id resolves. */
  const savedAddresses =
    (call: (action: string, params: object) => Promise<unknown>) =>
    async (id: string): Promise<ResolvedAddress | null> => {
      try {
        return (await call('order.getAddress', { addressId: id })) as ResolvedAddress | null;
      } catch (err) {
        if ((err as { type?: string }).type === 'SERVICE_NOT_FOUND') return null;
        throw err;
      }
    };

  async function defaultSpeed(fleetTypeId: string | undefined): Promise<number> {
    if (fleetTypeId) return (await findFleetType(fleetTypeId)).averageSpeedKmh;
    const [first] = await loadFleetTypes(true);
    if (!first) throw notFound('Fleet type not found');
    return first.averageSpeedKmh;
  }

  /**
   * Every route and quote needs the fleet types, and they change a few times a year: they
   * are kept in memory, dropped when any replica announces a change, and reread at the
   * latest after FLEET_CACHE_MS in case an announcement was lost.
   */
  const fleetCache = new CachedValue(
    async () => (await db.models.FleetType.find({}).lean()).sort(byCapacity),
    FLEET_CACHE_MS,
  );
  const allFleetTypes = () => fleetCache.get();
  const dropFleetCache = () => fleetCache.invalidate();

  async function loadFleetTypes(activeOnly: boolean) {
    const records = await allFleetTypes();
    return activeOnly ? records.filter((r) => r.active) : records;
  }

  async function findFleetType(fleetTypeId: string) {
    const cached = (await allFleetTypes()).find((r) => r._id === fleetTypeId);
    const record = cached ?? (await db.models.FleetType.findById(fleetTypeId).lean());
    if (!record) throw notFound('Fleet type not found');
    return record;
  }

  /** After a change here: this replica rereads at once, the others on the announcement. */
  async function fleetTypesChanged(ctx: WaybillContext<unknown>, fleetTypeId: string) {
    dropFleetCache();
    await ctx.broadcast(FLEET_TYPES_CHANGED_EVENT, { fleetTypeId });
  }

  return {
    name: 'geo',
    mixins: [db.mixin()],
    created() {
      router = new Router(config.routing, (reason) =>
        this.logger.warn('OSRM unavailable; using the straight-line estimate', { reason }),
      );
      if (config.geocoder.url) {
        geocoder = createNominatimGeocoder({
          baseUrl: config.geocoder.url,
          timeoutMs: config.geocoder.timeoutMs,
          countryCodes: config.geocoder.countryCodes,
          userAgent: `Waybill/${version} (self-hosted courier platform)`,
          onFailure: (reason) =>
            this.logger.warn('Geocoder unavailable; using the offline gazetteer', { reason }),
        });
      }
    },
    async started() {
      warmGazetteer(); // build the indexes before the first request, not during it
      // Loading parses ~20 MB of JSON; with --expose-gc (see deploy/) the garbage goes at once.
      (globalThis as { gc?: () => void }).gc?.();
      await ensureDefaultFleetTypes(await db.connect());
    },
    events: {
      [FLEET_TYPES_CHANGED_EVENT]: dropFleetCache,
    },
    actions: {
      countries: action({
        http: {
          group: 'api',
          method: 'GET',
          path: '/countries',
          message: 'Countries retrieved',
          summary: 'List or search countries',
          description: `Case- and accent-insensitive, by prefix, tolerant of a typo. At most ${LIST_LIMITS.countries} items.`,
        },
        params: placeQuery.fork(['countryCode'], (f) => f.forbidden()),
        handler(ctx) {
          const found = ctx.params.search
            ? searchCountries(ctx.params.search, LIST_LIMITS.countries)
            : listCountries(LIST_LIMITS.countries);
          return found.map(toCountryItem);
        },
      }),

      states: action({
        http: {
          group: 'api',
          method: 'GET',
          path: '/states',
          message: 'States retrieved',
          summary: 'List or search states (first-level divisions)',
          description: `Without \`search\`, the states of one country: \`countryCode\`, Nigeria by default. At most ${LIST_LIMITS.states} items.`,
        },
        params: placeQuery,
        handler(ctx) {
          const { search, countryCode } = ctx.params;
          const found = search
            ? searchStates(search, LIST_LIMITS.states, { countryCode })
            : listStates(LIST_LIMITS.states, { countryCode: countryCode ?? 'NG' });
          return found.map((state) => toStateItem(state, countryOf(state.countryCode)));
        },
      }),

      cities: action({
        http: {
          group: 'api',
          method: 'GET',
          path: '/cities',
          message: 'Cities retrieved',
          summary: 'List or search cities',
          description: `Exact and important matches first. At most ${LIST_LIMITS.cities} items.`,
        },
        params: placeQuery,
        handler(ctx) {
          const { search, countryCode } = ctx.params;
          const found = search
            ? searchCities(search, LIST_LIMITS.cities, { countryCode })
            : listCities(LIST_LIMITS.cities, { countryCode });
          return found.map((city) => toCityItem(city, countryOf(city.countryCode)));
        },
      }),

      /** Internal: one address input to a resolved address; every service uses this. */
      resolveAddress: action({
        visibility: 'public',
        params: Joi.object({
          address: addressInput().required(),
          field: Joi.string().default('address'),
        }),
        handler(ctx) {
          const { address, field } = ctx.params as { address: AddressInput; field: string };
          return resolveAddress(address, field, {
            savedAddress: savedAddresses((a, p) => ctx.call(a, p)),
            geocoder,
          });
        },
      }),

      /**
       * Internal: checks that a country, state and LGA/city exist and answers them spelled
       * as resolved addresses spell them; 404 with a suggestion otherwise. Pricing tiers and
       * courier rules name places through this.
       */
      findArea: action({
        visibility: 'public',
        params: Joi.object({
          countryCode: Joi.string().trim().uppercase().length(2).required(),
          state: Joi.string().trim().min(1).max(100),
          lgaOrCity: Joi.string().trim().min(1).max(100),
        }).with('lgaOrCity', 'state'),
        handler(ctx) {
          const { countryCode, state, lgaOrCity } = ctx.params;
          const found = findArea(countryCode, state, lgaOrCity);
          if ('problem' in found) throw notFound(found.problem);
          return found.area;
        },
      }),

      route: action({
        http: {
          group: 'api',
          method: 'POST',
          path: '/route',
          message: 'Route resolved',
          summary: 'Resolve two addresses into a route with distance and ETA',
          description:
            'Distance is the larger of the straight line and the road distance; ETA uses the fleet type speed (the smallest active fleet type when none is given).',
          response: Joi.object({
            distance: Joi.object({ distanceKm: Joi.number(), etaSeconds: Joi.number() }),
            routeType: Joi.string().valid(...ROUTE_TYPES),
            origin: resolvedAddressSchema,
            destination: resolvedAddressSchema,
          }),
          errors: { 404: 'Fleet type not found' },
        },
        params: Joi.object({
          origin: addressInput().required(),
          destination: addressInput().required(),
          fleetTypeId: uuid(),
        }),
        async handler(ctx) {
          const lookup = { savedAddress: savedAddresses((a, p) => ctx.call(a, p)), geocoder };
          const params = ctx.params as { origin: AddressInput; destination: AddressInput };
          const [origin, destination] = await Promise.all([
            resolveAddress(params.origin, 'origin', lookup),
            resolveAddress(params.destination, 'destination', lookup),
          ]);
          if (samePlace(origin, destination)) {
            throw badRequest(SAME_PLACE_MESSAGE, [
              { field: 'destination', message: SAME_PLACE_MESSAGE },
            ]);
          }
          const speed = await defaultSpeed(ctx.params.fleetTypeId);
          return { ...(await router.route(origin, destination, speed)), origin, destination };
        },
      }),

      fleetTypes: action({
        http: {
          group: 'api',
          method: 'GET',
          path: '/fleet-types',
          message: 'Fleet types retrieved',
          summary: 'List the active fleet types',
          response: Joi.array().items(fleetTypeItem),
        },
        params: Joi.object({}),
        async handler() {
          return (await loadFleetTypes(true)).map(toFleetTypeItem);
        },
      }),

      /** Internal: one fleet type, active or not; 404 `Fleet type not found`. */
      getFleetType: action({
        visibility: 'public',
        params: Joi.object({ fleetTypeId: uuid().required() }),
        async handler(ctx) {
          return toFleetTypeDetail(await findFleetType(ctx.params.fleetTypeId));
        },
      }),

      /** Also called by pricing and routing, with `activeOnly: true`. */
      listFleetTypes: action({
        http: {
          group: 'admin',
          method: 'GET',
          path: '/fleet-types',
          message: 'Fleet types retrieved',
          summary: 'List fleet types with capacity and speed, inactive ones included',
          response: Joi.array().items(fleetTypeDetail),
        },
        params: Joi.object({ activeOnly: Joi.boolean().default(false) }),
        async handler(ctx) {
          return (await loadFleetTypes(ctx.params.activeOnly)).map(toFleetTypeDetail);
        },
      }),

      /**
       * Broadcasts `geo.fleetTypesChanged` `{ fleetTypeId }` once the type is stored, so that
       * other geo replicas and pricing drop the fleet types they keep in memory.
       */
      createFleetType: action({
        http: {
          group: 'admin',
          method: 'POST',
          path: '/fleet-types',
          status: 201,
          message: 'Fleet type created',
          summary: 'Add a fleet type',
          response: fleetTypeDetail,
          errors: { 409: 'A fleet type with this code exists' },
        },
        params: Joi.object({
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
        }),
        async handler(ctx) {
          const { maxWeightKg, ...fields } = ctx.params;
          try {
            const record = await db.models.FleetType.create({
              ...fields,
              maxWeightGrams: kgToGrams(maxWeightKg),
            });
            await fleetTypesChanged(ctx, record._id);
            return toFleetTypeDetail(record.toObject());
          } catch (err) {
            if (isDuplicateKey(err)) {
              throw conflict(`A fleet type with code ${fields.code} already exists`);
            }
            throw err;
          }
        },
      }),

      /** Broadcasts `geo.fleetTypesChanged` `{ fleetTypeId }` once stored, as createFleetType. */
      updateFleetType: action({
        http: {
          group: 'admin',
          method: 'PATCH',
          path: '/fleet-types/:fleetTypeId',
          message: 'Fleet type updated',
          summary: 'Edit or deactivate a fleet type',
          description:
            'Send only the fields to change. Fleet types are never deleted, since deliveries refer to them; set `active: false` to hide one.',
          response: fleetTypeDetail,
        },
        params: Joi.object({
          fleetTypeId: uuid().required(),
          ...fleetTypeFields,
        }).or(...Object.keys(fleetTypeFields)),
        async handler(ctx) {
          const { fleetTypeId, maxWeightKg, ...fields } = ctx.params;
          const update =
            maxWeightKg === undefined
              ? fields
              : { ...fields, maxWeightGrams: kgToGrams(maxWeightKg) };
          const record = await db.models.FleetType.findOneAndUpdate(
            { _id: fleetTypeId },
            { $set: update },
            { new: true },
          ).lean();
          if (!record) throw notFound('Fleet type not found');
          await fleetTypesChanged(ctx, fleetTypeId);
          return toFleetTypeDetail(record);
        },
      }),
    },
  };
}
