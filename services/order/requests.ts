import { randomUUID } from 'node:crypto';
import type { Logger } from 'moleculer';
import type { Config, OrderFaultPoint } from '../../libs/config';
import { call, type Caller } from '../../libs/contracts';
import type { Broadcaster } from '../../libs/contracts/call';
import {
  courierCannotCarry,
  courierCannotCollect,
  NAMED_COURIERS_ASKED_MAX,
  NO_MERCHANT_COURIERS,
  noCourierCanCarry,
  noCourierCanCollect,
} from '../../libs/contracts/matching';
import { DELIVERY_CREATED_EVENT } from '../../libs/contracts/order';
import { payerOf } from '../../libs/contracts/payment';
import { formatKg } from '../../libs/money';
import { nameableCourier } from '../../libs/contracts/nameable-courier';
import { courierHasUserId, isUserId } from '../../libs/contracts/user-ids';
import type { SimulationMode } from '../../libs/contracts/matching';
import {
  conflict,
  isWaybillError,
  notFound,
  unprocessable,
  WaybillError,
  type ErrorType,
} from '../../libs/errors';
import { nameBasedId } from '../../libs/ids';
import type { AuthUser } from '../../libs/service';
import { hashProofCode, newProofCode, newTrackingId } from './codes';
import {
  buildDelivery,
  paidByWallet,
  recordIds,
  requiredProofs,
  withCheckout,
  type DeliveryRecord,
  type ProofType,
} from './delivery-record';
import { isMatchingEligible } from './lifecycle';
import { linkedRecipient, roleOf } from './parties';
import { paymentLinkMessages, proofCodeMessages, type NotificationRecord } from './notifications';
import { readDeliveryRequest, type DeliveryRequest, type RequestParams } from './request-input';
import type { Settlement } from './settlement';
import type { OrderStore, PendingRequest, RequestStage } from './store';
import type { DeliveryTransitions } from './transitions';
import type { Announcer } from './announcer';

export const ABANDONED =
  'This request could not be completed and was undone: nothing was charged and its packages are free. Send it again with a new Idempotency-Key.';
export const IN_PROGRESS =
  'A request with this Idempotency-Key is still being processed; retry in a few seconds';

/** Who asks: the key's user and the key. */
export interface Requester {
  user: AuthUser;
  apiKeyId: string | null;
  idempotencyToken?: string;
  /** The request's context: the calls it makes carry its meta (the user). */
  caller: Caller;
  /** The sandbox's `Waybill-Simulate` (staging only). */
  simulation?: SimulationMode;
}

export interface RequestDeps {
  config: Config['order'];
  store: OrderStore;
  transitions: DeliveryTransitions;
  settlement: Settlement;
  announcer: Announcer;
  services: () => Caller & Broadcaster;
  logger: () => Logger;
}

type Built = NonNullable<PendingRequest['built']>;

/**
 * A refusal the requester must see again on a retry: a 4xx of ours, from this service or
 * another. Not moleculer's own 4xx (no node runs the action, a node stopping, a full queue:
 * 404s and 429s that pass), nor a time limit or a rate limit: they say nothing of the request
 * itself, which stays pending for the sweep to undo (its retries then answer 409, and a new key
 * sends it again).
 */
export function isRefusal(err: unknown): err is WaybillError {
  if (!isWaybillError(err)) return false;
  return err.code >= 400 && err.code < 500 && err.code !== 408 && err.code !== 429;
}

/**
 * Draws of a tracking id before a request gives up: each draw is taken already only with odds
 * of the ids issued over 2^60.
 */
const TRACKING_DRAWS_MAX = 3;

/** The payment service's answer that there is no debit to give back (nothing was taken). */
export const isNoDebit = (err: unknown) => isWaybillError(err) && err.type === 'NOT_FOUND';

