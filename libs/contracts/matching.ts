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

export interface MatchingActions {
  /** A courier by profile id, or null when there is none. */
  'courier-matching.getCourier': { params: CourierIdParams; answer: CourierView | null };
  /** The couriers on a merchant's own list, oldest addition first. */
  'courier-matching.merchantCouriers': {
    params: MerchantCouriersParams;
    answer: CourierView[];
  };
}

/** Both read. */
export const MATCHING_RETRY = {
  'courier-matching.getCourier': 'safe',
  'courier-matching.merchantCouriers': 'safe',
} as const satisfies Record<keyof MatchingActions, Retry>;
