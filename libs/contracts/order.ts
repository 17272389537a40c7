import Joi from '../joi';
import { onAreaGrid } from '../geodesy';
import { uuid } from '../schemas';
import type { ResolvedAddress } from './geo';
import type { Retry } from './retry';

/** What other services may know of the order service. */

export interface GetAddressParams {
  addressId: string;
  /** Whose address: another user's id finds nothing. */
  userId: string;
}

export const getAddressParams = Joi.object<GetAddressParams, true>({
  addressId: uuid().required(),
  userId: uuid().required(),
});

/** What a delivery event says: enough to route it (the API key) and to act on it. */
export interface DeliveryEventPayload {
  deliveryId: string;
  userId: string;
  /** The key that created the delivery (spec, Events); its owner's webhooks hear of it. */
  apiKeyId: string | null;
  trackingId: string;
  status: string;
  p2pStatus: string;
  matchingEligible: boolean;
  courierMatching: string;
  /** The courier assigned, once one is. */
  courierId: string | null;
  /** When the change happened. */
  at: string;
}

/**
 * What a delivery's linked recipient is not shown of it (decision 107): its creator's account,
 * key and tariff, and what the creator pays (the total stays when the recipient pays a share).
 */
export const CREATORS_OWN = [
  'userId',
  'apiKeyId',
  'deliveryFee',
  'serviceFee',
  'weightFee',
  'fleetFee',
  'surchargeFee',
  'insuranceFee',
  'baseOrDistanceFee',
  'hubCommission',
  'paymentMethodType',
  'tierIds',
  'tariffVersion',
] as const;

/** Of the delivery's P2P record (`p2pDelivery`), likewise. */
export const CREATORS_OWN_P2P = ['userId', 'profileId'] as const;

const leftOut = (fields: readonly string[], record: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(record).filter(([field]) => !fields.includes(field)));

/** Minutes the arrival window's ends are rounded out to. */
const ETA_ROUNDING_MINUTES = 5;

/**
 * The arrival window as anyone may be shown it (the tracking page, a linked recipient before the collection), on ETA_ROUNDING_MINUTES marks: the mark the read
 * follows plus the time left to each end rounded out. Its width to the second gave the
 * courier's distance left to the metre, and rounding the instants alone would not hide it
 * from a page watched over time: the moment an end moved to the next mark would tell the
 * time left. This way an end moves at the marks of the clock, whatever the time left, and
 * the window holds the reckoned one, each end up to two steps wider.
 */
export function roundedArrivalWindow(
  eta: { from: string; to: string },
  now: Date,
): { from: string; to: string } {
  const step = ETA_ROUNDING_MINUTES * 60_000;
  const down = (ms: number) => Math.floor(ms / step) * step;
  const up = (ms: number) => Math.ceil(ms / step) * step;
  const at = now.getTime();
  // The span of the clock the read falls in, up to a step before it: the window still holds
  // the reckoned one, its end a step later.
  const mark = down(at);
  const from = mark + down(Math.max(0, Date.parse(eta.from) - at));
  const to = mark + step + up(Math.max(0, Date.parse(eta.to) - at));
  return { from: new Date(from).toISOString(), to: new Date(to).toISOString() };
}

/**
 * A delivery as `GET /api/deliveries/:id` answers its linked recipient, from its creator's view
 * reckoned at `at`. The pickup's contact e-mail is the creator's own (by default their login),
 * and where the courier is on the way to the pickup, not yet carrying the recipient's parcel,
 * is shown as the tracking page shows it to anyone: its 0.01° cell (`onAreaGrid`) and the
 * arrival window on 5-minute marks (`roundedArrivalWindow`), whose width to the second would
 * give the courier's distance from the pickup.
 */
