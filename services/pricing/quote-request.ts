import Joi from '../../libs/joi';
import {
  COURIER_RULES,
  noneOf,
  present,
  readCourierId,
  readScheduleText,
  SCHEDULE_RULES,
} from '../../libs/delivery-fields';
import { badRequest, type FieldError } from '../../libs/errors';
import { documented, kilograms, naira, uuid } from '../../libs/schemas';
import { addressInput, type AddressInput } from '../../libs/contracts/geo';
import { PACKAGES_ONCE, packageIds } from '../../libs/contracts/package';
import {
  FEE_PAYERS,
  quoteLoadParams,
  type FeePayer,
  type QuoteLoadParams,
  type UrgencyType,
} from '../../libs/contracts/pricing';
import { parseSlot, scheduleFields, urgencyFields } from '../../libs/schedule';
import type { Schedule } from './schedule';

export const COURIER_SELECTIONS = ['ANYONE', 'SPECIFIC'] as const;

/**
 * The checks of `readQuoteRequest`, as the document states them: one pricing mode; date and
 * slot when SCHEDULED; a courier exactly when SPECIFIC; one spelling of an aliased field.
 */
const QUOTE_REQUEST_RULES = {
  oneOf: [
    {
      title: 'Mode A: saved packages',
      ...present('packagesId'),
      ...noneOf('totalWeight', 'totalValue'),
    },
    { title: 'Mode B: totals', required: ['totalWeight', 'totalValue'], ...noneOf('packagesId') },
  ],
  allOf: [...SCHEDULE_RULES, ...COURIER_RULES],
};

/** The body of `POST /api/pricing`; the checks across fields are in `readQuoteRequest`. */
export const quoteRequestSchema = documented(
  Joi.object({
    origin: addressInput().required(),
    destination: addressInput().required(),
    packagesId: packageIds().description(`Mode A: your saved packages. ${PACKAGES_ONCE}`),
    totalWeight: kilograms().positive().max(100_000).description('Mode B: kg'),
    totalValue: naira().min(0).max(1e11).description('Mode B: NGN, the declared value'),
    ...urgencyFields(),
    fleetTypeId: uuid(),
    courierSelection: Joi.string()
      .valid(...COURIER_SELECTIONS)
      .default('ANYONE'),
    courierId: uuid(),
    courierProfileId: uuid().description('Alias of courierId'),
    deliveryFeePayer: Joi.string()
      .valid(...FEE_PAYERS)
      .default('CREATOR'),
    payOnDelivery: Joi.boolean()
      .default(false)
      .description('Preview of what the courier would collect at the door'),
  }).example({
    origin: 'Admiralty Way, Lekki, Lagos',
    destination: 'Wuse 2, Abuja',
    totalWeight: 12.5,
    totalValue: 25000,
  }),
  QUOTE_REQUEST_RULES,
);

export interface QuoteRequestParams {
  origin: AddressInput;
  destination: AddressInput;
  packagesId?: string[];
  totalWeight?: number;
  totalValue?: number;
  urgencyType: UrgencyType;
  deliveryDate?: string;
  deliverySlot?: string;
  slot?: string;
  fleetTypeId?: string;
  courierSelection: (typeof COURIER_SELECTIONS)[number];
  courierId?: string;
  courierProfileId?: string;
  deliveryFeePayer: FeePayer;
  payOnDelivery: boolean;
}

export type PricingMode =
  | { mode: 'packages'; packageIds: string[] }
  | { mode: 'totals'; totalWeight: number; totalValue: number };

export interface QuoteRequest {
  pricing: PricingMode;
  schedule?: Schedule;
  courierId?: string;
}

export const MODE_MISSING =
  'Provide packagesId, or both totalWeight and totalValue, to price a delivery';
export const MODE_NEEDS_USER =
  'Pricing by packagesId needs an authenticated user; send totalWeight and totalValue instead';

function modeOf(p: QuoteRequestParams, errors: FieldError[]): PricingMode | undefined {
  const hasTotals = p.totalWeight !== undefined || p.totalValue !== undefined;
  if (p.packagesId && hasTotals) {
    errors.push({
      field: 'packagesId',
      message: 'use one pricing mode: packagesId, or totalWeight and totalValue, not both',
    });
    return undefined;
  }
  if (p.packagesId) return { mode: 'packages', packageIds: p.packagesId };
  if (p.totalWeight !== undefined && p.totalValue !== undefined) {
    return { mode: 'totals', totalWeight: p.totalWeight, totalValue: p.totalValue };
  }
  const missing = p.totalWeight === undefined ? 'totalWeight' : 'totalValue';
  errors.push({ field: hasTotals ? missing : 'packagesId', message: MODE_MISSING });
  return undefined;
}

/** A SCHEDULED delivery's date and slot (already well-formed); what is missing goes to `errors`. */
function readSchedule(
  errors: FieldError[],
  p: Parameters<typeof readScheduleText>[1],
): Schedule | undefined {
  const text = readScheduleText(errors, p);
  const slot = text ? parseSlot(text.slot) : null;
  return text && slot ? { date: text.date, slot } : undefined;
}

/** The checks that span fields; 400 with every problem at once. */
export function readQuoteRequest(p: QuoteRequestParams, hasUser: boolean): QuoteRequest {
  const errors: FieldError[] = [];
  const pricing = modeOf(p, errors);
  if (pricing?.mode === 'packages' && !hasUser) {
    throw badRequest(MODE_NEEDS_USER, [{ field: 'packagesId', message: MODE_NEEDS_USER }]);
  }

  const schedule = readSchedule(errors, p);
  const courierId = readCourierId(errors, p);

  if (errors.length > 0 || !pricing) {
    throw badRequest(errors[0]?.message ?? MODE_MISSING, errors);
  }
  return { pricing, schedule, courierId };
}

/**
 * `pricing.quote`'s params: the contract's, its date and slot checked as `POST /api/pricing`
 * checks them, so that a load is refused with the same messages as its Mode A quote.
 */
export const quoteLoadSchema = quoteLoadParams.keys(scheduleFields);

/** `pricing.quote`'s schedule, required when SCHEDULED as `readQuoteRequest` requires it. */
export function readLoadSchedule(p: QuoteLoadParams): Schedule | undefined {
  const errors: FieldError[] = [];
  const schedule = readSchedule(errors, p);
  if (errors.length > 0) throw badRequest(errors[0].message, errors);
  return schedule;
}
