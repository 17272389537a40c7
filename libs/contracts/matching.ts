import Joi from '../joi';
import { nameBasedId } from '../ids';
import { IssuedTokens } from '../issued-tokens';
import { formatNaira } from '../money';
import { uuid } from '../schemas';
import { latitude, longitude } from './geo';
import type { Retry } from './retry';

/**
 * What other services may know of the courier-matching service: its directory (couriers and
 * each merchant's own courier list), the courier tokens the gateway authenticates the courier
 * app with, and the events that tell caches a courier or its tokens changed.
 */

/** How a delivery request chooses its courier (`courierSelection`). */
export const COURIER_SELECTIONS = ['ANYONE', 'SPECIFIC', 'MERCHANT_SPECIAL_COURIERS'] as const;
export type CourierSelection = (typeof COURIER_SELECTIONS)[number];

/** The 404 of a SPECIFIC request (or a pay-on-delivery courier) naming no active courier. */
export const COURIER_NOT_FOUND = 'Courier not found';
/** The 404 of a MERCHANT_SPECIAL_COURIERS request when the merchant's list has no active courier. */
export const NO_MERCHANT_COURIERS = 'No merchant-specific couriers found';

/**
 * The 422 of a pay-on-delivery only a courier who would pass the cash limit with it may carry.
 * It tells no amount the courier owes: any merchant may name any courier.
 */
export const courierCannotCollect = (collectKobo: number) =>
  `This courier cannot collect NGN ${formatNaira(collectKobo)} on delivery now: it would take the cash they hold past the cash limit until they hand it in. Choose another courier, or courierSelection ANYONE`;
/** The same for a merchant's own couriers, every one of them. */
export const noCourierCanCollect = (collectKobo: number) =>
  `None of your couriers can collect NGN ${formatNaira(collectKobo)} on delivery now: each would take the cash they hold past the cash limit until they hand it in. Try again once one has, or choose courierSelection ANYONE`;
/** A courier named for a delivery whose vehicle cannot carry its load (`mayCarry`), in kg. */
export const courierCannotCarry = (kg: string) =>
  `This courier's vehicle cannot carry ${kg} kg: the delivery would wait for them and end with no courier found. Choose another courier, or courierSelection ANYONE, with a new Idempotency-Key`;
/** The same for a merchant's own couriers, every one of them. */
export const noCourierCanCarry = (kg: string) =>
  `None of your couriers' vehicles can carry ${kg} kg: the delivery would wait for them and end with no courier found. Choose courierSelection ANYONE, or put a courier with a larger vehicle on your list, and send it with a new Idempotency-Key`;

export interface CourierFleet {
  /** A geo fleet type id. */
  typeId: string;
  regNo: string;
  make: string;
  model: string;
  colour: string;
}

export interface CourierLocation {
  lat: number;
  lon: number;
  /** When the courier reported it. */
  at: string;
}

/** A courier as operators and other services see it; `id` is the courier profile id. */
export interface CourierView {
  id: string;
  name: string;
  /** E.164. */
  phone: string;
  profilePhoto: string | null;
  fleet: CourierFleet;
  active: boolean;
  /** The sandbox's courier of one simulated delivery: no request may name it. */
  virtual: boolean;
  lastLocation: CourierLocation | null;
  createdAt: string;
  updatedAt: string;
}

export interface CourierIdParams {
  courierId: string;
}

export const courierIdParams = Joi.object<CourierIdParams, true>({
  courierId: uuid().required(),
});

export interface MerchantCouriersParams {
  userId: string;
  /** Only active couriers (default true): what a delivery may be offered to. */
  activeOnly?: boolean;
}

export const merchantCouriersParams = Joi.object<MerchantCouriersParams, true>({
  userId: uuid().required(),
  activeOnly: Joi.boolean().default(true),
});

/**
 * The sandbox's simulations (staging only), asked for with the `Waybill-Simulate` header of
 * `POST /api/request`: a virtual courier takes the delivery to the door, or fails on the way,
 * or nobody is found.
 */
export const SIMULATION_MODES = ['delivered', 'failed', 'no-courier'] as const;
export type SimulationMode = (typeof SIMULATION_MODES)[number];
export const SIMULATE_HEADER = 'Waybill-Simulate';

