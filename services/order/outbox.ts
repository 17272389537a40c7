import type { Config } from '../../libs/config';
import type { DeliveryRecord } from './delivery-record';
import { isTerminal } from './lifecycle';
import { contactAt, dropsWithdrawnText, onTheWayMessages } from './notifications';
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
  /** Live: a withdrawn message's text is dropped, as a sent one's is. */
  private readonly dropWithdrawnText: boolean;

  constructor(
    private readonly store: OrderStore,
    private readonly publicBaseUrl: string,
    appEnv: Config['appEnv'],
  ) {
    this.dropWithdrawnText = dropsWithdrawnText(appEnv);
  }

  /**
   * The courier has the package: the recipient is told, with the tracking page. Not once the
   * delivery is over (a late settling by the sweep): its unsent messages were withdrawn then.
   */
  async courierOnTheWay(delivery: DeliveryRecord, at: Date): Promise<void> {
    if (isTerminal(delivery.lifecycle.status)) return;
    const stop = await this.store.address(delivery.destinationId);
    if (!stop) throw new Error(`delivery ${delivery._id} lost its addresses`);
    const url = trackingUrl(this.publicBaseUrl, delivery.trackingId);
    await this.store.enqueue(onTheWayMessages(delivery, url, contactAt(stop), at));
  }

  /** The delivery is over: whatever it has not sent yet is withdrawn (effect WITHDRAW_MESSAGES). */
  async withdrawUnsent(delivery: DeliveryRecord, at: Date): Promise<void> {
    const unsent = (await this.store.notificationsOf(delivery._id)).filter(
      (message) => message.status === 'PENDING',
    );
    if (unsent.length === 0) return;
    await this.store.supersedeMessages(
      unsent.map((message) => message._id),
      at,
      this.dropWithdrawnText,
    );
  }
}
