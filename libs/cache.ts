/**
 * One value kept in memory: loaded on first use, reloaded once older than `maxAgeMs`, and
 * dropped by `invalidate()` when its owner announces a change. A load that began before an
 * invalidation is returned to its caller but not kept, so a change is never hidden by a
 * read that raced it.
 */
export class CachedValue<T> {
  private value: { loadedAt: number; data: T } | undefined;
  private generation = 0;

  constructor(
    private readonly load: () => Promise<T>,
    private readonly maxAgeMs: number,
  ) {}

  async get(): Promise<T> {
    if (this.value && Date.now() - this.value.loadedAt <= this.maxAgeMs) return this.value.data;
    const generation = this.generation;
    const data = await this.load();
    if (generation === this.generation) this.value = { loadedAt: Date.now(), data };
    return data;
  }

  invalidate(): void {
    this.generation += 1;
    this.value = undefined;
  }
}
