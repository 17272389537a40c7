import type Redis from 'ioredis';
// The widest search: MATCHING_RADIUS_KM is refused past it at start.
import { MAX_SEARCH_KM } from '../../libs/config';
import { haversineKm, type GeoPoint } from '../../libs/geodesy';
import { serviceUnavailable } from '../../libs/errors';
import { defineScripts, orUnavailable } from '../../libs/redis';
import { BoundedMap } from '../../libs/lookup-cache';
import { cellsOf, FINE_RINGS, ringSteps, stepsWithin, type RingStep } from './cells';

/**
 * Couriers' hot state in Redis (docs/couriers.md "Where couriers are"): per courier a hash
 * `<prefix>pos:<courierId>` (lat, lon, at in ms, its res-7 and res-9 cells, fleet type,
 * busy, retired, and the directory version it was written under), and per fleet type and
 * cell a sorted set of the available couriers scored by report time,
 * `<prefix>avail:<fleetTypeId>:<res>:<cell>`. Every change is one Lua script, one round trip,
 * atomic: a courier is in the sets of exactly the cells of its hash, unless busy or retired.
 * The scripts build the keys they touch from the prefix, which a single Redis (ours) allows
 * and a Redis Cluster would not.
 */

export interface Position {
  lat: number;
  lon: number;
  at: Date;
}

export interface NearestQuery {
  lat: number;
  lon: number;
  fleetTypeIds: string[];
  maxDistanceKm: number;
  limit: number;
  exclude?: ReadonlySet<string>;
  among?: ReadonlySet<string>;
  /**
   * Nobody is likely in reach (a search waiting for a courier): one script first asks whether
   * any cell the rings would read holds an available courier, and the rings are read one by
   * one only if one does. The answer is the same either way.
   */
  probeFirst?: boolean;
}

export interface NearCourier {
  courierId: string;
  distanceKm: number;
}

/**
 * How long a courier's busy mark stands before a report of theirs has it checked against
 * their hold (`Searches.checkBusy`): a mark whose clearing was lost (Redis away as the
 * courier was let go, the process stopped) would otherwise keep them out of every search.
 */
export const BUSY_CHECK_MS = 60_000;

/**
 * What a report answers for a mark made without naming an offer (by a version before marks
 * named theirs, or the sandbox's virtual courier): cleared, like a named one, only while no
 * offer has named the mark since.
 */
export const UNNAMED_MARK = '-';

/**
 * How long a courier stands unmarked before a report of theirs has their holds read
 * (`Searches.checkUnmarked`); a hash without a check yet (a first report, or Redis restarted
 * empty) has it at once. A mark lost while they held an offer or a trip (Redis restarted, the
 * call marking them failed) would otherwise leave them free for every search, and their
 * delivery without its `courier.location` updates (only busy couriers' moves are told), until
 * a search happened to offer them something. Longer than BUSY_CHECK_MS: each check reads
 * MongoDB, and free couriers are most of those reporting.
 */
export const UNMARKED_CHECK_MS = 5 * 60_000;

/**
 * How much older than the report Redis holds a report may be and still be refused as out of
 * order: longer than any wait between a report's time being taken and its script (a directory
 * read waits at most MONGO_TIMEOUT_MS, 10 s). Older still, the one held was timed by a replica
 * whose clock runs ahead, and refusing would freeze the courier's position (its map, its
 * arrival window, `courier.location`) for as long as that clock is ahead: it is stored.
 */
export const REORDER_WINDOW_MS = 30_000;

/** What became of a report: stored, or refused as older than what Redis holds. */
export type ReportOutcome =
  /** Stored, and the courier is in its cells' sets: free for an offer. */
  | 'stored'
  /** As `stored`, and their holds are due a read (UNMARKED_CHECK_MS). */
  | 'stored-check-unmarked'
  /** Stored, the courier in no set: busy (an offer or a delivery) or retired. */
  | 'stored-unavailable'
  /** The directory changed (fleet, retired) after the entry the report was checked against. */
  | 'outdated-directory'
  /** A later report of this courier was stored first. */
  | 'out-of-order';

/** A courier who moved since positions were last written to MongoDB, where it is now. */
export interface MovedCourier extends Position {
  courierId: string;
  /** Holding an offer or a delivery. */
  busy: boolean;
}

