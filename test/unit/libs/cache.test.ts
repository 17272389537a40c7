import { CachedValue } from '../../../libs/cache';

describe('CachedValue', () => {
  it('loads once, then serves from memory until invalidated', async () => {
    let loads = 0;
    const cache = new CachedValue(async () => ++loads, 60_000);
    expect(await cache.get()).toBe(1);
    expect(await cache.get()).toBe(1);
    cache.invalidate();
    expect(await cache.get()).toBe(2);
  });

  it('reloads once older than its maximum age', async () => {
    let loads = 0;
    const cache = new CachedValue(async () => ++loads, 0);
    await cache.get();
    await new Promise((r) => setTimeout(r, 5));
    expect(await cache.get()).toBe(2);
  });

  it('does not keep a load that an invalidation overtook', async () => {
    let release: (v: string) => void = () => undefined;
    const values = ['stale', 'fresh'];
    const cache = new CachedValue(
      () =>
        values.length === 2
          ? new Promise<string>((resolve) => {
              values.shift();
              release = resolve;
            })
          : Promise.resolve(values[0]),
      60_000,
    );
    const inFlight = cache.get();
    cache.invalidate(); // a change lands while the first read is under way
    release('stale');
    expect(await inFlight).toBe('stale');
    expect(await cache.get()).toBe('fresh');
  });
});
