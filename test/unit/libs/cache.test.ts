import { CachedValue, ReloadedValue, RETRY_AFTER_FAILURE_MS } from '../../../libs/cache';

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

  it('answers `within` from a load that recent, else one load for all who ask at once, kept for the rest', async () => {
    let loads = 0;
    const cache = new CachedValue(async () => ++loads, 60_000);
    expect(await cache.get()).toBe(1);
    expect(await cache.within(60_000)).toBe(1);
    await new Promise((r) => setTimeout(r, 5));
    expect(await Promise.all([cache.within(1), cache.within(1), cache.within(1)])).toEqual([
      2, 2, 2,
    ]);
    expect(loads).toBe(2);
    expect(await cache.get()).toBe(2);
  });

  it('counts a value’s age from when its load started: a change made while it ran may not be in it', async () => {
    let loads = 0;
    const cache = new CachedValue(async () => {
      loads += 1;
      await new Promise((r) => setTimeout(r, 30));
      return loads;
    }, 60_000);
    expect(await cache.get()).toBe(1);
    // Finished a moment ago, started 30 ms ago: older than 20 ms.
    expect(await cache.within(20)).toBe(2);
  });

  it('answers `since` from a load begun then or after, joining one under way only if it began since', async () => {
    let loads = 0;
    let release = () => {};
    const cache = new CachedValue(async () => {
      loads += 1;
      const n = loads;
      if (n === 2) await new Promise<void>((r) => (release = r));
      return n;
    }, 60_000);
    const before = Date.now();
    await new Promise((r) => setTimeout(r, 2));
    expect(await cache.get()).toBe(1);
    // Loaded since `before`: no load.
    expect(await cache.since(before)).toBe(1);
    await new Promise((r) => setTimeout(r, 5));
    // Told after it was loaded: one load for all told at once.
    const told = Date.now();
    const asking = [cache.since(told), cache.since(told)];
    await new Promise((r) => setTimeout(r, 5));
    // Told after that load began: it is not joined, another is.
    const later = cache.since(Date.now());
    expect(await later).toBe(3);
    release();
    expect(await Promise.all(asking)).toEqual([2, 2]);
    expect(loads).toBe(3);
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

/** A load whose answer the test gives when it chooses. */
function pendingLoads<T>() {
  const waiting: { resolve: (value: T) => void; reject: (err: Error) => void }[] = [];
  const load = () => new Promise<T>((resolve, reject) => waiting.push({ resolve, reject }));
  return {
    load,
    answer: (i: number, value: T) => waiting[i].resolve(value),
    fail: (i: number, err: Error) => waiting[i].reject(err),
  };
}

describe('CachedValue, loads finishing out of order', () => {
  it('shares one load between the callers that find the value missing at once', async () => {
    const loads = pendingLoads<string>();
    let started = 0;
    const cache = new CachedValue(() => {
      started += 1;
      return loads.load();
    }, 60_000);
    const callers = Array.from({ length: 50 }, () => cache.get());
    loads.answer(0, 'read once');
    expect(await Promise.all(callers)).toEqual(Array(50).fill('read once'));
    expect(started).toBe(1);
    // A first load that fails fails every caller it was shared with; the next caller tries again.
    const failing = new CachedValue(async () => {
      started += 1;
      if (started === 2) throw new Error('geo away');
      return 'back';
    }, 60_000);
    const both = await Promise.allSettled([failing.get(), failing.get()]);
    expect(both.map((b) => b.status)).toEqual(['rejected', 'rejected']);
    expect(await failing.get()).toBe('back');
    expect(started).toBe(3);
  });

  it('answers the last value kept while reloads fail, after expiry or an invalidation', async () => {
    let answer: () => Promise<string> = async () => 'types v1';
    const stale: unknown[] = [];
    const cache = new CachedValue(
      () => answer(),
      0,
      (err) => stale.push(err),
    );
    expect(await cache.get()).toBe('types v1');
    answer = async () => {
      throw new Error('geo restarting');
    };
    await new Promise((r) => setTimeout(r, 5));
    expect(await cache.get()).toBe('types v1'); // expired, reload failed
    cache.invalidate();
    expect(await cache.get()).toBe('types v1'); // a change announced, its reread failed
    expect(stale).toHaveLength(2);
    // A caller that must not get a value from before a change gets the failure instead.
    await expect(cache.fresh()).rejects.toThrow('geo restarting');
    // Back: the next caller reads again, and the new value is kept.
    answer = async () => 'types v2';
    expect(await cache.get()).toBe('types v2');
    answer = async () => 'types v3';
    expect(await cache.fresh()).toBe('types v3');
    expect(await cache.get()).toBe('types v3');
  });

  it('answers the last value without loading for a while after a load failed; an invalidation tries at once', async () => {
    jest.useFakeTimers({ now: 1_000_000, doNotFake: ['nextTick', 'setImmediate'] });
    try {
      let loads = 0;
      let failing = false;
      const cache = new CachedValue(async () => {
        loads += 1;
        if (failing) throw new Error('geo hangs');
        return `types v${loads}`;
      }, 60_000);
      expect(await cache.get()).toBe('types v1');
      failing = true;
      jest.setSystemTime(1_000_000 + 60_001);
      expect(await cache.get()).toBe('types v1'); // expired; the reload failed
      expect(loads).toBe(2);
      for (let i = 0; i < 20; i++) expect(await cache.get()).toBe('types v1');
      expect(loads).toBe(2); // none while it waits
      jest.setSystemTime(1_000_000 + 60_001 + RETRY_AFTER_FAILURE_MS);
      failing = false;
      expect(await cache.get()).toBe('types v3');
      expect(loads).toBe(3);
      failing = true;
      jest.setSystemTime(1_000_000 + 200_000);
      expect(await cache.get()).toBe('types v3');
      expect(loads).toBe(4);
      cache.invalidate(); // a change announced: worth a load at once
      failing = false;
      expect(await cache.get()).toBe('types v5');
      expect(loads).toBe(5);
    } finally {
      jest.useRealTimers();
    }
  });

  it('loads at once after an invalidation, though a load it overtook fails after it', async () => {
    const loads = pendingLoads<string>();
    const cache = new CachedValue(loads.load, 50);
    const first = cache.get();
    loads.answer(0, 'types v1');
    expect(await first).toBe('types v1');
    await new Promise((r) => setTimeout(r, 60));
    const overtaken = cache.get(); // expired: load 1 starts
    cache.invalidate(); // a change announced while it runs
    loads.fail(1, new Error('geo restarting'));
    expect(await overtaken).toBe('types v1');
    const after = cache.get(); // no wait: load 2 starts at once
    loads.answer(2, 'types v2');
    expect(await after).toBe('types v2');
  });

  it('keeps the newest-started load, not the last to finish', async () => {
    const loads = pendingLoads<string>();
    const cache = new CachedValue(loads.load, 60_000);
    const older = cache.get();
    cache.invalidate(); // a change: the next caller needs a read started after it
    const newer = cache.get();
    loads.answer(1, 'newer');
    await newer;
    loads.answer(0, 'older');
    expect(await older).toBe('older'); // its caller still gets what it read
    expect(await cache.get()).toBe('newer');
  });
});

describe('ReloadedValue', () => {
  it('serves the initial value until a reload is kept', async () => {
    const value = new ReloadedValue(async () => 'loaded', 'initial');
    expect(value.current).toBe('initial');
    expect(await value.reload()).toBe('loaded');
    expect(value.current).toBe('loaded');
  });

  it('an older, slower reload never replaces a newer one', async () => {
    const loads = pendingLoads<string>();
    const value = new ReloadedValue(loads.load, 'initial');
    const timer = value.reload(); // started first, reads the value before a change
    const announced = value.reload(); // started after the change
    loads.answer(1, 'after the change');
    expect(await announced).toBe('after the change');
    loads.answer(0, 'before the change');
    expect(await timer).toBe('after the change');
    expect(value.current).toBe('after the change');
  });

  it('keeps an older reload that finishes while no newer one has', async () => {
    const loads = pendingLoads<string>();
    const value = new ReloadedValue(loads.load, 'initial');
    const first = value.reload();
    const second = value.reload();
    loads.answer(0, 'first');
    expect(await first).toBe('first');
    loads.answer(1, 'second');
    expect(await second).toBe('second');
    expect(value.current).toBe('second');
  });

  it('keeps what it had when a reload fails', async () => {
    let fail = false;
    const value = new ReloadedValue(async () => {
      if (fail) throw new Error('database away');
      return 'loaded';
    }, 'initial');
    await value.reload();
    fail = true;
    await expect(value.reload()).rejects.toThrow('database away');
    expect(value.current).toBe('loaded');
  });
});
