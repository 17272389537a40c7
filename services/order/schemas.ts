import Joi from '../../libs/joi';
import {
  COURIER_RULES,
  equals,
  noneOf,
  notBoth,
  present,
  SCHEDULE_RULES,
} from '../../libs/delivery-fields';
import { addressInput, ROUTE_TYPES } from '../../libs/contracts/geo';
import { CREATORS_OWN, CREATORS_OWN_P2P } from '../../libs/contracts/order';
import { COURIER_SELECTIONS } from '../../libs/contracts/matching';
import { packageIds } from '../../libs/contracts/package';
import {
  FEE_PAYERS,
  feeBlockView,
  money,
  quoteId,
  URGENCY_TYPES,
} from '../../libs/contracts/pricing';
import { CHANNELS } from '../../libs/messaging/channels';
import { OUTBOX_STATUSES } from '../../libs/messaging/outbox-sender';
import { urgencyFields } from '../../libs/schedule';
import {
  documented,
  e164Phone,
  email,
  pageParams,
  personName,
  plainText,
  uuid,
  view,
} from '../../libs/schemas';
import { DELIVERY_TYPES, PAYMENT_METHODS, POD_REMIT_TARGETS, PROOF_TYPES } from './delivery-record';
import { DELIVERY_STATUSES, P2P_STATUSES, type DeliveryStatus } from './lifecycle';
import { CONTACT_FIELDS } from './request-input';
import { NOTIFICATION_PURPOSES } from './notifications';
import { DELIVERY_ROLES, type DeliveryRole } from './parties';

/** Params and answers of the order actions; the answers are what /openapi.json documents. */

export const NOTE_MAX = 128;

const timestamp = () => Joi.string().isoDate();

/** The recipient's contact field on the body, or on the `destination` object. */
const recipientContact = (field: (typeof CONTACT_FIELDS)[number]) => ({
  anyOf: [
    present(`destinationContact${field}`),
    {
      required: ['destination'],
      properties: { destination: { type: 'object', required: [`contact${field}`] } },
    },
  ],
});

/**
 * The checks of `readDeliveryRequest`, as the document states them, so that a body the
 * document allows is never refused for its shape: the recipient's contact on the body or on
 * the `destination` object; date and slot when SCHEDULED; a courier exactly when SPECIFIC;
 * the pay-on-delivery fields only with `payOnDelivery`, and its courier exactly when the money
 * goes to a courier's wallet; one spelling of an aliased field.
 */
const REQUEST_RULES = {
  allOf: [
    ...CONTACT_FIELDS.map(recipientContact),
    ...SCHEDULE_RULES,
    ...COURIER_RULES,
    {
      if: equals('payOnDelivery', true),
      else: noneOf('podRemitTo', 'podCourierProfileId'),
    },
    {
      if: equals('podRemitTo', 'COURIER_WALLET'),
      then: present('podCourierProfileId'),
      else: noneOf('podCourierProfileId'),
    },
    notBoth('link3rdPartyByContactInfo', 'notify3rdParty'),
  ],
};

/** The body of `POST /api/request`; the checks across fields are in `readDeliveryRequest`. */
export const requestParams = documented(
  Joi.object({
    origin: addressInput().required(),
    destination: addressInput().required(),
    originContactEmail: email().description("Default: the account owner's"),
    originContactPhone: e164Phone().description("Default: the account owner's"),
    originContactName: personName().description("Default: the account owner's"),
    destinationContactEmail: email().description('Required unless contactEmail is on destination'),
    destinationContactPhone: e164Phone().description(
      'Required unless contactPhone is on destination',
    ),
    destinationContactName: personName().description(
      'Required unless contactName is on destination',
    ),
    note: plainText(NOTE_MAX).allow(''),
    link3rdPartyByContactInfo: documented(Joi.boolean(), { default: false }),
    notify3rdParty: Joi.boolean().description('Alias of link3rdPartyByContactInfo'),
    packagesId: packageIds().required(),
    type: Joi.string()
      .valid(...DELIVERY_TYPES)
      .required(),
    ...urgencyFields(),
    fleetTypeId: uuid(),
    requireCollectionProofCode: Joi.boolean().default(true),
    requireDeliveryProofCode: Joi.boolean()
      .default(true)
      .description('Ignored when payOnDelivery is true'),
    deliveryFeePayer: Joi.string()
      .valid(...FEE_PAYERS)
      .default('CREATOR'),
    payOnDelivery: Joi.boolean().default(false),
    podRemitTo: documented(
      Joi.string()
        .valid(...POD_REMIT_TARGETS)
        .description('When payOnDelivery; default MY_WALLET'),
      { default: 'MY_WALLET' },
    ),
    podCourierProfileId: uuid().description('When podRemitTo is COURIER_WALLET'),
    paymentMethodType: Joi.string()
      .valid(...PAYMENT_METHODS)
      .default('WALLET'),
    courierSelection: Joi.string()
      .valid(...COURIER_SELECTIONS)
      .required(),
    courierId: uuid().description('When SPECIFIC'),
    courierProfileId: uuid().description('Alias of courierId'),
    quoteId: quoteId(),
  }).example({
    origin: 'Admiralty Way, Lekki, Lagos',
    destination: {
      address: 'Wuse 2, Abuja',
      contactName: 'Ada Obi',
      contactPhone: '+2348031234567',
      contactEmail: 'ada@example.com',
    },
    packagesId: ['0b7f7a8e-3a55-4b1c-9a1e-2f6f1d6f4c11'],
    type: 'DROP_OFF',
    courierSelection: 'ANYONE',
  }),
  REQUEST_RULES,
);

