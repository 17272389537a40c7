import type { Logger, ServiceBroker } from 'moleculer';
import Joi from '../../libs/joi';
import { Backfills } from '../../libs/backfills';
import type { Config } from '../../libs/config';
import { CachedValue } from '../../libs/cache';
import { LookupCache } from '../../libs/lookup-cache';
import { call, emit } from '../../libs/contracts';
import { FLEET_TYPES_CHANGED_EVENT } from '../../libs/contracts/geo';
import {
  COURIER_CHANGED_EVENT,
  COURIERS_MOVED_EVENT,
  courierIdParams,
  deliveryIdParams,
  merchantCouriersParams,
  mayCarryParams,
  mayCollectParams,
  placeVirtualCourierParams,
  startSearchParams,
  virtualStart,
  type MerchantCouriersParams,
} from '../../libs/contracts/matching';
import { Periodic } from '../../libs/periodic';
import { registerHealthCheck, unregisterHealthCheck } from '../../libs/health';
import { ServiceDatabase } from '../../libs/mongo';
import { connectRedis, createRedis, redisReady } from '../../libs/redis';
import {
  action,
  implement,
  requireCourier,
  type ServiceDefinition,
  type WaybillContext,
  type WithDefaults,
} from '../../libs/service';
import { createCourierAdminActions } from './courier-admin';
import { createTokenActions } from './courier-tokens';
import { LocationFlusher } from './location-flusher';
import { CourierLocations } from './locations';
import { CourierPositions } from './positions';
import { locationParams, offerIdParams, offerView, reportedLocationView } from './schemas';
import { searchGauge } from './search-gauge';
import { Searches } from './searches';
import { SearchNotes } from './search-notes';
import { SearchStore } from './search-store';
import { ableToCarry } from './matching-rules';
import { virtualCourier } from './virtual-courier';
import { CourierStore, defineMatchingModels, type CourierRecord } from './store';
import { CourierTokenStore } from './token-store';

/** Nearest free couriers asked for at each step of a search. */
const SEARCH_CANDIDATES = 10;
/** How long what a courier owes in cash is taken as known, and how long payment is waited for. */
const CASH_OWED_CACHE_MS = 5_000;
const CASH_OWED_TIMEOUT_MS = 2_000;
/** Searches stepped per sweep; the next sweep takes the rest. */
const SWEEP_BATCH = 200;

/**
 * Whether a courier of a merchant's list may be asked for its deliveries: at work, and not the
 * sandbox's virtual courier of one simulated delivery (put on a list before that was refused).
 */
const mayBeAsked = (courier: Pick<CourierRecord, 'active' | 'virtual'>): boolean =>
  courier.active && courier.virtual !== true;

/**
 * Courier matching. So far: the directory (couriers, each merchant's own courier list), the
 * courier tokens of the courier app, and where couriers are: their location reports, kept in
 * Redis indexed by H3 cell and written to MongoDB at a lower rate (docs/couriers.md).
 */