/**
 * Creating a delivery request is a saga over four services: take the packages, price them,
 * take the payment (or open the checkouts), then store the delivery. What is done is saved
 * on a pending document as it goes; the request ends by claiming its outcome (CREATED or
 * REFUSED) by insert, so that the request itself and the recovery sweep can never end it
 * both ways. A refusal undoes what was done; a request stopped half-way (a crash) is finished
 * by the sweep when everything but the record was done, otherwise undone.
 */
export class DeliveryRequests {
  constructor(private readonly deps: RequestDeps) {}

  private get store() {
    return this.deps.store;
  }

  /** A test's crash, at the named point (never outside tests: config refuses it). */
  private fault(point: OrderFaultPoint): void {
    if (this.deps.config.fault === point) {
      this.deps.logger().error(`ORDER_FAULT=${point}: stopping the process`);
      process.kill(process.pid, 'SIGKILL');
    }
  }

  /** The created delivery with its stops, as created: not read back from the store (`finish`). */
  async create(params: RequestParams, who: Requester): Promise<Built> {
    const { user } = who;
    const request = readDeliveryRequest(params, user);
    const deliveryId = who.idempotencyToken
      ? nameBasedId('delivery', user.id, who.idempotencyToken)
      : randomUUID();
    // Only a request named by its key can have run before. Its answer stands whatever became
    // of its couriers since, so they are checked only for a request not decided yet.
    const earlier = who.idempotencyToken ? await this.replay(deliveryId) : null;
    if (earlier) return earlier;
    const own = await this.checkCouriers(request, user.id, who.caller);
    await this.checkCollectors(request, user.id, own, who);
    const recipientUserId = request.link3rdPartyByContactInfo
      ? linkedRecipient(
          user.id,
          await call(who.caller, 'account.userByContact', {
            email: request.destinationContact.email,
            phone: request.destinationContact.phone,
          }),
        )
      : null;

    const now = new Date();
    const drawn = newTrackingId();
    const claimed = await this.store.claimPending({
      _id: deliveryId,
      userId: user.id,
      stage: 'STARTED',
      walletDebit: request.paymentMethodType === 'WALLET',
      trackingId: drawn,
      createdAt: now,
      updatedAt: now,
    });
    if (!claimed) {
      const ended = await this.replay(deliveryId);
      if (ended) return ended;
      throw conflict(IN_PROGRESS);
    }
    // An earlier run of the request drops its pending document only once its outcome is
    // claimed: one that ended between the look above and this claim is replayed, and this
    // run takes nothing (it would answer another tracking id and send other codes, and, on a
    // refusal of its own, give back the created delivery's debit and packages).
    if (who.idempotencyToken && (await this.store.outcome(deliveryId))) {
      await this.store.dropPending(deliveryId);
      return (await this.replay(deliveryId)) as Built;
    }
    this.fault('after-claim');
    try {
      const trackingId = await this.claimTrackingId(deliveryId, drawn);
      return await this.run(deliveryId, request, { ...who, recipientUserId }, own, trackingId, now);
    } catch (err) {
      throw isRefusal(err) ? await this.refuseAnswering(deliveryId, err) : err;
    }
  }

  /**
   * SPECIFIC needs a courier it may name (`nameableCourier`); a merchant's own couriers, at
   * least one; a COURIER_WALLET pay-on-delivery, a nameable courier whose id is no user's (409).
   * The ids of the merchant's own active couriers when they were read
   * (MERCHANT_SPECIAL_COURIERS), else null.
   */
  private async checkCouriers(
    request: DeliveryRequest,
    userId: string,
    services: Caller,
  ): Promise<string[] | null> {
    if (request.courierSelection === 'SPECIFIC' && request.courierId) {
      await nameableCourier(services, request.courierId, 'courierId');
    }
    let own: string[] | null = null;
    if (request.courierSelection === 'MERCHANT_SPECIAL_COURIERS') {
      own = await this.ownCouriers(userId, services);
      if (own.length === 0) throw notFound(NO_MERCHANT_COURIERS);
    }
    const remitTo = request.podCourierProfileId;
    if (remitTo) {
      await nameableCourier(services, remitTo, 'podCourierProfileId');
      // The collected money would be credited to that user (decision 109).
      if (await isUserId(services, remitTo)) {
        throw conflict(
          `${courierHasUserId(remitTo)}: a COURIER_WALLET pay-on-delivery cannot be credited to it. Choose another courier, or podRemitTo MY_WALLET`,
          { errors: [{ field: 'podCourierProfileId', message: "a user's id" }] },
        );
      }
    }
    return own;
  }

