import { allowedTypos, scanWithinTypos } from './fuzzy';
import { PackedStrings } from './packed-strings';
import { foldName } from '../../../libs/text';

export interface FuzzyHit {
  item: number;
  typos: number;
}

/** Keys in code-unit order with the item each one names: prefix lookups are binary searches. */
class SortedKeys {
  readonly keys: PackedStrings;
  readonly items: Int32Array;

  constructor(keys: readonly string[], items: readonly number[]) {
    const order = Uint32Array.from(keys, (_, i) => i);
    order.sort((a, b) => {
      const ka = keys[a];
      const kb = keys[b];
      return ka < kb ? -1 : ka > kb ? 1 : items[a] - items[b];
    });
    this.keys = new PackedStrings(Array.from(order, (i) => keys[i]));
    this.items = Int32Array.from(order, (i) => items[i]);
  }

  /** First position whose key is >= `key`. */
  lowerBound(key: string): number {
    let lo = 0;
    let hi = this.keys.size;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.keys.compare(mid, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** [start, end) of the keys that begin with `prefix`. */
  prefixRange(prefix: string): [number, number] {
    return [this.lowerBound(prefix), this.lowerBound(`${prefix}\uffff`)];
  }
}

/**
 * Up to `limit` distinct items, smallest first (items are numbered in importance order, so
 * smallest = most important), kept in a small sorted array: a prefix range can hold
 * thousands of entries, and sorting them all would cost more than one pass.
 */
class Best {
  readonly items: number[] = [];
  constructor(private readonly limit: number) {}

  offer(item: number): void {
    const items = this.items;
    if (items.length >= this.limit && item >= items[items.length - 1]) return;
    if (items.includes(item)) return;
    let at = items.length;
    while (at > 0 && items[at - 1] > item) at--;
    items.splice(at, 0, item);
    if (items.length > this.limit) items.pop();
  }
}

/**
 * Name search over one kind of place. Items are numbered most important first; a query
 * ranks exact names (aliases included) first, then names starting with the query, then names
 * with a later word starting with it ("harcourt" → Port Harcourt), then names within one or
 * two typos — and by importance within each of those groups.
 */
export class NameIndex {
  /** Whole names and aliases. */
  private readonly names: SortedKeys;
  /** Each later word of a name to its end: "port harcourt" adds "harcourt". */
  private readonly words: SortedKeys;

  /** `keys[i]` is a folded name (`foldName`, libs/text.ts) of item `items[i]`; an item may have several. */
  constructor(keys: readonly string[], items: readonly number[]) {
    const wordKeys: string[] = [];
    const wordItems: number[] = [];
    keys.forEach((key, i) => {
      for (let at = key.indexOf(' '); at >= 0; at = key.indexOf(' ', at + 1)) {
        wordKeys.push(key.slice(at + 1));
        wordItems.push(items[i]);
      }
    });
    this.names = new SortedKeys(keys, items);
    this.words = new SortedKeys(wordKeys, wordItems);
  }

  /** An index over items that each have a list of names (display name and aliases). */
  static ofNames(namesByItem: readonly (readonly string[])[]): NameIndex {
    const keys: string[] = [];
    const items: number[] = [];
    namesByItem.forEach((names, item) => {
      for (const name of names) {
        const key = foldName(name);
        if (key) {
          keys.push(key);
          items.push(item);
        }
      }
    });
    return new NameIndex(keys, items);
  }

  /**
   * Items ranked for a folded, non-empty query (see the class comment); `accept`, when given,
   * filters items (a country's cities) before ranking.
   */
  search(query: string, limit: number, accept?: (item: number) => boolean): number[] {
    const taken = new Set<number>();
    const result: number[] = [];
    const take = (best: Best) => {
      for (const item of best.items) {
        if (result.length < limit && !taken.has(item)) {
          taken.add(item);
          result.push(item);
        }
      }
    };
    const [start, end] = this.names.prefixRange(query);
    let exactEnd = start;
    while (exactEnd < end && this.names.keys.equals(exactEnd, query)) exactEnd++;
    take(this.collect(this.names, start, exactEnd, limit, taken, accept));
    if (result.length < limit) {
      take(this.collect(this.names, exactEnd, end, limit - result.length, taken, accept));
    }
    if (result.length < limit) {
      const [ws, we] = this.words.prefixRange(query);
      take(this.collect(this.words, ws, we, limit - result.length, taken, accept));
    }
    if (result.length < limit) {
      for (const hit of this.fuzzy(query, limit, true, accept)) {
        if (result.length >= limit) break;
        if (!taken.has(hit.item)) {
          taken.add(hit.item);
          result.push(hit.item);
        }
      }
    }
    return result;
  }

  /** Items whose name or alias is exactly this folded text, most important first. */
  exact(query: string): number[] {
    const result: number[] = [];
    const keys = this.names.keys;
    for (let i = this.names.lowerBound(query); i < keys.size && keys.equals(i, query); i++) {
      const item = this.names.items[i];
      if (!result.includes(item)) result.push(item);
    }
    return result.sort((a, b) => a - b);
  }

  /**
   * Items within the allowed typos of a folded query (whole names, or name prefixes when
   * `prefix`), fewest typos first, then by importance. The first letter must be right, and
   * for a second typo the first two: typos there are the rarest, and a two-typo walk under
   * one letter visits too much of the index ("sangineo": 5,400 names under "s", against
   * 1,300 for one typo under "s" plus 2,000 for two under "sa").
   */
  fuzzy(
    query: string,
    limit: number,
    prefix: boolean,
    accept?: (item: number) => boolean,
  ): FuzzyHit[] {
    const max = allowedTypos(query);
    if (max === 0) return [];
    // Ranked as typos * SPAN + item: one number to keep in order.
    const SPAN = 2 ** 24;
    const best = new Best(limit);
    const seen = new Set<number>();
    const items = this.names.items;
    const offer = (i: number, typos: number) => {
      const item = items[i];
      if (seen.has(item) || (accept && !accept(item))) return;
      seen.add(item);
      best.offer(typos * SPAN + item);
    };
    const [start, end] = this.names.prefixRange(query[0]);
    scanWithinTypos(query, this.names.keys, start, end, 1, prefix, offer);
    if (max > 1) {
      const [start2, end2] = this.names.prefixRange(query.slice(0, 2));
      scanWithinTypos(query, this.names.keys, start2, end2, max, prefix, offer);
    }
    return best.items.map((code) => ({ item: code % SPAN, typos: Math.floor(code / SPAN) }));
  }

  private collect(
    keys: SortedKeys,
    start: number,
    end: number,
    need: number,
    skip: Set<number>,
    accept?: (item: number) => boolean,
  ): Best {
    const best = new Best(need);
    for (let i = start; i < end; i++) {
      const item = keys.items[i];
      if (!skip.has(item) && (!accept || accept(item))) best.offer(item);
    }
    return best;
  }
}
