import Joi from '../joi';
import type { AppEnvironment } from '../config';
import { credentialHash, IssuedTokens } from '../issued-tokens';
import type { Retry } from './retry';

/** What other services may know of the account service. */

/** Broadcast to every gateway when a key is revoked, so that caches drop it at once. */
export const API_KEY_REVOKED_EVENT = 'account.apiKeyRevoked';

/** Broadcast to every gateway when an operator token is revoked: caches drop it at once. */
export const OPERATOR_TOKEN_REVOKED_EVENT = 'account.operatorTokenRevoked';

export interface AccountEvents {
  [API_KEY_REVOKED_EVENT]: { keyId: string; hash: string };
  [OPERATOR_TOKEN_REVOKED_EVENT]: { tokenId: string; hash: string };
}

/**
 * An operator's own token for `/admin` (`wbo_` and 43 base64url characters; only its SHA-256
 * is stored), made with the platform's ADMIN_TOKEN: what an operator does with it is recorded
 * under their name (decision 157).
 */
export const OPERATOR_TOKENS = new IssuedTokens('wbo_');

export interface OperatorTokenView {
  id: string;
  name: string;
  /** Who made it: an operator's name, or `admin-token` / `cli` (`RequestMeta.operator`). */
  createdBy: string;
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  revokedAt: string | null;
  revokedBy: string | null;
}

/** The answer to creating an operator token: the only time the token itself is shown. */
export interface CreatedOperatorToken {
  id: string;
  name: string;
  token: string;
  createdBy: string;
  createdAt: string;
  expiresAt: string | null;
}

export interface CreateOperatorTokenParams {
  name: string;
  expiresInDays?: number;
}

export interface ListOperatorTokensParams {
  limit?: number;
  offset?: number;
}

export interface AuthenticateOperatorParams {
  /** SHA-256 (hex) of the token presented. */
  tokenHash: string;
}

export const authenticateOperatorParams = Joi.object<AuthenticateOperatorParams, true>({
  tokenHash: Joi.string().hex().length(64).required(),
});

/** Whom an operator token acts as (`account.authenticateOperator`), until when. */
export interface OperatorAuth {
  tokenId: string;
  name: string;
  expiresAt: string | null;
}

export interface UserView {
  id: string;
  name: string;
  email: string;
  phone: string;
  profileId: string;
  createdAt: string;
  updatedAt: string;
}

export interface QuotaView {
  limit: number;
  windowSeconds: number;
}

export interface ApiKeyView {
  id: string;
  userId: string;
  environment: AppEnvironment;
  serverOnly: boolean;
  quota: QuotaView | null;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

/** Who made a key, shown to operators only (its owner is not told who on the platform did). */
export interface KeyMaker {
  /** An operator, `admin-token` or `cli`; null when made before this was kept. */
  createdBy: string | null;
  /** The operator token it was made with; null for the platform's own credentials. */
  createdByOperatorTokenId: string | null;
}

/** A key as operators list it. */
export type ListedApiKey = ApiKeyView & KeyMaker;

/** The answer to creating a key: the only time its plaintext is ever shown. */
export interface CreatedApiKey extends KeyMaker {
  id: string;
  key: string;
  environment: AppEnvironment;
  serverOnly: boolean;
  quota: QuotaView | null;
  createdAt: string;
}

/** A key found by its hash, with the user it acts as (`account.resolveApiKey`). */
export interface ResolvedApiKey extends ApiKeyView {
  user: UserView;
}

export interface ResolveApiKeyParams {
  hash: string;
}

export const resolveApiKeyParams = Joi.object<ResolveApiKeyParams, true>({
  hash: Joi.string().hex().length(64).required(),
});

export interface CreateUserParams {
  name: string;
  email: string;
  phone: string;
}

export interface FindUsersParams {
  email?: string;
  limit?: number;
  offset?: number;
}

/** A delivery's recipient, as its creator gave them (`account.userByContact`). */
export interface UserByContactParams {
  email?: string;
  phone?: string;
}

export interface CreateApiKeyParams {
  userId: string;
  environment?: AppEnvironment;
  serverOnly?: boolean;
  quota?: QuotaView | null;
}

export interface ListApiKeysParams {
  userId: string;
  limit?: number;
  offset?: number;
}

export interface AccountActions {
  'account.resolveApiKey': { params: ResolveApiKeyParams; answer: ResolvedApiKey | null };
  'account.createUser': { params: CreateUserParams; answer: UserView };
  'account.findUsers': { params: FindUsersParams; answer: UserView[] };
  'account.getUser': { params: { userId: string }; answer: UserView };
  'account.userByContact': { params: UserByContactParams; answer: UserView | null };
  'account.createApiKey': { params: CreateApiKeyParams; answer: CreatedApiKey };
  'account.listApiKeys': { params: ListApiKeysParams; answer: ListedApiKey[] };
  'account.revokeApiKey': { params: { keyId: string }; answer: null };
  'account.createOperatorToken': {
    params: CreateOperatorTokenParams;
    answer: CreatedOperatorToken;
  };
  'account.listOperatorTokens': { params: ListOperatorTokensParams; answer: OperatorTokenView[] };
  'account.revokeOperatorToken': { params: { operatorTokenId: string }; answer: null };
  'account.authenticateOperator': {
    params: AuthenticateOperatorParams;
    answer: OperatorAuth | null;
  };
}

/** Which account actions may be repeated on another node (`libs/contracts/retry`). */
export const ACCOUNT_RETRY = {
  'account.resolveApiKey': 'safe',
  'account.createUser': 'never',
  'account.findUsers': 'safe',
  'account.getUser': 'safe',
  'account.userByContact': 'safe',
  'account.createApiKey': 'never',
  'account.listApiKeys': 'safe',
  // Revoking a revoked key changes nothing and answers the same.
  'account.revokeApiKey': 'safe',
  'account.createOperatorToken': 'never',
  'account.listOperatorTokens': 'safe',
  // Revoking a revoked token changes nothing and answers the same.
  'account.revokeOperatorToken': 'safe',
  'account.authenticateOperator': 'safe',
} as const satisfies Record<keyof AccountActions, Retry>;

/** API keys read `<prefix>_<live|staging>_<64 hex>`; only their SHA-256 is ever stored. */
const KEY_PATTERN = /^([a-z][a-z0-9]{0,15})_(live|staging)_([0-9a-fA-F]{64})$/;

export type ParsedApiKey =
  { valid: true; environment: AppEnvironment; hash: string } | { valid: false };

/** The key's text: prefix, environment and the secret in lower-case hex. */
export const formatApiKey = (prefix: string, environment: AppEnvironment, secretHex: string) =>
  `${prefix}_${environment}_${secretHex.toLowerCase()}`;

/**
 * Checks the shape of a presented key and returns the hash to look it up by. Hex digits
 * are case-insensitive, so the hash is taken of the canonical lower-case form.
 */
export function parseApiKey(raw: string, prefix: string): ParsedApiKey {
  const match = KEY_PATTERN.exec(raw.trim());
  if (!match || match[1] !== prefix) return { valid: false };
  const environment = match[2] as AppEnvironment;
  return {
    valid: true,
    environment,
    hash: credentialHash(formatApiKey(prefix, environment, match[3])),
  };
}
