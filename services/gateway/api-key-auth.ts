import type { AppEnvironment } from '../../libs/config';
import { unauthorized } from '../../libs/errors';
import { parseApiKey, type ResolvedApiKey } from '../../libs/contracts/account';

export interface ApiKeyAuthOptions {
  prefix: string;
  environment: AppEnvironment;
  cacheMs: number;
  /** Active keys kept in memory. */
  maxCacheEntries?: number;
  /** Unknown and revoked keys kept in memory, apart from the active ones. */
  maxNegativeEntries?: number;
  lookup: (hash: string) => Promise<ResolvedApiKey | null>;
  now?: () => number;
}

/**
 * Called before the database is asked about a key this gateway has not accepted lately, and
 * only then; it throws to refuse the request without the lookup (the failed-authentication
 * throttle of gateway/auth-throttle).
 */
export type BeforeLookup = () => Promise<void>;

interface CacheEntry {
  key: ResolvedApiKey | null;
  expiresAt: number;
}

/** Insertion-ordered, at most `max` entries: the oldest goes first (a hit does not refresh it). */
class BoundedMap<V> {
  private readonly map = new Map<string, V>();

  constructor(private readonly max: number) {}

  get(hash: string): V | undefined {
    return this.map.get(hash);
  }

  set(hash: string, value: V): void {
    this.map.delete(hash);
    this.map.set(hash, value);
    if (this.map.size > this.max) {
      const oldest = this.map.keys().next().value;
      if (oldest !== undefined) this.map.delete(oldest);
    }
  }

  delete(hash: string): void {
    this.map.delete(hash);
  }

  get size(): number {
    return this.map.size;
  }
}

const isActive = (key: ResolvedApiKey | null): key is ResolvedApiKey => !!key && !key.revokedAt;

/**
 * Turns an `api-key` header into the key's record. Lookups are cached briefly and concurrent
 * lookups of one key share a single call. Active keys and refused ones (unknown, revoked) are
 * cached apart, so a flood of made-up keys can only evict other made-up keys.
 */
export class ApiKeyAuthenticator {
  private readonly active: BoundedMap<CacheEntry>;
  private readonly refused: BoundedMap<CacheEntry>;
  private readonly inFlight = new Map<string, Promise<ResolvedApiKey | null>>();
  /**
   * Bumped by every forget(). A lookup started under an older generation may have read the
   * key before its revocation: it answers its own callers but is neither cached nor shared.
   * One counter for all keys, since revocations are rare and a stale lookup only costs a
   * later lookup.
   */
  private generation = 0;
  private readonly now: () => number;

  constructor(private readonly options: ApiKeyAuthOptions) {
    this.now = options.now ?? Date.now;
    this.active = new BoundedMap(options.maxCacheEntries ?? 10_000);
    this.refused = new BoundedMap(options.maxNegativeEntries ?? 1_000);
  }

  async authenticate(
    header: string | string[] | undefined,
    beforeLookup?: BeforeLookup,
  ): Promise<ResolvedApiKey> {
    const raw = Array.isArray(header) ? header[0] : header;
    if (!raw || raw.trim() === '') throw unauthorized('API key is required');
    const parsed = parseApiKey(raw, this.options.prefix);
    if (!parsed.valid) throw unauthorized('Invalid API key format');
    if (parsed.environment !== this.options.environment) {
      throw unauthorized(
        `This is a ${parsed.environment} API key; this ${this.options.environment} environment accepts only ${this.options.environment} keys`,
      );
    }
    const key = await this.lookup(parsed.hash, beforeLookup);
    if (!key) throw unauthorized('Unknown API key; check the key or create a new one');
    if (key.revokedAt) throw unauthorized('This API key has been revoked; create a new one');
    return key;
  }

  /** Drops a key from the cache, e.g. when it is revoked, and disowns its lookups in flight. */
  forget(hash: string): void {
    this.generation += 1;
    this.active.delete(hash);
    this.refused.delete(hash);
    this.inFlight.delete(hash);
  }

  private async lookup(
    hash: string,
    beforeLookup: BeforeLookup | undefined,
  ): Promise<ResolvedApiKey | null> {
    const known = this.active.get(hash);
    if (known && known.expiresAt > this.now()) return known.key;
    const refused = this.refused.get(hash);
    if (refused && refused.expiresAt > this.now()) return refused.key;

    let pending = this.inFlight.get(hash);
    if (!pending) {
      // A key this gateway accepted before (its entry expired, but is still held) is looked
      // up again without asking: only someone who holds a real key can name its hash.
      if (!known && beforeLookup) await beforeLookup();
      pending = this.inFlight.get(hash) ?? this.start(hash);
    }
    return pending;
  }

  private start(hash: string): Promise<ResolvedApiKey | null> {
    const generation = this.generation;
    const pending = this.options.lookup(hash).then((key) => {
      if (generation === this.generation) this.remember(hash, key);
      return key;
    });
    this.inFlight.set(hash, pending);
    const settled = () => {
      // forget() may have replaced this lookup with a newer one; leave that one alone.
      if (this.inFlight.get(hash) === pending) this.inFlight.delete(hash);
    };
    pending.then(settled, settled);
    return pending;
  }

  /**
   * With cacheMs 0 an entry is stale at once, so every call looks the key up; an active key's
   * entry still tells the next lookup that this gateway accepted it before.
   */
  private remember(hash: string, key: ResolvedApiKey | null): void {
    const entry = { key, expiresAt: this.now() + this.options.cacheMs };
    if (isActive(key)) {
      this.refused.delete(hash);
      this.active.set(hash, entry);
    } else {
      this.active.delete(hash);
      if (this.options.cacheMs > 0) this.refused.set(hash, entry);
    }
  }
}
