import { randomUUID } from 'node:crypto';
import Joi from '../../libs/joi';
import { Backfills } from '../../libs/backfills';
import type { Config } from '../../libs/config';
import { broadcast } from '../../libs/contracts';
import {
  API_KEY_REVOKED_EVENT,
  resolveApiKeyParams,
  type ListedApiKey,
  type CreateApiKeyParams,
  type FindUsersParams,
  type ListApiKeysParams,
  type UserView,
} from '../../libs/contracts/account';
import { conflict, notFound, unauthorized } from '../../libs/errors';
import { capRefusals, createInPlace, givePlaceBack } from '../../libs/places';
import { ServiceDatabase, isDuplicateKey } from '../../libs/mongo';
import {
  action,
  implement,
  makerOf,
  operatorOf,
  type ServiceDefinition,
  type WaybillContext,
  type WithDefaults,
} from '../../libs/service';
import { generateApiKey } from './api-keys';
import { OperatorTokenStore } from './operator-store';
import { createOperatorTokenActions } from './operator-tokens';
import type { Logger } from 'moleculer';
import {
  accountView,
  listedApiKeyView,
  createApiKeyParams,
  createUserParams,
  createdApiKeyView,
  findUsersParams,
  keyIdParams,
  listApiKeysParams,
  userByContactParams,
  userView,
} from './schemas';
import { userIdParams } from '../../libs/schemas';
import { AccountStore, defineAccountModels } from './store';
import { toApiKeyView, toCreatedApiKey, toListedApiKey, toUserView } from './views';

/** Enough for rotation across environments and apps; a leak of many at once stays visible. */
export const MAX_ACTIVE_KEYS_PER_USER = 50;