  private async ownCouriers(userId: string, services: Caller): Promise<string[]> {
    const own = await call(services, 'courier-matching.merchantCouriers', {
      userId,
      activeOnly: true,
    });
    return own.map((c) => c.id);
  }

  /**
   * A pay-on-delivery that only the merchant's own couriers may carry (SPECIFIC naming one of
   * them, or MERCHANT_SPECIAL_COURIERS) is refused while every one of them would pass the cash
   * limit with it (decision 110), before anything is taken: its search would start at once and
   * only wait for one to hand cash in. Asked before the request is claimed, so that the same
   * Idempotency-Key is taken once one has. Left to matching, which holds the limit at each
   * offer: a courier of someone else's (the answer would tell a stranger about their cash), a
   * SCHEDULED delivery (its search starts on its date), the sandbox, a list too long to ask
   * about at once, and any doubt (packages the request will refuse, matching or payment not
   * answering).
   */
  private async checkCollectors(
    request: DeliveryRequest,
    userId: string,
    own: string[] | null,
    who: Requester,
  ): Promise<void> {
    if (!request.payOnDelivery || request.schedule || who.simulation) return;
    const services = who.caller;
    const named = namedCouriers(request, own);
    if (!named || named.length > NAMED_COURIERS_ASKED_MAX) return;
    let allowed: string[];
    let collectKobo: number;
    try {
      // Someone else's courier: the answer would tell a stranger about their cash.
      if (
        request.courierSelection === 'SPECIFIC' &&
        !(await this.ownCouriers(userId, services)).includes(named[0])
      ) {
        return;
      }
      ({ totalValueKobo: collectKobo } = await call(services, 'package.resolveSelection', {
        userId,
        packageIds: request.packageIds,
      }));
      if (collectKobo <= 0) return;
      ({ courierIds: allowed } = await call(services, 'courier-matching.mayCollect', {
        courierIds: named,
        collectKobo,
      }));
    } catch (err) {
      // The request refuses bad packages itself; a matching of the version before (a rolling
      // update) has no such action; the merchant's list unread: either way the search holds
      // the limit.
      if (!isRefusal(err)) {
        this.deps.logger().warn('couriers’ cash room not known; the pay-on-delivery is taken', {
          userId,
          err: (err as Error).message,
        });
      }
      return;
    }
    if (allowed.length > 0) return;
    throw unprocessable(
      request.courierSelection === 'SPECIFIC'
        ? courierCannotCollect(collectKobo)
        : noCourierCanCollect(collectKobo),
    );
  }

  /**
   * A delivery only named couriers may carry (SPECIFIC, or MERCHANT_SPECIAL_COURIERS) is refused
   * when none of their vehicles can take its load, before anything is paid (decision 164):
   * matching would never offer it to them, and it would wait out its search for a refund.
   * Priced first, for the fleet type it was priced for stands whatever its limit. Left to
   * matching, as `checkCollectors` leaves the cash limit: the sandbox, a SCHEDULED delivery
   * (its couriers are read on its date, and may change until then), a list too long to ask
   * about at once, and any doubt (matching not answering, or of the version before).
   */
  private async checkCarriers(
    request: DeliveryRequest,
    who: Requester,
    own: string[] | null,
    fleetTypeId: string,
    weightGrams: number,
  ): Promise<void> {
    if (who.simulation || request.schedule) return;
    const named = namedCouriers(request, own);
    if (!named || named.length === 0 || named.length > NAMED_COURIERS_ASKED_MAX) return;
    let able: string[];
    try {
      ({ courierIds: able } = await call(who.caller, 'courier-matching.mayCarry', {
        courierIds: named,
        fleetTypeId,
        weightGrams,
      }));
    } catch (err) {
      this.deps.logger().warn('couriers’ vehicles not known; the delivery is taken', {
        userId: who.user.id,
        err: (err as Error).message,
      });
      return;
    }
    if (able.length > 0) return;
    const kg = formatKg(weightGrams);
    throw unprocessable(
      request.courierSelection === 'SPECIFIC' ? courierCannotCarry(kg) : noCourierCanCarry(kg),
    );
  }

