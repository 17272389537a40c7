import type { Logger } from 'moleculer';
import { call, type Caller } from '../../libs/contracts';
import type { CourierMove } from '../../libs/contracts/matching';
import { TAKING_LOCATIONS_MAX, type WebhookEventType } from '../../libs/contracts/webhook';
import { recipientToldOfPositions } from '../../libs/contracts/order';
import { nameBasedId } from '../../libs/ids';
import { BoundedMap } from '../../libs/lookup-cache';
import type { CourierViewer } from './courier-view';
import type { DeliveryRecord } from './delivery-record';
import type { OrderStore, TransitionRecord } from './store';
import { UNDER_WAY } from './eta';
import type { DeliveryTransitions } from './transitions';
import { toDeliveryView } from './views';
import { creationEvents, eventSequence, transitionEvents, webhookEventId } from './webhook-events';

/**
 * A position's place among its delivery's events: after the change it was read at, before the
 * next one (the webhook service skips it once that next one went or waits, decision 77).
 */
const LOCATION_INDEX = 9;

/** Who is told where the delivery's courier is: its creator, and its linked recipient while told. */
const toldOfPositions = (delivery: DeliveryRecord): string[] =>
  delivery.recipientUserId && recipientToldOfPositions(delivery.lifecycle.status)
    ? [delivery.userId, delivery.recipientUserId]
    : [delivery.userId];

/** Deliveries whose published events an announcer remembers (a few minutes' worth). */
const PUBLISHED_KEPT = 5_000;

export interface AnnouncerDeps {
  store: OrderStore;
  transitions: DeliveryTransitions;
  services: () => Caller;
  courierOf: CourierViewer;
  logger: () => Logger;
}

interface Due {
  type: WebhookEventType;
  sequence: number;
  at: Date;
  /** Set for events that are not one of the delivery's changes (a courier's position). */
  id?: string;
}

/**
 * Hands a delivery's webhook events to the webhook service, at least once and in order: a
 * transition that makes events is stored `unannounced` and stays so until the webhook service
 * took them, with every earlier one of its delivery; the creation's events go before any.
 * Whatever fails is published again by the sweep (`webhook.publish` is repeatable).
 */
export class Announcer {
  /**
   * For a delivery, the version up to which this process published its events (0: the
   * creation's). Once published they stay so, so the writer of the next transition need not
   * read the chain to find what went before: one read a transition fewer.
   */
  private readonly publishedUpTo = new BoundedMap<number>(PUBLISHED_KEPT);

  constructor(private readonly deps: AnnouncerDeps) {}

  private published(deliveryId: string, version: number): void {
    if ((this.publishedUpTo.get(deliveryId) ?? -1) < version) {
      this.publishedUpTo.set(deliveryId, version);
    }
  }

  /** The creation's events; throws when the webhook service did not take them. */
  async creation(delivery: DeliveryRecord): Promise<void> {
    const due = creationEvents(delivery.lifecycle).map((type, i) => ({
      type,
      sequence: eventSequence(0, i),
      at: delivery.createdAt,
    }));
    await this.publish(delivery, due);
    this.published(delivery._id, 0);
  }

  /**
   * The sweep's part for one delivery: the events of its transitions up to version `upTo` whose
   * record says they are not published, oldest first, handed over and recorded. The chain is
   * read whatever this process published (`publishedUpTo`): the sweep is what clears a record
   * its writer published but could not clear. Throws when the webhook service did not take
   * them (they stay for the next sweep).
   */
  private async transitionsUpTo(deliveryId: string, upTo: number): Promise<void> {
    const unannounced = await this.unannouncedUpTo(deliveryId, upTo, { fromRecordsOnly: true });
    if (unannounced === null) return;
    if (unannounced.length > 0) {
      const delivery = await this.deps.transitions.current(deliveryId);
      if (!delivery) return;
      await this.publishTransitions(delivery, unannounced);
    }
    this.published(deliveryId, upTo);
    for (const t of unannounced) await this.deps.store.workDone(t, ['unannounced']);
  }

  /**
   * Its writer's part, right after applying `transition` (not read again): its events and
   * any earlier ones not yet published, with `delivery` as the transition left it as their
   * data. The earlier ones are marked published; whether `transition`'s own went is answered
   * (true when it has none), for its writer to record with the rest of its work.
   */
  async applied(delivery: DeliveryRecord, transition: TransitionRecord): Promise<boolean> {
    const earlier = await this.unannouncedUpTo(delivery._id, transition.version - 1);
    // Its request still pending: nothing goes before the creation's events.
    if (earlier === null) return !transition.unannounced;
    const due = transition.unannounced ? [...earlier, transition] : earlier;
    if (due.length > 0) await this.publishTransitions(delivery, due);
    // Published, whatever becomes of the records below: any left uncleared are the sweep's.
    this.published(delivery._id, transition.version);
    for (const t of earlier) await this.deps.store.workDone(t, ['unannounced']);
    return true;
  }

  /**
   * The delivery's transitions up to `upTo` whose events are not published, oldest first;
   * null while its creation's are not (its request still pending), which go before any. A
   * writer does not read those this process published; the sweep (`fromRecordsOnly`) reads the
   * records whatever this process remembers.
   */
  private async unannouncedUpTo(
    deliveryId: string,
    upTo: number,
    { fromRecordsOnly = false } = {},
  ): Promise<TransitionRecord[] | null> {
    const { store } = this.deps;
    const unannounced: TransitionRecord[] = [];
    const publishedHere = fromRecordsOnly ? undefined : this.publishedUpTo.get(deliveryId);
    for (let v = upTo; v > (publishedHere ?? 0); v--) {
      const t = await store.transition(deliveryId, v);
      if (!t) continue;
      if (t.unannounced) unannounced.unshift(t);
      // Announced in order: one published means every one before it was too, the creation's
      // first (published before its request stops pending).
      else if (transitionEvents(t).length > 0) return unannounced;
    }
    if (publishedHere !== undefined) return unannounced;
    return (await store.pending(deliveryId)) ? null : unannounced;
  }