export function createAccountService(config: Config): ServiceDefinition {
  const db = new ServiceDatabase(config, 'account', defineAccountModels);
  const store = new AccountStore(() => db.models);
  const operatorTokens = new OperatorTokenStore(() => db.models);
  let logger: Logger;

  function recordUse(logger: { warn: (...args: unknown[]) => void }, keyId: string): Date {
    const at = new Date();
    store.touchKey(keyId, at).catch((err: unknown) => {
      logger.warn('API key use not recorded', { keyId, err: (err as Error).message });
    });
    return at;
  }

  async function findUser(userId: string) {
    const user = await store.findUser(userId);
    if (!user) throw notFound(`User ${userId} not found`);
    return user;
  }

  // Awaited: until it is done, keys made without their hash's entry are not found.
  const backfills = new Backfills(
    [
      {
        what: 'keys made before their hashes were entered',
        run: (pass) => store.enterStoredKeyHashes(pass),
        awaited: true,
      },
      // Awaited: until it is done, an older account's phone shared with a newer one's would
      // name the newer alone.
      {
        what: 'users made before their contacts were entered',
        run: (pass) => store.enterStoredContacts(pass),
        awaited: true,
      },
    ],
    config.backfillAfterRolloutMs,
  );

  /**
   * The platform records the environment it runs as in its database, once (decision 138), for
   * the operator CLI to refuse another environment's database (bin/cli-services.ts). Started as
   * another environment than the one recorded, it is only warned about: a database may be
   * moved on purpose (delete the record then). Not the CLI's own services: they record nothing.
   * A failure is only logged: the record protects the CLI, and must not keep the platform down.
   */
  async function recordEnvironment(logger: { warn: (...args: unknown[]) => void }) {
    if (!config.background) return;
    const { appEnv } = config;
    try {
      const recorded = await store.recordEnvironment(appEnv);
      if (recorded !== appEnv) {
        logger.warn(
          `APP_ENV is ${appEnv}, but this database is recorded as a ${recorded} platform's; if it was moved on purpose, delete the record (account database, collection deployment)`,
        );
      }
    } catch (err) {
      logger.warn('the platform’s environment not recorded; the next start records it', {
        err: (err as Error).message,
      });
    }
  }

  /**
   * A creation stopped before its e-mail was entered is completed by a repeat, which is
   * answered 409 whether or not this goes well.
   */
  async function completeContacts(email: string, logger: { warn: (...args: unknown[]) => void }) {
    try {
      const [holder] = await store.findUsers({ email, limit: 1 });
      if (holder) await store.enterContacts(holder);
    } catch (err) {
      logger.warn('contacts of an existing user not completed', { err: (err as Error).message });
    }
  }

  return {
    name: 'account',
    mixins: [db.mixin()],
    created() {
      logger = this.logger;
    },
    async started() {
      await recordEnvironment(this.logger);
      await backfills.start(this.logger);
    },
    async stopped() {
      await backfills.stop();
    },
    actions: {
      ...createOperatorTokenActions({ tokens: operatorTokens, logger: () => logger }),
      createUser: implement('account.createUser', {
        http: {
          group: 'admin',
          method: 'POST',
          path: '/users',
          status: 201,
          message: 'User created',
          creates: 'userId',
          summary: 'Create a user',
          response: userView,
          errors: { 409: 'A user with this e-mail already exists' },
        },
        params: createUserParams,
        async handler(ctx): Promise<UserView> {
          try {
            const user = await store.createUser(ctx.params);
            ctx.meta.$location = `/admin/users/${user._id}`;
            return toUserView(user);
          } catch (err) {
            if (isDuplicateKey(err)) {
              await completeContacts(ctx.params.email, ctx.broker.logger);
              throw conflict(`A user with e-mail ${ctx.params.email} already exists`);
            }
            throw err;
          }
        },
      }),

      findUsers: implement('account.findUsers', {
        http: {
          group: 'admin',
          method: 'GET',
          path: '/users',
          message: 'Users retrieved',
          summary: 'List users, newest first, optionally by e-mail, a page at a time',
          description: 'Page with `offset` (the next page starts at `offset + limit`).',
          response: Joi.array().items(userView),
        },
        params: findUsersParams,
        async handler(ctx: WaybillContext<WithDefaults<FindUsersParams, 'limit' | 'offset'>>) {
          const { email, limit, offset } = ctx.params;
          return (await store.findUsers({ email, limit, offset })).map(toUserView);
        },
      }),

      getUser: implement('account.getUser', {
        http: {
          group: 'admin',
          method: 'GET',
          path: '/users/:userId',
          message: 'User retrieved',
          summary: 'Get a user',
          response: userView,
        },
        params: userIdParams,
        async handler(ctx) {
          return toUserView(await findUser(ctx.params.userId));
        },
      }),

      createApiKey: implement('account.createApiKey', {
        http: {
          group: 'admin',
          method: 'POST',
          path: '/users/:userId/api-keys',
          status: 201,
          message: 'API key created; store it now, it is not shown again',
          creates: 'keyId',
          summary: 'Create an API key for a user',
          description:
            'The plaintext `key` is returned only in this response; the platform keeps its SHA-256 hash.',
          response: createdApiKeyView,
          errors: {
            409: `The user already has ${MAX_ACTIVE_KEYS_PER_USER} active keys, or creations under way hold the last places (retry in a few seconds)`,
          },
        },
        params: createApiKeyParams(config.appEnv),
        async handler(
          ctx: WaybillContext<
            WithDefaults<CreateApiKeyParams, 'environment' | 'serverOnly' | 'quota'>
          >,
        ) {
          const { userId, environment, serverOnly, quota } = ctx.params;
          await findUser(userId);
          const active = await store.activeKeyPlaces(userId);
          const { plaintext, hash } = generateApiKey(config.apiKeyPrefix, environment);
          const keyId = randomUUID();
          const key = await createInPlace({
            store: store.keyPlaces,
            owner: userId,
            cap: MAX_ACTIVE_KEYS_PER_USER,
            live: active,
            holder: keyId,
            now: new Date(),
            refused: capRefusals({
              owner: `User ${userId}`,
              things: 'active API keys',
              underWay: 'creations',
              advice: 'revoke one with DELETE /admin/api-keys/:keyId first',
              error: conflict,
            }),
            insert: (place) =>
              store.createKey({
                _id: keyId,
                userId,
                hash,
                environment,
                serverOnly,
                quota,
                place,
                ...makerOf(ctx.meta.operator),
              }),
            stored: async () => (await store.findKey(keyId)) !== null,
          });
          ctx.service?.logger.info('API key created', {
            keyId,
            userId,
            environment,
            ...operatorOf(ctx.meta),
          });
          return toCreatedApiKey(key, plaintext);
        },
      }),

      listApiKeys: implement('account.listApiKeys', {
        http: {
          group: 'admin',
          method: 'GET',
          path: '/users/:userId/api-keys',
          message: 'API keys retrieved',
          summary: "List a user's API keys (never the key itself), newest first, a page at a time",
          response: Joi.array().items(listedApiKeyView),
        },
        params: listApiKeysParams,
        async handler(
          ctx: WaybillContext<WithDefaults<ListApiKeysParams, 'limit' | 'offset'>>,
        ): Promise<ListedApiKey[]> {
          const { userId, limit, offset } = ctx.params;
          await findUser(userId);
          return (await store.listKeys(userId, { limit, offset })).map(toListedApiKey);
        },
      }),

      revokeApiKey: implement('account.revokeApiKey', {
        http: {
          group: 'admin',
          method: 'DELETE',
          path: '/api-keys/:keyId',
          status: 204,
          message: 'API key revoked',
          summary: 'Revoke an API key (idempotent)',
        },
        params: keyIdParams,
        async handler(ctx) {
          const { keyId } = ctx.params;
          const key = await store.findKey(keyId);
          if (!key) throw notFound(`API key ${keyId} not found`);
          if (!key.revokedAt) await store.revokeKey(keyId);
          // Before the place is given back: gateways forget the key at once even when that
          // fails (the caller's retry gives it back).
          await broadcast(ctx, API_KEY_REVOKED_EVENT, { keyId, hash: key.hash });
          // Again on a repeat: a revocation that stopped before it leaves the place held.
          await givePlaceBack(store.keyPlaces, key.userId, {
            id: keyId,
            place: key.place ?? undefined,
          });
          return null;
        },
      }),

      me: action({
        retry: 'safe',
        http: {
          group: 'api',
          method: 'GET',
          path: '/me',
          message: 'Authenticated account retrieved',
          summary: 'The user and API key behind this request',
          description: 'A cheap way to check that a key works and which user it acts as.',
          response: accountView,
        },
        params: Joi.object({}),
        async handler(ctx) {
          const { user, apiKeyId } = ctx.meta;
          if (!user || !apiKeyId) throw unauthorized('API key is required');
          const key = await store.findKey(apiKeyId);
          if (!key) throw unauthorized('Unknown API key; check the key or create a new one');
          return { user: toUserView(await findUser(user.id)), apiKey: toApiKeyView(key) };
        },
      }),

      /** Internal: order links a delivery to its recipient's account (decision 107). */
      userByContact: implement('account.userByContact', {
        visibility: 'public',
        params: userByContactParams,
        async handler(ctx) {
          const user = await store.userByContact(ctx.params);
          return user && toUserView(user);
        },
      }),

      /** Internal: the gateway looks a presented key up by its hash. */
      resolveApiKey: implement('account.resolveApiKey', {
        visibility: 'public',
        params: resolveApiKeyParams,
        async handler(ctx) {
          const key = await store.findKeyByHash(ctx.params.hash);
          if (!key) return null;
          const user = await store.findUser(key.userId);
          if (!user) return null;
          // The gateway caches lookups, so this runs at most once per cache period per key.
          // Not awaited: a use that cannot be recorded (the database busy) must not refuse a
          // good key, nor hold its request up.
          const used = key.revokedAt
            ? key
            : { ...key, lastUsedAt: recordUse(ctx.broker.logger, key._id) };
          return { ...toApiKeyView(used), user: toUserView(user) };
        },
      }),
    },
  };
}
