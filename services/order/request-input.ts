import type { AddressInput } from '../../libs/contracts/geo';
import type { CourierSelection } from '../../libs/contracts/matching';
import type { FeePayer, UrgencyType } from '../../libs/contracts/pricing';
import { aliased, readCourierId, readScheduleText } from '../../libs/delivery-fields';
import { badRequest, type FieldError } from '../../libs/errors';
import type { DeliveryType, PaymentMethod, PodRemitTarget } from './delivery-record';

/** `POST /api/request`'s body as its schema (schemas.ts) validated it. */
export interface RequestParams {
  origin: AddressInput;
  destination: AddressInput;
  originContactEmail?: string;
  originContactPhone?: string;
  originContactName?: string;
  destinationContactEmail?: string;
  destinationContactPhone?: string;
  destinationContactName?: string;
  note?: string;
  link3rdPartyByContactInfo?: boolean;
  notify3rdParty?: boolean;
  packagesId: string[];
  type: DeliveryType;
  urgencyType: UrgencyType;
  deliveryDate?: string;
  deliverySlot?: string;
  slot?: string;
  fleetTypeId?: string;
  requireCollectionProofCode: boolean;
  requireDeliveryProofCode: boolean;
  deliveryFeePayer: FeePayer;
  payOnDelivery: boolean;
  podRemitTo?: PodRemitTarget;
  podCourierProfileId?: string;
  paymentMethodType: PaymentMethod;
  courierSelection: CourierSelection;
  courierId?: string;
  courierProfileId?: string;
  quoteId?: string;
}

export interface Contact {
  name: string;
  phone: string;
  email: string;
}

/** A request read whole: aliases resolved, contacts complete, checks across fields done. */
export interface DeliveryRequest {
  origin: AddressInput;
  destination: AddressInput;
  originContact: Contact;
  destinationContact: Contact;
  originNote?: string;
  destinationNote?: string;
  note?: string;
  link3rdPartyByContactInfo: boolean;
  packageIds: string[];
  type: DeliveryType;
  urgencyType: UrgencyType;
  schedule?: { date: string; slot: string };
  fleetTypeId?: string;
  requireCollectionProofCode: boolean;
  requireDeliveryProofCode: boolean;
  deliveryFeePayer: FeePayer;
  payOnDelivery: boolean;
  podRemitTo: PodRemitTarget;
  podCourierProfileId?: string;
  paymentMethodType: PaymentMethod;
  courierSelection: CourierSelection;
  courierId?: string;
  /** A Mode A quote the requester holds: the total it may be charged (decision 142). */
  quoteId?: string;
}

/** A stop's contact fields: `destinationContactName` on the body, `contactName` on the stop. */
export const CONTACT_FIELDS = ['Name', 'Phone', 'Email'] as const;
type ContactField = (typeof CONTACT_FIELDS)[number];

/** A field of an address object (`contactName` on `destination`), when it is an object. */
function onAddress(address: AddressInput, key: string): string | undefined {
  if (typeof address !== 'object') return undefined;
  const value = address[key];
  return typeof value === 'string' ? value : undefined;
}

/**
 * Reads the body's checks across fields, 400 with every problem at once: the stops'
 * contacts (the recipient's required, on the body or the `destination` object; the sender's
 * defaulting to the account owner's), a schedule exactly when SCHEDULED, a courier exactly
 * when SPECIFIC, the pay-on-delivery courier when its money goes to a courier's wallet.
 */
export function readDeliveryRequest(p: RequestParams, owner: Contact): DeliveryRequest {
  const errors: FieldError[] = [];
  const contact = (stop: 'origin' | 'destination', fallback?: Contact): Contact => {
    const found = {} as Record<ContactField, string | undefined>;
    for (const field of CONTACT_FIELDS) {
      const bodyField = `${stop}Contact${field}` as keyof RequestParams;
      found[field] = (p[bodyField] as string | undefined) ?? onAddress(p[stop], `contact${field}`);
      if (found[field] === undefined && !fallback) {
        errors.push({
          field: bodyField,
          message: `${bodyField} is required (or contact${field} on the ${stop} object)`,
        });
      }
    }
    return {
      name: found.Name ?? fallback?.name ?? '',
      phone: found.Phone ?? fallback?.phone ?? '',
      email: found.Email ?? fallback?.email ?? '',
    };
  };
  const originContact = contact('origin', owner);
  const destinationContact = contact('destination');

  const schedule = readScheduleText(errors, p);
  const courierId = readCourierId(errors, p);

  const podRemitTo = p.podRemitTo ?? 'MY_WALLET';
  if (!p.payOnDelivery && (p.podRemitTo || p.podCourierProfileId)) {
    errors.push({
      field: p.podRemitTo ? 'podRemitTo' : 'podCourierProfileId',
      message: 'applies only when payOnDelivery is true',
    });
  }
  if (podRemitTo === 'COURIER_WALLET' && !p.podCourierProfileId) {
    errors.push({
      field: 'podCourierProfileId',
      message: 'podCourierProfileId is required when podRemitTo is COURIER_WALLET',
    });
  }
  if (podRemitTo !== 'COURIER_WALLET' && p.podCourierProfileId) {
    errors.push({
      field: 'podCourierProfileId',
      message: 'podCourierProfileId applies only when podRemitTo is COURIER_WALLET',
    });
  }

  const link3rdPartyByContactInfo =
    aliased(
      errors,
      ['link3rdPartyByContactInfo', p.link3rdPartyByContactInfo],
      ['notify3rdParty', p.notify3rdParty],
    ) ?? false;

  if (errors.length > 0) throw badRequest(errors[0]?.message ?? 'Invalid request', errors);
  return {
    origin: p.origin,
    destination: p.destination,
    originContact,
    destinationContact,
    originNote: onAddress(p.origin, 'additionalNote'),
    destinationNote: onAddress(p.destination, 'additionalNote'),
    note: p.note || undefined,
    link3rdPartyByContactInfo,
    packageIds: p.packagesId,
    type: p.type,
    urgencyType: p.urgencyType,
    schedule,
    fleetTypeId: p.fleetTypeId,
    requireCollectionProofCode: p.requireCollectionProofCode,
    // Ignored with pay-on-delivery (the spec): the delivery says what it requires.
    requireDeliveryProofCode: p.requireDeliveryProofCode && !p.payOnDelivery,
    deliveryFeePayer: p.deliveryFeePayer,
    payOnDelivery: p.payOnDelivery,
    podRemitTo,
    podCourierProfileId: p.payOnDelivery ? p.podCourierProfileId : undefined,
    paymentMethodType: p.paymentMethodType,
    courierSelection: p.courierSelection,
    courierId,
    quoteId: p.quoteId,
  };
}
