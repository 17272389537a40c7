import type { AppEnvironment } from '../../libs/config';
import { unauthorized } from '../../libs/errors';
import { parseApiKey, type ResolvedApiKey } from '../../libs/contracts/account';
import {
  AcceptedCredentials,
  DEFAULT_MAX_ENTRIES,
  LookupCache,
  type BeforeLookup,
} from '../../libs/lookup-cache';

export type { BeforeLookup } from '../../libs/lookup-cache';

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

const isActive = (key: ResolvedApiKey | null): key is ResolvedApiKey => !!key && !key.revokedAt;

/**
 * Turns an `api-key` header into the key's record, looked up by its hash through a
 * `LookupCache` (libs/lookup-cache): brief, shared among concurrent calls, active keys and
 * refused ones (unknown, revoked) cached apart. The hash of a header accepted lately is
 * remembered for the cache lifetime (`AcceptedCredentials`).
 */
export class ApiKeyAuthenticator {
  private readonly cache: LookupCache<ResolvedApiKey>;
  private readonly hashes: AcceptedCredentials;

  constructor(private readonly options: ApiKeyAuthOptions) {
    this.cache = new LookupCache({
      cacheMs: options.cacheMs,
      lookup: options.lookup,
      accepts: isActive,
      maxEntries: options.maxCacheEntries,
      maxNegativeEntries: options.maxNegativeEntries,
      now: options.now,
    });
    // As many headers as active keys.
    this.hashes = new AcceptedCredentials(
      options.maxCacheEntries ?? DEFAULT_MAX_ENTRIES,
      options.cacheMs,
      options.now,
    );
  }

  async authenticate(
    header: string | string[] | undefined,
    beforeLookup?: BeforeLookup,
  ): Promise<ResolvedApiKey> {
    const raw = Array.isArray(header) ? header[0] : header;
    const known = this.hashes.hashOf(raw);
    const hash = known ?? this.hashOf(raw);
    const { value: key, refusal } = await this.cache.answer(hash, beforeLookup);
    if (!key) throw refusal(unauthorized('Unknown API key; check the key or create a new one'));
    if (key.revokedAt)
      throw refusal(unauthorized('This API key has been revoked; create a new one'));
    if (known === undefined && raw !== undefined) this.hashes.accepted(raw, hash);
    return key;
  }

  /** The hash of a header not accepted lately: 401 when it is no key of this environment. */
  private hashOf(raw: string | undefined): string {
    if (!raw || raw.trim() === '') throw unauthorized('API key is required');
    const parsed = parseApiKey(raw, this.options.prefix);
    if (!parsed.valid) throw unauthorized('Invalid API key format');
    if (parsed.environment !== this.options.environment) {
      throw unauthorized(
        `This is a ${parsed.environment} API key; this ${this.options.environment} environment accepts only ${this.options.environment} keys`,
      );
    }
    return parsed.hash;
  }

  /** Drops a key from the cache, e.g. when it is revoked, and disowns its lookups in flight. */
  forget(hash: string): void {
    this.cache.forget(hash);
  }

  /** Active keys held in memory. */
  get cachedKeys(): number {
    return this.cache.acceptedCount;
  }
}