export const positionsUnavailable = () =>
  serviceUnavailable('Courier positions cannot be reached right now; retry in a few seconds');

/**
 * KEYS[1] the courier's hash. ARGV: avail prefix, courier id, fleet type, lat, lon, at (ms),
 * res-7 cell, res-9 cell, directory version ('' when unknown: the hash's is kept), moved set,
 * how long a busy mark stands unchecked (ms), how long no mark does (ms), REORDER_WINDOW_MS.
 * 1 stored (and in its cells' sets), 4 the same and due a check unmarked (noted as done), 3
 * stored in none (busy or retired), 0 the hash was written under a newer directory version, 2
 * it holds a later report, by no more than the window;
 * stored with a busy mark due a check: the offer id it was made for, or UNNAMED_MARK (the check
 * is then noted as done).
 */
const REPORT = `
local old = redis.call('HMGET', KEYS[1], 'fleet', 'c7', 'c9', 'busy', 'v', 'lat', 'lon', 'at', 'retired', 'busyFor', 'busyChecked', 'unmarkedChecked')
local avail, id, fleet, at = ARGV[1], ARGV[2], ARGV[3], ARGV[6]
local retired = old[9] == '1'
if ARGV[9] ~= '' then
  if old[5] and tonumber(old[5]) > tonumber(ARGV[9]) then return 0 end
end
if old[8] and tonumber(old[8]) > tonumber(at) and tonumber(old[8]) - tonumber(at) <= tonumber(ARGV[13]) then return 2 end
if ARGV[9] ~= '' then
  redis.call('HSET', KEYS[1], 'v', ARGV[9])
  redis.call('HDEL', KEYS[1], 'retired')
  retired = false
end
if old[1] and old[2] then
  if old[1] ~= fleet or old[2] ~= ARGV[7] then redis.call('ZREM', avail .. old[1] .. ':7:' .. old[2], id) end
  if old[1] ~= fleet or old[3] ~= ARGV[8] then redis.call('ZREM', avail .. old[1] .. ':9:' .. old[3], id) end
end
redis.call('HSET', KEYS[1], 'lat', ARGV[4], 'lon', ARGV[5], 'at', at, 'c7', ARGV[7], 'c9', ARGV[8], 'fleet', fleet)
local available = old[4] ~= '1' and not retired
if available then
  redis.call('ZADD', avail .. fleet .. ':7:' .. ARGV[7], at, id)
  redis.call('ZADD', avail .. fleet .. ':9:' .. ARGV[8], at, id)
end
if old[6] ~= ARGV[4] or old[7] ~= ARGV[5] then redis.call('SADD', ARGV[10], id) end
if old[4] == '1' and tonumber(at) - tonumber(old[11] or '0') >= tonumber(ARGV[11]) then
  redis.call('HSET', KEYS[1], 'busyChecked', at)
  return old[10] or '${UNNAMED_MARK}'
end
if available then
  if tonumber(at) - tonumber(old[12] or '0') >= tonumber(ARGV[12]) then
    redis.call('HSET', KEYS[1], 'unmarkedChecked', at)
    return 4
  end
  return 1
end
return 3
`;

/**
 * KEYS: the sets to read. ARGV: hash prefix, cutoff (ms). Members reported at or before the
 * cutoff are offline: removed on the way (the lazy half of freshness). Answers id, lat, lon of
 * each courier once, flattened.
 */
const SEARCH = `
local out, seen = {}, {}
for _, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', ARGV[2])
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', key, '(' .. ARGV[2], '+inf')) do
    if not seen[id] then
      seen[id] = true
      local p = redis.call('HMGET', ARGV[1] .. id, 'lat', 'lon', 'busy', 'retired')
      if p[1] and p[3] ~= '1' and p[4] ~= '1' then
        out[#out + 1] = id
        out[#out + 1] = p[1]
        out[#out + 1] = p[2]
      end
    end
  end
end
return out
`;

/** KEYS: available sets. ARGV[1]: the online cutoff. 1 when one holds a courier online, else 0. */
const ANY_ONLINE = `
for _, key in ipairs(KEYS) do
  if redis.call('ZCOUNT', key, '(' .. ARGV[1], '+inf') > 0 then return 1 end
end
return 0
`;

