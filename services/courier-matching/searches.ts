import type { Logger } from 'moleculer';
import { MAX_SEARCH_KM } from '../../libs/config';
import { call, type Caller } from '../../libs/contracts';
import { virtualCourierId, type StartSearchParams } from '../../libs/contracts/matching';
import { conflict, isWaybillError, notFound, serviceBusy } from '../../libs/errors';
import { onAreaGrid, type GeoPoint } from '../../libs/geodesy';
import { formatKg } from '../../libs/money';
import { BoundedMap } from '../../libs/lookup-cache';
import {
  carryingFleetTypes,
  nextWideningMs,
  offerClosed,
  offerId,
  searchRadiusKm,
  simulatedAcceptAt,
  withinCashLimit,
  type FleetTypeCapacity,
  type OfferOutcome,
  type SearchReach,
} from './matching-rules';
import type { CourierPositions, NearCourier } from './positions';
import { triedSince, type SearchNotes } from './search-notes';
import type {
  HoldRecord,
  OfferRecord,
  SearchEndRecord,
  SearchRecord,
  SearchStore,
} from './search-store';
import {
  WaitingSearches,
  sweepTurn,
  type SearchCounts,
  type WaitingSearch,
} from './waiting-searches';

export const OFFER_NOT_FOUND = 'Offer not found';

/** A courier a step may offer to. */
type Candidate = Pick<NearCourier, 'courierId'>;

/** The couriers matching may offer to: the hot index of positions. */
export type AvailableCouriers = Pick<CourierPositions, 'nearest' | 'setBusy' | 'position'>;

/** Rounds of candidates a pay-on-delivery step asks about while all are over the cash limit. */
const CASH_ROUNDS = 3;

/**
 * Offers a search that may go to one courier only (SPECIFIC, or a merchant's list of one) lets
 * that courier miss before it ends NO_COURIER: a phone in a pocket is no reason to refund the
 * merchant who named them at once, while a decline is their answer and ends it.
 */
export const MISSED_OFFERS_MAX = 3;

/**
 * How often the sweep looks for virtual couriers left to free (`freeLeftOver`): nearly always
 * none, and a look is a read on every replica.
 */
const FREE_RETRY_MS = 60_000;
/** Virtual couriers freed at most per look; the next look takes the rest. */
const FREES_PER_LOOK = 50;

/**
 * Closed offers whose courier this process has let go: its later steps of the search do not
 * let them go again (far more than the searches a process runs; one forgotten is let go twice).
 */
const RELEASES_KEPT = 10_000;

/** A closed offer as its courier is let go of: its time, when the caller has read it. */
type ClosedOffer = Pick<OfferRecord, '_id' | 'courierId' | 'deliveryId'> &
  Partial<Pick<OfferRecord, 'offeredAt'>>;

export interface MatchingSettings {
  /** How long a courier has to accept an offer. */
  offerTimeoutMs: number;
  /** How long a delivery is searched for before it ends NO_COURIER_FOUND. */
  searchTimeoutMs: number;
  /**
   * How long a courier who declined or let an offer expire is not asked again for the delivery:
   * a SCHEDULED delivery, searched for hours (decision 185), asks them again after it.
   */
  reaskAfterMs: number;
  reach: SearchReach;
  /** Nearest couriers asked for at each step; the first free one gets the offer. */
  candidates: number;
  /** How much faster than real time a simulated delivery's search runs. */
  simulatorTimeScale: number;
  /** How often the sweep runs: the first wait of a search that finds nobody in reach. */
  sweepIntervalMs: number;
  /** The longest wait between two steps of a search that finds nobody in reach. */
  idleStepMaxMs: number;
  /** The cash a courier may owe with a pay-on-delivery offered to them, in kobo (0: any). */
  cashLimitKobo: number;
}

/** How long the sandbox's virtual courier takes to accept an offer, in simulated time. */
export const SIMULATED_ACCEPT_MS = 20_000;

export interface SearchDeps {
  store: SearchStore;
  /** The couriers and offers each search noted out of it, shared with the retirements. */
  notes: SearchNotes;
  couriers: AvailableCouriers;
  services: () => Caller;
  settings: MatchingSettings;
  fleetTypes: () => Promise<FleetTypeCapacity[]>;
  /** The active couriers on a merchant's own list. */
  merchantCourierIds: (userId: string) => Promise<string[]>;
  /** Whether the directory has the courier at work (not retired), read by `_id`. */
  isActive: (courierId: string) => Promise<boolean>;
  /**
   * What the courier owes in cash collected on delivery, in kobo: kept briefly, or `fresh`
   * from the payment service.
   */
  cashOwedKobo: (courierId: string, fresh?: boolean) => Promise<number>;
  /** Puts the sandbox's virtual courier of a simulated delivery near its pickup. */
  placeVirtualCourier: (search: StartSearchParams) => Promise<void>;
  /**
   * Frees what the sandbox's virtual courier of a simulated delivery took once it is over:
   * its position (Redis) and its position's record. Repeatable.
   */
  freeVirtualCourier: (courierId: string) => Promise<void>;
  logger: () => Logger;
  /** What each sweep saw of the running searches, for `/metrics`. */
  onSwept?: (counts: SearchCounts) => void;
}

/** What a courier sees of an offer. */
export interface OfferView {
  id: string;
  deliveryId: string;
  /** OPEN until accepted, declined, expired or withdrawn. */
  status: 'OPEN' | OfferOutcome;
  pickup: { lat: number; lon: number };
  dropoff: { lat: number; lon: number };
  /** kg with five decimals, as every weight of the API. */
  totalWeight: string;
  offeredAt: string;
  expiresAt: string;
}

/** A search's record as read when it had made no offer, and when (ms since the epoch). */
interface Unoffered {
  record: SearchRecord;
  readAt: number;
}

/** A search waiting for a courier, as filed with its wait. */
type FiledSearch = WaitingSearch & { unoffered?: Unoffered };

/** Order's end of a delivery met a release of its courier under way elsewhere: called again. */
const releaseUnderWay = (deliveryId: string) =>
  serviceBusy(
    `The courier of delivery ${deliveryId} is being let go by another call; order calls again`,
    5,
  );

/**
 * Searches for couriers, one offer at a time. Each step of a search either waits for the
 * courier holding the open offer, closes an expired one, gives up once the search time is
 * over, or offers the delivery to the nearest free courier within a radius that widens as
 * time passes. Every decision that must happen once is an insert (search-store.ts): the n-th
 * offer, its outcome, the courier's hold, the search's end; so any number of matchers
 * (replicas, the sweep, a courier's accept) may step one search at once.
 */
