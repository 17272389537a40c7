import { unauthorized } from '../../libs/errors';
import {
  COURIER_TOKEN_PREFIX,
  parseCourierToken,
  type CourierAuth,
} from '../../libs/contracts/matching';
import { AcceptedCredentials, LookupCache, type BeforeLookup } from '../../libs/lookup-cache';
import { COURIER_TOKEN_REQUIRED } from '../../libs/service';

export interface CourierTokenAuthOptions {
  cacheMs: number;
  lookup: (hash: string) => Promise<CourierAuth | null>;
  /** Tokens that work, kept in memory: one per courier of the design load and more. */
  maxCacheEntries?: number;
  maxNegativeEntries?: number;
  now?: () => number;
}

const SEND = `send Authorization: Bearer <courier token> (${COURIER_TOKEN_PREFIX}..., issued by your operator)`;

export const COURIER_TOKEN_MESSAGES = {
  required: `${COURIER_TOKEN_REQUIRED}: ${SEND}`,
  format: `Invalid courier token format: ${SEND}`,
  refused:
    'Unknown or revoked courier token, or the courier is retired; ask your operator for a new token',
};

/**
 * Turns `Authorization: Bearer <courier token>` into the courier it acts as, looked up by the
 * token's hash through a `LookupCache` (libs/lookup-cache), as API keys are. The courier app
 * reports its location every few seconds, so answers are kept longer than API keys'
 * (COURIER_TOKEN_CACHE_SECONDS); a revocation or a retirement reaches the cache at once by
 * `courier-matching.courierTokensChanged`. The hash of a header accepted lately is
 * remembered for the cache lifetime (`AcceptedCredentials`).
 */
export class CourierTokenAuthenticator {
  private readonly cache: LookupCache<CourierAuth>;
  private readonly hashes: AcceptedCredentials;

  constructor(options: CourierTokenAuthOptions) {
    const maxEntries = options.maxCacheEntries ?? 50_000;
    this.cache = new LookupCache({
      cacheMs: options.cacheMs,
      lookup: options.lookup,
      maxEntries,
      maxNegativeEntries: options.maxNegativeEntries,
      now: options.now,
    });
    this.hashes = new AcceptedCredentials(maxEntries, options.cacheMs, options.now);
  }

  async authenticate(
    header: string | string[] | undefined,
    beforeLookup?: BeforeLookup,
  ): Promise<CourierAuth> {
    const raw = Array.isArray(header) ? header[0] : header;
    const known = this.hashes.hashOf(raw);
    const hash = known ?? hashOfHeader(raw);
    const { value: courier, refusal } = await this.cache.answer(hash, beforeLookup);
    if (!courier) throw refusal(unauthorized(COURIER_TOKEN_MESSAGES.refused));
    if (known === undefined && raw !== undefined) this.hashes.accepted(raw, hash);
    return courier;
  }

  /** Drops a token's answer, e.g. when it is revoked or its courier retired or brought back. */
  forget(hash: string): void {
    this.cache.forget(hash);
  }
}

/** The token's hash, from a header not accepted lately: 401 when it holds no courier token. */
function hashOfHeader(raw: string | undefined): string {
  if (!raw || raw.trim() === '') throw unauthorized(COURIER_TOKEN_MESSAGES.required);
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(raw);
  const hash = bearer ? parseCourierToken(bearer[1]) : null;
  if (!hash) throw unauthorized(COURIER_TOKEN_MESSAGES.format);
  return hash;
}
