import {
  Leftovers,
  SWEEP_CONCURRENCY,
  SWEEP_KEYS,
  type ObjectDeleter,
} from '../../../services/file/leftovers';

/** A bucket whose deletes of `refusing` keys fail; it records every delete it took. */
class Bucket implements ObjectDeleter {
  readonly refusing = new Set<string>();
  readonly deleted: string[] = [];

  async delete(key: string): Promise<void> {
    if (this.refusing.has(key)) throw new Error(`S3 refused to delete ${key}`);
    this.deleted.push(key);
  }
}

describe('Leftovers', () => {
  let bucket: Bucket;
  let left: string[][];
  const leftovers = (limit?: number) => new Leftovers(bucket, (keys) => left.push(keys), limit);

  beforeEach(() => {
    bucket = new Bucket();
    left = [];
  });

  it('deletes every key, keeps those S3 refused, and deletes them again at each sweep until it takes them', async () => {
    const kept = leftovers();
    bucket.refusing.add('b');
    await kept.remove(['a', 'b', 'c']);
    expect(bucket.deleted).toEqual(['a', 'c']);
    expect(kept.waiting).toBe(1);

    expect(await kept.sweep()).toBe(0);
    expect(kept.waiting).toBe(1);

    bucket.refusing.clear();
    expect(await kept.sweep()).toBe(1);
    expect(await kept.sweep()).toBe(0);
    expect(bucket.deleted).toEqual(['a', 'c', 'b']);
    expect(kept.waiting).toBe(0);
    expect(left).toEqual([]);
  });

  it('hands on the keys past its limit at once, and those still waiting when abandoned', async () => {
    const kept = leftovers(2);
    ['a', 'b', 'c'].forEach((key) => bucket.refusing.add(key));
    await kept.remove(['a', 'b', 'c']);
    expect(left).toEqual([['c']]);
    kept.abandon();
    expect(left).toEqual([['c'], ['a', 'b']]);
    expect(kept.waiting).toBe(0);
    kept.abandon();
    expect(left).toHaveLength(2);
  });

  it('sweeps a bounded number of keys, a few at a time, and stops when told to', async () => {
    let inFlight = 0;
    let most = 0;
    let deletes = 0;
    const slow: ObjectDeleter = {
      async delete() {
        deletes += 1;
        inFlight += 1;
        most = Math.max(most, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 1));
        inFlight -= 1;
        if (refusing) throw new Error('S3 is away');
      },
    };
    let refusing = true;
    const kept = new Leftovers(slow, (keys) => left.push(keys));
    await kept.remove(Array.from({ length: SWEEP_KEYS + 50 }, (_, i) => `k${i}`));
    expect(kept.waiting).toBe(SWEEP_KEYS + 50);
    refusing = false;
    deletes = 0;
    most = 0;
    expect(await kept.sweep()).toBe(SWEEP_KEYS);
    expect(deletes).toBe(SWEEP_KEYS);
    expect(most).toBe(SWEEP_CONCURRENCY);
    expect(kept.waiting).toBe(50);
    // Told to stop after the first batch.
    let batches = 0;
    expect(await kept.sweep(() => batches++ > 0)).toBe(SWEEP_CONCURRENCY);
  });

  it('once abandoned, hands on what it cannot delete at once and sweeps no more', async () => {
    const kept = leftovers();
    bucket.refusing.add('a');
    await kept.remove(['a']);
    kept.abandon();
    expect(left).toEqual([['a']]);
    bucket.refusing.add('b');
    await kept.remove(['b']);
    expect(left).toEqual([['a'], ['b']]);
    expect(kept.waiting).toBe(0);
    bucket.refusing.clear();
    expect(await kept.sweep()).toBe(0);
  });

  it('keeps a key given to it while a sweep runs', async () => {
    const kept = leftovers();
    bucket.refusing.add('a');
    await kept.remove(['a']);
    bucket.refusing.clear();
    bucket.refusing.add('b');
    const sweeping = kept.sweep();
    await kept.remove(['b']);
    expect(await sweeping).toBe(1);
    expect(kept.waiting).toBe(1);
  });
});