export class Searches {
  /** Where the next sweep's window starts among the running searches. */
  private sweepCursor = 0;
  /**
   * The searches that found nobody in reach, each stepped again after a wait (decision 93),
   * with the record read when no offer had been made (`reachAsLastRead`).
   */
  private readonly waiting: WaitingSearches<FiledSearch>;
  /** The closed offers this process has let go of (`letGo`, `releasedHere`). */
  private readonly released = new BoundedMap<true>(RELEASES_KEPT);
  /** When the sweep next looks for virtual couriers left to free (ms since the epoch). */
  private nextFreeAt = 0;

  constructor(private readonly deps: SearchDeps) {
    this.waiting = new WaitingSearches({
      baseMs: deps.settings.sweepIntervalMs,
      maxMs: deps.settings.idleStepMaxMs,
    });
  }

  private get store() {
    return this.deps.store;
  }

  async start(params: StartSearchParams, now = new Date()): Promise<{ started: boolean }> {
    // Not for a delivery whose search has ended (assigned, or over): a start repeated after
    // its end would put back in Redis the virtual courier the end freed.
    const simulated = params.simulate === 'delivered' || params.simulate === 'failed';
    if (simulated && !(await this.store.end(params.deliveryId))) {
      await this.deps.placeVirtualCourier(params);
    }
    // The merchant's list is read once: every step of the search reads the copy by `_id`.
    const merchantCourierIds =
      params.courierSelection === 'MERCHANT_SPECIAL_COURIERS'
        ? await this.deps.merchantCourierIds(params.userId)
        : undefined;
    const started = await this.store.claimSearch({
      ...params,
      _id: params.deliveryId,
      startedAt: now,
      offers: 0,
      tried: [],
      ...(merchantCourierIds ? { merchantCourierIds } : {}),
    });
    // Every time, not only the first: a start whose activation was lost is stepped again.
    await this.store.activate(params.deliveryId, now);
    // A start heard after its delivery was over (order's end first, or a start retried after
    // it) stops its search before it answers, since the sweep's steps read no end while nobody
    // is in reach (`reachWhileWaiting`); a failure here fails the start, which order repeats.
    const ended = await this.store.end(params.deliveryId);
    if (ended) {
      const search = await this.store.search(params.deliveryId);
      if (search) await this.finishEnded(search, ended);
      // Placed above while the end was being claimed: the end read no simulation yet (or freed
      // it before this placing), and nothing else would free it. Not a courier now carrying it.
      if (simulated && ended.outcome !== 'ASSIGNED') {
        await this.freeVirtualCourier(params.deliveryId);
      }
      return { started };
    }
    // The first offer goes out at once; a failure here is the sweep's to retry.
    setImmediate(() => void this.step(params.deliveryId));
    return { started };
  }

  /** One step, its failure logged: the sweep steps the search again. */
  async step(deliveryId: string, now = new Date()): Promise<void> {
    try {
      await this.advance(deliveryId, now);
    } catch (err) {
      this.deps.logger().warn('matching step failed; the sweep retries', {
        deliveryId,
        err: (err as Error).message,
      });
    }
  }

  /**
   * The search's latest offer and how many were made, read by `_id` from its hint (`offers`,
   * the last number noted) rather than from the first: a long search in a busy area makes
   * dozens, and every step and decline read them all. Offers are numbered without gaps but for
   * the last noted, which a step that stopped before claiming it leaves missing (the next step
   * makes it); the hint may lag (read before another matcher noted one, or a write that lost):
   * so forward while offers exist past it, then back to the last that does.
   */
  private async latestOffer(
    search: SearchRecord,
  ): Promise<{ latest: OfferRecord | undefined; made: number }> {
    const read = (n: number) => this.store.offer(offerId(search._id, n));
    let n = Math.max(search.offers, 0);
    let latest = n > 0 ? await read(n) : null;
    for (let next = await read(n + 1); next; next = await read(n + 1)) {
      n += 1;
      latest = next;
    }
    while (!latest && n > 1) {
      n -= 1;
      latest = await read(n);
    }
    return latest ? { latest, made: n } : { latest: undefined, made: 0 };
  }

  /** Real time for a real search; the sandbox's simulations run `simulatorTimeScale` faster. */
  private scaled(search: SearchRecord, ms: number): number {
    return search.simulate ? ms / this.deps.settings.simulatorTimeScale : ms;
  }

  async advance(deliveryId: string, now = new Date()): Promise<void> {
    this.waiting.stepping(deliveryId, now.getTime());
    const asLastRead = await this.reachAsLastRead(deliveryId, now);
    if (asLastRead?.reach.length === 0) {
      return this.waitOrGiveUp(asLastRead.kept.record, now, asLastRead.kept);
    }
    const read = await this.store.search(deliveryId);
    if (!read) return;
    let search = await this.withNotes(read, now);
    // Those found from the kept record stand while still no offer has been made.
    const reach =
      asLastRead && search.offers === 0
        ? asLastRead.reach
        : await this.reachWhileWaiting(search, now);
    if (reach?.length === 0) {
      return this.waitOrGiveUp(search, now, { record: search, readAt: now.getTime() });
    }
    const ended = await this.store.end(deliveryId);
    if (ended) return this.finishEnded(search, ended);
    const { latest, made } = await this.latestOffer(search);
    if (latest) {
      const outcome = await this.store.offerOutcome(latest._id);
      if (outcome === 'ACCEPTED') return void (await this.confirm(latest));
      if (outcome === null && this.virtualAccepts(search, latest, now)) {
        await this.store.claimOfferOutcome(latest._id, 'ACCEPTED');
        return this.advance(deliveryId, now);
      }
      if (outcome === null) {
        if (latest.expiresAt.getTime() > now.getTime()) {
          return this.awaitAnswer(search, latest, now);
        }
        if (!(await this.store.claimOfferOutcome(latest._id, 'EXPIRED'))) {
          return this.advance(deliveryId, now);
        }
      }
      const closed = outcome ?? 'EXPIRED';
      if (!this.releasedHere(search, latest, closed, now)) {
        await this.letGo(latest, closed, search);
      }
      // The search may have been read before this courier was noted: not asked again now.
      search = this.notedClosed(search, latest, closed, now);
    }
    if (this.timedOut(search, now) || this.nobodyLeft(search)) {
      return this.giveUp(search, now);
    }
    // Found before the end and the offers were read: still this step's when there were none.
    await this.offerNext(search, made, now, made === 0 ? reach : undefined);
  }

  /**
   * Finishes what an interrupted step decided for an ended search, then stops it: order told of
   * no courier, an offer made as the search ended withdrawn (its courier free again).
   */
  private async finishEnded(search: SearchRecord, ended: SearchEndRecord): Promise<void> {
    if (ended.outcome === 'NO_COURIER') await this.tellNoCourier(search._id);
    if (ended.outcome !== 'ASSIGNED') await this.withdrawLatest(search, false);
    await this.deactivate(search._id);
    this.waiting.forget(search._id);
  }