/**
 * KEYS[1] the hash. ARGV: avail prefix, id, '1' busy or '0' free, the offer id the mark is
 * for ('' none), now (ms), and for a mark: the offer the mark must name now to be changed
 * ('' any, UNNAMED_MARK none). A mark for an offer is cleared only by a call for the same offer
 * (or for none): 0 when it is another's, or a mark's condition does not hold.
 */
const BUSY = `
local p = redis.call('HMGET', KEYS[1], 'fleet', 'c7', 'c9', 'at', 'retired', 'busyFor', 'busy')
local avail, id, offer = ARGV[1], ARGV[2], ARGV[4]
if ARGV[3] == '1' then
  if ARGV[6] ~= '' and (p[7] ~= '1' or (p[6] or '${UNNAMED_MARK}') ~= ARGV[6]) then return 0 end
  redis.call('HSET', KEYS[1], 'busy', '1', 'busyChecked', ARGV[5])
  if offer ~= '' then redis.call('HSET', KEYS[1], 'busyFor', offer) else redis.call('HDEL', KEYS[1], 'busyFor') end
  if p[1] and p[2] then
    redis.call('ZREM', avail .. p[1] .. ':7:' .. p[2], id)
    redis.call('ZREM', avail .. p[1] .. ':9:' .. p[3], id)
  end
else
  if offer ~= '' and p[6] and p[6] ~= offer then return 0 end
  redis.call('HDEL', KEYS[1], 'busy', 'busyFor', 'busyChecked')
  if p[1] and p[2] and p[4] and p[5] ~= '1' then
    redis.call('ZADD', avail .. p[1] .. ':7:' .. p[2], p[4], id)
    redis.call('ZADD', avail .. p[1] .. ':9:' .. p[3], p[4], id)
  end
end
return 1
`;

/**
 * KEYS[1] the hash. ARGV: avail prefix, id, fleet type, '1' active or '0' retired, directory
 * version. 0 when the hash was written under a newer version.
 */
const DIRECTORY = `
local p = redis.call('HMGET', KEYS[1], 'fleet', 'c7', 'c9', 'busy', 'v', 'at')
local avail, id, fleet = ARGV[1], ARGV[2], ARGV[3]
if p[5] and tonumber(p[5]) > tonumber(ARGV[5]) then return 0 end
if p[1] and p[2] then
  redis.call('ZREM', avail .. p[1] .. ':7:' .. p[2], id)
  redis.call('ZREM', avail .. p[1] .. ':9:' .. p[3], id)
end
redis.call('HSET', KEYS[1], 'v', ARGV[5], 'fleet', fleet)
if ARGV[4] == '1' then
  redis.call('HDEL', KEYS[1], 'retired')
  if p[2] and p[4] ~= '1' and p[6] then
    redis.call('ZADD', avail .. fleet .. ':7:' .. p[2], p[6], id)
    redis.call('ZADD', avail .. fleet .. ':9:' .. p[3], p[6], id)
  end
else
  redis.call('HSET', KEYS[1], 'retired', '1')
end
return 1
`;

/** KEYS[1] the hash. ARGV: avail prefix, id, moved set. */
const FORGET = `
local p = redis.call('HMGET', KEYS[1], 'fleet', 'c7', 'c9')
if p[1] and p[2] then
  redis.call('ZREM', ARGV[1] .. p[1] .. ':7:' .. p[2], ARGV[2])
  redis.call('ZREM', ARGV[1] .. p[1] .. ':9:' .. p[3], ARGV[2])
end
redis.call('DEL', KEYS[1])
redis.call('SREM', ARGV[3], ARGV[2])
return 1
`;

/** KEYS[1] the moved set. ARGV: how many, hash prefix. Answers id, lat, lon, at, flattened. */
const TAKE_MOVED = `
local out = {}
for _, id in ipairs(redis.call('SPOP', KEYS[1], ARGV[1])) do
  local p = redis.call('HMGET', ARGV[2] .. id, 'lat', 'lon', 'at', 'busy')
  if p[1] then
    out[#out + 1] = id
    out[#out + 1] = p[1]
    out[#out + 1] = p[2]
    out[#out + 1] = p[3]
    out[#out + 1] = p[4] or '0'
  end
end
return out
`;

