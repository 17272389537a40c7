import { randomUUID } from 'node:crypto';
import Joi from '../../libs/joi';
import { broadcast } from '../../libs/contracts';
import {
  OPERATOR_TOKEN_REVOKED_EVENT,
  OPERATOR_TOKENS,
  authenticateOperatorParams,
  type CreateOperatorTokenParams,
  type ListOperatorTokensParams,
} from '../../libs/contracts/account';
import { conflict, forbidden, notFound } from '../../libs/errors';
import { noteTokenUse } from '../../libs/issued-tokens';
import { capRefusals, createInPlace, givePlaceBack } from '../../libs/places';
import {
  implement,
  operatorOf,
  type ServiceActions,
  type WaybillContext,
  type WithDefaults,
} from '../../libs/service';
import { isLive, OPERATOR_PLACES_OWNER, type OperatorTokenStore } from './operator-store';
import {
  OPERATOR_TOKENS_MAX,
  createOperatorTokenParams,
  createdOperatorTokenView,
  listOperatorTokensParams,
  operatorTokenIdParams,
  operatorTokenView,
} from './schemas';
import { toCreatedOperatorToken, toOperatorTokenView } from './views';
import type { Logger } from 'moleculer';

const DAY_MS = 86_400_000;

/** Why an operator token may not do what only the platform's own credentials may. */
const PLATFORM_CREDENTIALS_ONLY =
  'Only ADMIN_TOKEN or the operator CLI may manage operator tokens: an operator token cannot make, or revoke, another';

/**
 * The operator acting, when it holds the platform's own credentials (ADMIN_TOKEN, the CLI):
 * an operator token that could make more would outlive its own revocation.
 */
function platformOperator(ctx: WaybillContext<unknown>) {
  const operator = ctx.meta.operator;
  if (!operator || operator.tokenId !== null) throw forbidden(PLATFORM_CREDENTIALS_ONLY);
  return operator;
}

export interface OperatorTokenActionDeps {
  tokens: OperatorTokenStore;
  logger: () => Logger;
  now?: () => Date;
}

/**
 * Operators' own tokens for `/admin` (decision 157): made and revoked with the platform's own
 * credentials (a token may revoke itself), listed by any operator; the gateway authenticates
 * `/admin` calls with them and names their holder in every log line and record they make.
 */