  /**
   * The couriers in reach of a search whose last step found nobody, with no offer made, from
   * its record as then read: most of its steps find nobody again, and for that the record is
   * enough (all but `offers` and `tried` is fixed at its start, and both stay empty until an
   * offer is made). Undefined when the step must read it: none kept, the search over its time,
   * or kept for as long as an offer lasts (another matcher may have made one since and stopped
   * before closing it: a step with a fresh read closes it and frees its courier).
   */
  private async reachAsLastRead(
    deliveryId: string,
    now: Date,
  ): Promise<{ kept: Unoffered; reach: readonly Candidate[] } | undefined> {
    const kept = this.waiting.filedSearch(deliveryId)?.unoffered;
    if (!kept) return undefined;
    const offerLasts = this.scaled(kept.record, this.deps.settings.offerTimeoutMs);
    if (now.getTime() - kept.readAt >= offerLasts) return undefined;
    const reach = await this.reachWhileWaiting(kept.record, now);
    return reach && { kept, reach };
  }

  /**
   * The search found nobody in reach: the sweep steps it again after a wait that grows with
   * each such step, at the latest when its radius grows or its time is up. `unoffered`: the
   * record as read when no offer had been made, for the next step to start from.
   */
  private waitForCourier(search: SearchRecord, now: Date, unoffered?: Unoffered): void {
    const { reach } = this.deps.settings;
    const started = search.startedAt.getTime();
    const widening = nextWideningMs(reach, now.getTime() - started);
    const timeUp = this.timeUpAt(search);
    this.waiting.foundNobody(
      {
        id: search._id,
        pickup: search.pickup,
        radiusKmAt: (at) => searchRadiusKm(reach, at - started),
        ...(unoffered ? { unoffered } : {}),
      },
      now.getTime(),
      widening === undefined ? timeUp : Math.min(timeUp, started + widening),
    );
  }

  /**
   * The search's offer is open: its courier's answer steps it; the sweep does at the offer's
   * expiry, or when the sandbox's virtual courier takes it.
   */
  private awaitAnswer(search: SearchRecord, offer: OfferRecord, now: Date): void {
    const virtual = search.simulate && offer.courierId === virtualCourierId(search._id);
    const until = virtual ? this.virtualAcceptAt(search, offer) : offer.expiresAt.getTime();
    this.waiting.awaitAnswer(search._id, now.getTime(), until);
  }

  /**
   * A courier was reported at `point`, or set free there: the searches waiting for one that
   * reach it are stepped by the next sweep.
   */
  courierNear(point: GeoPoint, now = new Date()): void {
    this.waiting.wakeNear(point, now.getTime(), this.deps.settings.reach.maxKm);
  }

  /**
   * When the search's time is up (ms since the epoch): it then ends NO_COURIER. A SCHEDULED
   * delivery's search runs until its `notAfter` (the last moment a courier leaving could still
   * reach its slot): given up after MATCHING_SEARCH_TIMEOUT_MS as an ASAP one is, it ended
   * refunded before its slot had even opened (decision 185). A search started after that moment
   * gives up at its first step, whichever call started it; one that started before is not
   * undone by a start repeated after. Any other search: its own time.
   */
  private timeUpAt(search: SearchRecord): number {
    if (search.notAfter) return new Date(search.notAfter).getTime();
    return search.startedAt.getTime() + this.scaled(search, this.deps.settings.searchTimeoutMs);
  }

  private timedOut(search: SearchRecord, now: Date): boolean {
    return now.getTime() >= this.timeUpAt(search);
  }

  /**
   * The couriers in reach of a search that has made no offer and is not over its time, read
   * before anything else: with none, a step has nothing to do, and the search's end and
   * offers are not read (two of a waiting search's three reads, at each of its steps). `offers: 0`
   * means no offer exists, since an offer's number is noted on the search before the offer
   * is claimed (`offerNext`); an ended search makes no offer, and its end is read at its start,
   * at the first step with a courier in reach, or at its time. Undefined when the step must
   * read them.
   */
  private async reachWhileWaiting(
    search: SearchRecord,
    now: Date,
  ): Promise<readonly Candidate[] | undefined> {
    if (search.offers > 0 || this.timedOut(search, now) || this.nobodyLeft(search)) {
      return undefined;
    }
    return this.candidates(search, now, true);
  }

  /** The sandbox's virtual courier takes its offer after a moment of simulated time. */
  private virtualAccepts(search: SearchRecord, offer: OfferRecord, now: Date): boolean {
    if (!search.simulate || offer.courierId !== virtualCourierId(search._id)) return false;
    return now.getTime() >= this.virtualAcceptAt(search, offer);
  }

  private virtualAcceptAt(search: SearchRecord, offer: OfferRecord): number {
    return simulatedAcceptAt(offer, this.scaled(search, SIMULATED_ACCEPT_MS));
  }

  /**
   * The couriers to offer to now, nearest first. `waiting`: the search has found nobody so far,
   * as most steps of a search that has made no offer find (`NearestQuery.probeFirst`).
   */
  private async candidates(
    search: SearchRecord,
    now: Date,
    waiting = false,
  ): Promise<readonly Candidate[]> {
    // A simulation's only courier is its virtual one; with no-courier, nobody.
    if (search.simulate) {
      return search.simulate === 'no-courier' ? [] : [{ courierId: virtualCourierId(search._id) }];
    }
    const { settings, couriers } = this.deps;
    const among = this.allowed(search);
    if (among?.size === 0) return [];
    const fleetTypeIds = carryingFleetTypes(
      await this.deps.fleetTypes(),
      search.fleetTypeId,
      search.weightGrams,
    );
    return couriers.nearest({
      lat: search.pickup.lat,
      lon: search.pickup.lon,
      fleetTypeIds,
      // Couriers named by the merchant are asked wherever they are (within the widest search):
      // a radius would leave a named courier 18 km away never asked, the delivery refunded.
      maxDistanceKm: among
        ? MAX_SEARCH_KM
        : searchRadiusKm(settings.reach, now.getTime() - search.startedAt.getTime()),
      limit: settings.candidates,
      exclude: new Set(search.tried),
      probeFirst: waiting,
      among,
    });
  }

