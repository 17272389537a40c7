import type {
  ApiKeyView,
  KeyMaker,
  ListedApiKey,
  CreatedApiKey,
  CreatedOperatorToken,
  OperatorTokenView,
  UserView,
} from '../../libs/contracts/account';
import type { OperatorTokenRecord, OperatorTokenRevocation } from './operator-store';
import type { ApiKeyRecord, UserRecord } from './store';

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);

export function toUserView(user: UserRecord): UserView {
  return {
    id: user._id,
    name: user.name,
    email: user.email,
    phone: user.phone,
    profileId: user.profileId,
    createdAt: user.createdAt.toISOString(),
    updatedAt: user.updatedAt.toISOString(),
  };
}

export function toApiKeyView(key: ApiKeyRecord & { createdAt: Date }): ApiKeyView {
  return {
    id: key._id,
    userId: key.userId,
    environment: key.environment as ApiKeyView['environment'],
    serverOnly: key.serverOnly,
    quota: key.quota ? { limit: key.quota.limit, windowSeconds: key.quota.windowSeconds } : null,
    createdAt: key.createdAt.toISOString(),
    lastUsedAt: iso(key.lastUsedAt),
    revokedAt: iso(key.revokedAt),
  };
}

/** Who made the key, for operators' views only. */
const makerView = (key: ApiKeyRecord): KeyMaker => ({
  createdBy: key.createdBy ?? null,
  createdByOperatorTokenId: key.createdByTokenId ?? null,
});

/** A key as operators list it: who made it too. */
export const toListedApiKey = (key: ApiKeyRecord & { createdAt: Date }): ListedApiKey => ({
  ...toApiKeyView(key),
  ...makerView(key),
});

/** The answer to creating a key: its plaintext, once, and no hash. */
export function toCreatedApiKey(
  key: ApiKeyRecord & { createdAt: Date },
  plaintext: string,
): CreatedApiKey {
  const view = toApiKeyView(key);
  return {
    id: view.id,
    key: plaintext,
    environment: view.environment,
    serverOnly: view.serverOnly,
    quota: view.quota,
    createdAt: view.createdAt,
    ...makerView(key),
  };
}

export function toOperatorTokenView(
  token: OperatorTokenRecord,
  revocation: OperatorTokenRevocation | null | undefined,
): OperatorTokenView {
  return {
    id: token.tokenId,
    name: token.name,
    createdBy: token.createdBy,
    createdAt: token.createdAt.toISOString(),
    expiresAt: iso(token.expiresAt),
    lastUsedAt: iso(token.lastUsedAt),
    revokedAt: iso(revocation?.at),
    revokedBy: revocation?.by ?? null,
  };
}

/** The answer to creating an operator token: the token itself, once, and no hash. */
export const toCreatedOperatorToken = (
  token: OperatorTokenRecord,
  plaintext: string,
): CreatedOperatorToken => ({
  id: token.tokenId,
  name: token.name,
  token: plaintext,
  createdBy: token.createdBy,
  createdAt: token.createdAt.toISOString(),
  expiresAt: iso(token.expiresAt),
});
