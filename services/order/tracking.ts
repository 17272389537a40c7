import {
  followedByRecipient,
  roundedArrivalWindow,
  type TrackingView,
} from '../../libs/contracts/order';
import { onAreaGrid } from '../../libs/geodesy';
import { DEFAULT_TIME_ZONE } from '../../libs/schedule';
import { readable } from '../../libs/text';
import type { CourierOnDelivery } from './courier-view';
import { shownSteps, type DeliveryRecord, type StoredAddress } from './delivery-record';
import { UNDER_WAY } from './eta';
import { isMatchingEligible, isTerminal, type DeliveryStatus } from './lifecycle';
import { projectMap } from './tracking-map';

/**
 * The public tracking page's view of a delivery. The tracking id is all a visitor needs, and
 * it travels in texts that get forwarded, so the view is redacted here, in one place: people
 * by their first name only, stops by their place name (city or LGA, state) rather than their
 * street, the map as a drawing of points relative to each other on a grid of about a kilometre,
 * the trip and the arrival window as round figures. No phone, e-mail, last name, street
 * address, note, price or proof code ever reaches it.
 */

/** A step of the delivery as the recipient reads it. */
const STEP_LABELS: Record<DeliveryStatus, string> = {
  REQUEST_CREATED: 'Booked',
  COURIER_ASSIGNED: 'Courier assigned',
  ARRIVED_AT_PICKUP: 'Courier at the pickup',
  COLLECTED: 'Collected',
  IN_TRANSIT: 'On the way',
  ARRIVED_AT_DROPOFF: 'Courier at the drop-off',
  DELIVERED: 'Delivered',
  FAILED: 'Could not be delivered',
  RETURNING: 'Going back to the sender',
  RETURNED: 'Returned to the sender',
  CANCELLED: 'Cancelled',
  NO_COURIER_FOUND: 'No courier found',
};

/** The status as a sentence, with what the recipient may do when there is something. */
export const STATUS_TEXT: Record<DeliveryStatus, string> = {
  REQUEST_CREATED: 'Your delivery is booked. We are finding a courier.',
  COURIER_ASSIGNED: 'A courier is on the way to collect your delivery.',
  ARRIVED_AT_PICKUP: 'The courier is at the pickup, collecting your delivery.',
  COLLECTED: 'The courier has your delivery.',
  IN_TRANSIT: 'Your delivery is on its way to you.',
  ARRIVED_AT_DROPOFF: 'The courier has arrived at the drop-off. Please meet them.',
  DELIVERED: 'Delivered. Thank you!',
  FAILED:
    'The delivery could not be completed. The sender has been told; contact them for what happens next.',
  RETURNING: 'The delivery is going back to the sender. Contact the sender for what happens next.',
  RETURNED: 'The delivery is back with the sender. Contact the sender for what happens next.',
  CANCELLED: 'This delivery was cancelled by the sender. Contact them if you expected it.',
  NO_COURIER_FOUND:
    'No courier was found, so the delivery was called off. Contact the sender to book it again.',
};

const AWAITING_PAYMENT = 'A courier is found for it once it is paid.';

/** CANCELLED by a payment that did not go through, not by the sender. */
const PAYMENT_NOT_MADE =
  'This delivery was called off because its payment did not go through. Contact the sender if you expected it.';

/**
 * Days a delivery's page still names its courier (first name, vehicle, plate) after the
 * delivery ended: links get forwarded and kept, and a courier's plate is nobody's business
 * once the packages arrived.
 */
const COURIER_SHOWN_DAYS_AFTER_END = 7;

/**
 * How old a courier's last report the page still places them by (marker, "Last seen near"): it
 * says no time with it, and a phone gone quiet for an hour would show them where they were as
 * if they were there now. Longer than a report's usual gaps (a tunnel, a dead zone), so the
 * marker does not come and go in traffic.
 */
export const TRACKING_POSITION_SHOWN_MS = 10 * 60_000;

/** Whether the page no longer names the delivery's courier: ended that many days ago. */
export function courierForgotten(
  delivery: Pick<DeliveryRecord, 'lifecycle' | 'steps'>,
  now: Date,
): boolean {
  if (!isTerminal(delivery.lifecycle.status)) return false;
  const endedAt = Math.max(...delivery.steps.map((s) => new Date(s.updatedAt).getTime()));
  return now.getTime() - endedAt > COURIER_SHOWN_DAYS_AFTER_END * 86_400_000;
}

/**
 * The trip's length as the page states it: whole kilometres, at least 1 (with the drawing,
 * a length to the metre placed a stop as exactly as a coordinate would).
 */
const shownKm = (km: number) => Math.max(1, Math.round(km));

/**
 * Whether the recipient follows the courier (position, arrival window, live updates): on the
 * way to them, not once it goes back to the sender (`followedByRecipient`).
 */
export function isFollowed(status: DeliveryStatus): boolean {
  return UNDER_WAY.has(status) && followedByRecipient(status);
}

/** When a delivery's courier is searched for: `searchFrom` (null: at once), as of `now`. */
export interface SearchTime {
  searchFrom: Date | null;
  now: Date;
}

/**
 * The status as a sentence for this delivery: a SCHEDULED one waiting for its courier is
 * booked for its day and slot, its courier looked for on the day (`searchFrom`), not since it
 * was booked; once that time has come, we are finding one.
 */