  /**
   * Offers the delivery to the nearest free courier, if there is one in reach now (`reach`:
   * as this step found them already).
   */
  private async offerNext(
    search: SearchRecord,
    /** Offers the search made so far: the next is numbered after them. */
    made: number,
    now: Date,
    reach?: readonly Candidate[],
  ): Promise<void> {
    const { settings, couriers } = this.deps;
    let found = reach;
    if (!found) {
      const fresh = await this.triedNow(search, now);
      // Another matcher may have noted the last courier out since this step read the search
      // (the only courier's third miss) and ended it NO_COURIER: its end, not one more offer.
      if (this.nobodyLeft(fresh)) return this.giveUp(search, now);
      found = await this.candidates(fresh, now);
    }
    const candidates = await this.mayCollect(search, found, now);
    let n = made;
    for (const { courierId } of candidates) {
      n += 1;
      // An offer lasts its whole time from when it is made: what went before in this step (what
      // couriers owe, an offer withdrawn) and in the sweep's turn before it (order's answers to
      // other searches) took a while.
      const offeredAt = this.later(now);
      const offer: OfferRecord = {
        _id: offerId(search._id, n),
        deliveryId: search._id,
        n,
        courierId,
        offeredAt,
        expiresAt: new Date(offeredAt.getTime() + this.scaled(search, settings.offerTimeoutMs)),
      };
      // Noted first: a search that notes no offer has none (`reachWhileWaiting`).
      await this.store.noteOffer(search._id, n);
      // Another matcher made the n-th offer first: this step is theirs.
      if (!(await this.store.claimOffer(offer))) return;
      const held = await this.store.claimHold({
        _id: courierId,
        deliveryId: search._id,
        offerId: offer._id,
        kind: 'OFFER',
        at: offeredAt,
      });
      if (held) {
        // The end is looked for even when the mark fails (Redis away a moment): an end claimed
        // since this step read none found no offer n to withdraw, and nothing else would.
        const marking = await couriers.setBusy(courierId, true, offer._id).then(
          () => null,
          (err: unknown) => ({ err }),
        );
        if (await this.withdrawIfEnded(offer)) return;
        if (marking) throw marking.err;
        if (await this.withdrawIfRetired(search, offer)) continue;
        return this.awaitAnswer(search, offer, offeredAt);
      }
      // The courier took another offer meanwhile: this one is void, try the next courier.
      await this.store.claimOfferOutcome(offer._id, 'WITHDRAWN');
      await this.markHolding(courierId);
    }
    // The step's own moment, not the clock's: a courier who came in reach after the step
    // looked (woken at a time after `now`) must wake the search at once.
    if (found.length === 0) return this.waitOrGiveUp(search, now);
    this.waitForCourier(search, now);
  }

  /**
   * A step that found nobody: the search waits (`waitForCourier`), unless the one courier it
   * may go to was retired while holding no offer of it. The index hides them, so no step
   * would note them out, and the search would wait out its time for nobody: it ends now.
   * One `_id` read a step, for such searches only.
   */
  private async waitOrGiveUp(search: SearchRecord, now: Date, unoffered?: Unoffered) {
    if (await this.onlyCourierRetired(search)) return this.giveUp(search, now);
    this.waitForCourier(search, now, unoffered);
  }

  /**
   * Whether the one courier the search may go to is retired, holding nothing (noted out of it,
   * then). A retirement writes the courier inactive before it looks at what they hold, and puts
   * them back at work when they hold a trip or an accepted offer (or when it fails): a courier
   * inactive who holds anything is the retirement's to settle, not yet retired for the search.
   */
  private async onlyCourierRetired(search: SearchRecord): Promise<boolean> {
    const only = this.onlyCourier(search);
    if (!only || (await this.deps.isActive(only))) return false;
    if (await this.store.hold(only)) return false;
    await this.deps.notes.noteRetired(search._id, only);
    return true;
  }

  /**
   * The later of a step's moment and the clock: a step is given the moment it runs at (the
   * sweep's, a test's), and what it does once time has passed since is dated when it is done.
   */
  private later(now: Date): Date {
    return new Date(Math.max(now.getTime(), Date.now()));
  }

  /**
   * Of the candidates, those the search's pay-on-delivery may be offered to: not one it would
   * take past the cash limit in what they owe. Passed over, not noted as tried, so that once
   * they hand cash in a later step offers it to them; and while every candidate found is passed
   * over, the next nearest are asked about (`CASH_ROUNDS` times at most), so that couriers over
   * the limit never hide one under it. A courier whose debt the payment service cannot tell in
   * time is taken: the cash of one delivery is a smaller harm than deliveries held up.
   */
  private async mayCollect(
    search: SearchRecord,
    found: readonly Candidate[],
    now: Date,
  ): Promise<readonly Candidate[]> {
    const { settings } = this.deps;
    const { collectKobo } = search;
    if (!collectKobo || search.simulate || settings.cashLimitKobo === 0) return found;
    const passedOver = new Set<string>();
    let batch = found;
    for (let round = 0; round < CASH_ROUNDS && batch.length > 0; round++) {
      const payable = await this.withinLimit(batch, collectKobo, { deliveryId: search._id });
      if (payable.length > 0) return payable;
      // Fewer than asked for: nobody else is in reach.
      if (batch.length < settings.candidates) break;
      for (const { courierId } of batch) passedOver.add(courierId);
      const { tried } = await this.triedNow(search, now);
      batch = await this.candidates({ ...search, tried: [...tried, ...passedOver] }, now);
    }
    return [];
  }

  /**
   * Of these couriers, those a pay-on-delivery collecting `collectKobo` may go to now (order
   * asks before it takes a request that only they may carry): all, when there is no limit.
   */
  async allowedToCollect(courierIds: readonly string[], collectKobo: number): Promise<string[]> {
    if (collectKobo === 0 || this.deps.settings.cashLimitKobo === 0) return [...courierIds];
    // Asked afresh: a merchant told to wait for cash to be handed in may try again at once.
    const allowed = await this.withinLimit(
      courierIds.map((courierId) => ({ courierId })),
      collectKobo,
      { fresh: true },
    );
    return allowed.map((c) => c.courierId);
  }

  /**
   * Those of the couriers (all asked at once) who may collect `collectKobo` more. One whose
   * debt the payment service cannot tell in time may: the cash of one delivery is a smaller
   * harm than deliveries held up.
   */
  private async withinLimit<C extends { courierId: string }>(
    couriers: readonly C[],
    collectKobo: number,
    asking: { deliveryId?: string; fresh?: boolean },
  ): Promise<C[]> {
    const { cashLimitKobo } = this.deps.settings;
    const owed = await Promise.all(
      couriers.map(async ({ courierId }) => {
        try {
          return await this.deps.cashOwedKobo(courierId, asking.fresh);
        } catch (err) {
          this.deps.logger().warn('cash owed not known; the pay-on-delivery is allowed', {
            courierId,
            deliveryId: asking.deliveryId ?? null,
            err: (err as Error).message,
          });
          return null;
        }
      }),
    );
    return couriers.filter(
      (_, i) => owed[i] === null || withinCashLimit(owed[i], collectKobo, cashLimitKobo),
    );
  }