  private async stage(deliveryId: string, stage: RequestStage, more: Partial<PendingRequest> = {}) {
    await this.store.savePending(deliveryId, { stage, ...more });
  }

  private async run(
    deliveryId: string,
    request: DeliveryRequest,
    who: Requester & { recipientUserId: string | null },
    /** The merchant's own active couriers, as `checkCouriers` read them (else null). */
    own: string[] | null,
    trackingId: string,
    now: Date,
  ): Promise<Built> {
    const services = who.caller;
    const { user } = who;
    const assigned = await call(services, 'package.assign', {
      userId: user.id,
      deliveryId,
      packageIds: request.packageIds,
    });
    this.fault('after-packages');

    const priced = await call(services, 'pricing.quote', {
      origin: request.origin,
      destination: request.destination,
      load: { weightGrams: assigned.totalWeightGrams, valueKobo: assigned.totalValueKobo },
      urgencyType: request.urgencyType,
      deliveryDate: request.schedule?.date,
      deliverySlot: request.schedule?.slot,
      fleetTypeId: request.fleetTypeId,
      courierId: request.courierId,
      deliveryFeePayer: request.deliveryFeePayer,
      payOnDelivery: request.payOnDelivery,
      quoteId: request.quoteId,
    });
    await this.checkCarriers(request, who, own, priced.fleetType.id, assigned.totalWeightGrams);

    const codes = new Map<ProofType, string>(
      requiredProofs(request).map((type) => [type, newProofCode()]),
    );
    const secret = this.deps.config.proofCodeSecret;
    const ids = recordIds(deliveryId);
    const proofHashes = Object.fromEntries(
      [...codes].map(([type, code]) => [type, hashProofCode(secret, ids.proof(type), code)]),
    );
    const built = buildDelivery({
      deliveryId,
      trackingId,
      owner: { id: user.id, profileId: user.profileId },
      apiKeyId: who.apiKeyId,
      recipientUserId: who.recipientUserId,
      request,
      assigned,
      priced,
      proofHashes,
      now,
    });
    const { addresses } = built;
    let delivery: DeliveryRecord = { ...built.delivery, simulation: who.simulation ?? null };
    const notifications: NotificationRecord[] = [...codes].flatMap(([type, code]) =>
      proofCodeMessages(
        delivery,
        type,
        code,
        type === 'COLLECTION' ? request.originContact : request.destinationContact,
        now,
      ),
    );

    const checkout = (share: 'creator' | 'recipient', email: string) =>
      call(services, 'payment.startCheckout', {
        userId: user.id,
        amountKobo: delivery.payment[share].amountKobo,
        purpose: { kind: 'DELIVERY', id: deliveryId },
        payer: payerOf(share),
        email,
        merchantName: user.name,
        idempotencyKey: `${deliveryId}:${share}`,
      });
    if (delivery.payment.creator.method === 'CHECKOUT') {
      delivery = withCheckout(delivery, 'creator', await checkout('creator', user.email));
    }
    if (delivery.payment.recipient.amountKobo > 0) {
      const opened = await checkout('recipient', request.destinationContact.email);
      delivery = withCheckout(delivery, 'recipient', opened);
      notifications.push(
        ...paymentLinkMessages(
          delivery,
          delivery.payment.recipient.amountKobo,
          opened.data.authorization_url,
          user.name,
          request.destinationContact,
          now,
        ),
      );
    }
    const walletPays = delivery.payment.creator.method === 'WALLET';
    if (walletPays) {
      // Nothing is saved before the debit: a request stopped before READY is undone, and its
      // pending document already says that a debit may have to be given back (`walletDebit`).
      this.fault('before-debit');
      await call(services, 'payment.debit', {
        userId: user.id,
        amountKobo: delivery.payment.creator.amountKobo,
        reference: deliveryId,
        description: `Delivery ${delivery.trackingId}`,
      });
      delivery = paidByWallet(delivery);
      this.fault('before-ready');
    }
    await this.stage(deliveryId, 'READY', { built: { delivery, addresses }, notifications });
    this.fault('after-ready');
    return this.finish(deliveryId, { delivery, addresses }, notifications);
  }

