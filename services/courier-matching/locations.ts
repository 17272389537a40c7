import type { Logger } from 'moleculer';
import type { CourierView } from '../../libs/contracts/matching';
import { COURIER_NOT_FOUND } from '../../libs/contracts/matching';
import { forbidden, notFound } from '../../libs/errors';
import { LookupCache } from '../../libs/lookup-cache';
import type { CourierPositions, Position } from './positions';
import type { CourierRecord, CourierStore } from './store';
import { toCourierView } from './views';

/** What a location report needs of the directory, cached in the process. */
export interface DirectoryEntry {
  fleetTypeId: string;
  active: boolean;
  /** The courier's `updatedAt` (ms): the version the index compares (positions.ts). */
  version: number;
}

/**
 * How long a replica trusts its copy of a courier's entry. A change made through this service
 * drops it at once everywhere (`courier-matching.courierChanged`), and the index refuses a
 * report checked against an entry older than its own: the bound is for the rest.
 */
export const DIRECTORY_CACHE_MS = 30_000;

/**
 * Profiles kept for other services' views of a courier (order asks for one with every change
 * of a delivery the courier carries): enough for the couriers on deliveries at once.
 */
const PROFILE_CACHE_ENTRIES = 5_000;

export const COURIER_RETIRED =
  'This courier is retired (inactive): its location is not taken. An operator can make it active again';

const toEntry = (record: CourierRecord): DirectoryEntry => ({
  fleetTypeId: record.fleet.typeId,
  active: record.active,
  version: record.updatedAt.getTime(),
});

export interface CourierLocationsDeps {
  store: CourierStore;
  positions: CourierPositions;
  logger: () => Logger;
}

/**
 * Where couriers are: their location reports into the index (positions.ts), checked against
 * the directory; the directory's changes carried into the index; and the admin views' last
 * location, Redis first, MongoDB after.
 */
export class CourierLocations {
  private readonly directory: LookupCache<DirectoryEntry>;
  /** Whole records, for the views other services ask for; dropped with the directory's entry. */
  private readonly profiles: LookupCache<CourierRecord>;

  constructor(private readonly deps: CourierLocationsDeps) {
    this.directory = new LookupCache({
      cacheMs: DIRECTORY_CACHE_MS,
      lookup: async (courierId) => {
        const record = await deps.store.find(courierId);
        return record ? toEntry(record) : null;
      },
      maxEntries: 50_000,
    });
    this.profiles = new LookupCache({
      cacheMs: DIRECTORY_CACHE_MS,
      lookup: (courierId) => deps.store.find(courierId),
      maxEntries: PROFILE_CACHE_ENTRIES,
      // A courier not there yet (the sandbox's virtual one, looked for until it is made) is
      // looked up again each time.
      maxNegativeEntries: 0,
    });
  }

  /**
   * Takes a courier's report: 403 when it is retired (and out of the index, in case the
   * change did not reach it), 404 when it is not in the directory. A report the index refuses
   * as checked against an outdated entry is checked again against a fresh one, once. Answers
   * the offer a busy mark stands for when it is due a check against the courier's hold.
   */
  async report(
    courierId: string,
    lat: number,
    lon: number,
    at: Date,
  ): Promise<{ available: boolean; busyFor?: string; checkUnmarked?: boolean }> {
    for (let attempt = 0; ; attempt++) {
      const entry = await this.directory.get(courierId);
      if (!entry) throw notFound(COURIER_NOT_FOUND);
      if (!entry.active) {
        await this.applyEntry(courierId, entry);
        throw forbidden(COURIER_RETIRED);
      }
      const courier = { id: courierId, fleetTypeId: entry.fleetTypeId, version: entry.version };
      const { outcome, busyFor } = await this.deps.positions.report(courier, lat, lon, at);
      if (outcome !== 'outdated-directory' || attempt > 0) {
        const checkUnmarked = outcome === 'stored-check-unmarked';
        return { available: outcome === 'stored' || checkUnmarked, busyFor, checkUnmarked };
      }
      this.directory.forget(courierId);
    }
  }

  /** Another replica (or this one) changed a courier's entry: read it afresh next time. */
  forget(courierId: string): void {
    this.directory.forget(courierId);
    this.profiles.forget(courierId);
  }

  /**
   * Carries a directory change into the index: the fleet type's sets, retirement. A failure
   * is logged, not answered: the change is made, and the next report carries it.
   */
  async directoryChanged(after: CourierRecord): Promise<void> {
    this.forget(after._id);
    await this.applyEntry(after._id, toEntry(after));
  }

  private async applyEntry(courierId: string, entry: DirectoryEntry): Promise<void> {
    try {
      await this.deps.positions.applyDirectory(courierId, entry);
    } catch (err) {
      this.deps.logger().warn('courier index not updated; the next report updates it', {
        courierId,
        err,
      });
    }
  }

  /**
   * Views whose `lastLocation` is Redis's, or without it the one written to MongoDB, which is
   * read only for couriers Redis has none of (the flusher writes what Redis held).
   */
  async views(records: readonly CourierRecord[]): Promise<CourierView[]> {
    let live = new Map<string, Position>();
    try {
      live = await this.deps.positions.positions(records.map((r) => r._id));
    } catch (err) {
      // Redis unreachable: the positions last written to MongoDB are still worth answering.
      this.deps.logger().warn('courier positions unreachable; views show the stored ones', { err });
    }
    const unknown = records.filter((r) => !live.has(r._id)).map((r) => r._id);
    const stored = unknown.length > 0 ? await this.deps.store.storedLocations(unknown) : undefined;
    return records.map((record) =>
      toCourierView(record, live.get(record._id), stored?.get(record._id)),
    );
  }

  async view(record: CourierRecord): Promise<CourierView> {
    const [view] = await this.views([record]);
    return view;
  }

  /**
   * A courier's view for another service, null when there is none: the profile as cached
   * (a change made through this service drops it everywhere, DIRECTORY_CACHE_MS bounds the
   * rest), the position as `views` finds it.
   */
  async viewById(courierId: string): Promise<CourierView | null> {
    const record = await this.profiles.get(courierId);
    return record ? this.view(record) : null;
  }
}