  private async publishTransitions(
    delivery: DeliveryRecord,
    transitions: readonly TransitionRecord[],
  ): Promise<void> {
    const due = transitions.flatMap((t) =>
      transitionEvents(t).map((type, i) => ({
        type,
        sequence: eventSequence(t.version, i),
        at: t.at,
      })),
    );
    await this.publish(delivery, due);
  }

  /** The sweep's part: transitions whose writer could not publish their events. */
  async sweep(unannounced: readonly TransitionRecord[]): Promise<void> {
    const latest = new Map<string, number>();
    for (const t of unannounced) {
      latest.set(t.deliveryId, Math.max(latest.get(t.deliveryId) ?? 0, t.version));
    }
    for (const [deliveryId, version] of latest) {
      try {
        await this.transitionsUpTo(deliveryId, version);
      } catch (err) {
        // One delivery whose events cannot be published leaves the others to go.
        this.deps.logger().warn('delivery events not published; next sweep retries', {
          deliveryId,
          err: (err as Error).message,
        });
      }
    }
  }

  /**
   * Where the courier of each delivery under way now is (`courier.location`): not kept, a
   * position is stale by the next one, which comes with the next flush of positions. None goes
   * while a change of the delivery waits for the sweep: it would reach the endpoint before
   * that change (`courier.assigned` among them), which the webhook service cannot put back
   * in order once the position is sent.
   */
  async locations(moves: readonly CourierMove[]): Promise<void> {
    const under: { move: CourierMove; delivery: DeliveryRecord }[] = [];
    for (const move of moves) {
      const delivery = await this.deps.transitions.current(move.deliveryId);
      if (!delivery || delivery.assignment?.courierId !== move.courierId) continue;
      if (!UNDER_WAY.has(delivery.lifecycle.status)) continue;
      under.push({ move, delivery });
    }
    const taking = await this.takingLocations(under.map(({ delivery }) => delivery));
    for (const { move, delivery } of under) {
      if (taking && !toldOfPositions(delivery).some((id) => taking.has(id))) continue;
      const unannounced = await this.unannouncedUpTo(delivery._id, delivery.version);
      if (unannounced?.length !== 0) continue;
      this.published(delivery._id, delivery.version);
      await this.publishOnce(delivery, [
        {
          type: 'courier.location',
          sequence: eventSequence(delivery.version, LOCATION_INDEX),
          at: new Date(move.at),
          id: nameBasedId('courier-location', delivery._id, move.courierId, move.at),
        },
      ]);
    }
  }

  /**
   * Of the deliveries' creators and linked recipients, those with an endpoint that takes
   * positions: most take none, and a position built for nobody cost its courier's read (a
   * call) and a publication (another) per delivery under way each flush. Null when the
   * webhook service lacks the action (one of the version before, during a rollout): all are
   * built.
   */
  private async takingLocations(deliveries: DeliveryRecord[]): Promise<Set<string> | null> {
    const ids = [...new Set(deliveries.flatMap(toldOfPositions))];
    const taking = new Set<string>();
    try {
      for (let i = 0; i < ids.length; i += TAKING_LOCATIONS_MAX) {
        const { userIds } = await call(this.deps.services(), 'webhook.takingLocations', {
          userIds: ids.slice(i, i + TAKING_LOCATIONS_MAX),
        });
        for (const id of userIds) taking.add(id);
      }
    } catch (err) {
      // Not found: a webhook node of the version before, without the action (or no webhook
      // node at all, whose publications then fail as before): all are published, as then. Any
      // other failure (slow, its circuit open, its queue full) skips this flush's positions,
      // which are not kept: building them all would load it most when it can least take them.
      const older = (err as { type?: unknown }).type === 'SERVICE_NOT_FOUND';
      this.deps
        .logger()
        .warn(
          older
            ? 'who takes couriers’ positions not known (webhook service of the version before); all are published'
            : 'who takes couriers’ positions not known; none are published this flush',
          { err: (err as Error).message },
        );
      return older ? null : new Set();
    }
    return taking;
  }

  /** A position not published is not tried again: the next one comes with the next flush. */
  private async publishOnce(delivery: DeliveryRecord, due: Due[]): Promise<void> {
    try {
      await this.publish(delivery, due);
    } catch (err) {
      this.deps.logger().warn('courier position not published', {
        deliveryId: delivery._id,
        err: (err as Error).message,
      });
    }
  }

  /** `data` is the delivery as `GET /api/deliveries/:id` answers it now. */
  private async publish(delivery: DeliveryRecord, due: Due[]): Promise<void> {
    if (due.length === 0) return;
    const services = this.deps.services();
    const addresses = await this.deps.store.addresses([delivery.originId, delivery.destinationId]);
    const courier = await this.deps.courierOf(services, delivery, addresses);
    const data = toDeliveryView(delivery, addresses, courier) as unknown as Record<string, unknown>;
    await call(services, 'webhook.publish', {
      events: due.map((e) => ({
        id: e.id ?? webhookEventId(delivery._id, e.sequence),
        type: e.type,
        userId: delivery.userId,
        ...(delivery.recipientUserId ? { recipientUserId: delivery.recipientUserId } : {}),
        deliveryId: delivery._id,
        sequence: e.sequence,
        createdAt: e.at.toISOString(),
        data,
      })),
    });
  }
}