export function recipientsView(view: Record<string, unknown>, at: Date): Record<string, unknown> {
  const shown = leftOut(CREATORS_OWN, view);
  if (view.deliveryFeePayer === 'CREATOR') delete shown.deliveryFeeTotal;
  const p2p = view.p2pDelivery as Record<string, unknown> | undefined;
  if (p2p) shown.p2pDelivery = leftOut(CREATORS_OWN_P2P, p2p);
  // Theirs only: what the creator pays, and the link to it, is the creator's.
  const payment = view.payment as { recipient?: unknown } | undefined;
  if (payment) shown.payment = { recipient: payment.recipient };
  const origin = view.origin as Record<string, unknown> | undefined;
  if (origin) shown.origin = leftOut(['contactEmail'], origin);
  const courier = view.courier as Record<string, unknown> | undefined;
  if (courier && !followedByRecipient(view.status)) {
    shown.courier = { ...courier, currentLocation: null, eta: null };
  } else if (courier && COURIER_TO_PICKUP.has(view.status as string)) {
    const where = courier.currentLocation as { lat: number; lon: number } | null | undefined;
    const eta = courier.eta as { from: string; to: string } | null | undefined;
    shown.courier = {
      ...courier,
      currentLocation: where ? { ...where, ...onAreaGrid(where) } : where,
      eta: eta ? roundedArrivalWindow(eta, at) : eta,
    };
  }
  return shown;
}

/** Statuses in which the courier is on the way to the pickup, not yet carrying the packages. */
export const COURIER_TO_PICKUP: ReadonlySet<string> = new Set([
  'COURIER_ASSIGNED',
  'ARRIVED_AT_PICKUP',
]);

/**
 * Whether the recipient is shown where the courier is: not once the delivery goes back to the
 * sender (RETURNING), which is no longer on its way to them. The tracking page, the recipient's
 * reads and their endpoints alike.
 */
export const followedByRecipient = (status: unknown) => status !== 'RETURNING';

/**
 * Whether a linked recipient is told where the courier is (`courier.location`): only while it
 * carries their parcel; before the pickup their reads show only its area.
 */
export const recipientToldOfPositions = (status: unknown) =>
  followedByRecipient(status) && !COURIER_TO_PICKUP.has(status as string);

export const DELIVERY_CREATED_EVENT = 'order.deliveryCreated';
/** Every share of the fee is paid: matching may start. */
export const DELIVERY_PAID_EVENT = 'order.deliveryPaid';
export const DELIVERY_CANCELLED_EVENT = 'order.deliveryCancelled';
/** Any status change after creation (a courier assigned, collected, delivered…). */
export const DELIVERY_STATUS_CHANGED_EVENT = 'order.deliveryStatusChanged';

export interface OrderEvents {
  [DELIVERY_CREATED_EVENT]: DeliveryEventPayload;
  [DELIVERY_PAID_EVENT]: DeliveryEventPayload;
  [DELIVERY_CANCELLED_EVENT]: DeliveryEventPayload;
  [DELIVERY_STATUS_CHANGED_EVENT]: DeliveryEventPayload;
}

export interface AssignCourierParams {
  deliveryId: string;
  courierId: string;
}

export const assignCourierParams = Joi.object<AssignCourierParams, true>({
  deliveryId: uuid().required(),
  courierId: uuid().required(),
});

export interface MatchingEndParams {
  deliveryId: string;
}

export const matchingEndParams = Joi.object<MatchingEndParams, true>({
  deliveryId: uuid().required(),
});

/**
 * Whether the delivery now has this courier: false when it no longer waits for one (cancelled
 * meanwhile) or has another; `status` is the delivery's status after the call.
 */
export interface AssignAnswer {
  assigned: boolean;
  status: string;
}

/**
 * A delivery's tracking id: `P2P-` and 12 characters of Crockford's base 32 (services/order
 * codes.ts draws them). The gateway checks it before asking the order service anything.
 */
const TRACKING_ID = 'P2P-[0-9A-HJKMNP-TV-Z]{12}';
export const TRACKING_PATTERN = new RegExp(`^${TRACKING_ID}$`);
/** Every tracking id within a text (a message quoted back), in any case. */
export const TRACKING_ID_IN_TEXT = new RegExp(`\\b${TRACKING_ID}\\b`, 'gi');

