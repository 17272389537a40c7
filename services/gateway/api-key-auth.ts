import type { AppEnvironment } from '../../libs/config';
import { unauthorized } from '../../libs/errors';
import { parseApiKey, type ResolvedApiKey } from '../../libs/contracts/account';

export interface ApiKeyAuthOptions {
  prefix: string;
  environment: AppEnvironment;
  cacheMs: number;
  maxCacheEntries?: number;
  lookup: (hash: string) => Promise<ResolvedApiKey | null>;
  now?: () => number;
}

interface CacheEntry {
  key: ResolvedApiKey | null;
  expiresAt: number;
}

/**
 * Turns an `api-key` header into the key's record. Lookups (hits and misses) are cached
 * briefly and concurrent misses for one key share a single lookup.
 */
export class ApiKeyAuthenticator {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly inFlight = new Map<string, Promise<ResolvedApiKey | null>>();
  private readonly now: () => number;
  private readonly maxEntries: number;

  constructor(private readonly options: ApiKeyAuthOptions) {
    this.now = options.now ?? Date.now;
    this.maxEntries = options.maxCacheEntries ?? 10_000;
  }

  async authenticate(header: string | string[] | undefined): Promise<ResolvedApiKey> {
    const raw = Array.isArray(header) ? header[0] : header;
    if (!raw || raw.trim() === '') throw unauthorized('API key is required');
    const parsed = parseApiKey(raw, this.options.prefix);
    if (!parsed.valid) throw unauthorized('Invalid API key format');
    if (parsed.environment !== this.options.environment) {
      throw unauthorized(
        `This is a ${parsed.environment} API key; this ${this.options.environment} environment accepts only ${this.options.environment} keys`,
      );
    }
    const key = await this.lookup(parsed.hash);
    if (!key) throw unauthorized('Unknown API key; check the key or create a new one');
    if (key.revokedAt) throw unauthorized('This API key has been revoked; create a new one');
    return key;
  }

  /** Drops a key from the cache, e.g. when it is revoked. */
  forget(hash: string): void {
    this.cache.delete(hash);
  }

  private async lookup(hash: string): Promise<ResolvedApiKey | null> {
    const cached = this.cache.get(hash);
    if (cached && cached.expiresAt > this.now()) return cached.key;

    let pending = this.inFlight.get(hash);
    if (!pending) {
      pending = this.options.lookup(hash).finally(() => this.inFlight.delete(hash));
      this.inFlight.set(hash, pending);
    }
    const key = await pending;
    this.remember(hash, key);
    return key;
  }

  private remember(hash: string, key: ResolvedApiKey | null): void {
    if (this.options.cacheMs <= 0) return;
    this.cache.delete(hash);
    this.cache.set(hash, { key, expiresAt: this.now() + this.options.cacheMs });
    if (this.cache.size > this.maxEntries) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
  }
}