  /**
   * The drawn tracking id, claimed for the delivery before anything is taken; drawn again
   * should another delivery hold it (2^-60 a pair), its claim saved first so that an undo
   * gives it back. Claimed here, not when the delivery is stored: by then it is in the
   * wallet's entry and the codes' messages, and a decided delivery could never be stored.
   */
  private async claimTrackingId(deliveryId: string, drawn: string): Promise<string> {
    let trackingId = drawn;
    for (let draws = 1; !(await this.store.claimTrackingId(trackingId, deliveryId)); draws += 1) {
      // Not a refusal: the request stays pending, and the sweep undoes it.
      if (draws === TRACKING_DRAWS_MAX) throw new Error(`no free tracking id for ${deliveryId}`);
      trackingId = newTrackingId();
      await this.store.savePending(deliveryId, { trackingId });
    }
    return trackingId;
  }

  /** Claims CREATED and stores the delivery; throws the refusal when the sweep undid it first. */
  private async finish(
    deliveryId: string,
    built: Built,
    notifications: NotificationRecord[],
  ): Promise<Built> {
    const won = await this.store.claimOutcome({
      _id: deliveryId,
      outcome: 'CREATED',
      at: new Date(),
    });
    if (!won) {
      const decided = await this.store.outcome(deliveryId);
      if (decided?.outcome === 'REFUSED') throw asError(decided.error);
    }
    this.fault('after-outcome');
    try {
      await this.persist(built, notifications, true);
    } catch (err) {
      // Decided CREATED and paid: an error here would send the client to request it again
      // and pay twice. The pending document stays READY, so the first read of the delivery
      // (`stored`), a retry with the key or the sweep stores it.
      this.deps
        .logger()
        .warn('created delivery not stored yet; its first read or the sweep stores it', {
          deliveryId,
          err: (err as Error).message,
        });
    }
    return built;
  }

  /**
   * A delivery as a caller finds it. One whose request was decided CREATED while a failed
   * write left it unstored (`finish`) is stored first: its creator was answered 201 and may
   * read or cancel it at once. Only a miss costs more: one read of the request's outcome.
   * Without `readerId`, an operator's read: stored whoever its parties are.
   */
  async stored(deliveryId: string, readerId?: string): Promise<DeliveryRecord | null> {
    const delivery = await this.deps.transitions.current(deliveryId);
    if (delivery || (await this.store.outcome(deliveryId))?.outcome !== 'CREATED') return delivery;
    return (await this.storeCreated(deliveryId, readerId))?.delivery ?? null;
  }

  /**
   * A delivery decided CREATED, stored from its pending document if it is not yet; null while
   * it has neither (its run has not saved READY). With `readerId`, only for one of its
   * parties: a stranger's read writes nothing (and, should the writes fail, learns nothing).
   */
  private async storeCreated(deliveryId: string, readerId?: string): Promise<Built | null> {
    const pending = await this.store.pending(deliveryId);
    if (pending?.built && readerId && !roleOf(pending.built.delivery, readerId)) return null;
    if (pending?.built) {
      await this.persist(pending.built, pending.notifications ?? [], claimedEarlier(pending));
      return pending.built;
    }
    // Gone: stored since the caller's read, by the request's own run or the sweep.
    return this.withStops(await this.deps.transitions.current(deliveryId));
  }