  /**
   * An offer made as its search ended (while a step was choosing, or the step stopped before
   * it looked) is void and its courier free, unless they accepted it first: then the hold is
   * the delivery's, and order decides. True when the search has ended.
   */
  private async withdrawIfEnded(offer: OfferRecord): Promise<boolean> {
    if (!(await this.store.end(offer.deliveryId))) return false;
    const withdrawn = await this.store.claimOfferOutcome(offer._id, 'WITHDRAWN');
    if (withdrawn || (await this.store.offerOutcome(offer._id)) !== 'ACCEPTED') {
      await this.letGo(offer, 'WITHDRAWN');
    }
    return true;
  }

  /**
   * An offer made to a courier retired while this step chose them is void: their token no
   * longer works, and it would hold the delivery for the offer's time. A retirement writes the
   * courier, then reads their hold (withdrawing an offer it finds); a step claims the hold, then
   * reads the courier: of the two, one sees the other. The courier is noted as tried, should
   * the index not have heard of the retirement yet. Unless they accepted first: the offer's one
   * outcome decides, and the retirement gives way. True when withdrawn.
   */
  private async withdrawIfRetired(search: SearchRecord, offer: OfferRecord): Promise<boolean> {
    if (search.simulate || (await this.deps.isActive(offer.courierId))) return false;
    const withdrawn = await this.store.claimOfferOutcome(offer._id, 'WITHDRAWN');
    if (!withdrawn && (await this.store.offerOutcome(offer._id)) === 'ACCEPTED') return false;
    await this.deps.notes.noteRetired(offer.deliveryId, offer.courierId);
    await this.letGo(offer, 'WITHDRAWN');
    return true;
  }

  /**
   * A courier found free who holds an offer or a trip (their mark lost: Redis restarted empty,
   * or the call marking them failed) is marked for it, so that the next searches pass them by
   * instead of each spending an offer on them. A mark made as the hold was let go stands until
   * their report's check (`checkBusy`), a minute at most.
   */
  private async markHolding(courierId: string): Promise<boolean> {
    const hold = await this.store.hold(courierId);
    if (!hold || courierId === virtualCourierId(hold.deliveryId)) return false;
    await this.deps.couriers.setBusy(courierId, true, hold.offerId);
    return true;
  }

  /**
   * A courier's report found them unmarked long enough to check it (positions.ts
   * UNMARKED_CHECK_MS, at once on the first report of a hash Redis lost): holding an offer or
   * a trip, they are marked for it; true then. Never fails the report: the next check comes
   * a while later.
   */
  async checkUnmarked(courierId: string): Promise<boolean> {
    try {
      const marked = await this.markHolding(courierId);
      if (marked) {
        this.deps
          .logger()
          .warn('a courier holding an offer or a trip was not marked busy; marked', {
            courierId,
          });
      }
      return marked;
    } catch (err) {
      this.deps
        .logger()
        .warn('a courier’s missing busy mark not checked; a later report checks it', {
          courierId,
          err: (err as Error).message,
        });
      return false;
    }
  }

  /**
   * The search with the couriers and offers noted out of it (search-notes.ts) beside those a
   * version before session 58 noted on it. None before its first offer: a note closes one.
   */
  private async withNotes(search: SearchRecord, now: Date): Promise<SearchRecord> {
    return search.offers === 0 ? search : this.triedNow(search, now);
  }

  /**
   * The search with the couriers noted as tried since it was read: another replica closing an
   * offer notes its courier before it lets them go, so one free again is known as tried here.
   */
  private async triedNow(search: SearchRecord, now: Date): Promise<SearchRecord> {
    const notes = await this.deps.notes.of(search._id);
    // Those noted out longer ago than MATCHING_REASK_AFTER_MS are asked again; those retired,
    // once back at work (put back by an operator, or a retirement that failed after a step
    // read them inactive): one read each, for those couriers only.
    const declined = triedSince(notes, this.askedAgainBefore(now.getTime()));
    const retired = await Promise.all(
      [...notes.retired].map(async (courierId) =>
        (await this.deps.isActive(courierId)) ? [] : [courierId],
      ),
    );
    return {
      ...search,
      tried: [...new Set([...search.tried, ...declined, ...retired.flat()])],
      missed: [...new Set([...(search.missed ?? []), ...notes.missed])],
    };
  }

  /** The couriers a search may offer to, when it is not anyone's. */
  private allowed(search: SearchRecord): ReadonlySet<string> | undefined {
    if (search.courierSelection === 'SPECIFIC' && search.courierId) {
      return new Set([search.courierId]);
    }
    if (search.courierSelection === 'MERCHANT_SPECIAL_COURIERS') {
      return new Set(search.merchantCourierIds ?? []);
    }
    return undefined;
  }

  /** The courier a search may go to when it may go to one only: missed offers are offered again. */
  private onlyCourier(search: SearchRecord): string | undefined {
    if (search.simulate) return undefined;
    const allowed = this.allowed(search);
    return allowed?.size === 1 ? [...allowed][0] : undefined;
  }

  /**
   * Whether every courier the search may go to is out of it (declined, let an offer expire,
   * retired as it chose them; the only courier: declined, or missed `MISSED_OFFERS_MAX`
   * offers): nothing can change that, so the search ends now rather than at its time.
   */
  private nobodyLeft(search: SearchRecord): boolean {
    // A simulation's only courier is its virtual one, who never declines nor misses.
    const allowed = search.simulate ? undefined : this.allowed(search);
    if (!allowed) return false;
    const out = new Set(search.tried);
    if (allowed.size === 1 && (search.missed?.length ?? 0) >= MISSED_OFFERS_MAX) {
      out.add([...allowed][0]);
    }
    return [...allowed].every((courierId) => out.has(courierId));
  }

  /** Whether a closed offer is a miss of the search's only courier (offered it again). */
  private missedByOnly(
    search: SearchRecord,
    offer: Pick<OfferRecord, 'courierId'>,
    outcome: OfferOutcome,
  ): boolean {
    return outcome === 'EXPIRED' && this.onlyCourier(search) === offer.courierId;
  }

  /** Whether the search as read has the courier of a closed offer noted as `noteClosed` notes. */
  private isNoted(
    search: SearchRecord,
    offer: OfferRecord,
    outcome: OfferOutcome,
    now: Date,
  ): boolean {
    if (this.missedByOnly(search, offer, outcome)) {
      return search.missed?.includes(offer._id) === true;
    }
    // An offer made longer ago than MATCHING_REASK_AFTER_MS keeps its courier out no more.
    if ((outcome === 'DECLINED' || outcome === 'EXPIRED') && this.keepsOut(offer, now)) {
      return search.tried.includes(offer.courierId);
    }
    return true;
  }

  /** Whether a declined or missed offer still keeps its courier out of the search at `now`. */
  private keepsOut(offer: Pick<OfferRecord, 'offeredAt'>, now: Date): boolean {
    return new Date(offer.offeredAt).getTime() >= this.askedAgainBefore(now.getTime());
  }

