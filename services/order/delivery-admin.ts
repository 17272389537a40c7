import type { Logger } from 'moleculer';
import { conflict, notFound } from '../../libs/errors';
import { action, operatorOf, type ServiceActions, type WaybillContext } from '../../libs/service';
import { courierIfReadable, type CourierViewer } from './courier-view';
import type { DeliveryRecord } from './delivery-record';
import type { DeliveryStatus, LifecycleEvent } from './lifecycle';
import { DELIVERY_NOT_FOUND } from './parties';
import {
  deliveryIdParams,
  deliveryView,
  operatorFailParams,
  type OperatorFailParams,
} from './schemas';
import type { Settlement } from './settlement';
import type { OrderStore } from './store';
import type { DeliveryTransitions } from './transitions';
import { toDeliveryView } from './views';

/**
 * What operators may do for a courier who cannot (a phone lost, a courier gone with the
 * parcel): past collection only couriers' steps move a delivery, the merchant can no longer
 * cancel it, and its courier cannot be retired while they hold it. The same transitions as
 * the courier's, with the same effects (decision 111).
 */

/** The reason a failure an operator records keeps, telling it from a courier's. */
export const operatorsReason = (reason: string) => `${reason} (recorded by an operator)`;

export interface DeliveryAdminDeps {
  store: OrderStore;
  transitions: DeliveryTransitions;
  settlement: Settlement;
  courierOf: CourierViewer;
  /** The delivery, stored first if its request was answered 201 and its write failed. */
  stored: (deliveryId: string) => Promise<DeliveryRecord | null>;
  logger: () => Logger;
}

export function createDeliveryAdminActions(deps: DeliveryAdminDeps): ServiceActions {
  const { store, transitions, settlement } = deps;
  const operatorsCourier = courierIfReadable(deps.courierOf, deps.logger, 'to an operator');

  /**
   * The delivery, as its merchant finds it: one answered 201 whose write failed is stored
   * first, not answered 404 to support until the sweep stores it.
   */
  async function existing(deliveryId: string): Promise<DeliveryRecord> {
    const delivery = await deps.stored(deliveryId);
    if (!delivery) throw notFound(DELIVERY_NOT_FOUND);
    return delivery;
  }

  /**
   * The delivery as its creator sees it. Its courier is left out when the directory cannot be
   * read: after a change, the answer must not say it failed when it was made.
   */
  async function operatorsView(ctx: WaybillContext<unknown>, delivery: DeliveryRecord) {
    const addresses = await store.addresses([delivery.originId, delivery.destinationId]);
    const courier = await operatorsCourier(ctx, delivery, addresses);
    return toDeliveryView(delivery, addresses, courier);
  }

  async function apply(
    ctx: WaybillContext<unknown>,
    deliveryId: string,
    event: LifecycleEvent,
    from?: DeliveryStatus,
  ): Promise<Record<string, unknown>> {
    const delivery = await existing(deliveryId);
    const applied = await transitions.apply(deliveryId, event, { known: delivery, from });
    if (!applied.applied) throw conflict(applied.message);
    await settlement.afterTransition(applied.delivery, applied.transition);
    deps.logger().info('delivery moved by an operator', {
      deliveryId,
      event: event.kind,
      status: applied.delivery.lifecycle.status,
      ...operatorOf(ctx.meta),
    });
    return operatorsView(ctx, applied.delivery);
  }

  const stepErrors = {
    404: DELIVERY_NOT_FOUND,
    409: 'Not a step the delivery’s status takes (the message names it)',
  };

  return {
    adminDelivery: action({
      retry: 'safe',
      http: {
        group: 'admin',
        method: 'GET',
        path: '/deliveries/:deliveryId',
        message: 'Delivery retrieved',
        summary: 'Any delivery, as its creator sees it',
        response: deliveryView,
        errors: { 404: DELIVERY_NOT_FOUND },
      },
      params: deliveryIdParams,
      async handler(ctx) {
        return operatorsView(ctx, await existing(ctx.params.deliveryId));
      },
    }),

    adminFailDelivery: action({
      // A repeat answers 409 naming the status this call moved the delivery to.
      retry: 'never',
      http: {
        group: 'admin',
        method: 'POST',
        path: '/deliveries/:deliveryId/fail',
        message: 'Delivery FAILED',
        summary: 'Record that a delivery cannot go on, for its courier',
        description:
          'As the courier’s `failed`: before collection the delivery ends FAILED and everything is given back; past it the packages go back to the sender (RETURNING), and the fee is kept for the trip. For a courier who cannot report it themselves, from the status you decided on (`expectedStatus`). A pay-on-delivery at ARRIVED_AT_DROPOFF may have been handed over and paid for while its courier was offline: ask them first, since their `delivered` is refused afterwards. See docs/deliveries.md.',
        response: deliveryView,
        errors: {
          ...stepErrors,
          409: 'Not a step the delivery’s status takes, or the delivery is no longer in `expectedStatus` (the message names its status)',
        },
      },
      params: operatorFailParams,
      handler: (ctx: WaybillContext<OperatorFailParams>) =>
        apply(
          ctx,
          ctx.params.deliveryId,
          { kind: 'FAILED', reason: operatorsReason(ctx.params.reason) },
          ctx.params.expectedStatus,
        ),
    }),

    adminReturnDelivery: action({
      retry: 'never',
      http: {
        group: 'admin',
        method: 'POST',
        path: '/deliveries/:deliveryId/returned',
        message: 'Delivery RETURNED',
        summary: 'Record that a returning delivery’s packages are back with the sender',
        description:
          'As the courier’s `returned`, without the return code the sender was sent (check with the sender first: it is the way out when every code was lost or the courier cannot report): the delivery ends RETURNED, its packages free again and its courier too (who may then be retired). See docs/deliveries.md.',
        response: deliveryView,
        errors: stepErrors,
      },
      params: deliveryIdParams,
      handler: (ctx: WaybillContext<{ deliveryId: string }>) =>
        apply(ctx, ctx.params.deliveryId, { kind: 'RETURNED' }),
    }),
  };
}
