import { createHash, randomBytes } from 'node:crypto';

/**
 * How stale a token's `lastUsedAt` may be. Gateways look a token up once per cache period per
 * replica; writing each lookup would be a write every few seconds per token in use.
 */
const TOKEN_TOUCH_MS = 10 * 60_000;

/** Whether a token last noted used at `lastUsedAt` is to be noted used at `now`. */
const isTouchDue = (lastUsedAt: Date | null, now: Date) =>
  !lastUsedAt || now.getTime() - lastUsedAt.getTime() >= TOKEN_TOUCH_MS;

/**
 * Notes a token used at `at` when that is due (`isTouchDue`). A note for operators: a database
 * too busy to take it must not refuse the token's holder, so a failure is only warned of.
 */
export async function noteTokenUse(
  lastUsedAt: Date | null,
  at: Date,
  touch: () => Promise<void>,
  warn: (message: string, details: { err: string }) => void,
): Promise<void> {
  if (!isTouchDue(lastUsedAt, at)) return;
  await touch().catch((err: unknown) => {
    warn('could not note when a token was last used', { err: (err as Error).message });
  });
}

/**
 * How every credential the platform issues is kept and looked up (API keys, courier and
 * operator tokens): its SHA-256, hex. 256 random bits need no slow hash, and one lookup by
 * `_id` finds it.
 */
export const credentialHash = (credential: string): string =>
  createHash('sha256').update(credential, 'utf8').digest('hex');

/**
 * Bearer tokens the platform issues (courier tokens `wbc_`, operator tokens `wbo_`): a prefix
 * that tells their kind at a glance, in a log or a leaked file, and 32 random bytes in
 * base64url (43 characters). Only their SHA-256 (hex) is stored, and they are looked up by it.
 */
export class IssuedTokens {
  /** The whole token's shape, for the views that show one as it is created. */
  readonly pattern: RegExp;

  constructor(readonly prefix: string) {
    this.pattern = new RegExp(`^${prefix}[A-Za-z0-9_-]{43}$`);
  }

  hash(token: string): string {
    return credentialHash(token);
  }

  /** A new token and the hash it is stored and found by. */
  issue(): { token: string; hash: string } {
    const token = `${this.prefix}${randomBytes(32).toString('base64url')}`;
    return { token, hash: this.hash(token) };
  }

  /** The hash to look a presented token up by; null when it is not shaped like one. */
  parse(raw: string): string | null {
    const token = raw.trim();
    return this.pattern.test(token) ? this.hash(token) : null;
  }
}
