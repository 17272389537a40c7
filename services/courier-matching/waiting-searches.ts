import { backoffMs, type Backoff } from '../../libs/backoff';
import { haversineKm, type GeoPoint } from '../../libs/geodesy';

/**
 * When the sweep steps each running search. A search waiting for a courier was stepped every
 * sweep (1 s) for up to its whole time (15 min): a few hundred of them took most of a core
 * with no courier anywhere (docs/performance.md, session 27). Now each step that finds nobody
 * to offer to doubles the wait before the next, up to a ceiling, and the search is stepped
 * sooner when something can change its answer: its radius grows, its time is up, or a courier
 * is reported, or set free, within its radius (`wakeNear`). A search whose offer is open
 * waits for its courier's answer, which steps it, and is swept only at the offer's expiry or
 * after the ceiling, whichever comes first. In memory, one per matching process: every
 * replica's sweep steps every running search, and one replica's step is enough.
 */

/**
 * The searches a sweep steps: up to `limit` of those due, walking the running ones (oldest
 * first) from `cursor` round to it, so that in a surge every due search is stepped within
 * ceil(due ÷ limit) sweeps. Answers them, and where the next sweep's walk starts.
 */
export function sweepTurn(
  running: readonly string[],
  isDue: (id: string) => boolean,
  cursor: number,
  limit: number,
): { turn: string[]; cursor: number } {
  const count = running.length;
  if (count === 0) return { turn: [], cursor: 0 };
  const start = cursor % count;
  const turn: string[] = [];
  let walked = 0;
  while (walked < count && turn.length < limit) {
    const id = running[(start + walked) % count];
    walked++;
    if (isDue(id)) turn.push(id);
  }
  return { turn, cursor: (start + walked) % count };
}

/** Degrees of latitude and longitude a bucket of waiting pickups spans. */
const BUCKET_DEGREES = 0.25;
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
  const columnSpan = poleward >= 90 ? BUCKETS_AROUND : Math.ceil(km / kmPerColumn) + 1;
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

/** The running searches by what they wait for, as the sweep saw them. */
export interface SearchCounts {
  running: number;
  /** Their last step found nobody to offer to. */
  waiting_for_courier: number;
  /** Their offer is open. */
  awaiting_answer: number;
}

interface Waiting<S extends WaitingSearch> {
  dueAt: number;
  /** Steps in a row that found nobody to offer to; 0 while an offer is open. */
  idleSteps: number;
  /** Filed by its pickup while it waits for a courier; not while its offer is open. */
  filed?: S & { bucket: string };
  /** When a courier was last reported or set free within its reach. */
  wokenAt?: number;
}

/** `S`: what the searches' owner files with each search waiting for a courier. */
export class WaitingSearches<S extends WaitingSearch = WaitingSearch> {
  private readonly waiting = new Map<string, Waiting<S>>();
  private readonly byBucket = new Map<string, Set<string>>();

  /**
   * `waits`: after the n-th step in a row that found nobody, the n-th wait of this backoff
   * (its base the sweep's interval, its ceiling the longest wait).
   */
  constructor(private readonly waits: Backoff) {}

  /** Whether the sweep steps the search now: it is not waiting, or its wait is over. */
  isDue(id: string, now: number): boolean {
    const entry = this.waiting.get(id);
    return !entry || entry.dueAt <= now;
  }

  /**
   * How long a wait of `ms` is kept: half a sweep shorter, since the sweep's timer may fire a
   * little short of its interval and a wait of one interval must not last two. A moment
   * fixed in time (an expiry, a widening) is kept as it is: a step before it finds nothing new.
   */
  private waitOf(ms: number): number {
    return ms - this.waits.baseMs / 2;
  }

  /**
   * The search is being stepped: due until its step says how long it waits, so that a step
   * that fails is repeated at the next sweep. Its count of steps that found nobody stays.
   */
  stepping(id: string, now: number): void {
    const entry = this.waiting.get(id);
    if (entry) entry.dueAt = Math.min(entry.dueAt, now);
  }

