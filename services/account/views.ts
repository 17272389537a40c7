import type { ApiKeyRecord, UserRecord } from './models';

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
  environment: 'live' | 'staging';
  serverOnly: boolean;
  quota: QuotaView | null;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

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
