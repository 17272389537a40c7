import { PackedStrings } from './packed-strings';

/** Longest query the fuzzy matcher looks at; longer input is a pasted address, not a name. */
export const MAX_FUZZY_LENGTH = 48;

/** Typos tolerated: none below 4 characters, one from 4, two from 8. */
export function allowedTypos(query: string): number {
  if (query.length < 4) return 0;
  return query.length < 8 ? 1 : 2;
}

/**
 * Calls `visit(index, typos)` for each of the sorted `keys[start..end)` within `max` typos of
 * `query`, in key order. Typos are Damerau–Levenshtein edits (optimal string alignment: a
 * swap of two neighbours is one edit, "lagso" → "lagos"), counted against the whole key, or
 * against its best prefix when `prefix` is set ("ibadn" matches the start of "ibadan north").
 *
 * The sorted keys are walked like a trie: one row of the edit-distance table per character,
 * rows shared with the previous key reused, and only cells within `max` of the diagonal
 * computed. When a row has no cell within `max`, every key sharing that start is out of
 * reach and the walk jumps past them with a binary search; so a scan over the ten thousand
 * names under one letter computes a few hundred rows.
 */
export function scanWithinTypos(
  query: string,
  keys: PackedStrings,
  start: number,
  end: number,
  max: number,
  prefix: boolean,
  visit: (index: number, typos: number) => void,
): void {
  const m = query.length;
  if (m > MAX_FUZZY_LENGTH) return;
  const over = max + 1;
  // A whole key longer than m + max is out of reach, and a prefix longer than that too.
  const depthLimit = m + max;
  const width = m + 2;
  const table = new Int32Array((depthLimit + 1) * width);
  /** Prefix mode: fewest typos of any prefix of up to d characters. */
  const bestUpTo = new Int32Array(depthLimit + 1);
  for (let j = 0; j <= m; j++) table[j] = j <= max ? j : over;
  table[m + 1] = over;
  bestUpTo[0] = prefix && m <= max ? m : over;

  const text = keys.text;
  /** Where the key before starts in `text`; the table holds its first `valid` rows. */
  let previous = 0;
  let valid = 0;
  let i = start;
  while (i < end) {
    const keyStart = keys.startOf(i);
    const keyLength = keys.lengthOf(i);
    let depth = 0;
    const shared = Math.min(valid, keyLength);
    while (
      depth < shared &&
      text.charCodeAt(previous + depth) === text.charCodeAt(keyStart + depth)
    ) {
      depth++;
    }
    const target = Math.min(keyLength, depthLimit);
    let dead = 0;
    for (let r = depth + 1; r <= target; r++) {
      if (!computeRow(query, text, keyStart, table, width, r, max)) {
        dead = r;
        break;
      }
      const last = table[r * width + m];
      const ends = prefix && r >= m - max && r + max >= m ? last : over;
      bestUpTo[r] = Math.min(bestUpTo[r - 1], ends);
    }
    previous = keyStart;
    valid = dead > 0 ? dead : target;

    let typos: number;
    // How many leading characters decided the answer (every key sharing them gets the same).
    let decidedBy = 0;
    if (dead > 0) {
      typos = prefix ? bestUpTo[dead - 1] : over;
      decidedBy = dead;
    } else if (prefix) {
      typos = bestUpTo[target];
      if (target === depthLimit) decidedBy = target;
    } else {
      const n = keyLength;
      typos = n <= depthLimit && Math.abs(n - m) <= max ? table[n * width + m] : over;
    }
    const blockEnd = decidedBy > 0 ? blockEndOf(keys, i, decidedBy, i + 1, end) : i + 1;
    if (typos <= max) for (let k = i; k < blockEnd; k++) visit(k, typos);
    i = blockEnd;
  }
}

/**
 * Row r of the table (distances between key[0..r) and each query[0..j)) from rows r-1 and
 * r-2. Only cells within `max` of the diagonal are computed; the cells just outside are set
 * to max + 1, which is what the next row reads there. False when no cell is within `max`.
 */
function computeRow(
  query: string,
  text: string,
  keyStart: number,
  table: Int32Array,
  width: number,
  r: number,
  max: number,
): boolean {
  const m = query.length;
  const over = max + 1;
  const cur = r * width;
  const prev = cur - width;
  const prev2 = prev - width;
  const lo = Math.max(1, r - max);
  const hi = Math.min(m, r + max);
  table[cur] = r <= max ? r : over;
  if (lo > 1) table[cur + lo - 1] = over;
  const c = text.charCodeAt(keyStart + r - 1);
  const before = r > 1 ? text.charCodeAt(keyStart + r - 2) : -1;
  let rowMin = table[cur];
  for (let j = lo; j <= hi; j++) {
    const q = query.charCodeAt(j - 1);
    let d = table[prev + j - 1] + (q === c ? 0 : 1);
    const deletion = table[prev + j] + 1;
    if (deletion < d) d = deletion;
    const insertion = table[cur + j - 1] + 1;
    if (insertion < d) d = insertion;
    if (j > 1 && q === before && c === query.charCodeAt(j - 2)) {
      const swap = table[prev2 + j - 2] + 1;
      if (swap < d) d = swap;
    }
    if (d > over) d = over;
    table[cur + j] = d;
    if (d < rowMin) rowMin = d;
  }
  if (hi < m) table[cur + hi + 1] = over;
  return rowMin <= max;
}

/**
 * First position in keys[from..to) whose key does not start with the first `length`
 * characters of key `stem` (keys are sorted). Most blocks are short, so the search gallops
 * from `from` before it bisects.
 */
function blockEndOf(
  keys: PackedStrings,
  stem: number,
  length: number,
  from: number,
  to: number,
): number {
  let lo = from;
  let step = 1;
  while (lo < to && sharesStart(keys, lo, stem, length)) {
    lo += step;
    step *= 2;
  }
  // keys[lo - step / 2 .. lo) are in the block (or lo === from); the end is in (.., min(lo, to)].
  let hi = Math.min(lo, to);
  lo = Math.max(from, lo - step / 2 + 1);
  if (step === 1) return from;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sharesStart(keys, mid, stem, length)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Whether key `key` starts with the first `length` characters of key `stem`. */
function sharesStart(keys: PackedStrings, key: number, stem: number, length: number): boolean {
  if (keys.lengthOf(key) < length) return false;
  const text = keys.text;
  const keyStart = keys.startOf(key);
  const stemStart = keys.startOf(stem);
  // From the end: neighbours in sorted order differ late, if at all.
  for (let c = length - 1; c >= 0; c--) {
    if (text.charCodeAt(keyStart + c) !== text.charCodeAt(stemStart + c)) return false;
  }
  return true;
}

/** Typos between `query` and `name` (or its best prefix), or max + 1 when more than `max`. */
export function boundedDistance(query: string, name: string, max: number, prefix: boolean): number {
  let typos = max + 1;
  scanWithinTypos(query, new PackedStrings([name]), 0, 1, max, prefix, (_, t) => {
    typos = t;
  });
  return typos;
}