  private async withStops(delivery: DeliveryRecord | null): Promise<Built | null> {
    if (!delivery) return null;
    const stops = await this.store.addresses([delivery.originId, delivery.destinationId]);
    return { delivery, addresses: [...stops.values()] };
  }

  /**
   * Stores a created delivery, its addresses and messages, and tells the others: once each.
   * `trackingClaimed`: its tracking id was claimed by its request (else it is claimed here).
   */
  private async persist(
    built: Built,
    notifications: NotificationRecord[],
    trackingClaimed: boolean,
  ): Promise<void> {
    const { delivery, addresses } = built;
    // First: a stored delivery always has its tracking page.
    if (
      !trackingClaimed &&
      !(await this.store.claimTrackingId(delivery.trackingId, delivery._id))
    ) {
      // A request of the version before, whose id was drawn twice (2^-60): never stored.
      throw new Error(`delivery ${delivery._id} cannot be stored: its tracking id is taken`);
    }
    const inserted = await this.store.insertDelivery(delivery, addresses);
    // Stored before (a run that stopped or failed after it): it may have changed since, and is
    // matched as it is now. One cancelled meanwhile must not be looked for a courier again.
    const now = inserted ? delivery : await this.deps.transitions.current(delivery._id);
    if (!now) throw new Error(`delivery ${delivery._id} is stored but cannot be read`);
    // Messages of a delivery ended since are not sent (the sender reads it first).
    await this.store.enqueue(notifications);
    if (delivery.simulation) await this.store.startSimulation(delivery._id, delivery.createdAt);
    const { settlement } = this.deps;
    if (isMatchingEligible(now.lifecycle)) {
      try {
        await settlement.startMatching(now, delivery.createdAt);
      } catch (err) {
        // The delivery is created and paid: the request succeeds, and the pending document
        // stays so that the sweep finishes it by telling matching.
        this.deps.logger().warn('matching not told of a new delivery yet; the sweep retries', {
          deliveryId: delivery._id,
          err: (err as Error).message,
        });
        return;
      }
    }
    try {
      await this.deps.announcer.creation(delivery);
    } catch (err) {
      // As above: the sweep finishes the request, publishing its events then.
      this.deps.logger().warn('delivery events not published yet; the sweep retries', {
        deliveryId: delivery._id,
        err: (err as Error).message,
      });
      return;
    }
    await this.store.dropPending(delivery._id);
    // Logged, never thrown: nothing would repeat it once the pending document is gone, and a
    // read or cancel of the stored delivery that finished its request must not fail for it.
    await settlement
      .announce(DELIVERY_CREATED_EVENT, delivery, delivery.createdAt)
      .catch((err: unknown) =>
        this.deps
          .logger()
          .warn('delivery creation not announced', { deliveryId: delivery._id, err }),
      );
  }

  /**
   * Ends a refused request: its refusal recorded for retries, what it took given back; a
   * failure to give it back (the payment or package service away) leaves that to the sweep.
   * What the requester is answered: the refusal recorded, as every retry with the key will be
   * (the sweep's, when it undid the request first: the payment service's own refusal of its
   * late debit says less), or `err` when it was not recorded.
   */
  private async refuseAnswering(deliveryId: string, err: WaybillError): Promise<WaybillError> {
    let answer = err;
    try {
      const error = { type: err.type as ErrorType, message: err.message, data: err.data };
      const at = new Date();
      if (!(await this.store.claimOutcome({ _id: deliveryId, outcome: 'REFUSED', error, at }))) {
        // Decided by another run: what it took is given back only if it was refused too.
        const decided = await this.store.outcome(deliveryId);
        if (decided?.outcome !== 'REFUSED') return err;
        answer = asError(decided.error);
      }
      const pending = await this.store.pending(deliveryId);
      if (pending) await this.undo(pending);
    } catch (undoErr) {
      this.deps.logger().warn('refused request not undone yet; the sweep finishes it', {
        deliveryId,
        err: (undoErr as Error).message,
      });
    }
    return answer;
  }