/** What matching needs to find a courier for a delivery whose fee is paid. */
export interface StartSearchParams {
  deliveryId: string;
  /** The merchant: MERCHANT_SPECIAL_COURIERS searches their list. */
  userId: string;
  pickup: { lat: number; lon: number };
  dropoff: { lat: number; lon: number };
  /** The fleet type the delivery was priced for. */
  fleetTypeId: string;
  weightGrams: number;
  courierSelection: CourierSelection;
  /** SPECIFIC: the only courier it may be offered to. */
  courierId: string | null;
  /** A sandbox delivery: a virtual courier, at SIMULATOR_TIME_SCALE (null: a real search). */
  simulate?: SimulationMode | null;
  /**
   * No courier is sought after this instant (a SCHEDULED delivery's slot closes then): the
   * search ends NO_COURIER at it, at its first step if it started later. Null or absent: the
   * search's own time only.
   */
  notAfter?: Date | null;
  /**
   * Pay-on-delivery: the cash its courier will collect, in kobo. A courier it would take past
   * MATCHING_COURIER_CASH_LIMIT_NAIRA of cash owed is not offered it. Null or absent: none.
   */
  collectKobo?: number | null;
}

/** A virtual courier of the sandbox moves: where it is now. */
export interface PlaceVirtualCourierParams {
  courierId: string;
  lat: number;
  lon: number;
}

export const placeVirtualCourierParams = Joi.object<PlaceVirtualCourierParams, true>({
  courierId: uuid().required(),
  lat: latitude().required(),
  lon: longitude().required(),
});

const point = () => Joi.object({ lat: latitude().required(), lon: longitude().required() });

export const startSearchParams = Joi.object<StartSearchParams, true>({
  deliveryId: uuid().required(),
  userId: uuid().required(),
  pickup: point().required(),
  dropoff: point().required(),
  fleetTypeId: uuid().required(),
  weightGrams: Joi.number().integer().min(0).required(),
  courierSelection: Joi.string()
    .valid(...COURIER_SELECTIONS)
    .required(),
  courierId: uuid().allow(null).required(),
  simulate: Joi.string()
    .valid(...SIMULATION_MODES)
    .allow(null)
    .default(null),
  notAfter: Joi.date().iso().allow(null).default(null),
  collectKobo: Joi.number().integer().min(0).allow(null).default(null),
});

/** The sandbox's virtual courier of a simulated delivery: one per delivery, named after it. */
export const virtualCourierId = (deliveryId: string) => nameBasedId('virtual-courier', deliveryId);

/** How far from the pickup the sandbox's virtual courier starts: a short ride away. */
export const VIRTUAL_START_KM = 1;
const KM_PER_DEGREE_LATITUDE = 111.2;

/** Where the virtual courier of a simulated delivery starts: `VIRTUAL_START_KM` north of it. */
export function virtualStart(pickup: { lat: number; lon: number }): { lat: number; lon: number } {
  return {
    lat: Math.min(90, pickup.lat + VIRTUAL_START_KM / KM_PER_DEGREE_LATITUDE),
    lon: pickup.lon,
  };
}

export interface DeliveryIdParams {
  deliveryId: string;
}

export const deliveryIdParams = Joi.object<DeliveryIdParams, true>({
  deliveryId: uuid().required(),
});

/**
 * Couriers asked about at most by one `mayCollect` or `mayCarry`: a merchant's list longer than
 * this is not asked about, and matching holds its rules at each offer.
 */
export const NAMED_COURIERS_ASKED_MAX = 100;

export interface MayCollectParams {
  courierIds: string[];
  /** The cash a pay-on-delivery would have its courier collect, in kobo. */
  collectKobo: number;
}

export const mayCollectParams = Joi.object<MayCollectParams, true>({
  courierIds: Joi.array().items(uuid()).min(1).max(NAMED_COURIERS_ASKED_MAX).required(),
  collectKobo: Joi.number().integer().min(0).required(),
});

export interface MayCarryParams {
  courierIds: string[];
  /** The fleet type the delivery was priced for. */
  fleetTypeId: string;
  weightGrams: number;
}

export const mayCarryParams = Joi.object<MayCarryParams, true>({
  courierIds: Joi.array().items(uuid()).min(1).max(NAMED_COURIERS_ASKED_MAX).required(),
  fleetTypeId: uuid().required(),
  weightGrams: Joi.number().integer().min(0).required(),
});

export interface HeldDelivery {
  deliveryId: string | null;
}

/** Courier tokens read `wbc_` and 43 base64url characters; only their SHA-256 is stored. */
export const COURIER_TOKENS = new IssuedTokens('wbc_');
export const COURIER_TOKEN_PREFIX = COURIER_TOKENS.prefix;

export const hashCourierToken = (token: string) => COURIER_TOKENS.hash(token);