export function statusTextOf(
  delivery: Pick<DeliveryRecord, 'lifecycle' | 'deliveryDate' | 'deliverySlot' | 'paymentFailed'>,
  { searchFrom, now }: SearchTime,
): string {
  const { status } = delivery.lifecycle;
  if (status === 'CANCELLED' && delivery.paymentFailed) return PAYMENT_NOT_MADE;
  // A share still owed (a checkout open, a recipient's share of a split): no search yet.
  const unpaid = status === 'REQUEST_CREATED' && !isMatchingEligible(delivery.lifecycle);
  if (status === 'REQUEST_CREATED' && delivery.deliveryDate && delivery.deliverySlot) {
    const day = new Intl.DateTimeFormat('en-GB', {
      timeZone: 'UTC',
      weekday: 'long',
      day: 'numeric',
      month: 'long',
      year: 'numeric',
    }).format(new Date(delivery.deliveryDate));
    const searching = searchFrom === null || searchFrom.getTime() <= now.getTime();
    const next = unpaid
      ? AWAITING_PAYMENT
      : searching
        ? 'We are finding a courier.'
        : 'A courier is found for it on the day.';
    return `Your delivery is booked for ${day}, ${delivery.deliverySlot}. ${next}`;
  }
  return unpaid ? `Your delivery is booked. ${AWAITING_PAYMENT}` : STATUS_TEXT[status];
}

/** The first word of a name: `Ada Obi` → `Ada`; null when there is no name. */
export function firstName(name: unknown): string | null {
  if (typeof name !== 'string') return null;
  // Readable: a name stored before names were plain text may hold control characters.
  const first = readable(name).trim().split(/\s+/)[0];
  return first ? first : null;
}

/** `Ikeja, Lagos`: the smallest place and its state, as the merchant's list names them. */
export function placeName(place: {
  lgaOrCity?: unknown;
  state?: unknown;
  country?: unknown;
}): string {
  const parts = [place.lgaOrCity, place.state].filter(
    (p, i, all): p is string => typeof p === 'string' && p !== '' && all.indexOf(p) === i,
  );
  if (parts.length > 0) return parts.join(', ');
  return typeof place.country === 'string' ? place.country : 'Unknown place';
}

/**
 * The view of a delivery whose stops are known; its `assigned` courier as the merchant's view
 * has it (not named once COURIER_SHOWN_DAYS_AFTER_END have passed since the end), and the
 * name of their fleet type when it is not the one the delivery was priced for (a larger
 * vehicle may carry a small load: docs/matching.md).
 */
export function toTrackingView(
  delivery: DeliveryRecord,
  addresses: Map<string, StoredAddress>,
  assigned: CourierOnDelivery | undefined,
  searchTime: SearchTime,
  otherFleetTypeName: string | null = null,
  /** The assigned courier could not be read now (`assigned` is then undefined). */
  courierUnreadable = false,
): TrackingView {
  const status = delivery.lifecycle.status;
  const origin = addresses.get(delivery.originId)?.fields;
  const destination = addresses.get(delivery.destinationId)?.fields;
  if (!origin || !destination) throw new Error(`delivery ${delivery._id} without its addresses`);
  const followed = isFollowed(status);
  const forgotten = courierForgotten(delivery, searchTime.now);
  const courier = forgotten ? undefined : assigned;
  const at = followed ? (courier?.currentLocation ?? null) : null;
  return {
    trackingId: delivery.trackingId,
    version: delivery.version,
    status,
    statusText: statusTextOf(delivery, searchTime),
    terminal: isTerminal(status),
    live: followed && courier !== undefined,
    steps: shownSteps(delivery.steps).map((s) => ({
      step: s.step,
      label: STEP_LABELS[s.step as DeliveryStatus] ?? s.step,
      at: new Date(s.updatedAt).toISOString(),
      active: s.active,
    })),
    pickup: { place: placeName(origin), firstName: firstName(origin.contactName) },
    dropoff: { place: placeName(destination), firstName: firstName(destination.contactName) },
    distanceKm: shownKm(delivery.distanceKm),
    courier: courier
      ? {
          firstName: firstName(courier.name) ?? 'Your courier',
          vehicle: {
            type:
              courier.fleet.typeId === delivery.fleetType.id
                ? delivery.fleetType.name
                : otherFleetTypeName,
            make: courier.fleet.make,
            model: courier.fleet.model,
            colour: courier.fleet.colour,
            regNo: courier.fleet.regNo,
          },
          place: at ? placeName(at) : null,
        }
      : null,
    // A courier assigned and read as none has left the directory: no longer shown, as after
    // the week that follows a delivery's end.
    courierWithheld: courier
      ? null
      : !delivery.assignment
        ? 'unassigned'
        : courierUnreadable && !forgotten
          ? 'unavailable'
          : 'no-longer-shown',
    eta: followed && courier?.eta ? roundedArrivalWindow(courier.eta, searchTime.now) : null,
    timeZone: delivery.timeZone ?? DEFAULT_TIME_ZONE,
    map: projectMap(onAreaGrid(origin), onAreaGrid(destination), at ? onAreaGrid(at) : null),
  };
}
