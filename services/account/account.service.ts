import Joi from 'joi';
import type { Config } from '../../libs/config';
import { conflict, notFound, unauthorized } from '../../libs/errors';
import { ServiceDatabase, isDuplicateKey } from '../../libs/mongo';
import { e164Phone, email, pageParams, personName, uuid } from '../../libs/schemas';
import { action, type ServiceDefinition } from '../../libs/service';
import { generateApiKey } from './api-keys';
import { defineAccountModels } from './models';
import { toApiKeyView, toUserView } from './views';

/** Enough for rotation across environments and apps; a leak of many at once stays visible. */
export const MAX_ACTIVE_KEYS_PER_USER = 50;

/** Broadcast to every gateway when a key is revoked so caches drop it at once. */
export const API_KEY_REVOKED_EVENT = 'account.apiKeyRevoked';

const userView = Joi.object({
  id: Joi.string().uuid(),
  name: Joi.string(),
  email: Joi.string(),
  phone: Joi.string(),
  profileId: Joi.string().uuid(),
  createdAt: Joi.string().isoDate(),
  updatedAt: Joi.string().isoDate(),
});

const quotaSchema = Joi.object({
  limit: Joi.number().integer().min(1).max(1_000_000).required(),
  windowSeconds: Joi.number().integer().min(1).max(86_400).required(),
});

const apiKeyView = Joi.object({
  id: Joi.string().uuid(),
  userId: Joi.string().uuid(),
  environment: Joi.string().valid('live', 'staging'),
  serverOnly: Joi.boolean(),
  quota: quotaSchema.allow(null),
  createdAt: Joi.string().isoDate(),
  lastUsedAt: Joi.string().isoDate().allow(null),
  revokedAt: Joi.string().isoDate().allow(null),
});