  /** Gives back what a request that did not become a delivery took: its debit, its packages. */
  private async undo(pending: PendingRequest): Promise<void> {
    const services = this.deps.services();
    if (pending.walletDebit) {
      try {
        await call(services, 'payment.refund', {
          userId: pending.userId,
          debitReference: pending._id,
          description: 'Delivery request not completed',
        });
      } catch (err) {
        // No debit was made: nothing to give back. Anything else (the payment service down)
        // keeps the request pending, for the sweep to give the debit back later.
        if (!isNoDebit(err)) throw err;
      }
    }
    await call(services, 'package.release', { deliveryId: pending._id });
    if (pending.trackingId) await this.store.dropTrackingRef(pending.trackingId, pending._id);
    await this.store.dropPending(pending._id);
  }

  /** How an earlier run of this request ended: its delivery, its refusal, or null. */
  private async replay(deliveryId: string): Promise<Built | null> {
    const decided = await this.store.outcome(deliveryId);
    if (!decided) return null;
    if (decided.outcome === 'REFUSED') throw asError(decided.error);
    // Created but not stored yet (its run stopped after the claim, or a write failed): store it now.
    const built =
      (await this.withStops(await this.deps.transitions.current(deliveryId))) ??
      (await this.storeCreated(deliveryId));
    if (!built) throw conflict(IN_PROGRESS);
    return built;
  }

  /**
   * The sweep's part: a request left pending longer than any of its calls may take was
   * stopped. Finished when only the record was missing, otherwise undone.
   */
  async recover(listed: PendingRequest): Promise<'created' | 'undone'> {
    // The copy the sweep listed may be older than the request's progress since (a request
    // slowed, not stopped, may have saved READY and claimed CREATED meanwhile): it decides on
    // the document as it is now, read before the outcome. A request drops its document only
    // once its outcome is claimed and carried out: gone, the request ended it itself.
    const pending = await this.store.pending(listed._id);
    let decided = await this.store.outcome(listed._id);
    if (!pending) return decided?.outcome === 'CREATED' ? 'created' : 'undone';
    if (!decided) {
      const outcome =
        pending.stage === 'READY' && pending.built
          ? ({ _id: pending._id, outcome: 'CREATED', at: new Date() } as const)
          : ({
              _id: pending._id,
              outcome: 'REFUSED',
              error: { type: 'CONFLICT', message: ABANDONED },
              at: new Date(),
            } as const);
      await this.store.claimOutcome(outcome);
      decided = await this.store.outcome(pending._id);
    }
    if (decided?.outcome === 'CREATED') {
      // The request saves READY before it claims CREATED, so a document read after the claim
      // has `built`; read before it, the next sweep reads it again.
      const current = pending.built ? pending : await this.store.pending(pending._id);
      if (current?.built) {
        await this.persist(current.built, current.notifications ?? [], claimedEarlier(current));
      } else if (current && (await this.deps.transitions.current(current._id))) {
        // Read after CREATED without a record: a later run's, stopped before it found the
        // outcome and dropped it (decision 131). The delivery is stored; nothing to finish.
        await this.store.dropPending(current._id);
      }
      return 'created';
    }
    await this.undo(pending);
    return 'undone';
  }
}

/**
 * The only couriers a delivery may go to: SPECIFIC's one, or the merchant's own list as read
 * (`own`); null when any courier may take it.
 */
function namedCouriers(request: DeliveryRequest, own: string[] | null): string[] | null {
  if (request.courierSelection === 'SPECIFIC' && request.courierId) return [request.courierId];
  if (request.courierSelection === 'MERCHANT_SPECIAL_COURIERS') return own;
  return null;
}

/** Whether a pending request claimed its tracking id itself (one of the version before did not). */
const claimedEarlier = (pending: PendingRequest) => pending.trackingId !== undefined;

function asError(error: { type: string; message: string; data?: unknown }): WaybillError {
  return new WaybillError(error.type as ErrorType, error.message, error.data as never);
}
