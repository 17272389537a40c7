/** Where objects are deleted: the bucket (`FileStorage.delete`). */
export interface ObjectDeleter {
  delete(key: string): Promise<void>;
}

/** At most this many keys wait in one replica for a second delete; past it they are logged. */
export const LEFTOVER_LIMIT = 10_000;

/**
 * What an upload stored and nobody will be given a URL for (a bulk upload refused midway, one
 * the gateway stopped waiting for) is deleted as the request ends. S3 often fails as the request
 * did, and a delete it refuses then would leave the object stored for good: the key is kept and
 * deleted again at each sweep until S3 takes it. Kept in this replica's memory, at most `limit`:
 * keys past it, and those still kept when the replica stops, are handed to `onLeft` (logged by
 * key, for an operator to delete).
 */
export class Leftovers {
  private readonly kept = new Set<string>();

  constructor(
    private readonly bucket: ObjectDeleter,
    private readonly onLeft: (keys: string[]) => void,
    private readonly limit = LEFTOVER_LIMIT,
  ) {}

  /** Deletes `keys` (missing ones are fine); never throws. Those not deleted wait for `sweep`. */
  async remove(keys: readonly string[]): Promise<void> {
    const left = [];
    for (const key of await this.undeleted(keys)) {
      if (this.kept.size < this.limit) this.kept.add(key);
      else left.push(key);
    }
    if (left.length > 0) this.onLeft(left);
  }

  /** Deletes the waiting keys again; answers how many are gone at last. */
  async sweep(): Promise<number> {
    const waiting = [...this.kept];
    const undeleted = new Set(await this.undeleted(waiting));
    for (const key of waiting) if (!undeleted.has(key)) this.kept.delete(key);
    return waiting.length - undeleted.size;
  }

  /** The keys still waiting, handed to `onLeft`: the replica is stopping. */
  abandon(): void {
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
