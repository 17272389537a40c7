import type { Logger } from 'moleculer';
import Joi from '../../libs/joi';
import type { Config } from '../../libs/config';
import { call } from '../../libs/contracts';
import {
  FLEET_TYPES_CHANGED_EVENT,
  FLEET_TYPE_NOT_FOUND,
  NO_ACTIVE_FLEET_TYPE,
  findAreaParams,
  getFleetTypeParams,
  resolveAddressParams,
  routeOf,
  routeParams,
  type RouteParams,
  type Trip,
} from '../../libs/contracts/geo';
import { badRequest, notFound, WaybillError } from '../../libs/errors';
import { ServiceDatabase } from '../../libs/mongo';
import { action, implement, type ServiceDefinition, type WaybillContext } from '../../libs/service';
import { version } from '../../package.json';
import {
  SAME_PLACE_MESSAGE,
  UNREADABLE,
  resolveAddress,
  samePlace,
  type ResolveOptions,
} from './address';
import { createNominatimGeocoder, type TextGeocoder } from './external-geocoder';
import { createFleetTypeActions } from './fleet-type-admin';
import {
  LIST_LIMITS,
  findArea,
  findCountry,
  listCities,
  listCountries,
  listStates,
  searchCities,
  searchCountries,
  searchStates,
  warmGazetteer,
} from './gazetteer';
import { Router } from './routing';
import {
  cityView,
  countryQuery,
  countryView,
  fleetTypeItem,
  placeQuery,
  routeView,
  stateView,
} from './schemas';
import { FleetTypeStore, defineGeoModels } from './store';
import {
  toCityItem,
  toCountryItem,
  toFleetTypeDetail,
  toFleetTypeItem,
  toStateItem,
} from './views';

/** Fleet types change rarely and every change is announced; this bounds a missed announcement. */
const FLEET_CACHE_MS = 30_000;

