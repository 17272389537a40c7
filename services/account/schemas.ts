import Joi from 'joi';
import type { AppEnvironment } from '../../libs/config';
import type {
  CreateApiKeyParams,
  CreateUserParams,
  FindUsersParams,
  ListApiKeysParams,
  QuotaView,
} from '../../libs/contracts/account';
import { e164Phone, email, pageParams, personName, uuid } from '../../libs/schemas';

/** Params and answers of the account actions; the answers are what /openapi.json documents. */

export const userView = Joi.object({
  id: Joi.string().uuid(),
  name: Joi.string(),
  email: Joi.string(),
  phone: Joi.string(),
  profileId: Joi.string().uuid(),
  createdAt: Joi.string().isoDate(),
  updatedAt: Joi.string().isoDate(),
});

const quotaSchema = Joi.object<QuotaView, true>({
  limit: Joi.number().integer().min(1).max(1_000_000).required(),
  windowSeconds: Joi.number().integer().min(1).max(86_400).required(),
});

export const apiKeyView = Joi.object({
  id: Joi.string().uuid(),
  userId: Joi.string().uuid(),
  environment: Joi.string().valid('live', 'staging'),
  serverOnly: Joi.boolean(),
  quota: quotaSchema.allow(null),
  createdAt: Joi.string().isoDate(),
  lastUsedAt: Joi.string().isoDate().allow(null),
  revokedAt: Joi.string().isoDate().allow(null),
});

export const createdApiKeyView = apiKeyView.keys({ key: Joi.string() });

export const createUserParams = Joi.object<CreateUserParams, true>({
  name: personName().required(),
  email: email().required(),
  phone: e164Phone().required(),
});

export const findUsersParams = Joi.object<FindUsersParams, true>({
  email: email(),
  limit: Joi.number().integer().min(1).max(100).default(50),
});

export const userIdParams = Joi.object<{ userId: string }, true>({ userId: uuid().required() });

export const keyIdParams = Joi.object<{ keyId: string }, true>({ keyId: uuid().required() });

/** Keys are made for this deployment's environment unless the operator names the other. */
export const createApiKeyParams = (defaultEnvironment: AppEnvironment) =>
  Joi.object<CreateApiKeyParams, true>({
    userId: uuid().required(),
    environment: Joi.string().valid('live', 'staging').default(defaultEnvironment),
    serverOnly: Joi.boolean().default(true),
    quota: quotaSchema.allow(null).default(null),
  });

export const listApiKeysParams = Joi.object<ListApiKeysParams, true>({
  userId: uuid().required(),
  ...pageParams(),
});
