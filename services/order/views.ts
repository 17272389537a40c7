import type { ResolvedAddress } from '../../libs/contracts/geo';
import type { CheckoutStart } from '../../libs/contracts/payment';
import type { DeliveryFeeBlock } from '../../libs/contracts/pricing';
import { formatKg, formatNaira } from '../../libs/money';
import { keptError } from '../../libs/messaging/outbox-sender';
import { readable } from '../../libs/text';
import type { CourierOnDelivery } from './courier-view';
import {
  shownSteps,
  type DeliveryRecord,
  type ProofRecord,
  type StoredAddress,
} from './delivery-record';
import { isMatchingEligible, isTerminal, type Share } from './lifecycle';
import { proofOpenIn } from './proofs';
import type { NotificationRecord } from './notifications';

const iso = (date: Date | null) => (date ? new Date(date).toISOString() : null);

/**
 * A stored address as the spec shows persisted ones: resolved fields, then `id` and times. Texts
 * stored before addresses were plain text are shown readable, so that a stop is as large in a
 * list as validation lets one be now.
 */
export function toAddressView(address: StoredAddress): ResolvedAddress {
  const fields = { ...address.fields };
  for (const [k, v] of Object.entries(fields)) {
    if (typeof v === 'string') (fields as Record<string, unknown>)[k] = readable(v);
  }
  return {
    ...fields,
    id: address._id,
    createdAt: new Date(address.createdAt).toISOString(),
    updatedAt: new Date(address.updatedAt).toISOString(),
  } as ResolvedAddress;
}

/** A proof: its code only once scanned (until then it is a secret of the stop's contact). */
export function toProofView(proof: ProofRecord) {
  return {
    id: proof.id,
    type: proof.type,
    code: proof.scannedAt ? proof.code : null,
    isActive: proof.isActive,
    scannedAt: iso(proof.scannedAt),
    createdAt: new Date(proof.createdAt).toISOString(),
  };
}

/** The P2P record: the delivery's payment state. */
export function toP2pView(delivery: DeliveryRecord) {
  return {
    id: delivery.p2p.id,
    deliveryId: delivery._id,
    userId: delivery.userId,
    profileId: delivery.profileId,
    type: delivery.deliveryType,
    status: delivery.lifecycle.p2pStatus,
    totalWeight: formatKg(delivery.packages.totalWeightGrams),
    totalValue: formatNaira(delivery.packages.totalValueKobo),
    createdAt: new Date(delivery.p2p.createdAt).toISOString(),
    updatedAt: new Date(delivery.updatedAt).toISOString(),
    deletedAt: null,
  };
}

/**
 * The delivery as `GET /api/deliveries/:deliveryId` answers it; `courier` is left out (not
 * null) until one is assigned.
 */
export function toDeliveryView(
  delivery: DeliveryRecord,
  addresses: Map<string, StoredAddress>,
  courier?: CourierOnDelivery,
) {
  const { fees } = delivery;
  // `deletedAt` is present on addresses stored on deliveries (the spec), and never set: a
  // delivery's stops are never deleted.
  const address = (id: string) => {
    const found = addresses.get(id);
    return found ? { ...toAddressView(found), deletedAt: null } : null;
  };
  return {
    id: delivery._id,
    userId: delivery.userId,
    trackingId: delivery.trackingId,
    type: delivery.type,
    status: delivery.lifecycle.status,
    routeType: delivery.routeType,
    fleetTypeId: delivery.fleetType.id,
    apiKeyId: delivery.apiKeyId,
    distanceKm: delivery.distanceKm,
    etaSeconds: delivery.etaSeconds,
    deliveryFee: formatNaira(fees.deliverySubtotal),
    deliveryFeeTotal: formatNaira(fees.total),
    serviceFee: formatNaira(fees.serviceFee),
    weightFee: formatNaira(fees.weight),
    fleetFee: formatNaira(fees.fleet),
    surchargeFee: formatNaira(fees.surcharge),
    insuranceFee: formatNaira(fees.insurance),
    baseOrDistanceFee: formatNaira(fees.base),
    hubCommission: formatNaira(fees.hubCommission),
    deliveryFeePayer: delivery.deliveryFeePayer,
    paymentMethodType: delivery.paymentMethodType ?? delivery.payment.creator.method ?? 'WALLET',
    courierMatching: delivery.courierMatching,
    // The courier assigned; before one is, the one a SPECIFIC request named (null otherwise).
    courierId: delivery.assignment?.courierId ?? delivery.courierId,
    requireCollectionProofCode: delivery.requireCollectionProofCode,
    requireDeliveryProofCode: delivery.requireDeliveryProofCode,
    link3rdPartyByContactInfo: delivery.link3rdPartyByContactInfo,
    urgencyType: delivery.urgencyType,
    deliveryDate: iso(delivery.deliveryDate),
    deliverySlot: delivery.deliverySlot,
    note: delivery.note,
    payOnDelivery: delivery.payOnDelivery !== null,
    tierIds: delivery.tierIds,
    tariffVersion: delivery.tariffVersion,
    createdAt: new Date(delivery.createdAt).toISOString(),
    updatedAt: new Date(delivery.updatedAt).toISOString(),
    fleetType: delivery.fleetType,
    p2pDelivery: toP2pView(delivery),
    origin: address(delivery.originId),
    destination: address(delivery.destinationId),
    proofs: delivery.proofs.map(toProofView),
    failure: delivery.failure
      ? { reason: delivery.failure.reason, at: new Date(delivery.failure.at).toISOString() }
      : null,
    deliverySteps: shownSteps(delivery.steps).map((s) => ({
      id: s.id,
      step: s.step,
      active: s.active,
      updatedAt: new Date(s.updatedAt).toISOString(),
    })),
    payment: toPaymentView(delivery),
    ...(courier ? { courier } : {}),
  };
}