  /**
   * The search's step (begun at `now`) found nobody to offer to: it waits longer than after its
   * last such step, but not past `changesAt` (ms since the epoch: its radius grows, or its
   * time is up), and not at all when a courier came within its reach while the step ran.
   */
  foundNobody(search: S, now: number, changesAt?: number): void {
    const known = this.waiting.get(search.id);
    const idleSteps = (known?.idleSteps ?? 0) + 1;
    let dueAt = now + this.waitOf(backoffMs(idleSteps, this.waits));
    if (changesAt !== undefined) dueAt = Math.min(dueAt, Math.max(now, changesAt));
    if (known?.wokenAt !== undefined && known.wokenAt >= now) dueAt = now;
    this.unfile(search.id, known);
    const bucket = bucketOf(search.pickup);
    this.waiting.set(search.id, { dueAt, idleSteps, filed: { ...search, bucket } });
    const inBucket = this.byBucket.get(bucket) ?? new Set<string>();
    inBucket.add(search.id);
    this.byBucket.set(bucket, inBucket);
  }

  /**
   * The search's offer is open until `until` (ms since the epoch): its courier's answer steps
   * it, so the sweep need not before then, or before the ceiling has passed (a step that
   * followed an answer and failed is retried by the sweep).
   */
  awaitAnswer(id: string, now: number, until: number): void {
    this.forget(id);
    this.waiting.set(id, {
      dueAt: Math.min(until, now + this.waitOf(this.waits.maxMs)),
      idleSteps: 0,
    });
  }

  /** The search is stepped every sweep again (its step found work, or it is over). */
  forget(id: string): void {
    const entry = this.waiting.get(id);
    if (!entry) return;
    this.waiting.delete(id);
    this.unfile(id, entry);
  }

  /** The search as filed by its last step, while it waits for a courier. */
  filedSearch(id: string): S | undefined {
    return this.waiting.get(id)?.filed;
  }

  private unfile(id: string, entry: Waiting<S> | undefined): void {
    if (!entry?.filed) return;
    const inBucket = this.byBucket.get(entry.filed.bucket);
    inBucket?.delete(id);
    if (inBucket?.size === 0) this.byBucket.delete(entry.filed.bucket);
  }

  /** Keeps only the searches still running (others ended them, on any replica). */
  retain(running: readonly string[]): void {
    if (this.waiting.size === 0) return;
    const keep = new Set(running);
    for (const id of [...this.waiting.keys()]) if (!keep.has(id)) this.forget(id);
  }

  /**
   * A courier is where `point` is: every search waiting for a courier that reaches it now is
   * due at once (its count of steps that found nobody stays, so a courier it cannot take does
   * not undo its wait for long). Answers how many were woken.
   */
  wakeNear(point: GeoPoint, now: number, reachKm: number): number {
    let woken = 0;
    if (this.byBucket.size === 0) return woken;
    for (const bucket of bucketsWithin(point, reachKm)) {
      for (const id of this.byBucket.get(bucket) ?? []) {
        const entry = this.waiting.get(id);
        if (!entry?.filed) continue;
        const { pickup, radiusKmAt } = entry.filed;
        if (haversineKm(pickup, point) > radiusKmAt(now)) continue;
        // Noted even when due: a step under way that finds nobody keeps it due.
        entry.wokenAt = now;
        if (entry.dueAt > now) {
          entry.dueAt = now;
          woken++;
        }
      }
    }
    return woken;
  }

  /** The running searches by what they wait for. */
  counts(running: readonly string[]): SearchCounts {
    const counts = { running: running.length, waiting_for_courier: 0, awaiting_answer: 0 };
    for (const id of running) {
      const entry = this.waiting.get(id);
      if (entry?.filed) counts.waiting_for_courier++;
      else if (entry) counts.awaiting_answer++;
    }
    return counts;
  }

  /** Whether any search waits for a courier (a freed courier's position is read only then). */
  get anyWaitingForCourier(): boolean {
    return this.byBucket.size > 0;
  }
}
