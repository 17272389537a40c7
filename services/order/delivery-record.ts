import type { ResolvedAddress } from '../../libs/contracts/geo';
import type { CourierSelection, SimulationMode } from '../../libs/contracts/matching';
import type { AssignedPackages } from '../../libs/contracts/package';
import type { CheckoutStart } from '../../libs/contracts/payment';
import type {
  DeliveryFeeBlock,
  FeeAmounts,
  FeePayer,
  PricedDelivery,
  TierIds,
  UrgencyType,
} from '../../libs/contracts/pricing';
import { nameBasedId } from '../../libs/ids';
import { initialLifecycle, type Lifecycle, type Share } from './lifecycle';
import type { DeliveryRequest } from './request-input';

/**
 * A delivery as the order service stores it (collection `deliveries`, `_id` = delivery id):
 * built whole, by the pure functions here, before anything is written, so that a crashed
 * request can be finished from what was saved.
 */

export const PAYMENT_METHODS = ['WALLET', 'CHECKOUT'] as const;
export type PaymentMethod = (typeof PAYMENT_METHODS)[number];
export const DELIVERY_TYPES = ['PICKUP', 'DROP_OFF'] as const;
export type DeliveryType = (typeof DELIVERY_TYPES)[number];
export const POD_REMIT_TARGETS = ['MY_WALLET', 'COURIER_WALLET'] as const;
export type PodRemitTarget = (typeof POD_REMIT_TARGETS)[number];
export const PROOF_TYPES = ['COLLECTION', 'DELIVERY', 'RETURN'] as const;
export type ProofType = (typeof PROOF_TYPES)[number];

/** An address stored on a delivery: what geo resolved, the stop's contact, its own id. */
export interface StoredAddress {
  _id: string;
  userId: string;
  deliveryId: string;
  role: 'origin' | 'destination';
  fields: ResolvedAddress;
  createdAt: Date;
  updatedAt: Date;
}

/** One party's part of the fee and how it is paid. */
export interface SharePayment {
  amountKobo: number;
  /** WALLET: the debit's ledger reference is the delivery id. CHECKOUT: a hosted checkout. */
  method: PaymentMethod | null;
  checkoutReference: string | null;
  checkoutUrl: string | null;
  /** The provider's answer when the checkout was opened (the creator's is answered back). */
  checkout: CheckoutStart | null;
}

export interface ProofRecord {
  id: string;
  type: ProofType;
  /**
   * HMAC of the code (proofs.ts); the code itself is only in the notification outbox. Empty for
   * a RETURN proof, whose codes are all issued after it is created (`proof_codes`).
   */
  codeHash: string;
  /** Set when a courier scans the right code: then no longer a secret. */
  code: string | null;
  isActive: boolean;
  scannedAt: Date | null;
  createdAt: Date;
}

export interface StepRecord {
  id: string;
  step: string;
  active: boolean;
  hidden: boolean;
  updatedAt: Date;
}

/**
 * The steps a delivery shows, the latest active: read so rather than from the stored flags,
 * which a hidden step (a checkout's payment) cleared on deliveries stored before it no longer
 * did (`withStep`).
 */
export function shownSteps(steps: readonly StepRecord[]): StepRecord[] {
  const shown = steps.filter((s) => !s.hidden);
  return shown.map((s, i) => ({ ...s, active: i === shown.length - 1 }));
}

export interface PayOnDelivery {
  collectAmountKobo: number;
  collectTarget: 'PACKAGE_VALUE';
  remitTo: PodRemitTarget;
  courierProfileId: string | null;
}

