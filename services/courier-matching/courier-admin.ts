import { randomUUID } from 'node:crypto';
import Joi from '../../libs/joi';
import type { Config } from '../../libs/config';
import { broadcast, call } from '../../libs/contracts';
import {
  COURIER_CHANGED_EVENT,
  COURIER_NOT_FOUND,
  COURIER_TOKENS_CHANGED_EVENT,
  courierIdParams,
} from '../../libs/contracts/matching';
import { conflict, isWaybillError, notFound, serviceUnavailable } from '../../libs/errors';
import { isUserId } from '../../libs/contracts/user-ids';
import { isDuplicateKey } from '../../libs/mongo';
import { capRefusals, createInPlace, givePlaceBack } from '../../libs/places';
import { userIdParams } from '../../libs/schemas';
import {
  action,
  type ServiceActions,
  type WaybillContext,
  type WithDefaults,
} from '../../libs/service';
import {
  MERCHANT_COURIERS_MAX,
  courierView,
  createCourierParams,
  listCouriersParams,
  merchantCourierParams,
  updateCourierParams,
  type CourierChanges,
  type ListCouriersParams,
} from './schemas';
import type { CourierLocations } from './locations';
import type { HoldRecord, SearchStore } from './search-store';
import type { SearchNotes } from './search-notes';
import {
  merchantCourierHolder,
  type CourierRecord,
  type CourierSet,
  type CourierStore,
} from './store';
import type { CourierTokenStore } from './token-store';
import { toCourierView } from './views';

const retiringMidDelivery = (courierId: string, deliveryId: string) =>
  conflict(
    `Courier ${courierId} is taking delivery ${deliveryId} to the door; retire them once it has ended (delivered, returned, failed before collection or cancelled); if they cannot report, record it for them with POST /admin/deliveries/${deliveryId}/fail, then /returned`,
  );

const courierPath = (courierId: string) => `/admin/couriers/${courierId}`;

/**
 * How long an addition refused at the cap waits for another addition of the same courier that
 * holds a place: far longer than an insert takes, far shorter than the call's timeout.
 */
const TWIN_WAIT_MS = 5_000;

/**
 * The operators' courier actions: the directory (create, list, read, change; couriers are
 * never deleted, since deliveries refer to them: `active: false` retires one) and each
 * merchant's own list.
 */
export interface CourierAdminDeps {
  config: Config;
  store: CourierStore;
  tokens: CourierTokenStore;
  locations: CourierLocations;
  /** What each courier holds: an offer, or a delivery under way. */
  holds: Pick<SearchStore, 'hold' | 'holding' | 'claimOfferOutcome' | 'offerOutcome'>;
  /** Where a courier retired as an offer was made to them is noted out of its search. */
  searchNotes: Pick<SearchNotes, 'noteRetired'>;
}

