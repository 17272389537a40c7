import { haversineKm, type GeoPoint } from '../../libs/geodesy';

/**
 * The searches that found nobody in reach, and when the sweep steps each again. A search
 * waiting for a courier was stepped every sweep (1 s) for up to its whole time (15 min): a
 * few hundred of them took most of a core with no courier anywhere (docs/performance.md,
 * session 27). Each step that finds nobody doubles the wait before the next, up to a ceiling;
 * the search is stepped sooner when something can change its answer: its radius grows, its
 * time is up, or a courier is reported, or set free, within its radius (`wakeNear`).
 * In memory, one per matching process: every replica's sweep steps every running search, and
 * one replica's step is enough.
 */

/** How long a search that found nobody waits before its next step: doubling, up to `maxMs`. */
export function idleDelayMs(idleSteps: number, firstMs: number, maxMs: number): number {
  if (idleSteps <= 0) return 0;
  // 2^30 ms is some 12 days: far above any ceiling, and no overflow of the shift.
  const doubled = firstMs * 2 ** Math.min(idleSteps - 1, 30);
  return Math.max(firstMs, Math.min(maxMs, doubled));
}

/** Degrees of latitude and longitude a bucket of waiting pickups spans. */
export const BUCKET_DEGREES = 0.25;
/** Kilometres in a degree of latitude (and of longitude at the equator), on the mean sphere. */
const KM_PER_DEGREE = 111.19;
/** The most buckets a wake reads along a parallel: beyond it (near the poles), every one. */
const BUCKETS_AROUND = Math.round(360 / BUCKET_DEGREES);

const bucketRow = (lat: number) => Math.floor(lat / BUCKET_DEGREES);
const bucketColumn = (lon: number) =>
  ((Math.floor(lon / BUCKET_DEGREES) % BUCKETS_AROUND) + BUCKETS_AROUND) % BUCKETS_AROUND;
const bucketKey = (row: number, column: number) => `${row}:${column}`;

/** The bucket a point falls in. */
export const bucketOf = (point: GeoPoint): string =>
  bucketKey(bucketRow(point.lat), bucketColumn(point.lon));

/**
 * Every bucket holding a point within `km` of `point`, and perhaps some more: the rows `km`
 * spans north and south, and in each the columns it spans along the most poleward parallel of
 * those rows (where a degree of longitude is shortest), one more each way for the slack.
 */
export function bucketsWithin(point: GeoPoint, km: number): string[] {
  const rowSpan = Math.ceil(km / (KM_PER_DEGREE * BUCKET_DEGREES)) + 1;
  const centreRow = bucketRow(point.lat);
  const centreColumn = bucketColumn(point.lon);
  const south = (centreRow - rowSpan) * BUCKET_DEGREES;
  const north = (centreRow + rowSpan + 1) * BUCKET_DEGREES;
  const poleward = Math.min(90, Math.max(Math.abs(south), Math.abs(north)));
  const kmPerColumn = KM_PER_DEGREE * BUCKET_DEGREES * Math.cos((poleward * Math.PI) / 180);
  const columnSpan = kmPerColumn > 0 ? Math.ceil(km / kmPerColumn) + 1 : BUCKETS_AROUND;
  const columns: number[] = [];
  if (2 * columnSpan + 1 >= BUCKETS_AROUND) {
    for (let column = 0; column < BUCKETS_AROUND; column++) columns.push(column);
  } else {
    for (let d = -columnSpan; d <= columnSpan; d++) {
      columns.push((((centreColumn + d) % BUCKETS_AROUND) + BUCKETS_AROUND) % BUCKETS_AROUND);
    }
  }
  const keys: string[] = [];
  for (let row = centreRow - rowSpan; row <= centreRow + rowSpan; row++) {
    for (const column of columns) keys.push(bucketKey(row, column));
  }
  return keys;
}

/** A search as its wait reads it: where it picks up, and how far it reaches now. */
export interface WaitingSearch {
  id: string;
  pickup: GeoPoint;
  /** Its radius at a moment (ms since the epoch), km. */
  radiusKmAt: (now: number) => number;
}

interface Waiting extends WaitingSearch {
  bucket: string;
  idleSteps: number;
  dueAt: number;
}

export interface WaitSettings {
  /** The first wait, the sweep's own interval. */
  firstMs: number;
  /** The longest wait between two steps of a search that finds nobody. */
  maxMs: number;
}

export class WaitingSearches {
  private readonly waiting = new Map<string, Waiting>();
  private readonly byBucket = new Map<string, Set<string>>();

  constructor(private readonly settings: WaitSettings) {}

  /** Whether the sweep steps the search now: it is not waiting, or its wait is over. */
  isDue(id: string, now: number): boolean {
    const entry = this.waiting.get(id);
    return !entry || entry.dueAt <= now;
  }

  /**
   * The search's step found nobody in reach: it waits longer than after its last such step,
   * but not past `changesAt` (ms since the epoch: its radius grows, or its time is up).
   */
  foundNobody(search: WaitingSearch, now: number, changesAt?: number): void {
    const known = this.waiting.get(search.id);
    const idleSteps = (known?.idleSteps ?? 0) + 1;
    let dueAt = now + idleDelayMs(idleSteps, this.settings.firstMs, this.settings.maxMs);
    if (changesAt !== undefined) dueAt = Math.min(dueAt, Math.max(now, changesAt));
    if (known) {
      known.idleSteps = idleSteps;
      known.dueAt = dueAt;
      return;
    }
    const bucket = bucketOf(search.pickup);
    this.waiting.set(search.id, { ...search, bucket, idleSteps, dueAt });
    const inBucket = this.byBucket.get(bucket) ?? new Set<string>();
    inBucket.add(search.id);
    this.byBucket.set(bucket, inBucket);
  }

  /** The search is no longer waiting for anybody (it made an offer, or it is over). */
  forget(id: string): void {
    const entry = this.waiting.get(id);
    if (!entry) return;
    this.waiting.delete(id);
    const inBucket = this.byBucket.get(entry.bucket);
    inBucket?.delete(id);
    if (inBucket?.size === 0) this.byBucket.delete(entry.bucket);
  }

  /** Keeps only the searches still running (others ended them, on any replica). */
  retain(running: readonly string[]): void {
    if (this.waiting.size === 0) return;
    const keep = new Set(running);
    for (const id of [...this.waiting.keys()]) if (!keep.has(id)) this.forget(id);
  }

  /**
   * A courier is where `point` is: every waiting search that reaches it now is due at once
   * (its count of steps that found nobody stays, so a courier it cannot take does not undo
   * its wait for long). Answers how many were woken.
   */
  wakeNear(point: GeoPoint, now: number, reachKm: number): number {
    let woken = 0;
    if (this.waiting.size === 0) return woken;
    for (const bucket of bucketsWithin(point, reachKm)) {
      for (const id of this.byBucket.get(bucket) ?? []) {
        const entry = this.waiting.get(id) as Waiting;
        if (entry.dueAt <= now) continue;
        if (haversineKm(entry.pickup, point) <= entry.radiusKmAt(now)) {
          entry.dueAt = now;
          woken++;
        }
      }
    }
    return woken;
  }

  /** How many searches wait (for metrics and tests). */
  get size(): number {
    return this.waiting.size;
  }
}