export function createGeoService(config: Config): ServiceDefinition {
  const db = new ServiceDatabase(config, 'geo', defineGeoModels);
  let logger: Logger | undefined;
  const fleetTypes = new FleetTypeStore(
    () => db.models,
    FLEET_CACHE_MS,
    (err) =>
      logger?.warn('Fleet types could not be read from the database; answering the last ones', {
        err,
      }),
  );
  let router: Router;
  let geocoder: TextGeocoder | undefined;

  const countryOf = (code: string) => {
    const country = findCountry(code);
    if (!country) throw new Error(`gazetteer has no country ${code}`);
    return country;
  };

  /** Saved addresses belong to the order service, each to its user; until it runs, no id resolves. */
  const lookupFor = (ctx: WaybillContext<unknown>): ResolveOptions => ({
    geocoder,
    async savedAddress(addressId) {
      const userId = ctx.meta.user?.id;
      if (!userId) return null;
      try {
        return await call(ctx, 'order.getAddress', { addressId, userId });
      } catch (err) {
        // No order node (down, or not deployed): not an answer that there is no such address.
        if ((err as { type?: string }).type === 'SERVICE_NOT_FOUND') return UNREADABLE;
        throw err;
      }
    },
  });

  async function findFleetType(fleetTypeId: string) {
    const record = await fleetTypes.find(fleetTypeId);
    if (!record) throw notFound(FLEET_TYPE_NOT_FOUND);
    return record;
  }

  /** Both ends resolved, and the route between them (`geo.route`, `geo.trip`). */
  async function trip(ctx: WaybillContext<RouteParams>): Promise<Trip> {
    const lookup = lookupFor(ctx);
    const [origin, destination] = await Promise.all([
      resolveAddress(ctx.params.origin, 'origin', lookup),
      resolveAddress(ctx.params.destination, 'destination', lookup),
    ]);
    if (samePlace(origin, destination)) {
      throw badRequest(SAME_PLACE_MESSAGE, [{ field: 'destination', message: SAME_PLACE_MESSAGE }]);
    }
    const speed = await speedFor(ctx.params.fleetTypeId);
    return { ...(await router.route(origin, destination, speed)), origin, destination };
  }

  /** The speed of the named fleet type, else of the smallest active one. */
  async function speedFor(fleetTypeId: string | undefined): Promise<number> {
    if (fleetTypeId) {
      // An inactive type is listed nowhere an integrator can see (GET /api/fleet-types).
      const fleet = await findFleetType(fleetTypeId);
      if (fleet.active) return fleet.averageSpeedKmh;
      // Inactive as this replica remembers it: another may have put it back and its
      // announcement not arrived yet, so the database decides before a 404.
      const stored = await fleetTypes.storedFleetType(fleetTypeId);
      if (!stored?.active) throw notFound(FLEET_TYPE_NOT_FOUND);
      return stored.averageSpeedKmh;
    }
    const [smallest] = await fleetTypes.list(true);
    if (!smallest) throw notFound(FLEET_TYPE_NOT_FOUND, [NO_ACTIVE_FLEET_TYPE]);
    return smallest.averageSpeedKmh;
  }

  return {
    name: 'geo',
    mixins: [db.mixin()],
    created() {
      logger = this.logger;
      router = new Router(config.routing, (reason) =>
        this.logger.warn('OSRM unavailable; using the straight-line estimate', { reason }),
      );
      if (config.geocoder.url) {
        const { url, ...settings } = config.geocoder;
        geocoder = createNominatimGeocoder({
          ...settings,
          baseUrl: url,
          userAgent: `Waybill/${version} (self-hosted courier platform)`,
          onFailure: (reason) =>
            this.logger.warn('Geocoder unavailable; using the offline gazetteer', { reason }),
        });
      }
    },
    async started() {
      warmGazetteer(); // build the indexes before the first request, not during it
      // The build leaves ~50 MB of garbage. With --expose-gc (see deploy/) it goes at once, and
      // the last-resort flavour (what V8 does on a low-memory signal) also compacts the heap and
      // hands the emptied pages back: a plain gc() left ~30 MB of them resident.
      (globalThis as { gc?: (options: object) => void }).gc?.({
        type: 'major',
        execution: 'sync',
        flavor: 'last-resort',
      });
      await db.connect();
      await fleetTypes.ensureDefaults();
    },
    events: {
      [FLEET_TYPES_CHANGED_EVENT]: () => fleetTypes.forget(),
    },
    actions: {
      countries: action({
        retry: 'safe',
        http: {
          group: 'api',
          method: 'GET',
          path: '/countries',
          message: 'Countries retrieved',
          response: Joi.array().items(countryView),
          summary: 'List or search countries',
          description: `Case- and accent-insensitive, by prefix, tolerant of a typo. At most ${LIST_LIMITS.countries} items.`,
        },
        params: countryQuery,
        handler(ctx) {
          const found = ctx.params.search
            ? searchCountries(ctx.params.search, LIST_LIMITS.countries)
            : listCountries(LIST_LIMITS.countries);
          return found.map(toCountryItem);
        },
      }),

      states: action({
        retry: 'safe',
        http: {
          group: 'api',
          method: 'GET',
          path: '/states',
          message: 'States retrieved',
          response: Joi.array().items(stateView),
          summary: 'List or search states (first-level divisions)',
          description: `Without \`search\`, the states of one country: \`countryCode\`, Nigeria by default, all of them (Slovenia has the most: 212). A search answers at most ${LIST_LIMITS.states} items.`,
        },
        params: placeQuery,
        handler(ctx) {
          const { search, countryCode } = ctx.params;
          const found = search
            ? searchStates(search, LIST_LIMITS.states, { countryCode })
            : // One country's states, all of them: a state picker needs no paging (decision 12).
              listStates(Number.MAX_SAFE_INTEGER, { countryCode: countryCode ?? 'NG' });
          return found.map((state) => toStateItem(state, countryOf(state.countryCode)));
        },
      }),

      cities: action({
        retry: 'safe',
        http: {
          group: 'api',
          method: 'GET',
          path: '/cities',
          message: 'Cities retrieved',
          response: Joi.array().items(cityView),
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

      /** Internal: one address input to a resolved address (pricing, and orders next). */
      resolveAddress: implement('geo.resolveAddress', {
        visibility: 'public',
        params: resolveAddressParams,
        handler(ctx) {
          const { address, field = 'address' } = ctx.params;
          return resolveAddress(address, field, lookupFor(ctx));
        },
      }),

      /**
       * Internal: checks that a country, state and LGA/city exist and answers them spelled
       * as resolved addresses spell them; 404 with a suggestion otherwise, its field error
       * naming the part not found. Pricing tiers and courier rules name places through this.
       */
      findArea: implement('geo.findArea', {
        visibility: 'public',
        params: findAreaParams,
        handler(ctx) {
          const { countryCode, state, lgaOrCity } = ctx.params;
          const found = findArea(countryCode, state, lgaOrCity);
          if ('problem' in found) {
            throw new WaybillError('NOT_FOUND', found.problem, {
              errors: [{ field: found.part, message: found.problem }],
            });
          }
          return found.area;
        },
      }),

      route: implement('geo.route', {
        http: {
          group: 'api',
          method: 'POST',
          path: '/route',
          message: 'Route resolved',
          summary: 'Resolve two addresses into a route with distance and ETA',
          description:
            'Distance is the larger of the straight line and the road distance; ETA uses the fleet type speed (the smallest active fleet type when none is given).',
          response: routeView,
          errors: { 404: FLEET_TYPE_NOT_FOUND },
        },
        params: routeParams,
        async handler(ctx) {
          return routeOf(await trip(ctx));
        },
      }),

      trip: implement('geo.trip', {
        params: routeParams,
        handler: trip,
      }),

      fleetTypes: action({
        retry: 'safe',
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
          return (await fleetTypes.list(true)).map(toFleetTypeItem);
        },
      }),

      /** Internal: one fleet type, active or not; 404 `Fleet type not found`. */
      getFleetType: implement('geo.getFleetType', {
        visibility: 'public',
        params: getFleetTypeParams,
        async handler(ctx) {
          return toFleetTypeDetail(await findFleetType(ctx.params.fleetTypeId));
        },
      }),

      ...createFleetTypeActions(fleetTypes),
    },
  };
}