export const deliveryIdParams = Joi.object<{ deliveryId: string }, true>({
  deliveryId: uuid().required(),
});

/**
 * A page of this many deliveries fits in one NATS reply however large each is; a larger page
 * is measured (`pageInOneReply`). test/unit/order/list-size.test.ts holds it to that.
 */
export const DELIVERIES_ALWAYS_FIT = 20;
/** The largest page `GET /api/deliveries` takes. */
export const DELIVERY_PAGE_MAX = 100;

export interface ListParams {
  status?: (typeof DELIVERY_STATUSES)[number];
  role: DeliveryRole;
  limit: number;
  offset: number;
}

export const listParams = Joi.object<ListParams, true>({
  status: Joi.string().valid(...DELIVERY_STATUSES),
  role: Joi.string()
    .valid(...DELIVERY_ROLES)
    .default('CREATOR')
    .description('CREATOR: the deliveries you created; RECIPIENT: those linked to you'),
  ...pageParams(),
  limit: pageParams()
    .limit.max(DELIVERY_PAGE_MAX)
    .default(20)
    .description(
      `Up to ${DELIVERIES_ALWAYS_FIT} always answer. A larger page of unusually large deliveries (stops whose every text is near its limit) may be refused with a 400 naming the largest limit that fits from that offset`,
    ),
});

export const notificationsParams = Joi.object<{ deliveryId: string }, true>({
  deliveryId: uuid().required(),
});

const address = Joi.object()
  .unknown(true)
  .description(
    'A resolved address (see POST /api/route) with its id, createdAt, updatedAt and deletedAt (null). A linked recipient reads the origin without `contactEmail` (the creator’s own)',
  );

/** A stop as its courier reads it (views.ts, `toCourierStopView`). */
const courierStop = Joi.object()
  .unknown(true)
  .allow(null)
  .description(
    'The stop’s resolved address with its contact’s name and phone and its note; not the contact’s e-mail. Null once the trip no longer needs it: the drop-off once the packages go back (RETURNING), both once the delivery ended',
  );

const feeBlock = feeBlockView();

/**
 * The keys with the fields of its creator's that a delivery's linked recipient is not shown
 * (`recipientsView`, decision 107) documented as such: present for the creator, absent for
 * the recipient.
 */
function withCreatorsOwn(
  keys: Record<string, Joi.Schema>,
  fields: readonly string[],
): Record<string, Joi.Schema> {
  const absent = 'Absent in a linked recipient’s view';
  return Object.fromEntries(
    Object.entries(keys).map(([field, schema]) => {
      if (!fields.includes(field)) return [field, schema];
      const own = (schema.describe().flags as { description?: string } | undefined)?.description;
      return [field, schema.optional().description(own ? `${own}. ${absent}` : absent)];
    }),
  );
}

export const p2pFields = withCreatorsOwn(
  {
    id: uuid(),
    deliveryId: uuid(),
    userId: uuid(),
    profileId: uuid(),
    type: Joi.string().valid(...DELIVERY_TYPES),
    status: Joi.string().valid(...P2P_STATUSES),
    totalWeight: Joi.string().description('kg, five decimals'),
    totalValue: money(),
    createdAt: timestamp(),
    updatedAt: timestamp(),
    deletedAt: timestamp().allow(null),
  },
  CREATORS_OWN_P2P,
);

const p2pView = view('P2PDelivery', p2pFields);

export const proofView = view('Proof', {
  id: uuid(),
  type: Joi.string().valid(...PROOF_TYPES),
  code: Joi.string().allow(null).description('null until the proof has been scanned'),
  isActive: Joi.boolean(),
  scannedAt: timestamp().allow(null),
  createdAt: timestamp(),
});

export const proofParams = Joi.object<{ deliveryId: string; proofId: string }, true>({
  deliveryId: uuid().required(),
  proofId: uuid().required(),
});

