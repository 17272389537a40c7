/** Where objects are deleted: the bucket (`FileStorage.delete`). */
export interface ObjectDeleter {
  delete(key: string): Promise<void>;
}

/** At most this many keys wait in one replica for a second delete; past it they are logged. */
export const LEFTOVER_LIMIT = 10_000;
/** Deletes a sweep sends at once (a purge's number), beside the uploads that share the client. */
export const SWEEP_CONCURRENCY = 8;
/** Keys a sweep tries at most: with S3 away each costs its timeouts, and the sweep must end. */
export const SWEEP_KEYS = 200;

/**
 * What an upload stored and nobody will be given a URL for (a bulk upload refused midway, one
 * the gateway stopped waiting for) is deleted as the request ends. S3 often fails as the request
 * did, and a delete it refuses then would leave the object stored for good: the key is kept and
 * deleted again at each sweep until S3 takes it. Kept in this replica's memory, at most `limit`:
 * keys past it, those still kept when the replica stops (`abandon`), and those whose delete
 * fails after it, are handed to `onLeft` (logged by key, for an operator to delete).
 */
export class Leftovers {
  private readonly kept = new Set<string>();
  private abandoned = false;

  constructor(
    private readonly bucket: ObjectDeleter,
    private readonly onLeft: (keys: string[]) => void,
    private readonly limit = LEFTOVER_LIMIT,
  ) {}

  /** Deletes `keys` (missing ones are fine); never throws. Those not deleted wait for `sweep`. */
  async remove(keys: readonly string[]): Promise<void> {
    const left = [];
    for (const key of await this.undeleted(keys)) {
      if (!this.abandoned && this.kept.size < this.limit) this.kept.add(key);
      else left.push(key);
    }
    if (left.length > 0) this.onLeft(left);
  }

  /**
   * Deletes waiting keys again, the oldest first, `SWEEP_KEYS` at most and `SWEEP_CONCURRENCY`
   * at a time, until `stopping` says to stop; answers how many are gone at last.
   */
  async sweep(stopping: () => boolean = () => false): Promise<number> {
    const waiting = [...this.kept].slice(0, SWEEP_KEYS);
    let deleted = 0;
    for (let i = 0; i < waiting.length && !this.abandoned && !stopping(); i += SWEEP_CONCURRENCY) {
      const batch = waiting.slice(i, i + SWEEP_CONCURRENCY);
      const undeleted = new Set(await this.undeleted(batch));
      for (const key of batch) {
        if (undeleted.has(key)) continue;
        this.kept.delete(key);
        deleted += 1;
      }
    }
    return deleted;
  }

  /**
   * The replica is stopping: the keys still waiting go to `onLeft`, and so will any that a
   * later `remove` (an upload cut by the stop) cannot delete; sweeps stop.
   */
  abandon(): void {
    this.abandoned = true;
    if (this.kept.size > 0) this.onLeft([...this.kept]);
    this.kept.clear();
  }

  get waiting(): number {
    return this.kept.size;
  }

  private async undeleted(keys: readonly string[]): Promise<string[]> {
    const results = await Promise.allSettled(keys.map((key) => this.bucket.delete(key)));
    return keys.filter((_, i) => results[i].status === 'rejected');
  }
}
