import { createHash, timingSafeEqual } from 'node:crypto';
import { OPERATOR_TOKENS, type OperatorAuth } from '../../libs/contracts/account';
import { forbidden, unauthorized } from '../../libs/errors';
import { LookupCache, repeatedRefusal, type BeforeLookup } from '../../libs/lookup-cache';
import { ADMIN_TOKEN_OPERATOR, type ActingOperator } from '../../libs/service';

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

const SEND = 'send Authorization: Bearer <ADMIN_TOKEN or your operator token>';

export const ADMIN_AUTH_MESSAGES = {
  disabled: 'The admin API is disabled; start the platform with ADMIN_TOKEN set',
  required: `Admin token is required: ${SEND}`,
  invalid: 'Invalid admin token',
  refused:
    'Unknown or revoked operator token; ask an operator with ADMIN_TOKEN for a new one (POST /admin/operator-tokens)',
};

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The bearer token a header carries, if it carries one. */
const bearerOf = (header: string | string[] | undefined) =>
  BEARER.exec((Array.isArray(header) ? header[0] : header) ?? '')?.[1];

/** Whether a header presents an operator token (well formed or not) rather than ADMIN_TOKEN. */
export const presentsOperatorToken = (header: string | string[] | undefined) =>
  bearerOf(header)?.startsWith(OPERATOR_TOKENS.prefix) === true;

export interface AdminAuthOptions {
  /** ADMIN_TOKEN: unset, the admin API is disabled, operator tokens with it. */
  adminToken: string | undefined;
  cacheMs: number;
  /** `account.authenticateOperator`: the operator a token's hash acts as, if it works. */
  lookup: (hash: string) => Promise<OperatorAuth | null>;
  now?: () => number;
}

/**
 * Turns `/admin`'s `Authorization: Bearer <token>` into the operator acting (decision 157):
 * ADMIN_TOKEN itself, compared in constant time and in memory (it works while the account
 * service is away: it is what an operator repairs things with); or an operator's own token,
 * looked up by its hash through a `LookupCache` as API keys are, a revocation reaching the
 * cache at once by `account.operatorTokenRevoked`. An expiry is read on every call: the cache
 * may hold a token past it.
 */
export class AdminAuthenticator {
  private readonly cache: LookupCache<OperatorAuth>;
  private readonly adminDigest: Buffer | undefined;
  private readonly now: () => number;

  constructor(options: AdminAuthOptions) {
    this.adminDigest = options.adminToken ? digest(options.adminToken) : undefined;
    this.now = options.now ?? Date.now;
    this.cache = new LookupCache({
      cacheMs: options.cacheMs,
      lookup: options.lookup,
      // Operators are few; made-up tokens are throttled per address before their lookup.
      maxEntries: 1_000,
      now: options.now,
    });
  }

  /** Throws 403 when the admin API is disabled, 401 when the token is missing or refused. */
  async authenticate(
    header: string | string[] | undefined,
    beforeLookup?: BeforeLookup,
  ): Promise<ActingOperator> {
    if (!this.adminDigest) throw forbidden(ADMIN_AUTH_MESSAGES.disabled);
    const token = bearerOf(header);
    if (token === undefined) throw unauthorized(ADMIN_AUTH_MESSAGES.required);
    if (timingSafeEqual(digest(token), this.adminDigest)) {
      return { name: ADMIN_TOKEN_OPERATOR, tokenId: null };
    }
    const hash = OPERATOR_TOKENS.parse(token);
    if (!hash) throw unauthorized(ADMIN_AUTH_MESSAGES.invalid);
    const { value: operator, refusal } = await this.cache.answer(hash, beforeLookup);
    if (!operator) throw refusal(unauthorized(ADMIN_AUTH_MESSAGES.refused));
    if (operator.expiresAt && Date.parse(operator.expiresAt) <= this.now()) {
      // A token we issued, no guess: an operator's script still sending it must not fill its
      // address's failed-authentication count and shut out the other operators behind it.
      throw repeatedRefusal(
        unauthorized(
          `This operator token expired at ${operator.expiresAt}; ask an operator with ADMIN_TOKEN for a new one`,
        ),
      );
    }
    return { name: operator.name, tokenId: operator.tokenId };
  }

  /** Drops a token's answer when it is revoked, and disowns its lookups in flight. */
  forget(hash: string): void {
    this.cache.forget(hash);
  }
}
