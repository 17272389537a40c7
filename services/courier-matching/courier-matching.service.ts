import type { Logger } from 'moleculer';
import type { Config } from '../../libs/config';
import {
  COURIER_CHANGED_EVENT,
  courierIdParams,
  merchantCouriersParams,
  type MerchantCouriersParams,
} from '../../libs/contracts/matching';
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
import { locationParams, reportedLocationView } from './schemas';
import { CourierStore, defineMatchingModels } from './store';
import { CourierTokenStore } from './token-store';

/**
 * Courier matching. So far: the directory (couriers, each merchant's own courier list), the
 * courier tokens of the courier app, and where couriers are: their location reports, kept in
 * Redis indexed by H3 cell and written to MongoDB at a lower rate (docs/couriers.md).
 */
export function createCourierMatchingService(config: Config): ServiceDefinition {
  // The database is named for what it holds (waybill_matching), not for the service.
  const db = new ServiceDatabase(config, 'matching', defineMatchingModels);
  const store = new CourierStore(() => db.models);
  const tokens = new CourierTokenStore(() => db.models.CourierToken);
  let logger: Logger | undefined;
  const log = () => logger as Logger;
  const redis = createRedis(config.redisUrl, `${config.namespace}-courier-matching`, (err) =>
    logger?.warn('Redis unreachable; location reports and courier searches answer 503', {
      err: err.message,
    }),
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
  });

  return {
    name: 'courier-matching',
    mixins: [db.mixin()],
    created() {
      logger = this.logger;
    },
    started() {
      registerHealthCheck(this.broker, 'matching-redis', () => redisReady(redis));
      // Not awaited: without Redis the service still starts; positions answer 503.
      connectRedis(redis).catch(() => {
        /* reported by the client's error listener */
      });
      flusher.start();
    },
    async stopped() {
      await flusher.stop();
      unregisterHealthCheck(this.broker, 'matching-redis');
      redis.disconnect();
    },
    events: {
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
        async handler(ctx) {
          const record = await store.find(ctx.params.courierId);
          return record ? locations.view(record) : null;
        },
      }),

      /** Internal: the couriers on a merchant's own list, by default the active ones only. */
      merchantCouriers: implement('courier-matching.merchantCouriers', {
        visibility: 'public',
        params: merchantCouriersParams,
        async handler(ctx: WaybillContext<WithDefaults<MerchantCouriersParams, 'activeOnly'>>) {
          const { userId, activeOnly } = ctx.params;
          const couriers = await store.merchantCouriers(userId);
          return locations.views(couriers.filter((c) => c.active || !activeOnly));
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
          await locations.report(courierId, lat, lon, at);
          return { lat, lon, at: at.toISOString() };
        },
      }),

      ...createTokenActions({ couriers: store, tokens }),
      ...createCourierAdminActions({ config, store, tokens, locations }),
    },
  };
}