const shareView = (name: string) =>
  view(name, {
    amount: money(),
    paymentRequired: Joi.boolean().description('Whether this party owes a share'),
    paid: Joi.boolean().description('Stays true once given back: `p2pDelivery.status` says so'),
    checkoutUrl: Joi.string()
      .allow(null)
      .description(
        'The hosted checkout to pay the share with while the delivery waits for it (REQUEST_CREATED, owed, not paid); null otherwise, and for a wallet debit',
      ),
  });

const paymentView = view('DeliveryPayment', {
  creator: shareView('CreatorShare').optional().description('Absent in a linked recipient’s view'),
  recipient: shareView('RecipientShare'),
}).description(
  'Who owes what and whether they have paid, with the link to pay a share still owed (an extension of the spec)',
);

export const deliveryView = view(
  'Delivery',
  withCreatorsOwn(
    {
      id: uuid(),
      userId: uuid(),
      trackingId: Joi.string().pattern(/^P2P-[0-9A-Z]{12}$/),
      type: Joi.string().valid('P2P'),
      status: Joi.string().valid(...DELIVERY_STATUSES),
      routeType: Joi.string().valid(...ROUTE_TYPES),
      fleetTypeId: uuid(),
      apiKeyId: uuid().allow(null),
      distanceKm: Joi.number(),
      etaSeconds: Joi.number(),
      deliveryFee: money().description('The delivery subtotal'),
      deliveryFeeTotal: money()
        .optional()
        .description(
          'What is charged: subtotal + service fee + hub commission. Absent in a linked recipient’s view unless the recipient pays a share',
        ),
      serviceFee: money(),
      weightFee: money(),
      fleetFee: money(),
      surchargeFee: money(),
      insuranceFee: money(),
      baseOrDistanceFee: money(),
      hubCommission: money(),
      deliveryFeePayer: Joi.string().valid(...FEE_PAYERS),
      paymentMethodType: Joi.string().valid(...PAYMENT_METHODS),
      courierMatching: Joi.string().valid(...COURIER_SELECTIONS),
      courierId: uuid().allow(null),
      requireCollectionProofCode: Joi.boolean(),
      requireDeliveryProofCode: Joi.boolean(),
      link3rdPartyByContactInfo: Joi.boolean(),
      urgencyType: Joi.string().valid(...URGENCY_TYPES),
      deliveryDate: timestamp().allow(null).description('Midnight UTC of the chosen date'),
      deliverySlot: Joi.string().allow(null),
      note: Joi.string().allow(null),
      payOnDelivery: Joi.boolean(),
      tierIds: Joi.object().unknown(true),
      tariffVersion: Joi.string(),
      createdAt: timestamp(),
      updatedAt: timestamp(),
      fleetType: Joi.object({ id: uuid(), name: Joi.string(), icon: Joi.string().allow(null) }),
      p2pDelivery: p2pView,
      origin: address,
      destination: address,
      proofs: Joi.array().items(proofView),
      failure: Joi.object({ reason: Joi.string(), at: timestamp() })
        .allow(null)
        .description(
          'Why the delivery could not go on, as its courier (or an operator for them) said: FAILED, or RETURNING and RETURNED after it; null otherwise (an extension of the spec)',
        ),
      payment: paymentView,
      deliverySteps: Joi.array().items(
        view('DeliveryStep', {
          id: uuid(),
          step: Joi.string(),
          active: Joi.boolean(),
          updatedAt: timestamp(),
        }),
      ),
      courier: view('DeliveryCourier', {
        name: Joi.string(),
        phone: Joi.string().description('E.164'),
        profilePhoto: Joi.string().allow(null),
        currentLocation: Joi.object({
          country: Joi.string(),
          state: Joi.string().allow(null),
          lgaOrCity: Joi.string().allow(null),
          lat: Joi.number(),
          lon: Joi.number(),
        })
          .allow(null)
          .description(
            'Where the courier last reported, while on this delivery; null otherwise. A linked recipient sees, before the collection, the middle of its 0.01° cell (and `eta` on 5-minute marks), and null while it goes back to the sender',
          ),
        eta: Joi.object({ from: timestamp(), to: timestamp() })
          .allow(null)
          .description(
            'Arrival window at the drop-off, from the distance left and the fleet speed',
          ),
        fleet: Joi.object({
          regNo: Joi.string(),
          make: Joi.string(),
          model: Joi.string(),
          colour: Joi.string(),
          typeId: uuid(),
        }),
      })
        .optional()
        .description('Left out (not null) until a courier is assigned'),
    },
    CREATORS_OWN,
  ),
);

const payOnDeliveryView = view('PayOnDeliveryOrder', {
  enabled: Joi.boolean(),
  collectAmount: money(),
  collectTarget: Joi.string().valid('PACKAGE_VALUE'),
  remitTo: Joi.string().valid(...POD_REMIT_TARGETS),
  courierProfileId: uuid()
    .optional()
    .description('The courier whose wallet receives it: only when remitTo is COURIER_WALLET'),
});