interface PositionCommands {
  reportPosition(key: string, ...args: string[]): Promise<number | string>;
  searchCells(keyCount: number, ...keysThenArgs: string[]): Promise<string[]>;
  anyOnline(keyCount: number, ...keysThenArgs: string[]): Promise<number>;
  setCourierBusy(key: string, ...args: string[]): Promise<number>;
  applyCourierDirectory(key: string, ...args: string[]): Promise<number>;
  forgetCourier(key: string, ...args: string[]): Promise<number>;
  takeMovedCouriers(key: string, count: string, hashPrefix: string): Promise<string[]>;
}

export interface CourierPositionsOptions {
  /** `<NAMESPACE>:couriers:` */
  keyPrefix: string;
  /** COURIER_ONLINE_MS: a courier whose last report is older is offline. */
  onlineMs: number;
  now?: () => number;
}

const REPORT_OUTCOMES: Record<number, ReportOutcome> = {
  1: 'stored',
  4: 'stored-check-unmarked',
  3: 'stored-unavailable',
  0: 'outdated-directory',
  2: 'out-of-order',
};

function checkQuery(q: NearestQuery): void {
  if (!Number.isFinite(q.lat) || Math.abs(q.lat) > 90) throw new RangeError('lat out of range');
  if (!Number.isFinite(q.lon) || Math.abs(q.lon) > 180) throw new RangeError('lon out of range');
  if (!(q.maxDistanceKm > 0 && q.maxDistanceKm <= MAX_SEARCH_KM)) {
    throw new RangeError(`maxDistanceKm must be more than 0 and at most ${MAX_SEARCH_KM}`);
  }
  if (!Number.isSafeInteger(q.limit) || q.limit < 1) {
    throw new RangeError('limit must be a positive integer');
  }
}

const byDistance = (a: NearCourier, b: NearCourier) =>
  a.distanceKm - b.distanceKm || (a.courierId < b.courierId ? -1 : 1);

/**
 * Points whose ring bounds are kept: the sweep comes back to each waiting search within
 * seconds, so this keeps every waiting search's point but in a surge, in a few MB.
 */
const RING_BOUNDS_KEPT = 10_000;

/** The couriers' positions and availability, indexed by H3 cell (class comment above). */
export class CourierPositions {
  private readonly redis: Redis & PositionCommands;
  private readonly avail: string;
  private readonly moved: string;
  private readonly now: () => number;
  /** Ring bounds by point (`ringSteps`): some 20 numbers a point, for the searches waiting. */
  private readonly ringBounds = new BoundedMap<number[]>(RING_BOUNDS_KEPT);

  constructor(
    redis: Redis,
    private readonly options: CourierPositionsOptions,
  ) {
    this.redis = defineScripts<PositionCommands>(redis, {
      reportPosition: REPORT,
      searchCells: { lua: SEARCH, keys: 'variable' },
      anyOnline: { lua: ANY_ONLINE, keys: 'variable' },
      setCourierBusy: BUSY,
      applyCourierDirectory: DIRECTORY,
      forgetCourier: FORGET,
      takeMovedCouriers: TAKE_MOVED,
    });
    this.avail = `${options.keyPrefix}avail:`;
    this.moved = `${options.keyPrefix}moved`;
    this.now = options.now ?? Date.now;
  }

  private hashKey(courierId: string): string {
    return `${this.options.keyPrefix}pos:${courierId}`;
  }

  private get hashPrefix(): string {
    return `${this.options.keyPrefix}pos:`;
  }

  /**
   * Stores a report: the courier's hash, and its cells' sets unless it is busy or retired,
   * leaving the sets of the cells (or fleet type) it left. `version` is the directory entry's
   * (its `updatedAt` in ms) the report was checked against: a hash written under a newer one
   * refuses it (`outdated-directory`), so that a replica that has not heard of a retirement
   * yet cannot put the courier back.
   */
  report(
    courier: { id: string; fleetTypeId: string; version?: number },
    lat: number,
    lon: number,
    at: Date,
  ): Promise<{ outcome: ReportOutcome; busyFor?: string }> {
    const { c7, c9 } = cellsOf({ lat, lon });
    return orUnavailable(async () => {
      const answer = await this.redis.reportPosition(
        this.hashKey(courier.id),
        this.avail,
        courier.id,
        courier.fleetTypeId,
        String(lat),
        String(lon),
        String(at.getTime()),
        c7,
        c9,
        courier.version === undefined ? '' : String(courier.version),
        this.moved,
        String(BUSY_CHECK_MS),
        String(UNMARKED_CHECK_MS),
        String(REORDER_WINDOW_MS),
      );
      return typeof answer === 'string'
        ? { outcome: 'stored-unavailable', busyFor: answer }
        : { outcome: REPORT_OUTCOMES[answer] };
    }, positionsUnavailable);
  }

