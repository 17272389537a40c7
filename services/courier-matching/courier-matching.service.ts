import type { Config } from '../../libs/config';
import {
  courierIdParams,
  merchantCouriersParams,
  type MerchantCouriersParams,
} from '../../libs/contracts/matching';
import { ServiceDatabase } from '../../libs/mongo';
import {
  implement,
  type ServiceDefinition,
  type WaybillContext,
  type WithDefaults,
} from '../../libs/service';
import { createCourierAdminActions } from './courier-admin';
import { CourierStore, defineMatchingModels } from './store';
import { toCourierView } from './views';

/**
 * Courier matching. Its directory part: couriers (profile, fleet, whether active, last known
 * location) and each merchant's own courier list (docs/couriers.md).
 */
export function createCourierMatchingService(config: Config): ServiceDefinition {
  // The database is named for what it holds (waybill_matching), not for the service.
  const db = new ServiceDatabase(config, 'matching', defineMatchingModels);
  const store = new CourierStore(() => db.models);

  return {
    name: 'courier-matching',
    mixins: [db.mixin()],
    actions: {
      /** Internal: a courier by profile id, active or not; null when there is none. */
      getCourier: implement('courier-matching.getCourier', {
        visibility: 'public',
        params: courierIdParams,
        async handler(ctx) {
          const record = await store.find(ctx.params.courierId);
          return record ? toCourierView(record) : null;
        },
      }),

      /** Internal: the couriers on a merchant's own list, by default the active ones only. */
      merchantCouriers: implement('courier-matching.merchantCouriers', {
        visibility: 'public',
        params: merchantCouriersParams,
        async handler(ctx: WaybillContext<WithDefaults<MerchantCouriersParams, 'activeOnly'>>) {
          const { userId, activeOnly } = ctx.params;
          const couriers = await store.merchantCouriers(userId);
          return couriers.filter((c) => c.active || !activeOnly).map(toCourierView);
        },
      }),

      ...createCourierAdminActions(config, store),
    },
  };
}
