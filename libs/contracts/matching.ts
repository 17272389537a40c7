import Joi from '../joi';
import { uuid } from '../schemas';
import type { Retry } from './retry';

/**
 * What other services may know of the courier-matching service. This part is its directory:
 * couriers and each merchant's own courier list. Matching itself builds on it.
 */

/** How a delivery request chooses its courier (`courierSelection`). */
export const COURIER_SELECTIONS = ['ANYONE', 'SPECIFIC', 'MERCHANT_SPECIAL_COURIERS'] as const;
export type CourierSelection = (typeof COURIER_SELECTIONS)[number];

/** The 404 of a SPECIFIC request (or a pay-on-delivery courier) naming no active courier. */
export const COURIER_NOT_FOUND = 'Courier not found';
/** The 404 of a MERCHANT_SPECIAL_COURIERS request when the merchant's list has no active courier. */
export const NO_MERCHANT_COURIERS = 'No merchant-specific couriers found';

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
}

const point = () =>
  Joi.object({
    lat: Joi.number().min(-90).max(90).required(),
    lon: Joi.number().min(-180).max(180).required(),
  });

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
});

export interface DeliveryIdParams {
  deliveryId: string;
}

export const deliveryIdParams = Joi.object<DeliveryIdParams, true>({
  deliveryId: uuid().required(),
});

export interface HeldDelivery {
  deliveryId: string | null;
}

export interface MatchingActions {
  /** A courier by profile id, or null when there is none. */
  'courier-matching.getCourier': { params: CourierIdParams; answer: CourierView | null };
  /** The couriers on a merchant's own list, oldest addition first. */
  'courier-matching.merchantCouriers': {
    params: MerchantCouriersParams;
    answer: CourierView[];
  };
  /** Starts looking for a courier; a repeat (the delivery's search exists) changes nothing. */
  'courier-matching.startSearch': { params: StartSearchParams; answer: { started: boolean } };
  /** The delivery is over: its search ends and the courier holding it is free. Repeatable. */
  'courier-matching.endMatching': { params: DeliveryIdParams; answer: { ended: boolean } };
  /** The delivery a courier holds now, if any. */
  'courier-matching.heldDelivery': { params: CourierIdParams; answer: HeldDelivery };
}

/** Reads, and writes that a repeat leaves as they are. */
export const MATCHING_RETRY = {
  'courier-matching.getCourier': 'safe',
  'courier-matching.merchantCouriers': 'safe',
  'courier-matching.startSearch': 'safe',
  'courier-matching.endMatching': 'safe',
  'courier-matching.heldDelivery': 'safe',
} as const satisfies Record<keyof MatchingActions, Retry>;