  /** The last report, online or not; null when there is none. */
  async position(courierId: string): Promise<Position | null> {
    return (await this.positions([courierId])).get(courierId) ?? null;
  }

  /** The last reports of these couriers, those that have one. */
  positions(courierIds: readonly string[]): Promise<Map<string, Position>> {
    return orUnavailable(async () => {
      const found = new Map<string, Position>();
      if (courierIds.length === 0) return found;
      const pipeline = this.redis.pipeline();
      for (const id of courierIds) pipeline.hmget(this.hashKey(id), 'lat', 'lon', 'at');
      const answers = (await pipeline.exec()) ?? [];
      answers.forEach(([err, value], i) => {
        if (err) throw err;
        const [lat, lon, at] = value as (string | null)[];
        if (lat !== null && lon !== null && at !== null) {
          found.set(courierIds[i], {
            lat: Number(lat),
            lon: Number(lon),
            at: new Date(Number(at)),
          });
        }
      });
      return found;
    }, positionsUnavailable);
  }

  /**
   * Available (online, not busy) couriers of these fleet types within maxDistanceKm of the
   * point, nearest first, by exact haversine distance. Reads H3 rings outward from the point
   * (res 9, then res 7), one script per ring, and stops once `limit` are found no farther
   * than anything unread can be, or nothing unread can be within maxDistanceKm (cells.ts).
   * With `among`, reads those couriers' hashes instead: a short list needs no rings.
   */
  nearest(q: NearestQuery): Promise<NearCourier[]> {
    checkQuery(q);
    if (q.fleetTypeIds.length === 0) return Promise.resolve([]);
    return orUnavailable(
      () => (q.among ? this.nearestAmong(q, q.among) : this.nearestByRings(q)),
      positionsUnavailable,
    );
  }

  /** The ring bounds of a point searched around lately (`ringSteps`), kept as they are made. */
  private ringBoundsAround(point: GeoPoint): number[] {
    const key = `${point.lat},${point.lon}`;
    let known = this.ringBounds.get(key);
    if (!known) {
      known = [];
      this.ringBounds.set(key, known);
    }
    return known;
  }

  private cutoff(): number {
    return this.now() - this.options.onlineMs;
  }

  private async nearestByRings(q: NearestQuery): Promise<NearCourier[]> {
    const point: GeoPoint = { lat: q.lat, lon: q.lon };
    const found: NearCourier[] = [];
    const seen = new Set<string>();
    const cutoff = String(this.cutoff());
    const keysOf = (step: RingStep) =>
      step.cells.flatMap((cell) =>
        q.fleetTypeIds.map((fleet) => `${this.avail}${fleet}:${step.res}:${cell}`),
      );
    let steps: Iterable<RingStep> = ringSteps(point, FINE_RINGS, this.ringBoundsAround(point));
    if (q.probeFirst) {
      const within = stepsWithin(steps, q.maxDistanceKm);
      const keys = within.flatMap(keysOf);
      if ((await this.redis.anyOnline(keys.length, ...keys, cutoff)) === 0) return [];
      steps = within;
    }
    for (const step of steps) {
      const keys = keysOf(step);
      const flat = await this.redis.searchCells(keys.length, ...keys, this.hashPrefix, cutoff);
      for (let i = 0; i < flat.length; i += 3) {
        const courierId = flat[i];
        if (seen.has(courierId)) continue;
        seen.add(courierId);
        if (q.exclude?.has(courierId)) continue;
        const distanceKm = haversineKm(point, {
          lat: Number(flat[i + 1]),
          lon: Number(flat[i + 2]),
        });
        if (distanceKm <= q.maxDistanceKm) found.push({ courierId, distanceKm });
      }
      found.sort(byDistance);
      const enough =
        found.length >= q.limit && found[q.limit - 1].distanceKm <= step.unreadBeyondKm;
      if (enough || step.unreadBeyondKm > q.maxDistanceKm) break;
    }
    return found.slice(0, q.limit);
  }

