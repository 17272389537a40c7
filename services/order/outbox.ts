import type { DeliveryRecord } from './delivery-record';
import { contactAt, onTheWayMessages } from './notifications';
import type { OrderStore } from './store';
import { trackingPagePath } from './tracking-page';

/** The public tracking page of a delivery, for the recipient (no key: the id is the capability). */
export const trackingUrl = (publicBaseUrl: string, trackingId: string) =>
  `${publicBaseUrl}${trackingPagePath(trackingId)}`;

/**
 * The messages a delivery's transitions queue for people, as its effects settle them: each
 * named `<deliveryId>:<purpose>:<channel>`, so that a transition settled twice (by its writer
 * and by the sweep) queues them once.
 */
export class Outbox {
  constructor(
    private readonly store: OrderStore,
    private readonly publicBaseUrl: string,
  ) {}

  /** The courier has the package: the recipient is told, with the tracking page. */
  async courierOnTheWay(delivery: DeliveryRecord, at: Date): Promise<void> {
    const stop = await this.store.address(delivery.destinationId);
    if (!stop) throw new Error(`delivery ${delivery._id} lost its addresses`);
    const url = trackingUrl(this.publicBaseUrl, delivery.trackingId);
    await this.store.enqueue(onTheWayMessages(delivery, url, contactAt(stop), at));
  }
}