  /** A courier noted out before this moment (ms) is asked again at `nowMs`: MATCHING_REASK_AFTER_MS. */
  private askedAgainBefore(nowMs: number): number {
    return nowMs - this.deps.settings.reaskAfterMs;
  }

  /** The search with the courier of a closed offer noted, read before or after they were. */
  private notedClosed(
    search: SearchRecord,
    offer: OfferRecord,
    outcome: OfferOutcome,
    now: Date,
  ): SearchRecord {
    if (this.isNoted(search, offer, outcome, now)) return search;
    if (this.missedByOnly(search, offer, outcome)) {
      return { ...search, missed: [...(search.missed ?? []), offer._id] };
    }
    return { ...search, tried: [...search.tried, offer.courierId] };
  }

  /**
   * Whether this process let the courier of the closed offer go already, and the search as read
   * shows them noted: a step that finds it so does not do it again (a write, a delete, a read
   * and a Redis script, each step of a search waiting for a courier, on every replica). One
   * that does not (another replica closed it, or this process was restarted since) lets them
   * go, so that a release cut short is finished.
   */
  private releasedHere(
    search: SearchRecord,
    offer: OfferRecord,
    outcome: OfferOutcome,
    now: Date,
  ): boolean {
    return this.released.get(offer._id) === true && this.isNoted(search, offer, outcome, now);
  }

  /**
   * How a closed offer's courier is noted: one who declined is not asked again for this
   * delivery; one who let it expire neither, unless they are the only courier it may go to
   * (`MISSED_OFFERS_MAX`); one whose offer was withdrawn may be. `search`: as the caller read it.
   */
  private async noteClosed(
    offer: ClosedOffer,
    outcome: OfferOutcome,
    search?: SearchRecord,
  ): Promise<void> {
    if (outcome === 'EXPIRED') {
      const of = search ?? (await this.store.search(offer.deliveryId));
      if (of && this.missedByOnly(of, offer, outcome)) {
        return this.deps.notes.note(offer.deliveryId, { kind: 'MISSED', offerId: offer._id });
      }
    }
    if (outcome === 'DECLINED' || outcome === 'EXPIRED') {
      // Noted once for this offer, by its id: a step that lets its courier go again, long
      // after, notes nothing, and they are asked again in time. Out from the later of the note
      // and the offer.
      await this.deps.notes.note(offer.deliveryId, {
        kind: 'TRIED',
        courierId: offer.courierId,
        offerId: offer._id,
        ...(offer.offeredAt && { offeredAt: new Date(offer.offeredAt) }),
      });
    }
  }

  /**
   * The courier of a closed offer is free again, noted as `noteClosed` says. Remembered once
   * done (`releasedHere`); not when the mark could not be cleared, for a later step to finish.
   * False when another call is letting them go (under its claim's lease): a caller nothing
   * else comes after (order's end of a delivery) must then be called again.
   */
  private async letGo(
    offer: ClosedOffer,
    outcome: OfferOutcome,
    search?: SearchRecord,
  ): Promise<boolean> {
    await this.noteClosed(offer, outcome, search);
    const release = await this.store.releaseHold(offer.courierId, offer._id);
    // Another call is letting them go: it marks them free; not remembered, for a later step to
    // finish should that call stop first.
    if (release === 'RELEASING') return false;
    // A virtual courier stays out of every real search: it is never made available. A courier
    // holding another offer or trip stays marked for it. Otherwise they are marked free once
    // they hold nothing, by this call or by a repeat of it (which releases nothing: a call that
    // let them go and stopped before marking them would leave them busy for good). Redis away
    // must not hold up what waits on this call (a cancelled delivery's refund): not remembered
    // then, so that a later call, or the courier's next report (`checkBusy`), marks them.
    const real = offer.courierId !== virtualCourierId(offer.deliveryId);
    if (real && release !== 'HOLDS_OTHER') {
      const marked = await this.deps.couriers
        .setBusy(offer.courierId, false, offer._id)
        .then(() => true)
        .catch(() => false);
      if (!marked) return true;
      if (release === 'RELEASED') await this.wakeNearCourier(offer.courierId);
    }
    this.released.set(offer._id, true);
    return true;
  }

  /**
   * A courier's report found them marked busy for `markedFor` long enough to check it
   * (positions.ts BUSY_CHECK_MS): holding nothing, they are marked free, unless an offer made
   * meanwhile marked them for itself; holding another offer or trip, the mark is made theirs,
   * so that its release clears it; holding an offer of a search that ended with no step left to
   * close it (one stopped between its offer and its look at the end), an offer closed whose
   * release was cut short (taken over once its claim's lease is over), or a delivery that is
   * over (a hold left by a version that rewrote it at the accept, `SearchStore.holding`), they
   * are let go of it. Never fails the report: the next check comes a while later.
   */
  async checkBusy(courierId: string, markedFor: string): Promise<void> {
    try {
      const hold = await this.store.holding(courierId);
      if (hold) {
        // Unless an offer marked them since (this one's release clears a mark it names).
        if (hold.offerId !== markedFor) {
          await this.deps.couriers.setBusy(courierId, true, hold.offerId, markedFor);
        }
        if (hold.kind === 'DELIVERY') return this.letGoIfOver(hold);
        const offer = await this.store.offer(hold.offerId);
        if (!offer || (await this.withdrawIfEnded(offer))) return;
        // Closed, and still held: the release was cut short (its claimant stopped before its
        // delete), and the search has moved on to other offers, so no step comes back to it.
        const outcome = await this.store.offerOutcome(offer._id);
        if (outcome && outcome !== 'ACCEPTED') await this.letGo(offer, outcome);
        return;
      }
      if (await this.deps.couriers.setBusy(courierId, false, markedFor)) {
        this.deps.logger().warn('a courier holding nothing was still marked busy; marked free', {
          courierId,
          offerId: markedFor,
        });
        await this.wakeNearCourier(courierId);
      }
    } catch (err) {
      this.deps.logger().warn('a courier’s busy mark not checked; their next report checks it', {
        courierId,
        err: (err as Error).message,
      });
    }
  }

  /**
   * A courier held by a delivery whose search ended without them is let go: at ENDED (the
   * delivery is over, or it no longer needed a courier when they accepted) at once, since the
   * end's own release came first; at NO_COURIER (given up as they accepted, their confirmation
   * cut short) once order, asked again, says it did not assign them: their accept may have
   * reached it before its "no courier", and the delivery is then theirs.
   */
  private async letGoIfOver(hold: HoldRecord): Promise<void> {
    const end = await this.store.end(hold.deliveryId);
    const { offerId, _id: courierId, deliveryId } = hold;
    if (end?.outcome === 'ENDED') {
      await this.letGo({ _id: offerId, courierId, deliveryId }, 'WITHDRAWN');
      return;
    }
    const offer = end?.outcome === 'NO_COURIER' ? await this.store.offer(offerId) : null;
    if (!offer) return;
    // Its 409 (not assigned, the courier let go) is what this check wanted.
    await this.confirm(offer).catch((err: unknown) => {
      if (!isWaybillError(err)) throw err;
    });
  }