/** The hash to look a presented token up by; null when it is not shaped like a token. */
export const parseCourierToken = (raw: string) => COURIER_TOKENS.parse(raw);

export interface AuthenticateCourierParams {
  /** SHA-256 (hex) of the token presented. */
  tokenHash: string;
}

export const authenticateCourierParams = Joi.object<AuthenticateCourierParams, true>({
  tokenHash: Joi.string().hex().length(64).required(),
});

/** Who a courier token acts as: `RequestMeta.courier` is `{id: courierId, tokenId}`. */
export interface CourierAuth {
  courierId: string;
  tokenId: string;
}

/**
 * Broadcast when a courier's tokens stop or start working (a token revoked, the courier
 * retired or made active again): gateways drop these hashes from their caches at once.
 */
export const COURIER_TOKENS_CHANGED_EVENT = 'courier-matching.courierTokensChanged';
/**
 * Broadcast after a courier's directory entry changes (fleet type, active): every matching
 * replica drops the entry it caches for location reports.
 */
export const COURIER_CHANGED_EVENT = 'courier-matching.courierChanged';

/**
 * Emitted (to one node of each listening service) as positions are written, every
 * COURIER_LOCATION_FLUSH_MS: the couriers on a delivery who moved since, where they are now.
 */
export const COURIERS_MOVED_EVENT = 'courier-matching.couriersMoved';

export interface CourierMove {
  courierId: string;
  deliveryId: string;
  lat: number;
  lon: number;
  /** When the courier reported it (ISO). */
  at: string;
}

export interface MatchingEvents {
  [COURIER_TOKENS_CHANGED_EVENT]: { courierId: string; hashes: string[] };
  [COURIER_CHANGED_EVENT]: { courierId: string };
  [COURIERS_MOVED_EVENT]: { moves: CourierMove[] };
}

export interface MatchingActions {
  /** A courier by profile id, or null when there is none. */
  'courier-matching.getCourier': { params: CourierIdParams; answer: CourierView | null };
  /** The couriers on a merchant's own list, oldest addition first. */
  'courier-matching.merchantCouriers': {
    params: MerchantCouriersParams;
    answer: CourierView[];
  };
  /**
   * The courier a token acts as, by the token's hash; null when the token is unknown or
   * revoked, or its courier retired (the gateway, for `/courier` routes).
   */
  'courier-matching.authenticateCourier': {
    params: AuthenticateCourierParams;
    answer: CourierAuth | null;
  };
  /** Starts looking for a courier; a repeat (the delivery's search exists) changes nothing. */
  'courier-matching.startSearch': { params: StartSearchParams; answer: { started: boolean } };
  /** The delivery is over: its search ends and the courier holding it is free. Repeatable. */
  'courier-matching.endMatching': { params: DeliveryIdParams; answer: { ended: boolean } };
  /**
   * Of these couriers, those a pay-on-delivery collecting `collectKobo` may be offered to now:
   * not past MATCHING_COURIER_CASH_LIMIT_NAIRA in cash owed (decision 110), in the order given.
   */
  'courier-matching.mayCollect': { params: MayCollectParams; answer: { courierIds: string[] } };
  /**
   * Of these couriers, those whose vehicle may take a delivery priced for `fleetTypeId` that
   * weighs `weightGrams` (`carryingFleetTypes`, as each offer holds it), in the order given.
   */
  'courier-matching.mayCarry': { params: MayCarryParams; answer: { courierIds: string[] } };
  /** The delivery a courier holds now, if any. */
  'courier-matching.heldDelivery': { params: CourierIdParams; answer: HeldDelivery };
  /** The sandbox's virtual courier is here now (refused for a real courier). */
  'courier-matching.placeVirtualCourier': {
    params: PlaceVirtualCourierParams;
    answer: { placed: boolean };
  };
}

/**
 * Reads (authenticateCourier notes when a token was last used, which a repeat redoes), and
 * writes that a repeat leaves as they are.
 */
export const MATCHING_RETRY = {
  'courier-matching.getCourier': 'safe',
  'courier-matching.merchantCouriers': 'safe',
  'courier-matching.authenticateCourier': 'safe',
  'courier-matching.startSearch': 'safe',
  'courier-matching.endMatching': 'safe',
  'courier-matching.mayCollect': 'safe',
  'courier-matching.mayCarry': 'safe',
  'courier-matching.heldDelivery': 'safe',
  'courier-matching.placeVirtualCourier': 'safe',
} as const satisfies Record<keyof MatchingActions, Retry>;
