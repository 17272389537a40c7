import Joi from '../../libs/joi';
import { APP_ENVIRONMENTS, type AppEnvironment } from '../../libs/config';
import {
  OPERATOR_TOKENS,
  type CreateApiKeyParams,
  type CreateOperatorTokenParams,
  type CreateUserParams,
  type FindUsersParams,
  type ListApiKeysParams,
  type ListOperatorTokensParams,
  type QuotaView,
  type UserByContactParams,
} from '../../libs/contracts/account';
import {
  BLANK,
  documented,
  e164Phone,
  email,
  fromUrl,
  makerFields,
  named,
  pageParams,
  personName,
  plainText,
  uuid,
  view,
} from '../../libs/schemas';

/** Params and answers of the account actions; the answers are what /openapi.json documents. */

export const userView = view('User', {
  id: uuid(),
  name: Joi.string(),
  email: Joi.string(),
  phone: Joi.string(),
  profileId: uuid(),
  createdAt: Joi.string().isoDate(),
  updatedAt: Joi.string().isoDate(),
});

const quotaSchema = Joi.object<QuotaView, true>({
  limit: Joi.number().integer().min(1).max(1_000_000).required(),
  windowSeconds: Joi.number().integer().min(1).max(86_400).required(),
});

const quotaView = named('Quota', quotaSchema).description(
  "The key's own quota, instead of QUOTA_LIMIT per QUOTA_WINDOW_SECONDS",
);

const apiKeyFields = {
  id: uuid(),
  environment: Joi.string().valid(...APP_ENVIRONMENTS),
  serverOnly: Joi.boolean(),
  quota: quotaView.required().allow(null),
  createdAt: Joi.string().isoDate(),
};

/** A stored key as its owner sees it. */
const storedKeyFields = {
  ...apiKeyFields,
  userId: uuid(),
  lastUsedAt: Joi.string().isoDate().allow(null),
  revokedAt: Joi.string().isoDate().allow(null),
};

export const apiKeyView = view('ApiKey', storedKeyFields);

/** A key as operators list it: who made it too (its owner's `GET /api/me` does not say). */
export const listedApiKeyView = view('ListedApiKey', { ...storedKeyFields, ...makerFields() });

/** The answer of a creation: the key itself, once, and no use yet. */
export const createdApiKeyView = view('NewApiKey', {
  ...apiKeyFields,
  key: Joi.string().description('The key itself, shown this once'),
  ...makerFields(),
});

export const accountView = view('Account', { user: userView, apiKey: apiKeyView });

export const createUserParams = Joi.object<CreateUserParams, true>({
  name: personName().required(),
  email: email().required(),
  phone: e164Phone().required(),
}).example({ name: 'Ada Obi', email: 'ada@example.com', phone: '+2348012345678' });

export const findUsersParams = Joi.object<FindUsersParams, true>({
  email: email(),
  limit: fromUrl(Joi.number().integer().min(1).max(100).default(50)),
  offset: pageParams().offset,
});

export const userByContactParams = Joi.object<UserByContactParams, true>({
  email: email(),
  phone: e164Phone(),
}).or('email', 'phone');

export const keyIdParams = Joi.object<{ keyId: string }, true>({ keyId: uuid().required() });

/**
 * Keys are made for this deployment's environment: a platform accepts its own environment's
 * keys only, so another's, stored here, could never be used anywhere (its platform has a
 * database of its own, decision 138). Naming it is allowed, and must name this one.
 */
export const createApiKeyParams = (environment: AppEnvironment) =>
  Joi.object<CreateApiKeyParams, true>({
    userId: uuid().required(),
    environment: Joi.string()
      .valid(environment)
      .default(environment)
      .messages({
        'any.only': `{{#label}} must be ${environment}: this platform runs as ${environment} and accepts its own keys only; make ${APP_ENVIRONMENTS.filter((e) => e !== environment).join(', ')} keys on that platform`,
      }),
    serverOnly: Joi.boolean()
      .default(true)
      .description(
        'true (default): a secret key for servers, for /api and /file. false: a client-app (publishable) key, to ship in apps and web pages: /file only',
      ),
    quota: quotaSchema.allow(null).default(null),
  });

export const listApiKeysParams = Joi.object<ListApiKeysParams, true>({
  userId: uuid().required(),
  ...pageParams(),
});

/**
 * Operator tokens that work at once, across the platform: one or two per operator of a large
 * team. Revoked and expired ones do not count, and are kept (the records they made name them).
 */
export const OPERATOR_TOKENS_MAX = 100;

/**
 * Names that would read as the platform's own credentials in the logs and records
 * (`admin-token`, `cli`, `cli:<who>`), in any case; one pattern for the check and the document.
 */
const RESERVED_OPERATOR_NAME =
  '(?:[Aa][Dd][Mm][Ii][Nn]-[Tt][Oo][Kk][Ee][Nn]|[Cc][Ll][Ii]|[Cc][Ll][Ii]:[\\s\\S]*)';
const reservedName = new RegExp(`^${RESERVED_OPERATOR_NAME}$`);

const operatorName = documented(plainText(100).min(1), {
  not: { pattern: `^${BLANK}*${RESERVED_OPERATOR_NAME}${BLANK}*$` },
})
  .custom((value: string, helpers) =>
    reservedName.test(value) ? helpers.error('string.reservedOperator') : value,
  )
  .messages({
    'string.reservedOperator':
      "{{#label}} may not be admin-token or cli (or start with cli:): those name the platform's own credentials in the records",
  })
  .description(
    'Who holds the token, as the logs and records name what they do with it (an e-mail, a name)',
  );

export const createOperatorTokenParams = Joi.object<CreateOperatorTokenParams, true>({
  name: operatorName.required(),
  expiresInDays: Joi.number()
    .integer()
    .min(1)
    .max(3650)
    .description('Days until it stops working on its own; never, when left out'),
}).example({ name: 'ada@ops.example.com', expiresInDays: 90 });

export const listOperatorTokensParams = Joi.object<ListOperatorTokensParams, true>({
  limit: fromUrl(Joi.number().integer().min(1).max(100).default(50)),
  offset: pageParams().offset,
});

export const operatorTokenIdParams = Joi.object<{ operatorTokenId: string }, true>({
  operatorTokenId: uuid().required(),
});

const operatorTokenFields = {
  id: uuid().description('The token’s id: revoke it with `DELETE /admin/operator-tokens/{id}`'),
  name: Joi.string(),
  createdBy: Joi.string().description(
    'The operator who made it, or `admin-token` / `cli` (the platform’s own credentials)',
  ),
  createdAt: Joi.string().isoDate(),
  expiresAt: Joi.string().isoDate().allow(null),
};

export const operatorTokenView = view('OperatorToken', {
  ...operatorTokenFields,
  lastUsedAt: Joi.string()
    .isoDate()
    .allow(null)
    .description(
      'When a gateway last looked the token up, to the nearest 10 minutes; null if never',
    ),
  revokedAt: Joi.string().isoDate().allow(null),
  revokedBy: Joi.string().allow(null),
});

export const createdOperatorTokenView = view('NewOperatorToken', {
  ...operatorTokenFields,
  token: Joi.string()
    .pattern(OPERATOR_TOKENS.pattern)
    .description(
      'The token itself, for `Authorization: Bearer <token>` on `/admin`. Shown only in this answer: the platform keeps its SHA-256',
    ),
});
