import { Leftovers, type ObjectDeleter } from '../../../services/file/leftovers';

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
