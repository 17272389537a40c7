import type { Logger } from 'moleculer';
import type { CourierPositions, MovedCourier } from './positions';
import type { CourierStore } from './store';

/** Couriers written to MongoDB per batch (one bulk write of as many updates by `_id`). */
const BATCH = 500;

export interface LocationFlusherDeps {
  positions: CourierPositions;
  store: CourierStore;
  intervalMs: number;
  logger: () => Logger;
  /** After each written batch: its busy couriers, whose deliveries may want to know. */
  onBusyMoved?: (moved: MovedCourier[]) => Promise<void>;
}

/**
 * Writes couriers' positions to MongoDB (`courier_locations`) at a lower rate than they report:
 * every COURIER_LOCATION_FLUSH_MS, only the couriers that moved since they were last written.
 * Each replica takes its own couriers from the moved set, so replicas flush side by side
 * without writing one courier twice. A batch whose write fails goes back to the set. The
 * couriers of a batch who hold something are handed on (`onBusyMoved`): a delivery's followers
 * hear of its courier's position at this rate, not at the rate of reports.
 */
export class LocationFlusher {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;

  constructor(private readonly deps: LocationFlusherDeps) {}

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.deps.intervalMs);
    this.timer.unref();
  }

  /** Stops the timer, then writes what moved since the last flush; nothing if never started. */
  async stop(): Promise<void> {
    if (this.timer === undefined) return;
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
    await this.flush();
  }

  /** One flush (joining the one under way): how many couriers were written. */
  flush(): Promise<number> {
    this.running ??= this.flushAll().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /**
   * Once the flush under way, if any, has written what it took: a courier taken out of Redis
   * before this is not written again by this process after it.
   */
  async settled(): Promise<void> {
    await this.running;
  }

  /**
   * A failure here loses nothing stored; that position is not told, and the courier's next
   * move is (positions are stale by the next one anyway).
   */
  private async tellBusy(moved: MovedCourier[]): Promise<void> {
    const busy = moved.filter((m) => m.busy);
    if (busy.length === 0 || !this.deps.onBusyMoved) return;
    try {
      await this.deps.onBusyMoved(busy);
    } catch (err) {
      this.deps.logger().warn('moved couriers not announced', { err });
    }
  }

  private async flushAll(): Promise<number> {
    const { positions, store, logger } = this.deps;
    let written = 0;
    try {
      for (;;) {
        const moved = await positions.takeMoved(BATCH);
        if (moved.length === 0) return written;
        try {
          await store.writeLocations(moved);
        } catch (err) {
          await positions.giveBackMoved(moved.map((m) => m.courierId));
          throw err;
        }
        written += moved.length;
        await this.tellBusy(moved);
        if (moved.length < BATCH) return written;
      }
    } catch (err) {
      logger().warn('courier positions not written to MongoDB; the next flush retries', { err });
      return written;
    }
  }
}