export function createCourierAdminActions(deps: CourierAdminDeps): ServiceActions {
  const { config, store, tokens, locations } = deps;

  async function findCourier(courierId: string) {
    const courier = await store.find(courierId);
    if (!courier) throw notFound(COURIER_NOT_FOUND);
    return courier;
  }

  /** Takes a registration number for a courier; 409 naming the courier that has it. */
  async function takeRegNo(
    ctx: WaybillContext<unknown>,
    regNo: string,
    courierId: string,
    /** Nobody else takes numbers for this courier now: its id was drawn here, or is locked. */
    ownId: boolean,
  ): Promise<boolean> {
    let taking: Awaited<ReturnType<CourierStore['takeRegNo']>>;
    try {
      taking = await store.takeRegNo(regNo, courierId);
    } catch (err) {
      // Its claim may have been written before the error: given back, or the number would be
      // held for a courier never written until the claim's grace is over (a retry of this very
      // creation refused 409 meanwhile, naming a courier that does not exist). Not when a twin
      // request creating the same courier id may hold it: it is theirs then.
      if (ownId) await giveBack(ctx, regNo, courierId);
      throw err;
    }
    if ('took' in taking) return taking.took;
    if (taking.heldBy === null) {
      throw conflict(
        `Registration number ${regNo} is being registered by other requests right now; retry in a moment`,
      );
    }
    throw conflict(
      `Registration number ${regNo} is already registered to courier ${taking.heldBy}; a vehicle belongs to one courier: change that courier's fleet.regNo first (PATCH ${courierPath(taking.heldBy)})`,
    );
  }

  /**
   * Gives a number back once the write that took or left it is done or failed. A failure
   * here leaves a claim its courier does not carry, which the next taker releases after the
   * grace (reg-no-claims.ts): nothing to report to this caller, whose change is made.
   */
  async function giveBack(ctx: WaybillContext<unknown>, regNo: string, courierId: string) {
    try {
      await store.releaseRegNo(regNo, courierId);
    } catch (err) {
      ctx.service?.logger.warn(`could not release registration number ${regNo}`, err);
    }
  }

  /**
   * After a change: the index takes the courier's fleet type and whether it is retired,
   * every replica drops its copy of the entry, and when `active` was sent (retired or brought
   * back), every gateway drops its answers about the courier's tokens. What was sent, not what
   * changed, decides: a retry of a change that failed half-way does it all again. `after`: the
   * courier as written, null when a failed write leaves that unknown (the index then learns it
   * from the courier's next report, which reads the directory afresh).
   */
  async function directoryChanged(
    ctx: WaybillContext<unknown>,
    courierId: string,
    after: CourierRecord | null,
    sent: { fleetType: boolean; active: boolean },
  ) {
    if (after && (sent.fleetType || sent.active)) await locations.directoryChanged(after);
    else locations.forget(courierId);
    await broadcast(ctx, COURIER_CHANGED_EVENT, { courierId });
    if (sent.active) {
      const hashes = await tokens.hashesOf(courierId);
      if (hashes.length > 0) {
        await broadcast(ctx, COURIER_TOKENS_CHANGED_EVENT, { courierId, hashes });
      }
    }
  }

  /**
   * Whether the courier is at work or retired, told to the index, the replicas and the gateways
   * on the way out of a change that failed: whatever read the courier while it was under way
   * reads them again. Its own failure is only logged, the change's error being the answer; the
   * gateways' caches (COURIER_TOKEN_CACHE_SECONDS) bound what it leaves.
   */
  async function announce(
    ctx: WaybillContext<unknown>,
    courierId: string,
    after: CourierRecord | null,
  ) {
    try {
      await directoryChanged(ctx, courierId, after, { fleetType: false, active: true });
    } catch (err) {
      ctx.service?.logger.warn(`courier ${courierId}: change not announced`, err);
    }
  }

  /** A change that failed half-way, the courier left as `state` says: the operator retries it. */
  function retryLater(
    ctx: WaybillContext<unknown>,
    courierId: string,
    state: string,
    err: unknown,
  ) {
    ctx.service?.logger.warn(`courier ${courierId}: change failed; ${state}`, err);
    return serviceUnavailable(
      `Courier ${courierId} ${state}: the change could not be completed; retry the same PATCH in a few seconds`,
    );
  }

  /**
   * Puts back to work a courier found holding a delivery, or an offer they accepted, as they
   * were being retired, and says so everywhere: they take it to the door. Should that write fail,
   * nothing is announced (their token goes on working until the gateways' caches end), and the
   * operator's retry puts them back (`refuseRetiringMidDelivery`) before its 409.
   */
  async function backToWork(ctx: WaybillContext<unknown>, courierId: string, deliveryId: string) {
    let restored: CourierRecord | null;
    try {
      restored = await store.update(courierId, { active: true });
    } catch (err) {
      throw retryLater(
        ctx,
        courierId,
        `is taking delivery ${deliveryId} to the door but could not be put back to work (the retry puts them back, then answers 409)`,
        err,
      );
    }
    await announce(ctx, courierId, restored);
  }

  /**
   * A retired courier's token stops working: one taking a delivery to the door could neither
   * finish nor give it up, and the delivery would wait for good. One found retired as they take
   * it (a retirement whose return to work failed, `backToWork`) is put back to work first, so
   * that the operator's retry leaves them at work, as the 409 says.
   */
  async function refuseRetiringMidDelivery(ctx: WaybillContext<unknown>, current: CourierRecord) {
    const hold = await deps.holds.holding(current._id);
    if (hold?.kind !== 'DELIVERY') return;
    if (!current.active) await backToWork(ctx, current._id, hold.deliveryId);
    throw retiringMidDelivery(current._id, hold.deliveryId);
  }

  /**
   * Retires the courier, that field alone, before the rest of a change is written. An accept
   * may have landed between the check and the write: then the courier stays at work (409),
   * before any gateway hears of a retirement, and nothing else of the change was written. An
   * offer they hold is withdrawn, unless they accepted it first (its hold not yet the
   * delivery's): the offer's one outcome decides between the accept and the retirement.
   *
   * Until that outcome is claimed the courier may still accept, their token cached by the
   * gateways: a failure before it (a busy database: the write, the hold's read, the claim) puts
   * them back as they were and answers 503, so that no retired courier is left holding an offer
   * they can take (then be locked out of its delivery). Should that write fail too, the
   * retirement is announced instead: the gateways stop taking their token, and the offer left
   * open expires. Either way the operator's retry finishes it: it withdraws the offer, or gives
   * way to an accept (409, the courier put back to work).
   */
  async function retire(ctx: WaybillContext<unknown>, current: CourierRecord) {
    const courierId = current._id;
    let retired: CourierRecord | null = null;
    let hold: HoldRecord | null;
    let accepted: boolean;
    try {
      retired = await store.update(courierId, { active: false });
      if (!retired) throw notFound(COURIER_NOT_FOUND);
      hold = await deps.holds.hold(courierId);
      accepted =
        hold?.kind === 'OFFER' &&
        !(await deps.holds.claimOfferOutcome(hold.offerId, 'WITHDRAWN')) &&
        (await deps.holds.offerOutcome(hold.offerId)) === 'ACCEPTED';
    } catch (err) {
      if (isWaybillError(err)) throw err;
      throw await retirementFailed(ctx, current, retired, err);
    }
    if (hold && (hold.kind === 'DELIVERY' || accepted)) {
      await backToWork(ctx, courierId, hold.deliveryId);
      throw retiringMidDelivery(courierId, hold.deliveryId);
    }
    // Out of the search whose offer was withdrawn: one that may go to them alone (SPECIFIC, or
    // the last untried of a merchant's list) ends now, not when its time runs out, since the
    // index hides a retired courier and no step would note them. Best effort: the retirement
    // stands and must be announced; failing this, the search ends at its time.
    if (hold?.kind === 'OFFER') {
      await deps.searchNotes.noteRetired(hold.deliveryId, courierId).catch((err: unknown) =>
        ctx.service?.logger.warn(
          'retired courier not noted as tried; their search ends at its time',
          {
            courierId,
            deliveryId: hold.deliveryId,
            err,
          },
        ),
      );
    }
    return retired;
  }

  /**
   * The error a retirement that failed before its offer's outcome was decided answers, once the
   * courier is put back as they were (`retire`), or, failing that, announced retired. `written`:
   * the courier as the retirement wrote them, null when that write failed.
   */
  async function retirementFailed(
    ctx: WaybillContext<unknown>,
    current: CourierRecord,
    written: CourierRecord | null,
    err: unknown,
  ) {
    const courierId = current._id;
    // Retired already (a retry): as they were is retired.
    if (current.active) {
      const restored = await store.update(courierId, { active: true }).then(
        (record) => ({ record }),
        (failed: unknown) => {
          ctx.service?.logger.warn(`courier ${courierId}: not put back to work`, failed);
          return undefined;
        },
      );
      if (restored) {
        await announce(ctx, courierId, restored.record);
        return retryLater(ctx, courierId, 'was not retired (still at work)', err);
      }
    }
    await announce(ctx, courierId, written);
    return retryLater(
      ctx,
      courierId,
      'is retired, but an offer they hold may not be withdrawn yet',
      err,
    );
  }

  /**
   * The rest of a change that retires, once the retirement stands (`{active: false}` alone has
   * none). Should its write fail, the retirement stands all the same: it is announced now, and
   * the retry writes the rest.
   */
  async function restOfRetiringChange(
    ctx: WaybillContext<unknown>,
    retired: CourierRecord,
    changes: CourierSet,
  ): Promise<CourierRecord | null> {
    if (Object.keys(changes).every((field) => field === 'active')) return retired;
    try {
      return await store.update(retired._id, changes);
    } catch (err) {
      await announce(ctx, retired._id, retired);
      throw retryLater(
        ctx,
        retired._id,
        'is retired, but the rest of the change was not written',
        err,
      );
    }
  }

  /** An operator's change of a courier (PATCH), the only one of that courier under way. */
  async function changeCourier(ctx: WaybillContext<CourierChanges>) {
    const { courierId, fleet = {}, ...fields } = ctx.params;
    const current = await findCourier(courierId);
    if (fields.active === false) await refuseRetiringMidDelivery(ctx, current);
    if (fleet.typeId) await call(ctx, 'geo.getFleetType', { fleetTypeId: fleet.typeId });
    const oldRegNo = current.fleet.regNo;
    const newRegNo = fleet.regNo !== undefined && fleet.regNo !== oldRegNo ? fleet.regNo : null;
    // Taken before anything is written: a number another courier holds is a 409 that
    // changed nothing.
    const took = newRegNo !== null && (await takeRegNo(ctx, newRegNo, courierId, true));
    const changes: CourierSet = { ...fields };
    for (const [key, value] of Object.entries(fleet)) changes[`fleet.${key}`] = value;
    let updated: CourierRecord | null;
    try {
      // Decided first, so that a retirement refused leaves the rest of the change unwritten.
      updated =
        fields.active === false
          ? await restOfRetiringChange(ctx, await retire(ctx, current), changes)
          : await store.update(courierId, changes);
    } catch (err) {
      if (took && newRegNo) await giveBack(ctx, newRegNo, courierId);
      throw err;
    }
    if (!updated) throw notFound(COURIER_NOT_FOUND);
    if (newRegNo) await giveBack(ctx, oldRegNo, courierId);
    await directoryChanged(ctx, courierId, updated, {
      fleetType: fleet.typeId !== undefined,
      active: fields.active !== undefined,
    });
    return locations.view(updated);
  }

  return {
    createCourier: action({
      retry: 'never',
      http: {
        group: 'admin',
        method: 'POST',
        path: '/couriers',
        status: 201,
        creates: 'courierId',
        message: 'Courier created',
        summary: 'Add a courier to the directory',
        description:
          '`fleet.typeId` must be a fleet type (`GET /admin/fleet-types`); `fleet.regNo` is stored upper case and trimmed, and belongs to one courier. `profilePhoto` is an https URL or the URL of a file uploaded with `POST /file/single-upload`. `lastLocation` is reported by matching and cannot be set.',
        response: courierView,
        errors: {
          404: 'Fleet type not found',
          409: 'Another courier has this registration number, or a courier or a user has this id',
        },
      },
      params: createCourierParams(config.cdnBaseUrl),
      async handler(ctx) {
        const { id, fleet, ...fields } = ctx.params;
        const courierId = id ?? randomUUID();
        const exists = `A courier with id ${courierId} already exists; change it with PATCH ${courierPath(courierId)}`;
        if (id && (await store.find(id))) throw conflict(exists);
        if (id && (await isUserId(ctx, id))) {
          // A courier's wallet is named by their id: it would be that user's.
          throw conflict(`${id} is a user's id; give the courier another id, or none`);
        }
        await call(ctx, 'geo.getFleetType', { fleetTypeId: fleet.typeId });
        const took = await takeRegNo(ctx, fleet.regNo, courierId, id === undefined);
        try {
          const record = await store.create({ _id: courierId, ...fields, fleet });
          ctx.meta.$location = courierPath(courierId);
          return toCourierView(record);
        } catch (err) {
          if (took) await giveBack(ctx, fleet.regNo, courierId);
          if (isDuplicateKey(err)) throw conflict(exists);
          throw err;
        }
      },
    }),

    listCouriers: action({
      retry: 'safe',
      http: {
        group: 'admin',
        method: 'GET',
        path: '/couriers',
        message: 'Couriers retrieved',
        summary: 'Couriers of the directory, newest first, a page at a time',
        description: 'Page with `offset` (the next page starts at `offset + limit`).',
        response: Joi.array().items(courierView),
      },
      params: listCouriersParams,
      async handler(ctx: WaybillContext<WithDefaults<ListCouriersParams, 'limit' | 'offset'>>) {
        const { limit, offset, ...filter } = ctx.params;
        return locations.views(await store.list(filter, { limit, offset }));
      },
    }),

    showCourier: action({
      retry: 'safe',
      http: {
        group: 'admin',
        method: 'GET',
        path: '/couriers/:courierId',
        message: 'Courier retrieved',
        summary: 'Get a courier',
        response: courierView,
      },
      params: courierIdParams,
      async handler(ctx) {
        return locations.view(await findCourier(ctx.params.courierId));
      },
    }),

    updateCourier: action({
      // The fields sent are set, not added to: the same change twice is the change once.
      retry: 'safe',
      http: {
        group: 'admin',
        method: 'PATCH',
        path: '/couriers/:courierId',
        message: 'Courier updated',
        summary: 'Change a courier, or retire one (`active: false`)',
        description:
          'Send only the fields to change; in `fleet`, only the fleet fields to change. A new `fleet.regNo` must not belong to another courier; the old one is free again once changed.',
        response: courierView,
        errors: {
          404: 'Courier not found; fleet type not found',
          409: 'Another courier has this registration number, the courier being retired is taking a delivery to the door, or another change of the courier is under way (send it again in a few seconds)',
          503: 'A retirement failed part-way (the database busy or away): the courier is left at work, or retired and announced, as the message says; send the same PATCH again to finish it',
        },
      },
      params: updateCourierParams(config.cdnBaseUrl),
      async handler(ctx) {
        const { courierId } = ctx.params;
        return store.edits.holding(courierId, () => changeCourier(ctx), ctx.service?.logger);
      },
    }),

    addMerchantCourier: action({
      // Adding a courier that is on the list changes nothing.
      retry: 'safe',
      http: {
        group: 'admin',
        method: 'PUT',
        path: '/users/:userId/couriers/:courierId',
        status: 204,
        message: 'Courier added to the merchant’s list',
        summary: 'Put a courier on a merchant’s own list (idempotent)',
        description: `Deliveries requested with \`courierSelection: MERCHANT_SPECIAL_COURIERS\` are offered to the active couriers of this list. At most ${MERCHANT_COURIERS_MAX} couriers per merchant.`,
        errors: {
          404: 'User not found; courier not found',
          409: `The list already has ${MERCHANT_COURIERS_MAX} couriers, or additions under way hold the last places (retry in a few seconds)`,
        },
      },
      params: merchantCourierParams,
      async handler(ctx) {
        const { userId, courierId } = ctx.params;
        await call(ctx, 'account.getUser', { userId });
        // The sandbox's virtual courier is nobody's to list: a search limited to it waits for a
        // courier gone from the index once its delivery ended.
        if ((await findCourier(courierId)).virtual) throw notFound(COURIER_NOT_FOUND);
        if (await store.isOnList(userId, courierId)) return null;
        const listed = await store.placesOnList(userId);
        const holder = merchantCourierHolder(userId, courierId);
        try {
          await createInPlace({
            store: store.listPlaces,
            owner: userId,
            cap: MERCHANT_COURIERS_MAX,
            live: listed,
            holder,
            now: new Date(),
            refused: capRefusals({
              owner: `User ${userId}`,
              things: 'couriers on its list',
              underWay: 'additions',
              advice: `remove one with DELETE /admin/users/${userId}/couriers/:courierId first`,
              error: conflict,
            }),
            insert: async (place) => {
              // Put there at the same instant by another addition of the courier, in its own place.
              if (!(await store.addToList(userId, courierId, place, holder))) {
                await givePlaceBack(store.listPlaces, userId, { id: holder, place });
              }
            },
            stored: async () => (await store.linkOf(userId, courierId))?.holder === holder,
          });
        } catch (err) {
          // Refused (or failed) while another addition of the same courier took the last place:
          // its outcome is this call's.
          const added = await store
            .onListOnceAdded(userId, courierId, TWIN_WAIT_MS)
            .catch(() => false);
          if (added) return null;
          throw err;
        }
        return null;
      },
    }),

    removeMerchantCourier: action({
      // A second removal answers 404.
      retry: 'never',
      http: {
        group: 'admin',
        method: 'DELETE',
        path: '/users/:userId/couriers/:courierId',
        status: 204,
        message: 'Courier removed from the merchant’s list',
        summary: 'Take a courier off a merchant’s own list',
        errors: { 404: 'The courier is not on this merchant’s list' },
      },
      params: merchantCourierParams,
      async handler(ctx) {
        const { userId, courierId } = ctx.params;
        const removed = await store.removeFromList(userId, courierId);
        if (!removed) {
          throw notFound(
            `Courier ${courierId} is not on the list of user ${userId}; GET /admin/users/${userId}/couriers lists it`,
          );
        }
        if (removed.holder) {
          await givePlaceBack(store.listPlaces, userId, {
            id: removed.holder,
            place: removed.place,
          });
        }
        return null;
      },
    }),

    listMerchantCouriers: action({
      retry: 'safe',
      http: {
        group: 'admin',
        method: 'GET',
        path: '/users/:userId/couriers',
        message: 'Merchant couriers retrieved',
        summary: 'The couriers on a merchant’s own list, oldest addition first',
        description:
          'Inactive couriers included (`active: false`); deliveries are offered to the active ones only.',
        response: Joi.array().items(courierView),
        errors: { 404: 'User not found' },
      },
      params: userIdParams,
      async handler(ctx) {
        const { userId } = ctx.params;
        await call(ctx, 'account.getUser', { userId });
        return locations.views(await store.merchantCouriers(userId));
      },
    }),
  };
}
