/**
 * Answers of a lookup by key (a credential's hash, a record's id), cached briefly in memory:
 * the gateway's API keys and courier tokens, and the courier directory that matching reads on
 * every location report. Concurrent lookups of one key share a single call. Accepted answers
 * and refused ones (unknown, revoked) are cached apart, so a flood of made-up keys can only
 * evict other made-up keys.
 */

export interface LookupCacheOptions<V> {
  cacheMs: number;
  lookup: (key: string) => Promise<V | null>;
  /** Whether an answer is kept with the accepted ones. Default: any answer but null. */
  accepts?: (value: V | null) => boolean;
  /** Accepted answers kept in memory. */
  maxEntries?: number;
  /** Refused answers kept in memory, apart from the accepted ones. */
  maxNegativeEntries?: number;
  now?: () => number;
}

/**
 * Called before asking about a key this cache has not accepted lately, and only then; it
 * throws to refuse without the lookup (the gateway's failed-authentication throttle, which
 * counts the attempt there). Called for one caller of a key at a time: the others wait and
 * share the lookup it lets through, so a burst of one key is asked about once.
 */
export type BeforeLookup = () => Promise<void>;

interface CacheEntry<V> {
  value: V | null;
  expiresAt: number;
}

/** Insertion-ordered, at most `max` entries: the oldest goes first (a hit does not refresh it). */
export class BoundedMap<V> {
  private readonly map = new Map<string, V>();

  constructor(private readonly max: number) {}

  get(key: string): V | undefined {
    return this.map.get(key);
  }

  set(key: string, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.max) {
      const oldest = this.map.keys().next().value;
      if (oldest !== undefined) this.map.delete(oldest);
    }
  }

  delete(key: string): void {
    this.map.delete(key);
  }

  get size(): number {
    return this.map.size;
  }
}

/** A credential (`wb_live_…`) or a scheme and one (`Bearer wbc_…`): no padding. */
const EXACT_FORM = /^\S+(?: \S+)?$/;

/** Accepted answers kept when the options say nothing. */
export const DEFAULT_MAX_ENTRIES = 10_000;

/**
 * The hash of a credential (an API key, a courier token, as the client sent it) accepted
 * lately, kept by the credential itself for `ttlMs`, so that its every request does not pay a
 * SHA-256. A revocation drops the record by its hash, and the next request looks it up again
 * all the same. Only accepted credentials are remembered, so made-up ones cannot crowd them
 * out; the oldest goes first beyond `max`.
 */
export class AcceptedCredentials {
  private readonly known: BoundedMap<{ hash: string; expiresAt: number }>;

  constructor(
    max: number,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.known = new BoundedMap(max);
  }

  /** The hash remembered for `raw`, else undefined (to be computed and checked). */
  hashOf(raw: string | undefined): string | undefined {
    const known = raw === undefined ? undefined : this.known.get(raw);
    return known !== undefined && known.expiresAt > this.now() ? known.hash : undefined;
  }

  /**
   * `raw` was accepted, its hash being `hash`. Only a header in its exact form is kept: the
   * parsers forgive padding, and were every padding of one good credential kept (up to a
   * header's 16 KB each), one holder could fill the replica's memory.
   */
  accepted(raw: string, hash: string): void {
    if (!EXACT_FORM.test(raw)) return;
    this.known.set(raw, { hash, expiresAt: this.now() + this.ttlMs });
  }
}

export class LookupCache<V> {
  private readonly accepted: BoundedMap<CacheEntry<V>>;
  private readonly refused: BoundedMap<CacheEntry<V>>;
  private readonly inFlight = new Map<string, Promise<V | null>>();
  /** The `beforeLookup` of the caller about to look a key up, for the others to wait on. */
  private readonly asking = new Map<string, Promise<void>>();
  /**
   * Bumped by every forget(). A lookup started under an older generation may have read the
   * record before its change: it answers its own callers but is neither cached nor shared.
   * One counter for all keys, since changes are rare and a stale lookup only costs a later
   * lookup.
   */
  private generation = 0;
  private readonly now: () => number;
  private readonly accepts: (value: V | null) => boolean;

  constructor(private readonly options: LookupCacheOptions<V>) {
    this.now = options.now ?? Date.now;
    this.accepts = options.accepts ?? ((value) => value !== null);
    this.accepted = new BoundedMap(options.maxEntries ?? DEFAULT_MAX_ENTRIES);
    this.refused = new BoundedMap(options.maxNegativeEntries ?? 1_000);
  }