/**
 * Who owes what of the delivery and whether they have paid (an extension of the spec). A
 * share's checkout link is shown while the delivery waits for it: the creator who lost the
 * create answer finds theirs here, as the recipient finds theirs.
 */
function toPaymentView(delivery: DeliveryRecord) {
  const { lifecycle, payment } = delivery;
  const share = (party: Share) => {
    const awaited =
      lifecycle.status === 'REQUEST_CREATED' && lifecycle.owes[party] && !lifecycle.paid[party];
    return {
      amount: formatNaira(payment[party].amountKobo),
      paymentRequired: lifecycle.owes[party],
      paid: lifecycle.paid[party],
      checkoutUrl: awaited ? payment[party].checkoutUrl : null,
    };
  };
  return { creator: share('creator'), recipient: share('recipient') };
}

/** The `deliveryFee` block as the delivery stands: who has paid, the recipient's link. */
export function toFeeBlock(delivery: DeliveryRecord): DeliveryFeeBlock {
  const { feeBlock, lifecycle, payment } = delivery;
  return {
    ...feeBlock,
    creator: { ...feeBlock.creator, paid: lifecycle.paid.creator },
    recipient: {
      ...feeBlock.recipient,
      paid: lifecycle.paid.recipient,
      checkoutUrl: payment.recipient.checkoutUrl,
    },
  };
}

export function toPayOnDeliveryView(delivery: DeliveryRecord) {
  const pod = delivery.payOnDelivery;
  if (!pod) return undefined;
  return {
    enabled: true,
    collectAmount: formatNaira(pod.collectAmountKobo),
    collectTarget: pod.collectTarget,
    remitTo: pod.remitTo,
    ...(pod.courierProfileId ? { courierProfileId: pod.courierProfileId } : {}),
  };
}

/**
 * `POST /api/request`'s answer: the P2P record with its delivery, or, when the creator pays
 * through a checkout, the provider's payload (the delivery id is in `Location`).
 */
export function toCreatedView(delivery: DeliveryRecord, addresses: Map<string, StoredAddress>) {
  const deliveryFee = toFeeBlock(delivery);
  const matchingEligible = isMatchingEligible(delivery.lifecycle);
  const checkout: CheckoutStart | null = delivery.payment.creator.checkout;
  if (checkout) return { ...checkout, deliveryFee, matchingEligible };
  const payOnDelivery = toPayOnDeliveryView(delivery);
  return {
    ...toP2pView(delivery),
    delivery: toDeliveryView(delivery, addresses),
    deliveryFee,
    matchingEligible,
    ...(payOnDelivery ? { payOnDelivery } : {}),
  };
}

/** A message of the outbox for support: never its text in live. */
export function toNotificationView(message: NotificationRecord, showText: boolean) {
  return {
    id: message._id,
    deliveryId: message.deliveryId,
    channel: message.channel,
    purpose: message.purpose,
    recipient: message.recipient,
    text: showText ? message.text : null,
    status: message.status,
    attempts: message.attempts ?? 0,
    // Kept whole before LAST_ERROR_MAX_BYTES.
    lastError: message.lastError ? keptError(message.lastError) : null,
    createdAt: new Date(message.createdAt).toISOString(),
    sentAt: iso(message.sentAt),
  };
}

/**
 * A stop as its courier sees it: where, and whom to ask for; not the contact's e-mail (the
 * merchant's own login, at the pickup), which a courier has no use for.
 */
function toCourierStopView(address: StoredAddress): ResolvedAddress {
  const stop = toAddressView(address);
  delete stop.contactEmail;
  return stop;
}

/**
 * A delivery as the courier holding it sees it: where to collect and deliver, whom to ask,
 * which codes to ask for, what to collect; never the merchant's fees or the codes themselves.
 * Only what the trip still needs (decision 156): going back (RETURNING) the drop-off and what
 * the recipient would have given are no longer the courier's; once the delivery ended (the
 * answer of its last step), neither stop nor the note is.
 */
export function toCourierDeliveryView(
  delivery: DeliveryRecord,
  addresses: Map<string, StoredAddress>,
) {
  const { status } = delivery.lifecycle;
  const ended = isTerminal(status);
  const stop = (id: string, needed: boolean) => {
    const found = needed ? addresses.get(id) : undefined;
    return found ? toCourierStopView(found) : null;
  };
  const codeNeeded = (type: ProofRecord['type']) =>
    proofOpenIn(type, status) &&
    delivery.proofs.some((p) => p.type === type && p.isActive && !p.scannedAt);
  const pod = delivery.payOnDelivery;
  const toDeliver = proofOpenIn('DELIVERY', status);
  return {
    id: delivery._id,
    trackingId: delivery.trackingId,
    status,
    pickup: stop(delivery.originId, !ended),
    dropoff: stop(delivery.destinationId, toDeliver),
    note: ended ? null : delivery.note,
    packages: {
      count: delivery.packages.ids.length,
      totalWeight: formatKg(delivery.packages.totalWeightGrams),
    },
    collectionCodeRequired: codeNeeded('COLLECTION'),
    deliveryCodeRequired: codeNeeded('DELIVERY'),
    returnCodeRequired: codeNeeded('RETURN'),
    collectOnDelivery: pod && toDeliver ? formatNaira(pod.collectAmountKobo) : null,
    deliverBetween:
      toDeliver && delivery.slotStartsAt && delivery.slotEndsAt
        ? {
            from: new Date(delivery.slotStartsAt).toISOString(),
            to: new Date(delivery.slotEndsAt).toISOString(),
          }
        : null,
    assignedAt: iso(delivery.assignment?.at ?? null),
    updatedAt: new Date(delivery.updatedAt).toISOString(),
  };
}
