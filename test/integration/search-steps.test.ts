import { randomBytes, randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import type { Logger } from 'moleculer';
import type mongoose from 'mongoose';
import type { Caller } from '../../libs/contracts';
import { virtualCourierId, type StartSearchParams } from '../../libs/contracts/matching';
import { offerId as offerIdOf } from '../../services/courier-matching/matching-rules';
import { CourierPositions, UNNAMED_MARK } from '../../services/courier-matching/positions';
import { SearchNotes } from '../../services/courier-matching/search-notes';
import {
  defineSearchModels,
  SearchStore,
  type SearchRecord,
} from '../../services/courier-matching/search-store';
import { MISSED_OFFERS_MAX, Searches } from '../../services/courier-matching/searches';
import { dropDatabases, isolation, openServiceDatabase } from '../support/stack';
import { CLAIM_END_LEASE_MS } from '../../libs/mongo';

/**
 * One matcher's step of a search, on the real FerretDB and Redis (the rest of matching is
 * tested through the gateway): what it has written by the time it claims an offer; and the end
 * of an assigned search, as this version and the one before it recorded it.
 */
const iso = isolation();
let db: mongoose.Connection;
let redis: Redis;
const keyPrefix = `t-${randomBytes(4).toString('hex')}:couriers:`;

beforeAll(async () => {
  db = await openServiceDatabase(iso, 'matching');
  redis = new Redis(process.env.REDIS_URL as string);
});

afterAll(async () => {
  await db?.close();
  const keys = await redis.keys(`${keyPrefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  redis?.disconnect();
  await dropDatabases(iso);
});

const BIKE = randomUUID();
/** ₦60,000 of cash owed at most with a pay-on-delivery offered. */
const CASH_LIMIT_KOBO = 6_000_000;
const PICKUP = { lat: 6.5244, lon: 3.3792 };
/** MATCHING_REASK_AFTER_MS of these searches: 30 minutes. */
const REASK_AFTER_MS = 1_800_000;

/** Couriers' positions, and the couriers set free (`setBusy(id, false)`) in `freed`. */
function positionsNoting(freed: string[]): CourierPositions {
  const positions = new CourierPositions(redis, { keyPrefix, onlineMs: 120_000 });
  const watched = Object.create(positions) as CourierPositions;
  watched.setBusy = async (courierId, busy, offerId) => {
    if (!busy) freed.push(courierId);
    return positions.setBusy(courierId, busy, offerId);
  };
  return watched;
}

/** Whether a search from the pickup finds the courier free. */
async function isFree(
  positions: CourierPositions,
  courierId: string,
  at = PICKUP,
): Promise<boolean> {
  const near = await positions.nearest({
    ...at,
    fleetTypeIds: [BIKE],
    maxDistanceKm: 5,
    limit: 50,
  });
  return near.some((c) => c.courierId === courierId);
}

/** A new courier on a bike, reported `northKm` north of the pickup: the next step offers to them. */
async function courierInReach(
  positions: CourierPositions,
  northKm = 0.22,
  pickup = PICKUP,
): Promise<string> {
  const courierId = randomUUID();
  const at = { lat: pickup.lat + northKm / 111.2, lon: pickup.lon };
  await positions.report({ id: courierId, fleetTypeId: BIKE }, at.lat, at.lon, new Date());
  return courierId;
}

it('notes an offer’s number on the search before it claims the offer, so that offers: 0 means none', async () => {
  const models = defineSearchModels(db);
  const store = new SearchStore(() => models);
  const notedAtClaim: number[] = [];
  // The real store, watched: what the search notes when each offer is claimed.
  const watched = Object.create(store) as SearchStore;
  watched.claimOffer = async (offer) => {
    notedAtClaim.push((await store.search(offer.deliveryId))?.offers ?? -1);
    return store.claimOffer(offer);
  };
  const positions = new CourierPositions(redis, { keyPrefix, onlineMs: 120_000 });
  const searches = searchesOver(watched, positions);
  const courierId = await courierInReach(positions);

  const deliveryId = randomUUID();
  await store.claimSearch(searchRecord(deliveryId));
  await searches.advance(deliveryId);

  expect(notedAtClaim).toEqual([1]);
  expect((await store.hold(courierId))?.deliveryId).toBe(deliveryId);
});

it('withdraws an offer whose search ended as it was made, even when marking its courier busy fails', async () => {
  const models = defineSearchModels(db);
  const store = new SearchStore(() => models);
  const deliveryId = randomUUID();
  // Order's end lands after this step read none, before its offer's hold is claimed.
  const watched = Object.create(store) as SearchStore;
  watched.claimHold = async (hold) => {
    const held = await store.claimHold(hold);
    await store.claimEnd({ _id: deliveryId, outcome: 'ENDED', courierId: null, at: new Date() });
    return held;
  };
  const freed: string[] = [];
  const positions = positionsNoting(freed);
  const failing = Object.create(positions) as CourierPositions;
  failing.setBusy = async (courierId, busy, offerId) => {
    if (busy) throw new Error('Redis is away a moment');
    return positions.setBusy(courierId, busy, offerId);
  };
  // A pickup of its own: the courier, never marked busy, stays free for other tests' searches.
  const pickup = { lat: 12.9, lon: 3.4 };
  const courierId = await courierInReach(positions, 0.05, pickup);
  await store.claimSearch(searchRecord(deliveryId, pickup));
  await searchesOver(watched, failing).advance(deliveryId);
  expect(await store.offerOutcome(offerIdOf(deliveryId, 1))).toBe('WITHDRAWN');
  expect(await store.hold(courierId)).toBeNull();
  expect(freed).toEqual([courierId]);
});

/**
 * A search whose one offer its courier accepted, the delivery's (the hold as versions before
 * wrote it, DELIVERY), ended ASSIGNED: the end naming the offer when `named`.
 */
async function assignedSearch({
  named = true,
  simulated = false,
  freeVirtual,
}: {
  named?: boolean;
  simulated?: boolean;
  freeVirtual?: (courierId: string) => Promise<void>;
} = {}) {
  const models = defineSearchModels(db);
  const store = new SearchStore(() => models);
  const freed: string[] = [];
  const positions = positionsNoting(freed);
  const searches = searchesOver(store, positions, new Set(), [], new Map(), [], [], freeVirtual);
  const deliveryId = randomUUID();
  const courierId = simulated ? virtualCourierId(deliveryId) : randomUUID();
  const offerId = offerIdOf(deliveryId, 1);
  const at = new Date();
  const simulate = simulated ? ('delivered' as const) : null;
  await store.claimSearch({ ...searchRecord(deliveryId), simulate, offers: 1 });
  const expiresAt = new Date(at.getTime() + 30_000);
  await store.claimOffer({ _id: offerId, deliveryId, n: 1, courierId, offeredAt: at, expiresAt });
  await store.claimOfferOutcome(offerId, 'ACCEPTED');
  await store.claimHold({ _id: courierId, deliveryId, offerId, kind: 'DELIVERY', at });
  await store.claimEnd({
    _id: deliveryId,
    outcome: 'ASSIGNED',
    courierId,
    ...(named ? { offerId } : {}),
    at,
  });
  return { models, store, freed, searches, deliveryId, courierId, offerId, at };
}

it('fails the end of an assigned delivery while another call holds its courier’s release, and takes it over after the lease', async () => {
  const { models, store, freed, searches, deliveryId, courierId, offerId } = await assignedSearch();
  // Delivered: order's writer ended it, claimed the release, and stopped before its delete.
  await models.HoldRelease.create({ _id: `${offerId}:1`, at: new Date() });

  // Its sweep calls again within the lease: refused, so that the call is kept to be made again.
  await expect(searches.end(deliveryId)).rejects.toMatchObject({
    code: 503,
    message: `The courier of delivery ${deliveryId} is being let go by another call; order calls again`,
  });
  expect(await store.hold(courierId)).toMatchObject({ offerId });
  // Past the lease, the next call takes the release over.
  await models.HoldRelease.updateOne(
    { _id: `${offerId}:1` },
    { $set: { at: new Date(Date.now() - CLAIM_END_LEASE_MS) } },
  );
  expect(await searches.end(deliveryId)).toEqual({ ended: true });
  expect(await store.hold(courierId)).toBeNull();
  expect(freed).toEqual([courierId]);
});

it.each([
  ['names the accepted offer', true],
  ['was written before ends named it', false],
])('ends an assigned search by letting its courier go, when its end %s', async (_, named) => {
  const { store, freed, searches, deliveryId, courierId, at } = await assignedSearch({ named });

  expect(await searches.end(deliveryId)).toEqual({ ended: true });
  expect(await store.hold(courierId)).toBeNull();
  expect(freed).toEqual([courierId]);
  // Again (order's writer and its sweep), holding nothing: marked free again, which finishes a
  // release cut short before its mark and changes nothing otherwise.
  expect(await searches.end(deliveryId)).toEqual({ ended: true });
  expect(freed).toEqual([courierId, courierId]);
  // Again once they hold another delivery's trip: theirs, not this end's, to let go.
  const next = randomUUID();
  await store.claimHold({
    _id: courierId,
    deliveryId: next,
    offerId: offerIdOf(next, 1),
    kind: 'DELIVERY',
    at,
  });
  expect(await searches.end(deliveryId)).toEqual({ ended: true });
  expect(freed).toEqual([courierId, courierId]);
  expect((await store.hold(courierId))?.deliveryId).toBe(next);
});

it('keeps a courier who accepted an offer made as another replica gave the search up', async () => {
  const models = defineSearchModels(db);
  const store = new SearchStore(() => models);
  const deliveryId = randomUUID();
  // The real store, with what happens elsewhere between this step's hold and its next read:
  // another replica gives the search up, and the courier accepts the offer at once.
  const watched = afterEachHold(store, async (hold) => {
    const at = new Date();
    await store.claimEnd({ _id: deliveryId, outcome: 'NO_COURIER', courierId: null, at });
    await store.claimOfferOutcome(hold.offerId, 'ACCEPTED');
  });
  const freed: string[] = [];
  const positions = positionsNoting(freed);
  const searches = searchesOver(watched, positions);
  const courierId = await courierInReach(positions);
  await store.claimSearch(searchRecord(deliveryId));
  await searches.advance(deliveryId);

  expect(await store.offerOutcome(offerIdOf(deliveryId, 1))).toBe('ACCEPTED');
  expect(await store.holding(courierId)).toMatchObject({ deliveryId, kind: 'DELIVERY' });
  expect(freed).not.toContain(courierId);
});

/** The real store, with `meanwhile` done elsewhere right after each hold a step claims. */
function afterEachHold(
  store: SearchStore,
  meanwhile: (hold: Parameters<SearchStore['claimHold']>[0]) => Promise<unknown>,
): SearchStore {
  const watched = Object.create(store) as SearchStore;
  watched.claimHold = async (hold) => {
    const held = await store.claimHold(hold);
    if (held) await meanwhile(hold);
    return held;
  };
  return watched;
}

/** The couriers noted out of a search (declined, missed or retired), as another replica reads them. */
async function triedOf(store: SearchStore, deliveryId: string): Promise<string[]> {
  const read = await new SearchNotes(store).of(deliveryId);
  return [...new Set([...read.tried.keys(), ...read.retired])];
}

/** The deliveries order has assigned to the courier who asks (none other is). */
const ASSIGNED_BY_ORDER = new Set<string>();

/** Matching's steps over this store and index; the directory has `retired` retired. */
function searchesOver(
  store: SearchStore,
  positions: CourierPositions,
  retired: ReadonlySet<string> = new Set(),
  /** The calls made to order, `action deliveryId`. */
  toOrder: string[] = [],
  /** What couriers owe in cash collected on delivery, in kobo; one that throws: unknown. */
  owed: ReadonlyMap<string, number | Error> = new Map(),
  /** The couriers whose debt was asked of payment afresh, not from the 5 s copy. */
  askedAfresh: string[] = [],
  /** The simulated deliveries whose virtual courier was placed. */
  placed: string[] = [],
  /** Frees a virtual courier once its delivery is over. */
  freeVirtual: (courierId: string) => Promise<void> = async () => undefined,
): Searches {
  const order: Caller = {
    async call(action, params) {
      const { deliveryId } = params as { deliveryId: string };
      toOrder.push(`${action} ${deliveryId}`);
      const assigned = ASSIGNED_BY_ORDER.has(deliveryId);
      return { assigned, status: assigned ? 'COURIER_ASSIGNED' : 'NO_COURIER_FOUND' };
    },
  };
  return new Searches({
    store,
    notes: new SearchNotes(store),
    couriers: positions,
    services: () => order,
    settings: {
      offerTimeoutMs: 30_000,
      searchTimeoutMs: 900_000,
      reaskAfterMs: REASK_AFTER_MS,
      reach: { startKm: 3, stepKm: 3, maxKm: 15, widenEveryMs: 60_000 },
      candidates: 5,
      simulatorTimeScale: 1,
      sweepIntervalMs: 1_000,
      idleStepMaxMs: 8_000,
      cashLimitKobo: CASH_LIMIT_KOBO,
    },
    fleetTypes: async () => [{ id: BIKE, maxWeight: '20.00000', active: true }],
    merchantCourierIds: async () => [],
    isActive: async (courierId) => !retired.has(courierId),
    cashOwedKobo: async (courierId, fresh) => {
      if (fresh) askedAfresh.push(courierId);
      const known = owed.get(courierId) ?? 0;
      if (known instanceof Error) throw known;
      return known;
    },
    placeVirtualCourier: async (search) => void placed.push(search.deliveryId),
    freeVirtualCourier: freeVirtual,
    logger: () => ({ warn: () => undefined }) as unknown as Logger,
  });
}

/**
 * A search from `pickup` whose first step, over `steppedBy` and the index as `seenBy` shows it,
 * offered it to the one courier put in reach; `freed` notes the couriers set free.
 */
async function offeredToOne(
  store: SearchStore,
  pickup: { lat: number; lon: number },
  { steppedBy = store, seenBy = (index: CourierPositions) => index } = {},
) {
  const freed: string[] = [];
  const positions = positionsNoting(freed);
  const courierId = await courierInReach(positions, 0.05, pickup);
  const searches = searchesOver(steppedBy, seenBy(positions));
  const deliveryId = randomUUID();
  await store.claimSearch(searchRecord(deliveryId, pickup));
  await searches.advance(deliveryId);
  const offerId = offerIdOf(deliveryId, 1);
  expect(await store.hold(courierId)).toMatchObject({ offerId });
  return { freed, positions, courierId, searches, deliveryId, offerId };
}

function searchRecord(deliveryId: string, pickup = PICKUP): SearchRecord {
  return {
    _id: deliveryId,
    deliveryId,
    userId: randomUUID(),
    pickup,
    dropoff: { lat: 6.45, lon: 3.4 },
    fleetTypeId: BIKE,
    weightGrams: 1_000,
    courierSelection: 'ANYONE',
    courierId: null,
    simulate: null,
    startedAt: new Date(),
    offers: 0,
    tried: [],
  };
}

it('leaves a courier marked for the next offer busy when a late call lets them go from the last', async () => {
  const models = defineSearchModels(db);
  const store = new SearchStore(() => models);
  const positions = new CourierPositions(redis, { keyPrefix, onlineMs: 120_000 });
  const courierId = await courierInReach(positions);
  const [first, next] = [randomUUID(), randomUUID()];
  const at = new Date();
  const firstOffer = offerIdOf(first, 1);
  await store.claimSearch({ ...searchRecord(first), offers: 1 });
  const expiresAt = new Date(at.getTime() + 30_000);
  await store.claimOffer({
    _id: firstOffer,
    deliveryId: first,
    n: 1,
    courierId,
    offeredAt: at,
    expiresAt,
  });
  await store.claimOfferOutcome(firstOffer, 'DECLINED');
  // Let go of the first already; another search offers them the next delivery between this
  // repeat's read of their hold (none) and its mark.
  const watched = Object.create(store) as SearchStore;
  watched.hold = async (id) => {
    const held = await store.hold(id);
    await store.claimHold({
      _id: id,
      deliveryId: next,
      offerId: offerIdOf(next, 1),
      kind: 'OFFER',
      at,
    });
    await positions.setBusy(id, true, offerIdOf(next, 1));
    return held;
  };
  await searchesOver(watched, positions).end(first);

  expect((await store.hold(courierId))?.deliveryId).toBe(next);
  expect(await isFree(positions, courierId)).toBe(false);
});

it('keeps every courier and offer noted out of a search by many replicas at once, each once', async () => {
  const models = defineSearchModels(db);
  const store = new SearchStore(() => models);
  for (let round = 0; round < 3; round++) {
    const deliveryId = randomUUID();
    await store.claimSearch({ ...searchRecord(deliveryId), offers: 9 });
    const couriers = Array.from({ length: 8 }, () => randomUUID());
    const missedOffer = offerIdOf(deliveryId, 9);
    // Eight replicas, each noting its courier twice and the same missed offer, all at once (a
    // `$addToSet` on the search kept one of eight).
    const replicas = couriers.map(() => new SearchNotes(store));
    await Promise.all(
      replicas.flatMap((notes, i) => {
        const tried = {
          kind: 'TRIED',
          courierId: couriers[i],
          offerId: offerIdOf(deliveryId, i + 1),
        } as const;
        return [
          notes.note(deliveryId, tried),
          notes.note(deliveryId, tried),
          notes.note(deliveryId, { kind: 'MISSED', offerId: missedOffer }),
        ];
      }),
    );
    const read = await new SearchNotes(store).of(deliveryId);
    expect([...read.tried.keys()].sort()).toEqual([...couriers].sort());
    expect([...read.missed]).toEqual([missedOffer]);
    expect(read.count).toBe(9);
    expect(await models.SearchNote.countDocuments({ deliveryId })).toBe(9);
    // Each replica reads on from what it had read: all nine, too.
    for (const notes of replicas) expect((await notes.of(deliveryId)).count).toBe(9);
  }
});

it('does not offer a delivery again to a courier another replica noted as tried after this step read its notes', async () => {
  const models = defineSearchModels(db);
  const store = new SearchStore(() => models);
  const positions = new CourierPositions(redis, { keyPrefix, onlineMs: 120_000 });
  // The nearest of the couriers this file puts in reach.
  const courierId = await courierInReach(positions, 0);
  const deliveryId = randomUUID();
  const at = new Date();
  const expiresAt = new Date(at.getTime() + 30_000);
  await store.claimSearch({ ...searchRecord(deliveryId), offers: 2 });
  // The other replica: the first offer expired, its courier noted as tried and let go, the
  // second made to a courier who had taken another offer (withdrawn at once).
  await store.claimOffer({
    _id: offerIdOf(deliveryId, 1),
    deliveryId,
    n: 1,
    courierId,
    offeredAt: at,
    expiresAt,
  });
  await store.claimOfferOutcome(offerIdOf(deliveryId, 1), 'EXPIRED');
  await new SearchNotes(store).note(deliveryId, {
    kind: 'TRIED',
    courierId,
    offerId: offerIdOf(deliveryId, 1),
    offeredAt: at,
  });
  const other = randomUUID();
  await store.claimOffer({
    _id: offerIdOf(deliveryId, 2),
    deliveryId,
    n: 2,
    courierId: other,
    offeredAt: at,
    expiresAt,
  });
  await store.claimOfferOutcome(offerIdOf(deliveryId, 2), 'WITHDRAWN');
  // This step read the search, and its notes, before the other replica noted the courier.
  const watched = Object.create(store) as SearchStore;
  let noteReads = 0;
  watched.searchNote = async (id, k) => (noteReads++ === 0 ? null : store.searchNote(id, k));
  await searchesOver(watched, positions).advance(deliveryId);

  expect((await store.offer(offerIdOf(deliveryId, 3)))?.courierId).not.toBe(courierId);
  expect(await store.hold(courierId)).toBeNull();
});

it('refuses a decline past the offer’s time as closed, expired, as an accept is, and lets the courier go', async () => {
  const models = defineSearchModels(db);
  const store = new SearchStore(() => models);
  const positions = new CourierPositions(redis, { keyPrefix, onlineMs: 120_000 });
  const pickup = { lat: 6.1, lon: 3.9 };
  const courierId = await courierInReach(positions, 0.05, pickup);
  const searches = searchesOver(store, positions);
  const [late, inTime] = [randomUUID(), randomUUID()];
  for (const deliveryId of [late, inTime]) {
    await store.claimSearch(searchRecord(deliveryId, pickup));
    await searches.advance(deliveryId);
    const offerId = offerIdOf(deliveryId, 1);
    expect(await store.hold(courierId)).toMatchObject({ deliveryId, offerId });
    const offer = await store.offer(offerId);
    if (deliveryId === late) {
      const after = new Date((offer?.expiresAt.getTime() ?? 0) + 1);
      await expect(searches.decline(courierId, offerId, after)).rejects.toMatchObject({
        code: 409,
        message: expect.stringMatching(/expired/),
      });
      expect(await store.offerOutcome(offerId)).toBe('EXPIRED');
    } else {
      expect(await searches.decline(courierId, offerId)).toMatchObject({ status: 'DECLINED' });
      // Repeated past its time, it answers as it did.
      const after = new Date((offer?.expiresAt.getTime() ?? 0) + 1);
      expect(await searches.decline(courierId, offerId, after)).toMatchObject({
        status: 'DECLINED',
      });
    }
    expect(await store.hold(courierId)).toBeNull();
  }
});

describe('a busy mark checked on a report', () => {
  /** The real store and index, and a courier in reach marked busy for `mark` (none: unnamed). */
  async function markedCourier(mark?: string) {
    const models = defineSearchModels(db);
    const store = new SearchStore(() => models);
    const positions = new CourierPositions(redis, { keyPrefix, onlineMs: 120_000 });
    const courierId = await courierInReach(positions);
    await positions.setBusy(courierId, true, mark);
    return { store, positions, courierId, searches: searchesOver(store, positions) };
  }

  /** A courier marked for the first offer of a search, which holds nothing yet. */
  async function searchingCourier() {
    const deliveryId = randomUUID();
    const offerId = offerIdOf(deliveryId, 1);
    const marked = await markedCourier(offerId);
    await marked.store.claimSearch({ ...searchRecord(deliveryId), offers: 1 });
    return { ...marked, deliveryId, offerId, at: new Date() };
  }

  /** A courier holding the first offer of a search, made at `at`. */
  async function offeredCourier() {
    const searching = await searchingCourier();
    const { store, courierId, deliveryId, offerId, at } = searching;
    const expiresAt = new Date(at.getTime() + 30_000);
    await store.claimOffer({ _id: offerId, deliveryId, n: 1, courierId, offeredAt: at, expiresAt });
    await store.claimHold({ _id: courierId, deliveryId, offerId, kind: 'OFFER', at });
    return searching;
  }

  it('marks free a courier who holds nothing, once', async () => {
    const stale = offerIdOf(randomUUID(), 1);
    const { positions, courierId, searches } = await markedCourier(stale);

    await searches.checkBusy(courierId, stale);
    expect(await isFree(positions, courierId)).toBe(true);
  });

  it('marks free a courier holding nothing whose mark names no offer (made by a version before)', async () => {
    const { positions, courierId, searches } = await markedCourier();

    await searches.checkBusy(courierId, UNNAMED_MARK);
    expect(await isFree(positions, courierId)).toBe(true);
  });

  it('lets go a courier holding an offer of a search that ended with no step to close it', async () => {
    const { store, positions, courierId, searches, deliveryId, offerId, at } =
      await offeredCourier();
    // Ended (cancelled) after the step made the offer, which stopped before it looked.
    await store.claimEnd({ _id: deliveryId, outcome: 'ENDED', courierId: null, at });

    await searches.checkBusy(courierId, offerId);
    expect(await store.offerOutcome(offerId)).toBe('WITHDRAWN');
    expect(await store.hold(courierId)).toBeNull();
    expect(await isFree(positions, courierId)).toBe(true);
  });

  it('lets go a courier holding a declined offer whose release stopped before its delete, once its lease is over', async () => {
    const { store, positions, courierId, searches, deliveryId, offerId } = await offeredCourier();
    await store.claimOfferOutcome(offerId, 'DECLINED');
    // The decline claimed the release, then its delete failed; the search moved on to other
    // couriers, so no step looks at this offer again.
    const releases = defineSearchModels(db).HoldRelease;
    await releases.create({ _id: `${offerId}:1`, at: new Date() });

    await searches.checkBusy(courierId, offerId);
    expect(await store.hold(courierId)).toMatchObject({ offerId });
    expect(await isFree(positions, courierId)).toBe(false);

    await releases.updateOne(
      { _id: `${offerId}:1` },
      { $set: { at: new Date(Date.now() - CLAIM_END_LEASE_MS) } },
    );
    await searches.checkBusy(courierId, offerId);
    expect(await store.hold(courierId)).toBeNull();
    expect(await isFree(positions, courierId)).toBe(true);
    expect(await triedOf(store, deliveryId)).toEqual([courierId]);
  });

  it('lets go a courier held by a delivery whose search order ended, as a version before could leave them', async () => {
    const { store, positions, courierId, searches, deliveryId, offerId, at } =
      await searchingCourier();
    await store.claimOfferOutcome(offerId, 'ACCEPTED');
    // The accept's rewrite of the hold landed after the cancel had let the courier go.
    await store.claimEnd({ _id: deliveryId, outcome: 'ENDED', courierId: null, at });
    await store.claimHold({ _id: courierId, deliveryId, offerId, kind: 'DELIVERY', at });
    expect(await searches.held(courierId)).toBe(deliveryId);

    await searches.checkBusy(courierId, offerId);
    expect(await store.hold(courierId)).toBeNull();
    expect(await isFree(positions, courierId)).toBe(true);
  });

  /** A courier who accepted as the search was given up, their confirmation cut short. */
  async function acceptedAsGivenUp() {
    const searching = await offeredCourier();
    const { store, deliveryId, offerId, at } = searching;
    await store.claimOfferOutcome(offerId, 'ACCEPTED');
    await store.claimEnd({ _id: deliveryId, outcome: 'NO_COURIER', courierId: null, at });
    return searching;
  }

  it('keeps a courier who accepted as the search was given up when order assigned them first', async () => {
    const { positions, courierId, searches, deliveryId, offerId } = await acceptedAsGivenUp();
    ASSIGNED_BY_ORDER.add(deliveryId);

    await searches.checkBusy(courierId, offerId);
    expect(await searches.held(courierId)).toBe(deliveryId);
    expect(await isFree(positions, courierId)).toBe(false);
  });

  it('lets go a courier who accepted as the search was given up once order says it did not assign them', async () => {
    const { store, positions, courierId, searches, offerId } = await acceptedAsGivenUp();

    await searches.checkBusy(courierId, offerId);
    expect(await store.hold(courierId)).toBeNull();
    expect(await isFree(positions, courierId)).toBe(true);
  });

  it('keeps busy a courier holding an offer, the mark theirs so that its release clears it', async () => {
    const stale = offerIdOf(randomUUID(), 1);
    const { store, positions, courierId, searches } = await markedCourier(stale);
    const deliveryId = randomUUID();
    const held = offerIdOf(deliveryId, 1);
    await store.claimHold({
      _id: courierId,
      deliveryId,
      offerId: held,
      kind: 'OFFER',
      at: new Date(),
    });

    await searches.checkBusy(courierId, stale);
    expect(await isFree(positions, courierId)).toBe(false);
    expect(await positions.setBusy(courierId, false, stale)).toBe(false);
    expect(await positions.setBusy(courierId, false, held)).toBe(true);
    expect(await isFree(positions, courierId)).toBe(true);
  });
});

it('marks busy, for what they hold, a courier found free who holds another delivery', async () => {
  const models = defineSearchModels(db);
  const store = new SearchStore(() => models);
  const positions = new CourierPositions(redis, { keyPrefix, onlineMs: 120_000 });
  // Alone in reach of a pickup of its own, free in Redis (its mark lost), holding another
  // delivery's trip.
  const pickup = { lat: 7.3775, lon: 3.947 };
  const courierId = randomUUID();
  await positions.report({ id: courierId, fleetTypeId: BIKE }, pickup.lat, pickup.lon, new Date());
  const other = randomUUID();
  const trip = offerIdOf(other, 1);
  await store.claimHold({
    _id: courierId,
    deliveryId: other,
    offerId: trip,
    kind: 'DELIVERY',
    at: new Date(),
  });
  const deliveryId = randomUUID();
  await store.claimSearch({ ...searchRecord(deliveryId), pickup });
  await searchesOver(store, positions).advance(deliveryId);

  expect(await store.offer(offerIdOf(deliveryId, 1))).toMatchObject({ courierId });
  expect(await store.offerOutcome(offerIdOf(deliveryId, 1))).toBe('WITHDRAWN');
  expect(await isFree(positions, courierId, pickup)).toBe(false);
  // Marked for the trip: its end clears the mark.
  expect(await positions.setBusy(courierId, false, trip)).toBe(true);
});

it('withdraws an offer made to a courier retired while the step chose them, and offers the next courier', async () => {
  const models = defineSearchModels(db);
  const store = new SearchStore(() => models);
  const freed: string[] = [];
  const positions = positionsNoting(freed);
  // Retired in the directory, still in the index: the retirement read no hold (this step had
  // not claimed it yet) and has not told the index yet.
  // Away from the couriers the other tests leave in the index.
  const pickup = { lat: 7.1, lon: 3.4 };
  const retiredId = await courierInReach(positions, 0.05, pickup);
  const nextId = await courierInReach(positions, 0.4, pickup);
  const searches = searchesOver(store, positions, new Set([retiredId]));
  const deliveryId = randomUUID();
  await store.claimSearch(searchRecord(deliveryId, pickup));
  await searches.advance(deliveryId);

  expect(await store.offerOutcome(offerIdOf(deliveryId, 1))).toBe('WITHDRAWN');
  expect((await store.offer(offerIdOf(deliveryId, 1)))?.courierId).toBe(retiredId);
  expect(await store.hold(retiredId)).toBeNull();
  expect(freed).toEqual([retiredId]);
  expect(await store.hold(nextId)).toMatchObject({ deliveryId, offerId: offerIdOf(deliveryId, 2) });
  expect(await triedOf(store, deliveryId)).toEqual([retiredId]);

  // Its next step leaves the retired courier alone though the index still has them.
  await store.claimOfferOutcome(offerIdOf(deliveryId, 2), 'DECLINED');
  await searches.advance(deliveryId);
  expect(await store.hold(retiredId)).toBeNull();
});

it('leaves an offer the retired courier accepted first to its accept', async () => {
  const models = defineSearchModels(db);
  const store = new SearchStore(() => models);
  const deliveryId = randomUUID();
  // The accept's claim lands between the hold and the step's read of the directory.
  const watched = afterEachHold(store, (hold) => store.claimOfferOutcome(hold.offerId, 'ACCEPTED'));
  const positions = positionsNoting([]);
  const pickup = { lat: 7.6, lon: 3.4 };
  const courierId = await courierInReach(positions, 0.05, pickup);
  const searches = searchesOver(watched, positions, new Set([courierId]));
  await store.claimSearch(searchRecord(deliveryId, pickup));
  await searches.advance(deliveryId);

  expect(await store.offerOutcome(offerIdOf(deliveryId, 1))).toBe('ACCEPTED');
  expect(await store.hold(courierId)).toMatchObject({ deliveryId, kind: 'OFFER' });
});

describe('a pay-on-delivery', () => {
  async function podSearch(
    pickup: { lat: number; lon: number },
    owed: Map<string, number | Error>,
  ) {
    const models = defineSearchModels(db);
    const store = new SearchStore(() => models);
    const positions = positionsNoting([]);
    const searches = searchesOver(store, positions, new Set(), [], owed);
    const deliveryId = randomUUID();
    await store.claimSearch({ ...searchRecord(deliveryId, pickup), collectKobo: 2_000_000 });
    return { store, positions, searches, deliveryId };
  }

  it('passes over a courier it would take past the cash limit, until they hand cash in', async () => {
    const owed = new Map<string, number | Error>();
    const pickup = { lat: 7.9, lon: 3.4 };
    const { store, positions, searches, deliveryId } = await podSearch(pickup, owed);
    const [nearest, next] = [
      await courierInReach(positions, 0.05, pickup),
      await courierInReach(positions, 0.4, pickup),
    ];
    // ₦50,000 owed + ₦20,000 collected > ₦60,000; ₦40,000 + ₦20,000 is within.
    owed.set(nearest, 5_000_000).set(next, 4_000_000);
    await searches.advance(deliveryId);
    expect(await store.hold(nearest)).toBeNull();
    expect(await store.hold(next)).toMatchObject({ deliveryId, offerId: offerIdOf(deliveryId, 1) });

    // Declined; the nearest hands in cash: the same search offers it to them, never noted as
    // tried for their debt.
    await store.claimOfferOutcome(offerIdOf(deliveryId, 1), 'DECLINED');
    owed.set(nearest, 0);
    await searches.advance(deliveryId);
    expect(await store.hold(nearest)).toMatchObject({
      deliveryId,
      offerId: offerIdOf(deliveryId, 2),
    });
    expect(await triedOf(store, deliveryId)).toEqual([next]);
  });

  it('reaches past a step’s candidates all over the limit to the nearest under it', async () => {
    const owed = new Map<string, number | Error>();
    const pickup = { lat: 8.5, lon: 3.4 };
    const { store, positions, searches, deliveryId } = await podSearch(pickup, owed);
    // More couriers over the limit than a step asks for (5), all nearer than the one under it.
    for (let i = 0; i < 7; i++) {
      owed.set(await courierInReach(positions, 0.05 + i * 0.02, pickup), 5_000_000);
    }
    const under = await courierInReach(positions, 0.6, pickup);
    await searches.advance(deliveryId);
    expect(await store.hold(under)).toMatchObject({
      deliveryId,
      offerId: offerIdOf(deliveryId, 1),
    });
    expect(await triedOf(store, deliveryId)).toEqual([]);
  });

  it('is offered to a courier who owes nothing, whatever it collects, and when their debt is not known', async () => {
    const owed = new Map<string, number | Error>();
    const pickup = { lat: 8.2, lon: 3.4 };
    const { store, positions, searches, deliveryId } = await podSearch(pickup, owed);
    const courierId = await courierInReach(positions, 0.05, pickup);
    owed.set(courierId, new Error('payment service unreachable'));
    await searches.advance(deliveryId);
    expect(await store.hold(courierId)).toMatchObject({ deliveryId });
  });
});

describe('who may collect a pay-on-delivery, asked before the request is taken', () => {
  it('answers those within the limit, in the order asked, counting an unknown debt as within', async () => {
    const within = randomUUID();
    const over = randomUUID();
    const unknown = randomUUID();
    const free = randomUUID();
    const owed = new Map<string, number | Error>([
      [within, 4_000_000],
      [over, 4_000_001],
      [unknown, new Error('payment service unreachable')],
    ]);
    const models = defineSearchModels(db);
    const askedAfresh: string[] = [];
    const searches = searchesOver(
      new SearchStore(() => models),
      positionsNoting([]),
      new Set(),
      [],
      owed,
      askedAfresh,
    );
    // ₦60,000 at most: ₦40,000 owed + ₦20,000 is within, a kobo more is not.
    expect(await searches.allowedToCollect([over, within, unknown, free], 2_000_000)).toEqual([
      within,
      unknown,
      free,
    ]);
    // Asked afresh: a courier who just handed cash in may be named again at once.
    expect(askedAfresh.sort()).toEqual([over, within, unknown, free].sort());
    expect(await searches.allowedToCollect([over], 2_000_000)).toEqual([]);
    expect(await searches.allowedToCollect([over], 0)).toEqual([over]);
  });
});

describe('a search with a time after which no courier is sought (a slot that closes)', () => {
  const MINUTE = 60_000;

  /** A courier by a pickup of its own, and matching telling order into `toOrder`. */
  async function courierByPickup(lat: number) {
    const models = defineSearchModels(db);
    const store = new SearchStore(() => models);
    const positions = positionsNoting([]);
    const pickup = { lat, lon: 3.4 };
    const courierId = await courierInReach(positions, 0.05, pickup);
    const toOrder: string[] = [];
    const searches = searchesOver(store, positions, new Set(), toOrder);
    return { models, store, pickup, courierId, toOrder, searches, deliveryId: randomUUID() };
  }

  it('gives up at its first step when it starts after that time, though a courier is in reach', async () => {
    const { store, pickup, courierId, toOrder, searches, deliveryId } = await courierByPickup(8.1);
    const now = new Date();
    await store.claimSearch({
      ...searchRecord(deliveryId, pickup),
      startedAt: now,
      notAfter: new Date(now.getTime() - MINUTE),
    });
    await searches.advance(deliveryId, now);

    expect(await store.end(deliveryId)).toMatchObject({ outcome: 'NO_COURIER' });
    expect(toOrder).toEqual([`order.noCourierFound ${deliveryId}`]);
    expect(await store.offer(offerIdOf(deliveryId, 1))).toBeNull();
    expect(await store.hold(courierId)).toBeNull();
  });

  it('offers as usual before that time, waits out an open offer, and gives up at it', async () => {
    const { store, pickup, courierId, toOrder, searches, deliveryId } = await courierByPickup(8.6);
    const startedAt = new Date();
    const notAfter = new Date(startedAt.getTime() + 10_000);
    await store.claimSearch({ ...searchRecord(deliveryId, pickup), startedAt, notAfter });
    await searches.advance(deliveryId, startedAt);
    const offer = await store.offer(offerIdOf(deliveryId, 1));
    expect(offer?.courierId).toBe(courierId);

    // Past that time with the offer still open: the courier may still take it.
    const late = new Date(notAfter.getTime() + 1_000);
    expect(offer && offer.expiresAt.getTime() > late.getTime()).toBe(true);
    await searches.advance(deliveryId, late);
    expect(await store.end(deliveryId)).toBeNull();
    expect(await store.hold(courierId)).toMatchObject({ deliveryId, kind: 'OFFER' });

    // Declined: nobody else is asked, the search is over.
    await store.claimOfferOutcome(offerIdOf(deliveryId, 1), 'DECLINED');
    await searches.advance(deliveryId, late);
    expect(await store.end(deliveryId)).toMatchObject({ outcome: 'NO_COURIER' });
    expect(toOrder).toEqual([`order.noCourierFound ${deliveryId}`]);
    expect(await store.hold(courierId)).toBeNull();
  });

  it('withdraws an offer another replica made as this step gave up, its courier free again', async () => {
    const { store, pickup, courierId, toOrder, deliveryId } = await courierByPickup(9.1);
    const freed: string[] = [];
    const positions = positionsNoting(freed);
    const now = new Date();
    await store.claimSearch({
      ...searchRecord(deliveryId, pickup),
      startedAt: now,
      notAfter: new Date(now.getTime() - MINUTE),
    });
    // The other replica's step, a moment short of that time, offered to the courier and looked
    // for an end (none yet) after this step read the search, before its end was claimed.
    const offerId = offerIdOf(deliveryId, 1);
    const watched = Object.create(store) as SearchStore;
    watched.claimEnd = async (end) => {
      await store.noteOffer(deliveryId, 1);
      await store.claimOffer({
        _id: offerId,
        deliveryId,
        n: 1,
        courierId,
        offeredAt: now,
        expiresAt: new Date(now.getTime() + 30_000),
      });
      await store.claimHold({ _id: courierId, deliveryId, offerId, kind: 'OFFER', at: now });
      await positions.setBusy(courierId, true, offerId);
      return store.claimEnd(end);
    };
    await searchesOver(watched, positions, new Set(), toOrder).advance(deliveryId, now);

    expect(await store.end(deliveryId)).toMatchObject({ outcome: 'NO_COURIER' });
    expect(toOrder).toEqual([`order.noCourierFound ${deliveryId}`]);
    expect(await store.offerOutcome(offerId)).toBe('WITHDRAWN');
    expect(await store.hold(courierId)).toBeNull();
    expect(freed).toEqual([courierId]);
  });

  it('asks a courier who declined again once MATCHING_REASK_AFTER_MS has passed, while the slot can be reached', async () => {
    const { models, store, pickup, courierId, toOrder, searches, deliveryId } =
      await courierByPickup(9.4);
    const startedAt = new Date();
    const notAfter = new Date(startedAt.getTime() + 3 * 60 * MINUTE);
    await store.claimSearch({ ...searchRecord(deliveryId, pickup), startedAt, notAfter });
    await searches.advance(deliveryId, startedAt);
    const first = offerIdOf(deliveryId, 1);
    expect((await store.offer(first))?.courierId).toBe(courierId);
    await searches.decline(courierId, first);

    // Within the wait: nobody else in reach, nobody asked.
    await searches.advance(deliveryId, new Date(startedAt.getTime() + REASK_AFTER_MS - MINUTE));
    expect(await store.offer(offerIdOf(deliveryId, 2))).toBeNull();
    expect(await store.hold(courierId)).toBeNull();
    // Past it: asked again, the search going on.
    await searches.advance(deliveryId, new Date(startedAt.getTime() + REASK_AFTER_MS + MINUTE));
    expect((await store.offer(offerIdOf(deliveryId, 2)))?.courierId).toBe(courierId);
    expect(await store.hold(courierId)).toMatchObject({ deliveryId, kind: 'OFFER' });
    expect(await store.end(deliveryId)).toBeNull();
    expect(toOrder).toEqual([]);

    // No again: out as long again, from that offer (another replica reading the notes anew).
    await searches.decline(courierId, offerIdOf(deliveryId, 2));
    const again = searchesOver(store, positionsNoting([]), new Set(), toOrder);
    await again.advance(deliveryId, new Date(startedAt.getTime() + REASK_AFTER_MS + 5 * MINUTE));
    expect(await store.offer(offerIdOf(deliveryId, 3))).toBeNull();
    await again.advance(
      deliveryId,
      new Date(startedAt.getTime() + 2 * REASK_AFTER_MS + 2 * MINUTE),
    );
    expect((await store.offer(offerIdOf(deliveryId, 3)))?.courierId).toBe(courierId);
    expect(await triedOf(store, deliveryId)).toEqual([courierId]);
    expect(await models.SearchNote.countDocuments({ deliveryId })).toBe(2);
  });

  it('goes on past MATCHING_SEARCH_TIMEOUT_MS while the slot can be reached, and gives up at that time', async () => {
    const { store, pickup, toOrder, searches, deliveryId } = await courierByPickup(8.9);
    // Nobody in reach: the pickup a degree (111 km) from the only courier.
    const far = { ...pickup, lat: pickup.lat + 1 };
    const now = new Date();
    const startedAt = new Date(now.getTime() - 20 * MINUTE);
    const notAfter = new Date(now.getTime() + 60 * MINUTE);
    await store.claimSearch({ ...searchRecord(deliveryId, far), startedAt, notAfter });
    // Twenty minutes in, past an ASAP search's 15: still searching (it ended, refunded, before
    // the slot had opened).
    await searches.advance(deliveryId, now);
    expect(await store.end(deliveryId)).toBeNull();
    expect(toOrder).toEqual([]);
    await searches.advance(deliveryId, new Date(notAfter.getTime() + 1_000));
    expect(await store.end(deliveryId)).toMatchObject({ outcome: 'NO_COURIER' });
    expect(toOrder).toEqual([`order.noCourierFound ${deliveryId}`]);
  });
});

it('makes an offer that lasts its whole time however long the sweep’s turn has run before it', async () => {
  const models = defineSearchModels(db);
  const store = new SearchStore(() => models);
  const positions = positionsNoting([]);
  const pickup = { lat: 9.3, lon: 3.4 };
  const courierId = await courierInReach(positions, 0.05, pickup);
  const searches = searchesOver(store, positions);
  const deliveryId = randomUUID();
  await store.claimSearch(searchRecord(deliveryId, pickup));
  await store.activate(deliveryId, new Date());
  // The turn was chosen longer ago than an offer lasts: the steps before this one waited on
  // order's answers.
  await searches.sweep(200, new Date(Date.now() - 31_000));

  const offerId = offerIdOf(deliveryId, 1);
  expect((await store.offer(offerId))?.courierId).toBe(courierId);
  expect(await searches.openOffers(courierId)).toMatchObject([{ id: offerId, status: 'OPEN' }]);
  // The next step waits for the courier's answer: the offer is not closed as expired.
  await searches.advance(deliveryId);
  expect(await store.offerOutcome(offerId)).toBeNull();
  expect(await triedOf(store, deliveryId)).toEqual([]);
  expect(await store.hold(courierId)).toMatchObject({ deliveryId, offerId });
});

describe('a search that may go to some couriers only', () => {
  /** The real store and index, matching telling order into `toOrder`, and couriers near `lat`. */
  async function restricted(lat: number, couriers: number) {
    const models = defineSearchModels(db);
    const store = new SearchStore(() => models);
    const positions = positionsNoting([]);
    const pickup = { lat, lon: 3.4 };
    const courierIds: string[] = [];
    for (let i = 0; i < couriers; i++) {
      courierIds.push(await courierInReach(positions, 0.05 + i * 0.1, pickup));
    }
    const toOrder: string[] = [];
    const searches = searchesOver(store, positions, new Set(), toOrder);
    return { store, positions, pickup, courierIds, toOrder, searches, deliveryId: randomUUID() };
  }

  /** A SPECIFIC search stored for the one courier put near `lat`. */
  async function specific(lat: number) {
    const found = await restricted(lat, 1);
    const [courierId] = found.courierIds;
    await found.store.claimSearch({
      ...searchRecord(found.deliveryId, found.pickup),
      courierSelection: 'SPECIFIC',
      courierId,
    });
    return { ...found, courierId };
  }

  it('SPECIFIC: offers its courier the delivery however far past the search’s radius they are', async () => {
    const found = await restricted(13.4, 0);
    const { store, positions, pickup, searches, deliveryId } = found;
    // 40 km from the pickup: the radius grows to 15 km at most, and nobody else may take it.
    const courierId = await courierInReach(positions, 40, pickup);
    await store.claimSearch({
      ...searchRecord(deliveryId, pickup),
      courierSelection: 'SPECIFIC',
      courierId,
    });
    await searches.advance(deliveryId);
    expect(await store.hold(courierId)).toMatchObject({ offerId: offerIdOf(deliveryId, 1) });
  });

  it('SPECIFIC: ends NO_COURIER at once when its courier declines', async () => {
    const { store, courierId, toOrder, searches, deliveryId } = await specific(9.6);
    await searches.advance(deliveryId);
    expect(await store.hold(courierId)).toMatchObject({ offerId: offerIdOf(deliveryId, 1) });

    await store.claimOfferOutcome(offerIdOf(deliveryId, 1), 'DECLINED');
    await searches.advance(deliveryId);
    expect(await store.end(deliveryId)).toMatchObject({ outcome: 'NO_COURIER' });
    expect(toOrder).toEqual([`order.noCourierFound ${deliveryId}`]);
    expect(await store.hold(courierId)).toBeNull();
    expect(await store.offer(offerIdOf(deliveryId, 2))).toBeNull();
  });

  it(`SPECIFIC: offers again to its courier who let an offer expire, ${MISSED_OFFERS_MAX} offers in all, then ends NO_COURIER`, async () => {
    const { store, courierId, toOrder, searches, deliveryId } = await specific(9.9);
    await searches.advance(deliveryId);
    for (let n = 1; n <= MISSED_OFFERS_MAX; n++) {
      const offerId = offerIdOf(deliveryId, n);
      expect(await store.hold(courierId)).toMatchObject({ deliveryId, offerId });
      expect(toOrder).toEqual([]);
      // Stepped at its expiry: closed, and the courier asked again while they may be.
      const offer = await store.offer(offerId);
      await searches.advance(deliveryId, offer?.expiresAt);
      expect(await store.offerOutcome(offerId)).toBe('EXPIRED');
    }
    expect(await store.end(deliveryId)).toMatchObject({ outcome: 'NO_COURIER' });
    expect(toOrder).toEqual([`order.noCourierFound ${deliveryId}`]);
    expect(await store.hold(courierId)).toBeNull();
    expect(await store.offer(offerIdOf(deliveryId, MISSED_OFFERS_MAX + 1))).toBeNull();
  });

  it(`SPECIFIC: makes no offer after ${MISSED_OFFERS_MAX} missed though its step read its notes before they all were`, async () => {
    const { store, positions, pickup, courierIds, toOrder, deliveryId } = await restricted(11.1, 1);
    const [courierId] = courierIds;
    const asStarted: SearchRecord = {
      ...searchRecord(deliveryId, pickup),
      courierSelection: 'SPECIFIC',
      courierId,
      offers: MISSED_OFFERS_MAX,
    };
    const at = new Date(Date.now() - 60_000);
    const expiresAt = new Date(at.getTime() + 30_000);
    await store.claimSearch(asStarted);
    for (let n = 1; n <= MISSED_OFFERS_MAX; n++) {
      const offerId = offerIdOf(deliveryId, n);
      await store.claimOffer({ _id: offerId, deliveryId, n, courierId, offeredAt: at, expiresAt });
      await store.claimOfferOutcome(offerId, 'EXPIRED');
      // Every miss noted by other matchers: this step read the notes when only the first was.
      await new SearchNotes(store).note(deliveryId, { kind: 'MISSED', offerId });
    }
    const watched = Object.create(store) as SearchStore;
    let stale = true;
    watched.searchNote = async (id, k) => {
      if (k === 2 && stale) {
        stale = false;
        return null;
      }
      return store.searchNote(id, k);
    };
    await searchesOver(watched, positions, new Set(), toOrder).advance(deliveryId);

    expect(await store.offer(offerIdOf(deliveryId, MISSED_OFFERS_MAX + 1))).toBeNull();
    expect(await store.hold(courierId)).toBeNull();
    expect(await store.end(deliveryId)).toMatchObject({ outcome: 'NO_COURIER' });
    expect(toOrder).toEqual([`order.noCourierFound ${deliveryId}`]);
  });

  it('MERCHANT_SPECIAL_COURIERS: counts a courier retired as it went to them out while retired, and asks them once back at work', async () => {
    for (const [lat, back] of [
      [10.3, false],
      [10.6, true],
    ] as const) {
      const { store, positions, pickup, courierIds, deliveryId } = await restricted(lat, 2);
      const [retiredOne, other] = courierIds;
      const retired = new Set([retiredOne]);
      const toOrder: string[] = [];
      const searches = searchesOver(store, positions, retired, toOrder);
      await store.claimSearch({
        ...searchRecord(deliveryId, pickup),
        courierSelection: 'MERCHANT_SPECIAL_COURIERS',
        merchantCourierIds: [retiredOne, other],
      });
      // The nearest was retired as the step chose them: withdrawn, and the other offered.
      await searches.advance(deliveryId);
      expect(await store.offerOutcome(offerIdOf(deliveryId, 1))).toBe('WITHDRAWN');
      expect((await store.offer(offerIdOf(deliveryId, 2)))?.courierId).toBe(other);
      await searches.decline(other, offerIdOf(deliveryId, 2));
      if (back) retired.delete(retiredOne);
      await searches.advance(deliveryId);
      if (back) {
        expect((await store.offer(offerIdOf(deliveryId, 3)))?.courierId).toBe(retiredOne);
        expect(toOrder).toEqual([]);
        // Back at work, they decline too: out as anyone who declined, and nobody is left.
        await searches.decline(retiredOne, offerIdOf(deliveryId, 3));
        await searches.advance(deliveryId);
        expect(await store.offer(offerIdOf(deliveryId, 4))).toBeNull();
        expect(await store.end(deliveryId)).toMatchObject({ outcome: 'NO_COURIER' });
      } else {
        expect(await store.end(deliveryId)).toMatchObject({ outcome: 'NO_COURIER' });
        // Told by this step and by the one the decline set off beside it (a repeat is harmless).
        expect(new Set(toOrder)).toEqual(new Set([`order.noCourierFound ${deliveryId}`]));
      }
    }
  });

  it('MERCHANT_SPECIAL_COURIERS: ends NO_COURIER at once when every listed courier declined or missed it', async () => {
    const { store, pickup, courierIds, toOrder, searches, deliveryId } = await restricted(10.2, 3);
    // The third is in reach but not on the list.
    const [declines, misses] = courierIds;
    await store.claimSearch({
      ...searchRecord(deliveryId, pickup),
      courierSelection: 'MERCHANT_SPECIAL_COURIERS',
      merchantCourierIds: [declines, misses],
    });
    await searches.advance(deliveryId);
    expect(await store.hold(declines)).toMatchObject({ offerId: offerIdOf(deliveryId, 1) });
    await store.claimOfferOutcome(offerIdOf(deliveryId, 1), 'DECLINED');
    await searches.advance(deliveryId);
    expect(await store.hold(misses)).toMatchObject({ offerId: offerIdOf(deliveryId, 2) });
    expect(toOrder).toEqual([]);

    const offer = await store.offer(offerIdOf(deliveryId, 2));
    await searches.advance(deliveryId, offer?.expiresAt);
    expect(await store.end(deliveryId)).toMatchObject({ outcome: 'NO_COURIER' });
    expect(toOrder).toEqual([`order.noCourierFound ${deliveryId}`]);
    expect(await store.hold(misses)).toBeNull();
    expect(await store.offer(offerIdOf(deliveryId, 3))).toBeNull();
  });
});

it('lets the courier of a closed offer go once, not at every step after it', async () => {
  const models = defineSearchModels(db);
  const store = new SearchStore(() => models);
  const releases: string[] = [];
  const watched = Object.create(store) as SearchStore;
  watched.releaseHold = async (courierId, offerId) => {
    releases.push(offerId);
    return store.releaseHold(courierId, offerId);
  };
  const { freed, courierId, searches, deliveryId, offerId } = await offeredToOne(
    store,
    { lat: 10.5, lon: 3.4 },
    { steppedBy: watched },
  );

  // Declined through another replica, which stopped before letting them go: this step does.
  await store.claimOfferOutcome(offerId, 'DECLINED');
  await searches.advance(deliveryId);
  expect(await store.hold(courierId)).toBeNull();
  expect(freed).toEqual([courierId]);
  // Nobody else in reach: the steps that follow wait for a courier, and let nobody go again.
  await searches.advance(deliveryId);
  await searches.advance(deliveryId);
  expect(releases).toEqual([offerId]);
  expect(freed).toEqual([courierId]);
  expect(await store.end(deliveryId)).toBeNull();
});

describe('letting a courier go of an offer', () => {
  const holdOf = (courierId: string, offerId: string) => ({
    _id: courierId,
    deliveryId: randomUUID(),
    offerId,
    kind: 'OFFER' as const,
    at: new Date(),
  });

  it('is done by one call however many race, and never takes the hold claimed next', async () => {
    const store = new SearchStore(() => defineSearchModels(db));
    // Measured before the release claim: the next hold was deleted in 34 rounds of 50.
    for (let round = 0; round < 25; round++) {
      const courierId = randomUUID();
      expect(await store.claimHold(holdOf(courierId, `${courierId}-1`))).toBe(true);
      const releases = Array.from({ length: 4 }, () =>
        store.releaseHold(courierId, `${courierId}-1`),
      );
      const next = (async () => {
        while (!(await store.claimHold(holdOf(courierId, `${courierId}-2`)))) {
          // held still by the first offer: claimed as soon as a release lets it go
        }
      })();
      const [answers] = await Promise.all([Promise.all(releases), next]);
      expect(answers.filter((a) => a === 'RELEASED')).toHaveLength(1);
      expect(await store.hold(courierId)).toMatchObject({ offerId: `${courierId}-2` });
    }
  });

  it('is taken over from a call that claimed it and stopped, once its lease is over', async () => {
    const models = defineSearchModels(db);
    const store = new SearchStore(() => models);
    const courierId = randomUUID();
    const offerId = `${courierId}-1`;
    await store.claimHold(holdOf(courierId, offerId));
    const claimedAt = new Date();
    await models.HoldRelease.create({ _id: `${offerId}:1`, at: claimedAt });

    const later = (ms: number) => () => new Date(claimedAt.getTime() + ms);
    expect(await store.releaseHold(courierId, offerId, later(1_000))).toBe('RELEASING');
    expect(await store.hold(courierId)).toMatchObject({ offerId });
    expect(await store.releaseHold(courierId, offerId, later(CLAIM_END_LEASE_MS))).toBe('RELEASED');
    expect(await store.hold(courierId)).toBeNull();
    expect(await store.releaseHold(courierId, offerId, later(CLAIM_END_LEASE_MS))).toBe(
      'HOLDS_NOTHING',
    );
  });

  it('is finished by a later step when the call that claimed it stopped before letting them go', async () => {
    const models = defineSearchModels(db);
    const store = new SearchStore(() => models);
    const { freed, courierId, searches, deliveryId, offerId } = await offeredToOne(store, {
      lat: 10.9,
      lon: 3.4,
    });

    // Declined through another replica, which claimed the release and has not let them go yet.
    await store.claimOfferOutcome(offerId, 'DECLINED');
    await models.HoldRelease.create({ _id: `${offerId}:1`, at: new Date() });
    await searches.advance(deliveryId);
    expect(await store.hold(courierId)).toMatchObject({ offerId });
    expect(freed).toEqual([]);

    // That replica stopped: its claim outlives the lease, and the next step lets them go.
    await models.HoldRelease.updateOne(
      { _id: `${offerId}:1` },
      { $set: { at: new Date(Date.now() - CLAIM_END_LEASE_MS) } },
    );
    await searches.advance(deliveryId);
    expect(await store.hold(courierId)).toBeNull();
    expect(freed).toEqual([courierId]);
  });
});

it('ends a search with Redis away as its courier is let go, the mark cleared by the courier’s next check', async () => {
  const store = new SearchStore(() => defineSearchModels(db));
  let redisAway = false;
  const pickup = { lat: 12.2, lon: 3.4 };
  const { freed, positions, courierId, searches, deliveryId, offerId } = await offeredToOne(
    store,
    pickup,
    {
      seenBy: (index) => {
        const flaky = Object.create(index) as CourierPositions;
        flaky.setBusy = async (...args) => {
          if (redisAway) throw new Error('Connection is closed.');
          return index.setBusy(...args);
        };
        return flaky;
      },
    },
  );

  // Cancelled: order's end waits on this call before the refund.
  redisAway = true;
  await expect(searches.end(deliveryId)).resolves.toEqual({ ended: true });
  expect(await store.hold(courierId)).toBeNull();
  expect(freed).toEqual([]);

  redisAway = false;
  await searches.checkBusy(courierId, offerId);
  expect(freed).toEqual([courierId]);
  expect(await isFree(positions, courierId, pickup)).toBe(true);
});

/** The start of a simulated delivery's search from a pickup of its own, at `lat`. */
const simulatedStart = (deliveryId: string, lat: number): StartSearchParams => ({
  deliveryId,
  userId: randomUUID(),
  pickup: { lat, lon: 3.4 },
  dropoff: { lat: 10.7, lon: 3.4 },
  fleetTypeId: BIKE,
  weightGrams: 1_000,
  courierSelection: 'ANYONE',
  courierId: null,
  simulate: 'delivered',
});

it('does not put back the virtual courier of a simulation started again after its end', async () => {
  const models = defineSearchModels(db);
  const store = new SearchStore(() => models);
  const placed: string[] = [];
  const searches = searchesOver(store, positionsNoting([]), new Set(), [], new Map(), [], placed);
  const [over, fresh] = [randomUUID(), randomUUID()];
  // Cancelled, its virtual courier freed by the end; then a start of it retried by order.
  await store.claimEnd({ _id: over, outcome: 'ENDED', courierId: null, at: new Date() });
  const start = (deliveryId: string) => searches.start(simulatedStart(deliveryId, 10.8));
  await start(over);
  expect(placed).toEqual([]);
  expect(await store.active()).not.toContain(over);

  await start(fresh);
  expect(placed).toEqual([fresh]);
  await searches.end(fresh);
});

it('frees the virtual courier a start placed while an end was being claimed beside it', async () => {
  const models = defineSearchModels(db);
  const store = new SearchStore(() => models);
  const placed: string[] = [];
  const freed: string[] = [];
  const deliveryId = randomUUID();
  // The cancel's end is claimed between the start's look for one (none) and its placing.
  const watched = Object.create(store) as SearchStore;
  let looks = 0;
  watched.end = async (id) => {
    const found = await store.end(id);
    if (looks++ === 0) {
      await store.claimEnd({ _id: deliveryId, outcome: 'ENDED', courierId: null, at: new Date() });
    }
    return found;
  };
  const searches = searchesOver(
    watched,
    positionsNoting([]),
    new Set(),
    [],
    new Map(),
    [],
    placed,
    async (courierId) => void freed.push(courierId),
  );
  await searches.start(simulatedStart(deliveryId, 10.9));
  expect(placed).toEqual([deliveryId]);
  expect(freed).toEqual([virtualCourierId(deliveryId)]);
  expect(await store.active()).not.toContain(deliveryId);
});

it('is woken by a courier reported in reach while its step looked for one and found nobody', async () => {
  const models = defineSearchModels(db);
  const store = new SearchStore(() => models);
  const positions = new CourierPositions(redis, { keyPrefix, onlineMs: 120_000 });
  const pickup = { lat: 11.3, lon: 3.4 };
  const first = await courierInReach(positions, 0.05, pickup);
  const deliveryId = randomUUID();
  await store.claimSearch(searchRecord(deliveryId, pickup));
  await store.activate(deliveryId, new Date());
  // Its only courier declined, and it waits for another; at a step of that wait, one reports
  // near the pickup just after the step asked who is in reach.
  const watched = Object.create(positions) as CourierPositions;
  let wake = false;
  let second = '';
  watched.nearest = async (query) => {
    const found = await positions.nearest(query);
    if (wake) {
      wake = false;
      second = await courierInReach(positions, 0.1, pickup);
      searches.courierNear(pickup);
      // The step goes on a moment after the wake, as any step does.
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    return found;
  };
  const searches = searchesOver(store, watched);
  await searches.advance(deliveryId);
  expect((await store.offer(offerIdOf(deliveryId, 1)))?.courierId).toBe(first);
  await store.claimOfferOutcome(offerIdOf(deliveryId, 1), 'DECLINED');
  await searches.advance(deliveryId);
  wake = true;
  await searches.advance(deliveryId);
  expect(second).not.toBe('');
  expect(await store.offer(offerIdOf(deliveryId, 2))).toBeNull();
  // The sweep that follows steps it at once, not after the search's wait.
  await searches.sweep(200);
  expect((await store.offer(offerIdOf(deliveryId, 2)))?.courierId).toBe(second);
});

it('moves a virtual courier while it carries its delivery, and frees it again when the end came during the move', async () => {
  /** Moves reported and frees, in the order they were made. */
  const log: string[] = [];
  const { searches, deliveryId, courierId } = await assignedSearch({
    simulated: true,
    freeVirtual: async (id) => void log.push(`free ${id}`),
  });
  const move = (name: string, meanwhile?: () => Promise<unknown>) =>
    searches.moveVirtualCourier(courierId, async () => {
      await meanwhile?.();
      log.push(name);
    });
  expect(await move('first')).toBe(true);
  expect(log).toEqual(['first']);
  // A tick read the delivery before it was cancelled; its report lands after the end freed
  // the courier: the courier is freed again, after the report.
  expect(await move('late', () => searches.end(deliveryId))).toBe(false);
  expect(log).toEqual(['first', `free ${courierId}`, 'late', `free ${courierId}`]);
  // Over: nothing more is reported.
  expect(await move('after')).toBe(false);
  expect(log).toHaveLength(4);
  // A courier other than the delivery's virtual one is never moved as one.
  const real = await assignedSearch();
  const reported = await real.searches.moveVirtualCourier(real.courierId, async () => {
    log.push('real');
  });
  expect(reported).toBe(false);
  expect(log).toHaveLength(4);
});

it('frees at the sweep a virtual courier its delivery’s end could not free, without failing the end', async () => {
  const models = defineSearchModels(db);
  const store = new SearchStore(() => models);
  const positions = new CourierPositions(redis, { keyPrefix, onlineMs: 120_000 });
  const deliveryId = randomUUID();
  const courierId = virtualCourierId(deliveryId);
  const pickup = { lat: 11.4, lon: 3.4 };
  await positions.report({ id: courierId, fleetTypeId: BIKE }, pickup.lat, pickup.lon, new Date());
  await store.claimSearch({ ...searchRecord(deliveryId, pickup), simulate: 'delivered' });
  // Its Redis delete fails once (Redis away a moment), then works.
  const watched = Object.create(positions) as CourierPositions;
  let failures = 1;
  watched.forget = async (id) => {
    if (failures-- > 0) throw new Error('Redis unreachable');
    return positions.forget(id);
  };
  const searches = searchesOver(store, watched, new Set(), [], new Map(), [], [], (id) =>
    watched.forget(id),
  );

  // The end answers (order settles it, the refund goes on), the courier still in Redis.
  expect(await searches.end(deliveryId)).toEqual({ ended: true });
  expect(await positions.position(courierId)).not.toBeNull();

  await searches.sweep(200);
  expect(await positions.position(courierId)).toBeNull();
  expect(await store.toFree(10)).not.toContain(courierId);
});
