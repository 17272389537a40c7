import { call, type Caller } from '../../libs/contracts';
import { COURIER_TO_PICKUP } from '../../libs/contracts/order';
import { onAreaGrid } from '../../libs/geodesy';
import type { DeliveryRecord, StoredAddress } from './delivery-record';
import { etaWindow, UNDER_WAY } from './eta';

export interface CourierViewOptions {
  now?: Date;
  located?: boolean;
  /**
   * The arrival window reckoned from the middle of the courier's 0.01° cell (`onAreaGrid`), for
   * a reader shown no more than that cell (the tracking page): one from the point would give,
   * as its rounded ends step with the time left, the courier's distance to some tens of metres.
   * Its place (and position) is the cell's middle's too.
   */
  etaFromArea?: boolean;
  /**
   * How old a position the reader is shown at most: older, the courier is not placed. For a
   * reader told no time with it (the tracking page), to whom a phone gone quiet for hours would
   * otherwise show a marker and "Last seen near" as if the courier were there now.
   */
  placedWithinMs?: number;
}

/** The courier of a delivery as a reader sees it (`courierOnDelivery`, freshness given). */
export type CourierViewer = (
  services: Caller,
  delivery: DeliveryRecord,
  addresses: Map<string, StoredAddress>,
  options?: CourierViewOptions,
) => Promise<CourierOnDelivery | undefined>;

/** `courierOnDelivery` with the platform's COURIER_ONLINE_MS. */
export const courierViewer =
  (freshForMs: number): CourierViewer =>
  (services, delivery, addresses, options = {}) =>
    courierOnDelivery(services, delivery, addresses, { ...options, freshForMs });

/**
 * `viewer`, showing no courier when the directory cannot be read (courier-matching restarting):
 * a reader's answer does not fail for its courier, whose assignment its status still shows.
 * `whereShown` completes the log's `courier not shown …`.
 */
export function courierIfReadable(
  viewer: CourierViewer,
  logger: () => { warn(message: string, meta: object): void },
  whereShown: string,
): CourierViewer {
  return (services, delivery, addresses, options) =>
    viewer(services, delivery, addresses, options).catch((err: Error) => {
      logger().warn(`courier not shown ${whereShown}`, { err: err.message });
      return undefined;
    });
}

/** The reads a page of deliveries makes for each of them that are the same for many. */
const SHARED_READS = new Set(['courier-matching.getCourier', 'geo.getFleetType']);

/**
 * `services` for the reading of a page of deliveries: a courier's profile and a fleet type are
 * asked once for the page, however many of its deliveries share them (a page of 100 under way
 * asked geo for its fleet type 100 times).
 */
export function sharedReads(services: Caller): Caller {
  const answers = new Map<string, Promise<unknown>>();
  return {
    meta: services.meta,
    call(actionName, params, opts) {
      if (!SHARED_READS.has(actionName)) return services.call(actionName, params, opts);
      const key = `${actionName} ${JSON.stringify(params)}`;
      let answer = answers.get(key);
      if (!answer) {
        answer = services.call(actionName, params, opts);
        answers.set(key, answer);
      }
      return answer;
    },
  };
}

/** The spec's courier view, on a delivery once a courier is assigned. */
export interface CourierOnDelivery {
  name: string;
  phone: string;
  profilePhoto: string | null;
  /** Where the courier last reported while on this delivery; null otherwise. */
  currentLocation: {
    country: string;
    state: string | null;
    lgaOrCity: string | null;
    lat: number;
    lon: number;
  } | null;
  /**
   * When the delivery should reach the drop-off; null when not under way, or without a position
   * reported within COURIER_ONLINE_MS (a phone gone quiet: a window reckoned from `now` and an
   * old position would slide later and later, promising what nobody is doing).
   */
  eta: { from: string; to: string } | null;
  fleet: { regNo: string; make: string; model: string; colour: string; typeId: string };
}

/**
 * The assigned courier as the merchant sees them: the directory's profile and fleet, the last
 * reported position resolved by geo to its place, and an arrival window from the distance
 * left and the courier's fleet speed. Undefined until a courier is assigned.
 *
 * `located` says whether the reader is shown where the courier is: by default while the
 * courier is carrying the delivery out; a reader who is not (the recipient once it goes back
 * to the sender) passes false and geo is not asked for what would be dropped. `freshForMs`
 * (COURIER_ONLINE_MS): how recent a position an arrival window is reckoned from.
 */
async function courierOnDelivery(
  services: Caller,
  delivery: DeliveryRecord,
  addresses: Map<string, StoredAddress>,
  {
    now = new Date(),
    located = UNDER_WAY.has(delivery.lifecycle.status),
    etaFromArea = false,
    placedWithinMs,
    freshForMs,
  }: CourierViewOptions & { freshForMs: number },
): Promise<CourierOnDelivery | undefined> {
  const courierId = delivery.assignment?.courierId;
  if (!courierId) return undefined;
  const courier = await call(services, 'courier-matching.getCourier', { courierId });
  if (!courier) return undefined;
  const { fleet } = courier;
  const view: CourierOnDelivery = {
    name: courier.name,
    phone: courier.phone,
    profilePhoto: courier.profilePhoto,
    currentLocation: null,
    eta: null,
    fleet: {
      regNo: fleet.regNo,
      make: fleet.make,
      model: fleet.model,
      colour: fleet.colour,
      typeId: fleet.typeId,
    },
  };
  const at = courier.lastLocation;
  // Where the courier is belongs to the delivery only while they are carrying it out.
  if (!at || !located || !UNDER_WAY.has(delivery.lifecycle.status)) return view;
  // Not after NaN either: a position of unknown age says nothing of where they are now.
  const reportedAt = Date.parse(at.at);
  if (placedWithinMs !== undefined && !(reportedAt >= now.getTime() - placedWithinMs)) {
    return view;
  }
  // A reader shown no more than the cell has it placed from the cell: a place named from the
  // point would tell which side of a boundary within it the courier is.
  const shown = etaFromArea ? onAreaGrid(at) : { lat: at.lat, lon: at.lon };
  const found = await Promise.all([
    call(services, 'geo.resolveAddress', { address: { lat: shown.lat, lon: shown.lon } }),
    call(services, 'geo.getFleetType', { fleetTypeId: fleet.typeId }),
  ]).catch(() => null);
  // A position geo cannot place (far from any known place), a fleet type since removed, or
  // geo unreachable: the rest of the view stands (a read must not fail for the map's sake).
  if (!found) return view;
  const [place, fleetType] = found;
  view.currentLocation = {
    country: place.country,
    state: place.state ?? null,
    lgaOrCity: place.lgaOrCity ?? null,
    ...shown,
  };
  const pickup = addresses.get(delivery.originId)?.fields;
  const dropoff = addresses.get(delivery.destinationId)?.fields;
  // Not after NaN either: a position of unknown age promises nothing.
  const fresh = reportedAt >= now.getTime() - freshForMs;
  if (pickup && dropoff && fresh) {
    const { status } = delivery.lifecycle;
    // Before the collection for every reader: a linked recipient is then shown only the cell,
    // and their view is cut from this one (the webhooks' too), with no speeds to reckon again.
    const fromArea = etaFromArea || COURIER_TO_PICKUP.has(status);
    view.eta = etaWindow(
      {
        status,
        courier: fromArea ? onAreaGrid(at) : at,
        pickup,
        dropoff,
        tripKm: delivery.distanceKm,
        speedKmh: fleetType.averageSpeedKmh,
      },
      now,
    );
  }
  return view;
}