export interface DeliveryRecord {
  _id: string;
  userId: string;
  profileId: string;
  apiKeyId: string | null;
  trackingId: string;
  type: 'P2P';
  deliveryType: DeliveryType;
  lifecycle: Lifecycle;
  /** How many transitions (`delivery_transitions`) this record includes. */
  version: number;
  routeType: string;
  distanceKm: number;
  etaSeconds: number;
  fleetType: { id: string; name: string; icon: string | null };
  fees: FeeAmounts;
  /** Pricing's `deliveryFee` block as quoted; `paid` and `checkoutUrl` are the record's. */
  feeBlock: DeliveryFeeBlock;
  tierIds: TierIds;
  tariffVersion: string;
  deliveryFeePayer: FeePayer;
  /**
   * How the creator asked to pay, as they asked it (absent on records older than it): their
   * share's `method` is null when they owe nothing, and the answers show what was asked.
   */
  paymentMethodType?: PaymentMethod;
  payment: Record<Share, SharePayment>;
  courierMatching: CourierSelection;
  courierId: string | null;
  requireCollectionProofCode: boolean;
  requireDeliveryProofCode: boolean;
  link3rdPartyByContactInfo: boolean;
  /**
   * The account linked to it as its recipient (services/order/parties.ts); absent on records
   * stored before links.
   */
  recipientUserId?: string | null;
  urgencyType: UrgencyType;
  deliveryDate: Date | null;
  deliverySlot: string | null;
  /** When a SCHEDULED delivery's slot opens, in its tariff's time zone (absent on older records). */
  slotStartsAt?: Date | null;
  /** When it closes (absent on older records: they are searched for however late). */
  slotEndsAt?: Date | null;
  /**
   * Its tariff's IANA time zone, the clock its times are shown to the recipient in (absent on
   * records stored before: `DEFAULT_TIME_ZONE`).
   */
  timeZone?: string;
  note: string | null;
  payOnDelivery: PayOnDelivery | null;
  packages: { ids: string[]; totalWeightGrams: number; totalValueKobo: number };
  originId: string;
  destinationId: string;
  proofs: ProofRecord[];
  steps: StepRecord[];
  /** The courier taking it, once one is assigned (absent on records stored before matching). */
  assignment?: { courierId: string; at: Date } | null;
  /** A sandbox delivery (`Waybill-Simulate`, staging only): driven by a virtual courier. */
  simulation?: SimulationMode | null;
  /** Why the courier gave up, when the delivery failed. */
  failure?: { reason: string; at: Date } | null;
  /** The share whose payment failed, when that called the delivery off (not its sender). */
  paymentFailed?: { share: Share; at: Date } | null;
  p2p: { id: string; createdAt: Date; updatedAt: Date };
  createdAt: Date;
  updatedAt: Date;
}

/** The ids of a delivery's records: one request never gives two records of a kind one id. */
export const recordIds = (deliveryId: string) => ({
  p2p: nameBasedId('p2p', deliveryId),
  origin: nameBasedId('address', deliveryId, 'origin'),
  destination: nameBasedId('address', deliveryId, 'destination'),
  proof: (type: ProofType) => nameBasedId('proof', deliveryId, type),
  step: (version: number) => nameBasedId('step', deliveryId, String(version)),
});

/** A route's address with the stop's contact and note laid over it. */
function stopAddress(
  resolved: ResolvedAddress,
  contact: DeliveryRequest['originContact'],
  note: string | undefined,
): ResolvedAddress {
  const fields: ResolvedAddress = { ...resolved };
  // Persisted-only fields of an address given back from an earlier answer are ours to set.
  for (const key of ['id', 'createdAt', 'updatedAt', 'deletedAt', 'additionalNote', 'address']) {
    delete fields[key];
  }
  fields.contactName = contact.name;
  fields.contactPhone = contact.phone;
  fields.contactEmail = contact.email;
  if (note !== undefined) fields.note = note;
  return fields;
}

export interface NewDelivery {
  deliveryId: string;
  trackingId: string;
  owner: { id: string; profileId: string };
  apiKeyId: string | null;
  recipientUserId: string | null;
  request: DeliveryRequest;
  assigned: AssignedPackages;
  priced: PricedDelivery;
  /** The proofs' code hashes, by type, for the proofs the request asks for. */
  proofHashes: Partial<Record<ProofType, string>>;
  now: Date;
}

/**
 * The proof that packages coming back reached the sender, when the delivery takes codes at the
 * sender's end (a collection proof), or is paid on delivery: added by the failure that sends
 * them back, its code sent to the sender as that transition settles. Paid on delivery, no code
 * proves the drop-off (the cash does): without one for the return, a courier who took the cash
 * and left the packages could report them failed and brought back, owing nothing.
 */
export function returnProof(
  delivery: Pick<DeliveryRecord, '_id' | 'requireCollectionProofCode' | 'payOnDelivery' | 'proofs'>,
  at: Date,
): ProofRecord | null {
  if (!delivery.requireCollectionProofCode && !delivery.payOnDelivery) return null;
  if (delivery.proofs.some((p) => p.type === 'RETURN')) return null;
  const id = recordIds(delivery._id).proof('RETURN');
  return {
    id,
    type: 'RETURN',
    codeHash: '',
    code: null,
    isActive: true,
    scannedAt: null,
    createdAt: at,
  };
}

/** Whether a proof of this type is required: the delivery code gives way to pay-on-delivery. */
export function requiredProofs(request: DeliveryRequest): ProofType[] {
  const types: ProofType[] = [];
  if (request.requireCollectionProofCode) types.push('COLLECTION');
  if (request.requireDeliveryProofCode) types.push('DELIVERY');
  return types;
}