  /** Wakes the waiting searches near a courier just set free, where it was last reported. */
  private async wakeNearCourier(courierId: string): Promise<void> {
    if (!this.waiting.anyWaitingForCourier) return;
    try {
      const at = await this.deps.couriers.position(courierId);
      if (at) this.courierNear(at);
    } catch {
      // Positions unreachable: the searches are stepped after their wait all the same.
    }
  }

  /**
   * The search's last offer withdrawn when still open, and its courier let go when they hold
   * it for this delivery: an open offer only, or (the delivery is over) the delivery too. False
   * when another call is letting the courier go (`letGo`).
   */
  private async withdrawLatest(search: SearchRecord, alsoDelivery: boolean): Promise<boolean> {
    const { latest } = await this.latestOffer(search);
    if (!latest) return true;
    await this.store.claimOfferOutcome(latest._id, 'WITHDRAWN');
    const hold = await this.store.holding(latest.courierId);
    // Holding another delivery's offer or trip: not this search's to let go.
    if (hold && hold.deliveryId !== search._id) return true;
    // Holding nothing: let go all the same, so that a release cut short is finished.
    if (!hold || hold.kind === 'OFFER' || alsoDelivery) return this.letGo(latest, 'WITHDRAWN');
    return true;
  }

  private async giveUp(search: SearchRecord, now: Date): Promise<void> {
    const deliveryId = search._id;
    const givenUpNow = await this.store.claimEnd({
      _id: deliveryId,
      outcome: 'NO_COURIER',
      courierId: null,
      at: now,
    });
    // The claim's winner knows how it ended; another replica's may have ended it the same way.
    if (givenUpNow || (await this.store.end(deliveryId))?.outcome === 'NO_COURIER') {
      await this.tellNoCourier(deliveryId);
    }
    // Another replica's step, short of the time a moment before this one, may have made an
    // offer after this step read the last, and looked for an end before this claim: withdrawn
    // here, or its courier would hold it (and see it open) for a delivery given up.
    // Not the one this step let go of itself.
    const { latest } = await this.latestOffer(search);
    if (latest && !this.released.get(latest._id)) await this.withdrawIfEnded(latest);
    await this.deactivate(deliveryId);
  }

  /** Out of the sweep's running searches; its notes read here no more. */
  private async deactivate(deliveryId: string): Promise<void> {
    await this.store.deactivate(deliveryId);
    this.deps.notes.forget(deliveryId);
  }

  private async tellNoCourier(deliveryId: string): Promise<void> {
    await call(this.deps.services(), 'order.noCourierFound', { deliveryId });
  }

  /** An accepted offer: the courier holds the delivery, and order assigns it. Repeatable. */
  private async confirm(offer: OfferRecord): Promise<void> {
    const { deliveryId, courierId } = offer;
    const answer = await call(this.deps.services(), 'order.assignCourier', {
      deliveryId,
      courierId,
    });
    const now = new Date();
    if (answer.assigned) {
      await this.store.claimEnd({
        _id: deliveryId,
        outcome: 'ASSIGNED',
        courierId,
        offerId: offer._id,
        at: now,
      });
      await this.deactivate(deliveryId);
      return;
    }
    // Cancelled while the courier was accepting: they are free again.
    await this.store.claimEnd({ _id: deliveryId, outcome: 'ENDED', courierId: null, at: now });
    await this.letGo(offer, 'WITHDRAWN');
    await this.deactivate(deliveryId);
    throw conflict(`The delivery no longer needs a courier: it is ${answer.status}`);
  }

  /** The courier's open offer, checked to be theirs. */
  private async courierOffer(courierId: string, id: string): Promise<OfferRecord> {
    const offer = await this.store.offer(id);
    if (!offer || offer.courierId !== courierId) throw notFound(OFFER_NOT_FOUND);
    return offer;
  }

  async accept(courierId: string, id: string, now = new Date()): Promise<OfferView> {
    const offer = await this.courierOffer(courierId, id);
    // Only an offer the courier holds can be taken: one whose hold failed is void.
    const holding = (await this.store.hold(courierId))?.offerId === offer._id;
    if (offer.expiresAt.getTime() <= now.getTime()) {
      if (await this.store.claimOfferOutcome(offer._id, 'EXPIRED')) {
        await this.letGo(offer, 'EXPIRED');
        setImmediate(() => void this.step(offer.deliveryId));
      }
    } else if (holding && (await this.store.claimOfferOutcome(offer._id, 'ACCEPTED'))) {
      // An outcome is claimed once and never changes: this one need not be read back.
      return this.confirmAccepted(offer, now);
    }
    const outcome = await this.store.offerOutcome(offer._id);
    if (outcome !== 'ACCEPTED') {
      throw conflict(offerClosed(outcome ?? (holding ? 'EXPIRED' : 'WITHDRAWN')));
    }
    return this.confirmAccepted(offer, now);
  }

  private async confirmAccepted(offer: OfferRecord, now: Date): Promise<OfferView> {
    try {
      await this.confirm(offer);
    } catch (err) {
      // Swept at once: it no longer waits for an answer. Not before, or this process's sweep
      // would confirm it beside this call while order assigns it (harmlessly, but for about
      // one accept in five under bench:run).
      this.waiting.stepping(offer.deliveryId, now.getTime());
      throw err;
    }
    return this.view(offer, now, 'ACCEPTED');
  }

  async decline(courierId: string, id: string, now = new Date()): Promise<OfferView> {
    const offer = await this.courierOffer(courierId, id);
    // Past its time an offer is closed, as `accept` and `GET /courier/offers` say: expired.
    const outcome: OfferOutcome =
      offer.expiresAt.getTime() <= now.getTime() ? 'EXPIRED' : 'DECLINED';
    if (!(await this.store.claimOfferOutcome(offer._id, outcome))) {
      const decided = await this.store.offerOutcome(offer._id);
      // A repeat of this decline answers as the first did.
      if (decided !== 'DECLINED') throw conflict(offerClosed(decided ?? 'EXPIRED'));
      return this.view(offer, now);
    }
    await this.letGo(offer, outcome);
    setImmediate(() => void this.step(offer.deliveryId));
    if (outcome === 'EXPIRED') throw conflict(offerClosed(outcome));
    return this.view(offer, now, 'DECLINED');
  }