/** What both the page and its stream answer for a tracking id we never issued (404). */
export const UNKNOWN_TRACKING_ID =
  'No delivery has this tracking number. Check the link in the message you were sent, or ask the sender for it.';

export interface TrackingParams {
  trackingId: string;
}

// Any text, of any length: a mistyped id is an unknown one (404, saying what to do), not a
// 400. Letters typed in lower case from a printed label are the same id. The HTTP server
// bounds how long a path may be.
export const trackingParams = Joi.object<TrackingParams, true>({
  trackingId: Joi.string().uppercase().required(),
});

/** A point of the tracking page's map drawing, in its own units (no coordinates on Earth). */
export interface MapPoint {
  x: number;
  y: number;
}

/**
 * What the public tracking page shows of a delivery (docs/deliveries.md, "Tracking page"):
 * first names only, place names rather than addresses, and the map as a drawing whose
 * points are relative to each other, never latitudes and longitudes.
 */
export interface TrackingView {
  trackingId: string;
  /**
   * The delivery's version the view was made from: a state of a lower one is older than what a
   * page shows (a gateway's feed read before the page loaded), and is not shown over it.
   * Absent from views of order nodes before session 64.
   */
  version?: number;
  status: string;
  /** The status as a sentence for the recipient. */
  statusText: string;
  /** The delivery is over: nothing will change any more. */
  terminal: boolean;
  /** A courier is on the errand: their position is worth refreshing. */
  live: boolean;
  steps: { step: string; label: string; at: string; active: boolean }[];
  pickup: { place: string; firstName: string | null };
  dropoff: { place: string; firstName: string | null };
  /** The priced trip, pickup to drop-off, in whole kilometres (at least 1). */
  distanceKm: number;
  courier: {
    firstName: string;
    vehicle: {
      /** The courier's fleet type, by name; null when geo cannot say at the moment. */
      type: string | null;
      make: string;
      model: string;
      colour: string;
      regNo: string;
    };
    /** Where the courier last reported, as a place name; null when not under way. */
    place: string | null;
  } | null;
  /**
   * Why no courier is shown, when none is: none was assigned (yet), their details are no
   * longer shown (COURIER_SHOWN_DAYS_AFTER_END after the end), or they cannot be read now.
   */
  courierWithheld: 'unassigned' | 'no-longer-shown' | 'unavailable' | null;
  eta: { from: string; to: string } | null;
  /** The IANA zone the page shows times in: the delivery's tariff's. */
  timeZone: string;
  map: {
    width: number;
    height: number;
    pickup: MapPoint;
    dropoff: MapPoint;
    courier: MapPoint | null;
  };
}

/** The view and the page's live regions as markup (the page swaps those that changed). */
export interface TrackingState {
  view: TrackingView;
  regions: Record<string, string>;
}

export interface OrderActions {
  /** The public tracking page's state of a delivery, or null for an unknown tracking id. */
  'order.trackingState': { params: TrackingParams; answer: TrackingState | null };
  /** A user's saved address (one stored on a delivery), or null when there is none. */
  'order.getAddress': { params: GetAddressParams; answer: ResolvedAddress | null };
  /** Matching found a courier who accepted: the delivery is theirs. Repeatable. */
  'order.assignCourier': { params: AssignCourierParams; answer: AssignAnswer };
  /** Matching gave up: the delivery ends NO_COURIER_FOUND, refunded and released. Repeatable. */
  'order.noCourierFound': { params: MatchingEndParams; answer: { status: string } };
}

export const ORDER_RETRY = {
  'order.getAddress': 'safe',
  'order.assignCourier': 'safe',
  'order.noCourierFound': 'safe',
  'order.trackingState': 'safe',
} as const satisfies Record<keyof OrderActions, Retry>;