/** The delivery record, its two addresses, as nothing has happened to them yet. */
export function buildDelivery(n: NewDelivery): {
  delivery: DeliveryRecord;
  addresses: StoredAddress[];
} {
  const { deliveryId, request, priced, now } = n;
  const ids = recordIds(deliveryId);
  const { shares } = priced;
  const share = (amountKobo: number, method: PaymentMethod | null): SharePayment => ({
    amountKobo,
    method: amountKobo > 0 ? method : null,
    checkoutReference: null,
    checkoutUrl: null,
    checkout: null,
  });
  const payment = {
    creator: share(shares.creator, request.paymentMethodType),
    recipient: share(shares.recipient, 'CHECKOUT'),
  };
  const owes = { creator: shares.creator > 0, recipient: shares.recipient > 0 };
  const address = (role: 'origin' | 'destination'): StoredAddress => ({
    _id: ids[role],
    userId: n.owner.id,
    deliveryId,
    role,
    fields: stopAddress(
      priced.route[role],
      role === 'origin' ? request.originContact : request.destinationContact,
      role === 'origin' ? request.originNote : request.destinationNote,
    ),
    createdAt: now,
    updatedAt: now,
  });
  const delivery: DeliveryRecord = {
    _id: deliveryId,
    userId: n.owner.id,
    profileId: n.owner.profileId,
    apiKeyId: n.apiKeyId,
    trackingId: n.trackingId,
    type: 'P2P',
    deliveryType: request.type,
    lifecycle: initialLifecycle(owes, { creator: false, recipient: false }),
    version: 0,
    routeType: priced.route.routeType,
    distanceKm: priced.route.distance.distanceKm,
    etaSeconds: priced.route.distance.etaSeconds,
    fleetType: priced.fleetType,
    fees: priced.fees,
    feeBlock: priced.quote.deliveryFee,
    tierIds: priced.tierIds,
    tariffVersion: priced.tariffVersion,
    deliveryFeePayer: request.deliveryFeePayer,
    paymentMethodType: request.paymentMethodType,
    payment,
    courierMatching: request.courierSelection,
    courierId: request.courierId ?? null,
    requireCollectionProofCode: request.requireCollectionProofCode,
    requireDeliveryProofCode: request.requireDeliveryProofCode,
    link3rdPartyByContactInfo: request.link3rdPartyByContactInfo,
    recipientUserId: n.recipientUserId,
    urgencyType: request.urgencyType,
    deliveryDate: request.schedule ? new Date(`${request.schedule.date}T00:00:00.000Z`) : null,
    deliverySlot: request.schedule?.slot ?? null,
    slotStartsAt: priced.slotStartsAt ? new Date(priced.slotStartsAt) : null,
    slotEndsAt: priced.slotEndsAt ? new Date(priced.slotEndsAt) : null,
    timeZone: priced.timeZone,
    note: request.note ?? null,
    payOnDelivery: request.payOnDelivery
      ? {
          collectAmountKobo: n.assigned.totalValueKobo,
          collectTarget: 'PACKAGE_VALUE',
          remitTo: request.podRemitTo,
          courierProfileId: request.podCourierProfileId ?? null,
        }
      : null,
    packages: {
      ids: n.assigned.packages.map((p) => p.id),
      totalWeightGrams: n.assigned.totalWeightGrams,
      totalValueKobo: n.assigned.totalValueKobo,
    },
    originId: ids.origin,
    destinationId: ids.destination,
    proofs: requiredProofs(request).map((type) => ({
      id: ids.proof(type),
      type,
      codeHash: n.proofHashes[type] as string,
      code: null,
      isActive: true,
      scannedAt: null,
      createdAt: now,
    })),
    steps: [
      {
        id: ids.step(0),
        step: 'REQUEST_CREATED',
        active: true,
        hidden: false,
        updatedAt: now,
      },
    ],
    p2p: { id: ids.p2p, createdAt: now, updatedAt: now },
    createdAt: now,
    updatedAt: now,
  };
  return { delivery, addresses: [address('origin'), address('destination')] };
}

/** Marks the creator's share paid at creation (a wallet debit) in a record not yet stored. */
export function paidByWallet(record: DeliveryRecord): DeliveryRecord {
  const paid = { creator: true, recipient: false };
  return { ...record, lifecycle: initialLifecycle(record.lifecycle.owes, paid) };
}

/** Records an opened checkout on a share of a record not yet stored. */
export function withCheckout(
  record: DeliveryRecord,
  share: Share,
  checkout: CheckoutStart,
): DeliveryRecord {
  const payment = {
    ...record.payment[share],
    checkout,
    checkoutReference: checkout.data.reference,
    checkoutUrl: checkout.data.authorization_url,
  };
  return { ...record, payment: { ...record.payment, [share]: payment } };
}

/** The share a checkout pays for, or null when it is none of this delivery's. */
export function shareOfCheckout(record: DeliveryRecord, reference: string): Share | null {
  if (record.payment.creator.checkoutReference === reference) return 'creator';
  if (record.payment.recipient.checkoutReference === reference) return 'recipient';
  return null;
}