export function createAccountService(config: Config): ServiceDefinition {
  const db = new ServiceDatabase(config, 'account', defineAccountModels);

  async function findUser(userId: string) {
    const user = await db.models.User.findById(userId).lean();
    if (!user) throw notFound(`User ${userId} not found`);
    return user;
  }

  return {
    name: 'account',
    mixins: [db.mixin()],
    actions: {
      createUser: action({
        http: {
          group: 'admin',
          method: 'POST',
          path: '/users',
          status: 201,
          message: 'User created',
          summary: 'Create a user',
          response: userView,
          errors: { 409: 'A user with this e-mail already exists' },
        },
        params: Joi.object({
          name: personName().required(),
          email: email().required(),
          phone: e164Phone().required(),
        }),
        async handler(ctx) {
          try {
            const user = await db.models.User.create(ctx.params);
            ctx.meta.$location = `/admin/users/${user._id}`;
            return toUserView(user.toObject());
          } catch (err) {
            if (isDuplicateKey(err)) {
              throw conflict(`A user with e-mail ${ctx.params.email} already exists`);
            }
            throw err;
          }
        },
      }),

      findUsers: action({
        http: {
          group: 'admin',
          method: 'GET',
          path: '/users',
          message: 'Users retrieved',
          summary: 'List users, newest first, optionally by e-mail',
          response: Joi.array().items(userView),
        },
        params: Joi.object({
          email: email(),
          limit: Joi.number().integer().min(1).max(100).default(50),
        }),
        async handler(ctx) {
          const filter = ctx.params.email ? { email: ctx.params.email } : {};
          const users = await db.models.User.find(filter)
            .sort({ createdAt: -1 })
            .limit(ctx.params.limit)
            .lean();
          return users.map(toUserView);
        },
      }),

      getUser: action({
        http: {
          group: 'admin',
          method: 'GET',
          path: '/users/:userId',
          message: 'User retrieved',
          summary: 'Get a user',
          response: userView,
        },
        params: Joi.object({ userId: uuid().required() }),
        async handler(ctx) {
          return toUserView(await findUser(ctx.params.userId));
        },
      }),

      createApiKey: action({
        http: {
          group: 'admin',
          method: 'POST',
          path: '/users/:userId/api-keys',
          status: 201,
          message: 'API key created; store it now, it is not shown again',
          summary: 'Create an API key for a user',
          description:
            'The plaintext `key` is returned only in this response; the platform keeps its SHA-256 hash.',
          response: apiKeyView.keys({ key: Joi.string() }),
          errors: { 409: `The user already has ${MAX_ACTIVE_KEYS_PER_USER} active keys` },
        },
        params: Joi.object({
          userId: uuid().required(),
          environment: Joi.string().valid('live', 'staging').default(config.appEnv),
          serverOnly: Joi.boolean().default(true),
          quota: quotaSchema.allow(null).default(null),
        }),
        async handler(ctx) {
          const { userId, environment, serverOnly, quota } = ctx.params;
          await findUser(userId);
          const active = await db.models.ApiKey.countDocuments({ userId, revokedAt: null });
          if (active >= MAX_ACTIVE_KEYS_PER_USER) {
            throw conflict(
              `User ${userId} already has ${active} active API keys (at most ${MAX_ACTIVE_KEYS_PER_USER}); revoke one with DELETE /admin/api-keys/:keyId first`,
            );
          }
          const { plaintext, hash } = generateApiKey(config.apiKeyPrefix, environment);
          const key = await db.models.ApiKey.create({
            userId,
            hash,
            environment,
            serverOnly,
            quota,
          });
          const view = toApiKeyView(key.toObject());
          return {
            id: view.id,
            key: plaintext,
            environment: view.environment,
            serverOnly: view.serverOnly,
            quota: view.quota,
            createdAt: view.createdAt,
          };
        },
      }),

      listApiKeys: action({
        http: {
          group: 'admin',
          method: 'GET',
          path: '/users/:userId/api-keys',
          message: 'API keys retrieved',
          summary: "List a user's API keys (never the key itself), newest first, a page at a time",
          response: Joi.array().items(apiKeyView),
        },
        params: Joi.object({
          userId: uuid().required(),
          ...pageParams(),
        }),
        async handler(ctx) {
          const { userId, limit, offset } = ctx.params;
          await findUser(userId);
          const keys = await db.models.ApiKey.find({ userId })
            .sort({ createdAt: -1, _id: -1 })
            .skip(offset)
            .limit(limit)
            .lean();
          return keys.map(toApiKeyView);
        },
      }),

      revokeApiKey: action({
        http: {
          group: 'admin',
          method: 'DELETE',
          path: '/api-keys/:keyId',
          status: 204,
          message: 'API key revoked',
          summary: 'Revoke an API key (idempotent)',
        },
        params: Joi.object({ keyId: uuid().required() }),
        async handler(ctx) {
          const { keyId } = ctx.params;
          const key = await db.models.ApiKey.findById(keyId).lean();
          if (!key) throw notFound(`API key ${keyId} not found`);
          if (!key.revokedAt) {
            await db.models.ApiKey.updateOne(
              { _id: keyId, revokedAt: null },
              { $set: { revokedAt: new Date() } },
            );
          }
          await ctx.broadcast(API_KEY_REVOKED_EVENT, { keyId, hash: key.hash });
          return null;
        },
      }),

      me: action({
        http: {
          group: 'api',
          method: 'GET',
          path: '/me',
          message: 'Authenticated account retrieved',
          summary: 'The user and API key behind this request',
          description: 'A cheap way to check that a key works and which user it acts as.',
          response: Joi.object({ user: userView, apiKey: apiKeyView }),
        },
        params: Joi.object({}),
        async handler(ctx) {
          const { user, apiKeyId } = ctx.meta;
          if (!user || !apiKeyId) throw unauthorized('API key is required');
          const key = await db.models.ApiKey.findById(apiKeyId).lean();
          if (!key) throw unauthorized('Unknown API key; check the key or create a new one');
          return { user: toUserView(await findUser(user.id)), apiKey: toApiKeyView(key) };
        },
      }),

      /** Internal: the gateway looks a presented key up by its hash. */
      resolveApiKey: action({
        visibility: 'public',
        params: Joi.object({ hash: Joi.string().hex().length(64).required() }),
        async handler(ctx) {
          const key = await db.models.ApiKey.findOne({ hash: ctx.params.hash }).lean();
          if (!key) return null;
          const user = await db.models.User.findById(key.userId).lean();
          if (!user) return null;
          if (!key.revokedAt) {
            // The gateway caches lookups, so this runs at most once per cache period per key.
            await db.models.ApiKey.updateOne(
              { _id: key._id },
              { $set: { lastUsedAt: new Date() } },
            );
          }
          return { ...toApiKeyView(key), user: toUserView(user) };
        },
      }),
    },
  };
}