export function createOperatorTokenActions(deps: OperatorTokenActionDeps): ServiceActions {
  const { tokens, logger } = deps;
  const now = deps.now ?? (() => new Date());

  return {
    createOperatorToken: implement('account.createOperatorToken', {
      http: {
        group: 'admin',
        method: 'POST',
        path: '/operator-tokens',
        status: 201,
        message: 'Operator token created; hand it to its operator now, it is not shown again',
        creates: 'operatorTokenId',
        summary: "Create an operator's own admin token",
        description: `Only with \`ADMIN_TOKEN\` itself: an operator token cannot make another. Its holder calls \`/admin\` with \`Authorization: Bearer <token>\`, and every log line and record of what they do names them. The plaintext \`token\` is returned only in this answer; the platform keeps its SHA-256. At most ${OPERATOR_TOKENS_MAX} work at once.`,
        response: createdOperatorTokenView,
        errors: {
          403: 'Called with an operator token rather than ADMIN_TOKEN',
          409: `${OPERATOR_TOKENS_MAX} operator tokens work already, or creations under way hold the last places (retry in a few seconds)`,
        },
      },
      params: createOperatorTokenParams,
      async handler(ctx: WaybillContext<CreateOperatorTokenParams>) {
        const creator = platformOperator(ctx);
        const { name, expiresInDays } = ctx.params;
        const at = now();
        const { token, hash } = OPERATOR_TOKENS.issue();
        const tokenId = randomUUID();
        const record = await createInPlace({
          store: tokens.places,
          owner: OPERATOR_PLACES_OWNER,
          cap: OPERATOR_TOKENS_MAX,
          live: await tokens.livePlaces(at),
          holder: tokenId,
          now: at,
          refused: capRefusals({
            owner: 'The platform',
            things: 'operator tokens that work',
            underWay: 'creations',
            advice: 'revoke one with DELETE /admin/operator-tokens/:operatorTokenId first',
            error: conflict,
          }),
          insert: (place) =>
            tokens.create({
              hash,
              tokenId,
              name,
              createdBy: creator.name,
              expiresAt: expiresInDays ? new Date(at.getTime() + expiresInDays * DAY_MS) : null,
              createdAt: at,
              place,
            }),
          stored: async () => (await tokens.findByTokenId(tokenId)) !== null,
        });
        logger().info('operator token created', { tokenId, name, ...operatorOf(ctx.meta) });
        return toCreatedOperatorToken(record, token);
      },
    }),

    listOperatorTokens: implement('account.listOperatorTokens', {
      http: {
        group: 'admin',
        method: 'GET',
        path: '/operator-tokens',
        message: 'Operator tokens retrieved',
        summary: 'Operator tokens (never the tokens themselves), newest first, a page at a time',
        description:
          'Revoked and expired ones too: the records and logs they made name them. Page with `offset` (the next page starts at `offset + limit`).',
        response: Joi.array().items(operatorTokenView),
      },
      params: listOperatorTokensParams,
      async handler(
        ctx: WaybillContext<WithDefaults<ListOperatorTokensParams, 'limit' | 'offset'>>,
      ) {
        const page = await tokens.page(ctx.params);
        const revoked = await tokens.revocationsOf(page.map((t) => t.tokenId));
        return page.map((token) => toOperatorTokenView(token, revoked.get(token.tokenId)));
      },
    }),

    revokeOperatorToken: implement('account.revokeOperatorToken', {
      http: {
        group: 'admin',
        method: 'DELETE',
        path: '/operator-tokens/:operatorTokenId',
        status: 204,
        message: 'Operator token revoked',
        summary: 'Revoke an operator token (idempotent)',
        description:
          'With `ADMIN_TOKEN`, any; with an operator token, itself only (a lost laptop). Every gateway stops accepting it at once (by event; at the latest after `API_KEY_CACHE_SECONDS`). The first revocation, and who made it, stand.',
        errors: {
          403: 'Called with another operator token than the one revoked',
          404: 'Operator token not found',
        },
      },
      params: operatorTokenIdParams,
      async handler(ctx) {
        const { operatorTokenId: tokenId } = ctx.params;
        const operator =
          ctx.meta.operator?.tokenId === tokenId ? ctx.meta.operator : platformOperator(ctx);
        const token = await tokens.findByTokenId(tokenId);
        if (!token) {
          throw notFound(
            `Operator token ${tokenId} not found; GET /admin/operator-tokens lists them`,
          );
        }
        const revocation = await tokens.revoke(tokenId, operator.name, now());
        // Told after the revocation is stored: a lookup under way, answered before it, is
        // disowned by the gateways that forget it; and again on a repeat, should this fail.
        await broadcast(ctx, OPERATOR_TOKEN_REVOKED_EVENT, { tokenId, hash: token._id });
        await givePlaceBack(tokens.places, OPERATOR_PLACES_OWNER, {
          id: tokenId,
          place: token.place,
        });
        logger().info('operator token revoked', {
          tokenId,
          name: token.name,
          revokedAt: revocation.at.toISOString(),
          ...operatorOf(ctx.meta),
        });
        return null;
      },
    }),

    /**
     * Internal: whom an operator token acts as (the gateway, on a cache miss); null when it is
     * unknown or revoked. Read from the database, so a revocation is never answered late. An
     * expired one is answered with its expiry, which the gateway refuses as expired: a token we
     * issued, whose holder is told so, and no failed guess counted against their address.
     */
    authenticateOperator: implement('account.authenticateOperator', {
      visibility: 'public',
      params: authenticateOperatorParams,
      async handler(ctx) {
        const token = await tokens.findByHash(ctx.params.tokenHash);
        if (!token) return null;
        const at = now();
        if (await tokens.revocationOf(token.tokenId)) return null;
        const expiresAt = token.expiresAt ? token.expiresAt.toISOString() : null;
        if (!isLive(token, null, at))
          return { tokenId: token.tokenId, name: token.name, expiresAt };
        // Not waited for: a database too busy to take the note must not hold up, nor fail, the
        // sign-in of a token that is good (its lookup counted against the holder's address).
        void noteTokenUse(
          token.lastUsedAt,
          at,
          () => tokens.touch(token._id, at),
          (message, details) => logger().warn(message, { ...details, tokenId: token.tokenId }),
        );
        return { tokenId: token.tokenId, name: token.name, expiresAt };
      },
    }),
  };
}