  private async nearestAmong(q: NearestQuery, among: ReadonlySet<string>): Promise<NearCourier[]> {
    const ids = [...among].filter((id) => !q.exclude?.has(id));
    if (ids.length === 0) return [];
    const point: GeoPoint = { lat: q.lat, lon: q.lon };
    const fleets = new Set(q.fleetTypeIds);
    const cutoff = this.cutoff();
    const pipeline = this.redis.pipeline();
    for (const id of ids) {
      pipeline.hmget(this.hashKey(id), 'lat', 'lon', 'at', 'fleet', 'busy', 'retired');
    }
    const answers = (await pipeline.exec()) ?? [];
    const found: NearCourier[] = [];
    answers.forEach(([err, value], i) => {
      if (err) throw err;
      const [lat, lon, at, fleet, busy, retired] = value as (string | null)[];
      if (lat === null || lon === null || at === null || fleet === null) return;
      if (Number(at) <= cutoff || !fleets.has(fleet) || busy === '1' || retired === '1') return;
      const distanceKm = haversineKm(point, { lat: Number(lat), lon: Number(lon) });
      if (distanceKm <= q.maxDistanceKm) found.push({ courierId: ids[i], distanceKm });
    });
    return found.sort(byDistance).slice(0, q.limit);
  }

  /**
   * Busy couriers (holding an offer or a delivery) leave the available sets until set free
   * again. A mark made for an offer is cleared only for that offer: a late call letting the
   * courier go from an earlier one leaves them busy with the next. False when it was not.
   */
  async setBusy(
    courierId: string,
    busy: boolean,
    offerId?: string,
    /** For a mark: made only while the courier is marked for this offer (or UNNAMED_MARK). */
    ifMarkedFor?: string,
  ): Promise<boolean> {
    const done = await orUnavailable(
      () =>
        this.redis.setCourierBusy(
          this.hashKey(courierId),
          this.avail,
          courierId,
          busy ? '1' : '0',
          offerId ?? '',
          String(this.now()),
          ifMarkedFor ?? '',
        ),
      positionsUnavailable,
    );
    return done === 1;
  }

  /**
   * The directory changed (PATCH /admin/couriers): the courier leaves its old fleet type's
   * sets, and the new fleet type's take it unless it is retired, busy or has no position.
   * `version` is the courier's new `updatedAt` in ms; reports checked against an older entry
   * are refused from now on.
   */
  async applyDirectory(
    courierId: string,
    entry: { fleetTypeId: string; active: boolean; version: number },
  ): Promise<void> {
    await orUnavailable(
      () =>
        this.redis.applyCourierDirectory(
          this.hashKey(courierId),
          this.avail,
          courierId,
          entry.fleetTypeId,
          entry.active ? '1' : '0',
          String(entry.version),
        ),
      positionsUnavailable,
    );
  }

  /** Removes the courier from the index altogether: its hash, its sets, its pending write. */
  async forget(courierId: string): Promise<void> {
    await orUnavailable(
      () => this.redis.forgetCourier(this.hashKey(courierId), this.avail, courierId, this.moved),
      positionsUnavailable,
    );
  }

  /**
   * Takes up to `count` couriers that moved since they were last taken, with their position:
   * each is taken by one caller only (SPOP), whichever replica asks.
   */
  takeMoved(count: number): Promise<MovedCourier[]> {
    return orUnavailable(async () => {
      const flat = await this.redis.takeMovedCouriers(this.moved, String(count), this.hashPrefix);
      const moved: MovedCourier[] = [];
      for (let i = 0; i < flat.length; i += 5) {
        moved.push({
          courierId: flat[i],
          lat: Number(flat[i + 1]),
          lon: Number(flat[i + 2]),
          at: new Date(Number(flat[i + 3])),
          busy: flat[i + 4] === '1',
        });
      }
      return moved;
    }, positionsUnavailable);
  }

  /** Puts couriers back among the moved ones (their write failed). */
  async giveBackMoved(courierIds: readonly string[]): Promise<void> {
    if (courierIds.length === 0) return;
    await orUnavailable(() => this.redis.sadd(this.moved, ...courierIds), positionsUnavailable);
  }
}
