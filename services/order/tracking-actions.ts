import type { Logger } from 'moleculer';
import { call, type Caller } from '../../libs/contracts';
import {
  TRACKING_PATTERN,
  trackingParams,
  UNKNOWN_TRACKING_ID,
  type TrackingState,
} from '../../libs/contracts/order';
import { notFound } from '../../libs/errors';
import { linkedPage } from '../../libs/schemas';
import { action, implement, type ServiceActions } from '../../libs/service';
import type { CourierViewer } from './courier-view';
import { searchStartsAt } from './scheduling';
import type { OrderStore } from './store';
import {
  TRACKING_POSITION_SHOWN_MS,
  courierForgotten,
  isFollowed,
  toTrackingView,
} from './tracking';
import { TRACKING_PAGE_CSP, trackingPage, trackingState } from './tracking-page';
import type { DeliveryTransitions } from './transitions';

/**
 * The public tracking page and the state its live updates carry (docs/deliveries.md,
 * "Tracking page"). The tracking id is the only credential: it is looked up by `_id` in
 * `tracking_refs`, one read, whatever a visitor sends.
 */
export function createTrackingActions(deps: {
  store: OrderStore;
  transitions: DeliveryTransitions;
  courierOf: CourierViewer;
  logger: () => Logger;
  /** ORDER_SCHEDULED_SEARCH_LEAD_MS: when a SCHEDULED delivery's courier is looked for. */
  scheduledSearchLeadMs: number;
}): ServiceActions {
  const { store, transitions, scheduledSearchLeadMs } = deps;

  async function stateOf(services: Caller, trackingId: string): Promise<TrackingState | null> {
    if (!TRACKING_PATTERN.test(trackingId)) return null;
    const deliveryId = await store.deliveryIdByTracking(trackingId);
    const delivery = deliveryId ? await transitions.current(deliveryId) : null;
    // A ref naming a delivery stored under another id opens nothing: none should (a request
    // stores the id it claimed), and the check costs no read.
    if (delivery?.trackingId !== trackingId) return null;
    const addresses = await store.addresses([delivery.originId, delivery.destinationId]);
    const now = new Date();
    // A page must not fail for its courier: unreadable (courier-matching away), it says so.
    let unreadable = false;
    const courier = courierForgotten(delivery, now)
      ? undefined
      : await deps
          .courierOf(services, delivery, addresses, {
            now,
            located: isFollowed(delivery.lifecycle.status),
            etaFromArea: true,
            placedWithinMs: TRACKING_POSITION_SHOWN_MS,
          })
          .catch((err: Error) => {
            deps.logger().warn('courier not shown on a tracking page', { err: err.message });
            unreadable = true;
            return undefined;
          });
    const searchFrom = searchStartsAt(delivery, scheduledSearchLeadMs);
    const fleetTypeId = courier?.fleet.typeId;
    // A page must not fail for a vehicle's name: without geo it goes unnamed.
    const otherFleetType =
      fleetTypeId && fleetTypeId !== delivery.fleetType.id
        ? await call(services, 'geo.getFleetType', { fleetTypeId }).then(
            (type) => type.name,
            () => null,
          )
        : null;
    return trackingState(
      toTrackingView(delivery, addresses, courier, { searchFrom, now }, otherFleetType, unreadable),
    );
  }

  return {
    trackingPage: action({
      retry: 'safe',
      http: {
        group: 'track',
        method: 'GET',
        path: '/:trackingId',
        page: true,
        message: 'Tracking page',
        summary: 'The public tracking page of a delivery (HTML, for the recipient)',
      },
      params: linkedPage(trackingParams),
      async handler(ctx) {
        const state = await stateOf(ctx, ctx.params.trackingId);
        if (!state) throw notFound(UNKNOWN_TRACKING_ID);
        ctx.meta.$responseHeaders = { 'Content-Security-Policy': TRACKING_PAGE_CSP };
        return trackingPage(state);
      },
    }),

    /** Internal: what the gateway's event stream of a tracking page sends. */
    trackingState: implement('order.trackingState', {
      visibility: 'public',
      params: trackingParams,
      handler: (ctx) => stateOf(ctx, ctx.params.trackingId),
    }),
  };
}