  /**
   * An offer as its courier sees it, with where it stands: `known`, its outcome as the caller
   * has just claimed or read it (an outcome never changes once claimed), else read now.
   */
  private async view(offer: OfferRecord, now: Date, known?: OfferOutcome): Promise<OfferView> {
    const [search, outcome] = await Promise.all([
      this.store.search(offer.deliveryId),
      known ?? this.store.offerOutcome(offer._id),
    ]);
    if (!search) throw new Error(`offer ${offer._id} has no search`);
    const expired = outcome === null && offer.expiresAt.getTime() <= now.getTime();
    return {
      id: offer._id,
      deliveryId: offer.deliveryId,
      status: outcome ?? (expired ? 'EXPIRED' : 'OPEN'),
      pickup: search.pickup,
      // Its area, not its door: every courier offered sees it, the ones who decline too.
      dropoff: onAreaGrid(search.dropoff),
      totalWeight: formatKg(search.weightGrams),
      offeredAt: offer.offeredAt.toISOString(),
      expiresAt: offer.expiresAt.toISOString(),
    };
  }

  /**
   * The delivery is over (order's call): the search ends, its courier is free. Repeatable; a
   * delivery never searched for is marked ended too, so that a late start finds it over.
   */
  async end(deliveryId: string, now = new Date()): Promise<{ ended: boolean }> {
    const endedNow = await this.store.claimEnd({
      _id: deliveryId,
      outcome: 'ENDED',
      courierId: null,
      at: now,
    });
    // An end is claimed once and never changes: read before the rest, it is what a read after
    // would find.
    const endRecord = endedNow ? null : await this.store.end(deliveryId);
    const { outcome, courierId, offerId } = endRecord ?? {};
    let simulated: boolean;
    let letGo: boolean;
    if (outcome === 'ASSIGNED' && courierId && offerId) {
      // The accepted offer was the search's last (none is made after one is accepted): its
      // courier is let go by it, if they still hold the delivery by it.
      letGo = await this.letGo({ _id: offerId, courierId, deliveryId }, 'WITHDRAWN');
      simulated = courierId === virtualCourierId(deliveryId);
    } else {
      const search = await this.store.search(deliveryId);
      letGo = search ? await this.withdrawLatest(search, true) : true;
      simulated = search?.simulate === 'delivered' || search?.simulate === 'failed';
    }
    // Another call holds the courier's release, which may have stopped before its delete:
    // nothing but order's end comes back to a delivery's courier, so it is called again (its
    // sweep), and takes the release over once the claim's lease is over.
    if (!letGo) throw releaseUnderWay(deliveryId);
    await this.deactivate(deliveryId);
    if (simulated) await this.freeVirtualCourier(deliveryId);
    return { ended: endedNow || outcome === 'ENDED' || outcome === 'ASSIGNED' };
  }

  /**
   * A simulated delivery is over: its virtual courier, of no use to any other, leaves Redis
   * (one hash a simulation, for good, before). Its directory entry stays, so that the
   * delivery still names its courier. A courier left in the sandbox's Redis is no reason to hold
   * up what waits on the end (a refund), and order does not repeat an end that succeeded: one
   * that cannot be freed now is noted for the sweep to free (`freeLeftOver`). Should the note
   * fail too, the end fails, and order's retry frees it.
   */
  private async freeVirtualCourier(deliveryId: string): Promise<void> {
    const courierId = virtualCourierId(deliveryId);
    try {
      await this.deps.freeVirtualCourier(courierId);
    } catch (err) {
      this.deps
        .logger()
        .warn('a simulated delivery’s virtual courier not freed; the sweep frees it', {
          deliveryId,
          courierId,
          err: (err as Error).message,
        });
      await this.store.noteToFree(courierId, deliveryId, new Date());
    }
  }

  /**
   * The sweep's look, every FREE_RETRY_MS, for virtual couriers whose delivery's end could not
   * free them: each freed, then its note dropped (a replica freeing it at the same time frees
   * nothing more). One still failing stays noted for the next look.
   */
  private async freeLeftOver(now: Date): Promise<void> {
    if (now.getTime() < this.nextFreeAt) return;
    this.nextFreeAt = now.getTime() + FREE_RETRY_MS;
    for (const courierId of await this.store.toFree(FREES_PER_LOOK)) {
      try {
        await this.deps.freeVirtualCourier(courierId);
        await this.store.freed(courierId);
      } catch (err) {
        this.deps
          .logger()
          .warn('a virtual courier left to free not freed; the next look frees it', {
            courierId,
            err: (err as Error).message,
          });
      }
    }
  }

  /**
   * Moves a simulated delivery's virtual courier (`place` reports where), only while it
   * carries its delivery: a tick that read the delivery before its end must not put back in
   * Redis the courier the end freed. The end lets the courier go before it frees them, so a
   * look after the report that finds them let go means the free may have come first: it is
   * done again, and the report never outlives the end.
   */
  async moveVirtualCourier(courierId: string, place: () => Promise<unknown>): Promise<boolean> {
    const deliveryId = await this.held(courierId);
    if (!deliveryId || courierId !== virtualCourierId(deliveryId)) return false;
    await place();
    if ((await this.held(courierId)) === deliveryId) return true;
    await this.freeVirtualCourier(deliveryId);
    return false;
  }

  /** The delivery a courier holds, if any. */
  async held(courierId: string): Promise<string | null> {
    const hold = await this.store.holding(courierId);
    return hold?.kind === 'DELIVERY' ? hold.deliveryId : null;
  }

  /** The courier's open offer, if any: at most one, since a courier holds one thing. */
  async openOffers(courierId: string, now = new Date()): Promise<OfferView[]> {
    const hold = await this.store.hold(courierId);
    if (hold?.kind !== 'OFFER') return [];
    const offer = await this.store.offer(hold.offerId);
    if (!offer) return [];
    const view = await this.view(offer, now);
    return view.status === 'OPEN' ? [view] : [];
  }

  /**
   * The sweep's part: every running search stepped (expired offers closed, widened, ended),
   * but one that found nobody to offer to, or whose offer is open, only once its wait is over
   * at `now`, when the turn is chosen.
   */
  async sweep(limit: number, now = new Date()): Promise<void> {
    const running = await this.store.active();
    this.waiting.retain(running);
    const { turn, cursor } = sweepTurn(
      running,
      (id) => this.waiting.isDue(id, now.getTime()),
      this.sweepCursor,
      limit,
    );
    this.sweepCursor = cursor;
    // Each at its own moment: a turn of up to `limit` steps, each of which may wait on order's
    // answers, lasts longer than an offer.
    for (const deliveryId of turn) await this.step(deliveryId);
    this.deps.onSwept?.(this.waiting.counts(running));
    await this.freeLeftOver(now);
  }
}