export function createCourierMatchingService(config: Config): ServiceDefinition {
  // The database is named for what it holds (waybill_matching), not for the service.
  const db = new ServiceDatabase(config, 'matching', defineMatchingModels);
  const store = new CourierStore(() => db.models);
  const tokens = new CourierTokenStore(
    () => db.models.CourierToken,
    () => db.models.CourierTokenPlace,
  );
  let logger: Logger | undefined;
  let broker: ServiceBroker;
  const log = () => logger as Logger;
  const redis = createRedis(
    config.redisUrl,
    `${config.namespace}-courier-matching`,
    (err) =>
      logger?.warn('Redis unreachable; location reports and courier searches answer 503', {
        err: err.message,
      }),
    { commandTimeoutMs: config.redisCommandTimeoutMs },
  );
  const positions = new CourierPositions(redis, {
    keyPrefix: `${config.namespace}:couriers:`,
    onlineMs: config.courierPositions.onlineMs,
  });
  const locations = new CourierLocations({ store, positions, logger: log });
  const flusher = new LocationFlusher({
    positions,
    store,
    intervalMs: config.courierPositions.flushMs,
    logger: log,
    // Followers of a delivery (webhooks) hear where its courier is at the rate of flushes.
    async onBusyMoved(moved) {
      const held = await Promise.all(moved.map((m) => searches.held(m.courierId)));
      const moves = moved.flatMap((m, i) => {
        const deliveryId = held[i];
        if (!deliveryId) return [];
        const { courierId, lat, lon, at } = m;
        return [{ courierId, deliveryId, lat, lon, at: at.toISOString() }];
      });
      if (moves.length > 0) await emit(broker, COURIERS_MOVED_EVENT, { moves });
    },
  });
  // Which fleet types carry what changes rarely; geo announces each change.
  const fleetTypes = new CachedValue(
    () => call(broker, 'geo.listFleetTypes', { activeOnly: false }),
    60_000,
    (err) =>
      logger?.warn('Fleet types could not be read again; searching with the last ones', { err }),
  );
  // Set once the broker exists (created): what each sweep saw, on `/metrics`.
  let reportSearches: ReturnType<typeof searchGauge> = () => undefined;
  // What couriers owe in cash, asked of payment briefly at most once per courier: their reports
  // wake a pay-on-delivery's search every few seconds. A slow answer holds no sweep long.
  const askCashOwed = async (courierId: string) =>
    (
      await call(
        broker,
        'payment.cashOwed',
        { courierId },
        { timeout: CASH_OWED_TIMEOUT_MS, retries: 0 },
      )
    ).owedKobo;
  const cashOwed = new LookupCache<number>({
    cacheMs: CASH_OWED_CACHE_MS,
    lookup: askCashOwed,
  });
  const searchStore = new SearchStore(() => db.models);
  const searchNotes = new SearchNotes(searchStore);
  /**
   * A position of a simulation's virtual courier, marked busy first, each time: no real search
   * ever sees it, not even after Redis lost its hash (a restart) and the report made it anew.
   */
  const reportVirtualCourier = async (courierId: string, at: { lat: number; lon: number }) => {
    await positions.setBusy(courierId, true);
    await locations.report(courierId, at.lat, at.lon, new Date());
  };
  const searches = new Searches({
    store: searchStore,
    notes: searchNotes,
    couriers: positions,
    services: () => broker,
    settings: { ...config.matching, candidates: SEARCH_CANDIDATES },
    fleetTypes: () => fleetTypes.get(),
    merchantCourierIds: async (userId) =>
      (await store.merchantCouriers(userId)).filter(mayBeAsked).map((c) => c._id),
    isActive: async (courierId) => (await store.find(courierId))?.active === true,
    cashOwedKobo: async (courierId, fresh) =>
      fresh ? askCashOwed(courierId) : ((await cashOwed.get(courierId)) ?? 0),
    async placeVirtualCourier(search) {
      const courier = virtualCourier(search);
      await store.ensureVirtual(courier);
      await reportVirtualCourier(courier._id, virtualStart(search.pickup));
    },
    async freeVirtualCourier(courierId) {
      // Out of Redis first (and of the positions waiting to be written), then, once a flush
      // that took it before is written, the record flushes wrote.
      await positions.forget(courierId);
      await flusher.settled();
      await store.forgetLocation(courierId);
      locations.forget(courierId);
    },
    logger: log,
    onSwept: (counts) => reportSearches(counts),
  });
  const sweep = new Periodic(
    config.matching.sweepIntervalMs,
    () => searches.sweep(SWEEP_BATCH),
    (err) => log().warn('matching sweep failed; the next one retries', { err }),
  );

  // Awaited: until it is done the merchants' lists stored earlier read empty, and
  // MERCHANT_SPECIAL_COURIERS requests would be refused.
  const backfills = new Backfills(
    [
      {
        what: "merchants' couriers linked before their lists",
        run: (pass) => store.listStoredLinks(pass),
        awaited: true,
      },
    ],
    config.backfillAfterRolloutMs,
  );

  return {
    name: 'courier-matching',
    mixins: [db.mixin()],
    created() {
      logger = this.logger;
      broker = this.broker;
      reportSearches = searchGauge(broker);
    },
    async started() {
      await backfills.start(this.logger);
      registerHealthCheck(this.broker, 'matching-redis', () => redisReady(redis));
      // Not awaited: without Redis the service still starts; positions answer 503.
      connectRedis(redis).catch(() => {
        /* reported by the client's error listener */
      });
      if (!config.background) return;
      flusher.start();
      sweep.start();
    },
    async stopped() {
      await backfills.stop();
      await sweep.stop();
      await flusher.stop();
      unregisterHealthCheck(this.broker, 'matching-redis');
      redis.disconnect();
    },
    events: {
      [FLEET_TYPES_CHANGED_EVENT]: { handler: () => fleetTypes.invalidate() },
      [COURIER_CHANGED_EVENT]: {
        handler: (ctx: { params: { courierId?: unknown } }) => {
          if (typeof ctx.params.courierId === 'string') locations.forget(ctx.params.courierId);
        },
      },
    },
    actions: {
      /** Internal: a courier by profile id, active or not; null when there is none. */
      getCourier: implement('courier-matching.getCourier', {
        visibility: 'public',
        params: courierIdParams,
        handler: (ctx) => locations.viewById(ctx.params.courierId),
      }),

      /** Internal: the couriers on a merchant's own list, by default the active ones only. */
      merchantCouriers: implement('courier-matching.merchantCouriers', {
        visibility: 'public',
        params: merchantCouriersParams,
        async handler(ctx: WaybillContext<WithDefaults<MerchantCouriersParams, 'activeOnly'>>) {
          const { userId, activeOnly } = ctx.params;
          const couriers = await store.merchantCouriers(userId);
          return locations.views(couriers.filter((c) => mayBeAsked(c) || !activeOnly));
        },
      }),

      reportLocation: action({
        // The same position again is the same position.
        retry: 'safe',
        http: {
          group: 'courier',
          method: 'POST',
          path: '/location',
          message: 'Location recorded',
          summary: 'Report where the courier is',
          description:
            'The courier app reports every few seconds while the courier works. A courier is offered deliveries only while its last report is younger than `COURIER_ONLINE_MS` (2 minutes by default). `at` is when the platform took the report.',
          response: reportedLocationView,
          errors: { 403: 'The courier is retired (inactive)' },
        },
        params: locationParams,
        async handler(ctx) {
          const courierId = requireCourier(ctx);
          const { lat, lon } = ctx.params;
          const at = new Date();
          const report = await locations.report(courierId, lat, lon, at);
          if (report.busyFor) await searches.checkBusy(courierId, report.busyFor);
          const held = report.checkUnmarked && (await searches.checkUnmarked(courierId));
          // Only a courier free for an offer wakes the searches near it: those at work report
          // every few seconds, and woke every waiting search in reach at each (decision 93).
          if (report.available && !held) searches.courierNear({ lat, lon }, at);
          return { lat, lon, at: at.toISOString() };
        },
      }),

      /** Internal: order's call once every share of a delivery is paid. */
      startSearch: implement('courier-matching.startSearch', {
        visibility: 'public',
        params: startSearchParams,
        handler: (ctx) => searches.start(ctx.params),
      }),

      /** Internal: order's call once a delivery is over (cancelled, delivered, failed…). */
      endMatching: implement('courier-matching.endMatching', {
        visibility: 'public',
        params: deliveryIdParams,
        handler: (ctx) => searches.end(ctx.params.deliveryId),
      }),

      /** Internal: order's question before it takes a pay-on-delivery only these may carry. */
      mayCollect: implement('courier-matching.mayCollect', {
        visibility: 'public',
        params: mayCollectParams,
        async handler(ctx) {
          const { courierIds, collectKobo } = ctx.params;
          return { courierIds: await searches.allowedToCollect(courierIds, collectKobo) };
        },
      }),

      /** Internal: order's question before it takes a delivery only these may carry. */
      mayCarry: implement('courier-matching.mayCarry', {
        visibility: 'public',
        params: mayCarryParams,
        async handler(ctx) {
          const { courierIds, fleetTypeId, weightGrams } = ctx.params;
          const [couriers, types] = await Promise.all([
            store.findInOrder(courierIds),
            fleetTypes.get(),
          ]);
          return { courierIds: ableToCarry(couriers, types, fleetTypeId, weightGrams) };
        },
      }),

      /** Internal: the delivery a courier holds (order's `/courier/deliveries/current`). */
      heldDelivery: implement('courier-matching.heldDelivery', {
        visibility: 'public',
        params: courierIdParams,
        async handler(ctx) {
          return { deliveryId: await searches.held(ctx.params.courierId) };
        },
      }),

      /** Internal: the sandbox's simulator moves a virtual courier along its route. */
      placeVirtualCourier: implement('courier-matching.placeVirtualCourier', {
        visibility: 'public',
        params: placeVirtualCourierParams,
        async handler(ctx) {
          const { courierId, lat, lon } = ctx.params;
          // Busy again before each report, as when first placed: a Redis emptied since (a
          // restart) would otherwise take its report for a free courier's, and put it in the
          // sets real searches read, for the rest of its run.
          const placed = await searches.moveVirtualCourier(courierId, () =>
            reportVirtualCourier(courierId, { lat, lon }),
          );
          return { placed };
        },
      }),

      offers: action({
        retry: 'safe',
        http: {
          group: 'courier',
          method: 'GET',
          path: '/offers',
          message: 'Offers retrieved',
          summary: 'The delivery offered to the courier now, if any',
          description:
            'At most one: a courier is offered one delivery at a time, for `MATCHING_OFFER_TIMEOUT_MS` (30 s by default). Poll it while working.',
          response: Joi.array().items(offerView),
        },
        params: Joi.object({}),
        handler: (ctx) => searches.openOffers(requireCourier(ctx)),
      }),

      acceptOffer: action({
        // Accepting twice answers as the first did.
        retry: 'safe',
        http: {
          group: 'courier',
          method: 'POST',
          path: '/offers/:offerId/accept',
          message: 'Offer accepted',
          summary: 'Take the offered delivery',
          description:
            'The delivery is the courier’s: it shows on `GET /courier/deliveries/current` and the merchant sees the courier.',
          response: offerView,
          errors: {
            404: 'Offer not found (not yours)',
            409: 'The offer expired, was declined or withdrawn, or the delivery no longer needs a courier',
          },
        },
        params: offerIdParams,
        async handler(ctx) {
          return searches.accept(requireCourier(ctx), ctx.params.offerId);
        },
      }),

      declineOffer: action({
        retry: 'safe',
        http: {
          group: 'courier',
          method: 'POST',
          path: '/offers/:offerId/decline',
          message: 'Offer declined',
          summary: 'Turn the offered delivery down',
          description: 'The delivery goes to the next courier; it is not offered to you again.',
          response: offerView,
          errors: { 404: 'Offer not found (not yours)', 409: 'The offer was accepted or closed' },
        },
        params: offerIdParams,
        async handler(ctx) {
          return searches.decline(requireCourier(ctx), ctx.params.offerId);
        },
      }),

      ...createTokenActions({ couriers: store, tokens }),
      ...createCourierAdminActions({
        config,
        store,
        tokens,
        locations,
        holds: searchStore,
        searchNotes,
      }),
    },
  };
}