  /** Accepted answers held (expired ones included, until evicted). */
  get acceptedCount(): number {
    return this.accepted.size;
  }

  /** The answer for `key`: cached, shared with a lookup in flight, or looked up. */
  async get(key: string, beforeLookup?: BeforeLookup): Promise<V | null> {
    for (;;) {
      const known = this.accepted.get(key);
      if (known && known.expiresAt > this.now()) return known.value;
      const refused = this.refused.get(key);
      if (refused && refused.expiresAt > this.now()) return refused.value;
      const pending = this.inFlight.get(key);
      if (pending) return pending;
      // A key accepted before (its entry expired, but is still held) is looked up again
      // without asking: only someone who holds a real credential can name its hash.
      if (known || !beforeLookup) return this.start(key);
      const asked = this.asking.get(key);
      if (!asked) return this.askThenLookUp(key, beforeLookup);
      const admitted = await asked.then(
        () => true,
        () => false,
      );
      // Refused, perhaps for the asker's own address: each waiter asks for itself, all at once
      // (in turn they would wait a round trip each), and shares whatever lookup one lets through.
      if (!admitted) {
        await beforeLookup();
        return this.inFlight.get(key) ?? this.start(key);
      }
    }
  }

  /**
   * `get`, with what to refuse the answer by: `refusal(err)` marks `err` as a repeat when `key`
   * was refused by a lookup lately (its refusal still cached), a credential already refused,
   * which tells a failed-authentication count nothing new (`isRepeatedRefusal`).
   */
  async answer(
    key: string,
    beforeLookup?: BeforeLookup,
  ): Promise<{ value: V | null; refusal: <E extends object>(err: E) => E }> {
    // Read first: the answer below may be the cached refusal this names.
    const refused = this.refused.get(key);
    const repeat = refused !== undefined && refused.expiresAt > this.now();
    const value = await this.get(key, beforeLookup);
    return { value, refusal: (err) => (repeat ? repeatedRefusal(err) : err) };
  }

  /** Drops a key, e.g. when its record changed, and disowns its lookups in flight. */
  forget(key: string): void {
    this.generation += 1;
    this.accepted.delete(key);
    this.refused.delete(key);
    this.inFlight.delete(key);
  }

  private async askThenLookUp(key: string, beforeLookup: BeforeLookup): Promise<V | null> {
    const asking = beforeLookup();
    this.asking.set(key, asking);
    try {
      await asking;
    } finally {
      this.asking.delete(key);
    }
    // In the same turn as the delete: a caller that waited finds the lookup in flight.
    return this.inFlight.get(key) ?? this.start(key);
  }

  private start(key: string): Promise<V | null> {
    const generation = this.generation;
    const pending = this.options.lookup(key).then((value) => {
      if (generation === this.generation) this.remember(key, value);
      return value;
    });
    this.inFlight.set(key, pending);
    const settled = () => {
      // forget() may have replaced this lookup with a newer one; leave that one alone.
      if (this.inFlight.get(key) === pending) this.inFlight.delete(key);
    };
    pending.then(settled, settled);
    return pending;
  }

  /**
   * With cacheMs 0 an entry is stale at once, so every call looks the key up; an accepted
   * key's entry still tells the next lookup that it was accepted before.
   */
  private remember(key: string, value: V | null): void {
    const entry = { value, expiresAt: this.now() + this.options.cacheMs };
    if (this.accepts(value)) {
      this.refused.delete(key);
      this.accepted.set(key, entry);
    } else {
      this.accepted.delete(key);
      if (this.options.cacheMs > 0) this.refused.set(key, entry);
    }
  }
}

/** Refusals of a credential refused lately, which the failed-authentication count skips. */
const repeats = new WeakSet<object>();

/**
 * Marks `err` as the refusal of a credential refused lately (`answer`), or of one known to have
 * been issued (an expired operator token): no guess, which a failed-authentication count skips.
 */
export function repeatedRefusal<E extends object>(err: E): E {
  repeats.add(err);
  return err;
}

export function isRepeatedRefusal(err: unknown): boolean {
  return typeof err === 'object' && err !== null && repeats.has(err);
}