const createdByWallet = view('DeliveryRequest', {
  ...p2pFields,
  delivery: deliveryView,
  deliveryFee: feeBlock,
  matchingEligible: Joi.boolean(),
  payOnDelivery: payOnDeliveryView
    .optional()
    .description('Only when the request asked for pay-on-delivery (`payOnDelivery` true)'),
}).description('Wallet payment (or nothing for the creator to pay): the P2P record');

const createdByCheckout = view('DeliveryCheckout', {
  status: Joi.boolean(),
  message: Joi.string(),
  data: Joi.object({
    authorization_url: Joi.string().uri(),
    access_code: Joi.string(),
    reference: Joi.string(),
  }),
  deliveryFee: feeBlock,
  matchingEligible: Joi.boolean().description(
    'false: matching starts once the checkout is paid. A retry with the same Idempotency-Key answered by the delivery as it is now (its first answer no longer kept) says true once it is paid and no courier is assigned yet',
  ),
}).description('Checkout payment: open data.authorization_url to pay');

export const createdView = Joi.alternatives().try(createdByWallet, createdByCheckout).match('one');

export const cancelledView = view('CancelledDelivery', {
  delivery: Joi.object({ id: uuid() }),
});

export const notificationView = view('Notification', {
  id: Joi.string(),
  deliveryId: uuid(),
  channel: Joi.string().valid(...CHANNELS),
  purpose: Joi.string().valid(...NOTIFICATION_PURPOSES),
  recipient: Joi.string(),
  text: Joi.string()
    .allow(null)
    .description('Shown in staging only; in live never (codes are secrets)'),
  status: Joi.string()
    .valid(...OUTBOX_STATUSES)
    .description(
      'PENDING until sent (retried with a growing wait); FAILED once its attempts are spent; SUPERSEDED when it was withdrawn before it went: a newer proof code replaced it, the delivery ended, or changed so that it said nothing true (a code whose proof can no longer be given, "on the way" once going back, a payment link once paid)',
    ),
  attempts: Joi.number().integer().min(0).description('Attempts made to send it'),
  lastError: Joi.string()
    .allow(null)
    .description('Why the last attempt failed (the SMTP server’s or SMS provider’s answer)'),
  createdAt: timestamp(),
  sentAt: timestamp().allow(null),
});

export const courierDeliveryView = view('CourierDelivery', {
  id: uuid(),
  trackingId: Joi.string(),
  status: Joi.string().valid(...DELIVERY_STATUSES),
  pickup: courierStop,
  dropoff: courierStop,
  note: Joi.string().allow(null),
  packages: Joi.object({ count: Joi.number().integer(), totalWeight: Joi.string() }),
  collectionCodeRequired: Joi.boolean().description('Ask the sender for the collection code'),
  deliveryCodeRequired: Joi.boolean().description('Ask the recipient for the delivery code'),
  returnCodeRequired: Joi.boolean().description(
    'Bringing the packages back: ask the sender for the return code',
  ),
  collectOnDelivery: money()
    .allow(null)
    .description('Pay-on-delivery: what to collect from the recipient, NGN'),
  deliverBetween: Joi.object({ from: timestamp(), to: timestamp() })
    .allow(null)
    .description(
      'A SCHEDULED delivery’s slot: hand the packages over within it, not before (the recipient booked it); null for any other, and once the packages go back',
    ),
  assignedAt: timestamp().allow(null),
  updatedAt: timestamp(),
});

/** A proof code as the stop's contact reads it: six digits. */
const proofCode = () => Joi.string().pattern(/^\d{6}$/, 'six digits');

export const courierStepParams = Joi.object<{ deliveryId: string }, true>({
  deliveryId: uuid().required(),
});

export const courierCodeStepParams = Joi.object<{ deliveryId: string; code?: string }, true>({
  deliveryId: uuid().required(),
  code: proofCode().description('The code the person gave you, when the delivery asks for one'),
});

const failureReason = () => plainText(300).min(1).required().description('What went wrong');

export const courierFailedParams = Joi.object<{ deliveryId: string; reason: string }, true>({
  deliveryId: uuid().required(),
  reason: failureReason(),
});

export interface OperatorFailParams {
  deliveryId: string;
  reason: string;
  expectedStatus: DeliveryStatus;
}

/** The courier's `failed`, from the status the operator decided on. */
export const operatorFailParams = Joi.object<OperatorFailParams, true>({
  deliveryId: uuid().required(),
  reason: failureReason(),
  expectedStatus: Joi.string()
    .valid(...DELIVERY_STATUSES)
    .required()
    .description(
      'The status you decided on (`GET /admin/deliveries/:deliveryId`): a delivery that has moved since, its courier having reported a step, is refused with 409',
    ),
});
