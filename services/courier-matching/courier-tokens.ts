import { randomUUID } from 'node:crypto';
import Joi from '../../libs/joi';
import { broadcast } from '../../libs/contracts';
import {
  COURIER_NOT_FOUND,
  COURIER_TOKENS,
  COURIER_TOKENS_CHANGED_EVENT,
  authenticateCourierParams,
  courierIdParams,
} from '../../libs/contracts/matching';
import { conflict, notFound } from '../../libs/errors';
import { noteTokenUse } from '../../libs/issued-tokens';
import { capRefusals, createInPlace, givePlaceBack } from '../../libs/places';
import { action, implement, makerOf, type ServiceActions } from '../../libs/service';
import {
  COURIER_TOKENS_MAX,
  courierTokenView,
  createdCourierTokenView,
  tokenIdParams,
} from './schemas';
import type { CourierStore } from './store';
import type { CourierTokenStore } from './token-store';
import { toCourierTokenView, toCreatedCourierToken } from './views';

/** A new token: the prefix and 32 random bytes in base64url (43 characters). */
export const generateCourierToken = () => COURIER_TOKENS.issue();

export const VIRTUAL_COURIER_TOKEN =
  "A simulated delivery's virtual courier is driven by the sandbox's simulator and takes no token: create one for a real courier";

export interface TokenActionDeps {
  couriers: CourierStore;
  tokens: CourierTokenStore;
  now?: () => Date;
}

/**
 * Courier tokens: the operators create, list and revoke them; the gateway authenticates the
 * courier app's `/courier` calls with them (docs/couriers.md "Courier tokens").
 */
export function createTokenActions(deps: TokenActionDeps): ServiceActions {
  const { couriers, tokens } = deps;
  const now = deps.now ?? (() => new Date());

  async function findCourier(courierId: string) {
    const courier = await couriers.find(courierId);
    if (!courier) throw notFound(COURIER_NOT_FOUND);
    return courier;
  }

  return {
    createCourierToken: action({
      retry: 'never',
      http: {
        group: 'admin',
        method: 'POST',
        path: '/couriers/:courierId/tokens',
        status: 201,
        message: 'Courier token created; hand it to the courier app now, it is not shown again',
        creates: 'tokenId',
        summary: 'Create a token for the courier app',
        description: `The courier app sends it as \`Authorization: Bearer <token>\` on \`/courier\` routes, which then act as this courier. The plaintext \`token\` is returned only in this answer; the platform keeps its SHA-256. A retired courier's tokens, new ones included, work again once it is active. At most ${COURIER_TOKENS_MAX} per courier.`,
        response: createdCourierTokenView,
        errors: {
          404: 'Courier not found',
          409: `The courier already has ${COURIER_TOKENS_MAX} tokens, or creations under way hold the last places (retry in a few seconds); or it is a simulated delivery's virtual courier`,
        },
      },
      params: courierIdParams,
      async handler(ctx) {
        const { courierId } = ctx.params;
        // Its steps are the simulator's alone: a token would let whoever holds it report
        // steps and positions of a simulated delivery beside it.
        if ((await findCourier(courierId)).virtual) throw conflict(VIRTUAL_COURIER_TOKEN);
        const live = await tokens.listFor(courierId);
        const { token, hash } = generateCourierToken();
        const tokenId = randomUUID();
        const record = await createInPlace({
          store: tokens.places,
          owner: courierId,
          cap: COURIER_TOKENS_MAX,
          live,
          holder: tokenId,
          now: now(),
          refused: capRefusals({
            owner: `Courier ${courierId}`,
            things: 'tokens',
            underWay: 'creations',
            advice: 'revoke one with DELETE /admin/courier-tokens/:tokenId first',
            error: conflict,
          }),
          insert: (place) =>
            tokens.create({ hash, tokenId, courierId, place, ...makerOf(ctx.meta.operator) }),
          stored: async () => (await tokens.findByTokenId(tokenId)) !== null,
        });
        return toCreatedCourierToken(record, token);
      },
    }),

    listCourierTokens: action({
      retry: 'safe',
      http: {
        group: 'admin',
        method: 'GET',
        path: '/couriers/:courierId/tokens',
        message: 'Courier tokens retrieved',
        summary: "A courier's tokens (never the tokens themselves), newest first",
        response: Joi.array().items(courierTokenView),
        errors: { 404: 'Courier not found' },
      },
      params: courierIdParams,
      async handler(ctx) {
        const { courierId } = ctx.params;
        await findCourier(courierId);
        return (await tokens.listFor(courierId)).map(toCourierTokenView);
      },
    }),

    revokeCourierToken: action({
      // A second revocation answers 404: the token is gone.
      retry: 'never',
      http: {
        group: 'admin',
        method: 'DELETE',
        path: '/courier-tokens/:tokenId',
        status: 204,
        message: 'Courier token revoked',
        summary: 'Revoke a courier token',
        description:
          'Every gateway stops accepting it at once (by event; at the latest after `COURIER_TOKEN_CACHE_SECONDS`).',
        errors: { 404: 'Courier token not found' },
      },
      params: tokenIdParams,
      async handler(ctx) {
        const { tokenId } = ctx.params;
        const missing = () =>
          notFound(
            `Courier token ${tokenId} not found; GET /admin/couriers/:courierId/tokens lists a courier's tokens`,
          );
        const token = await tokens.findByTokenId(tokenId);
        if (!token) throw missing();
        const changed = { courierId: token.courierId, hashes: [token._id] };
        // Told before the removal too: a repeat answers 404 (the token is gone), so a
        // broadcast that fails must fail while the token is still there to be revoked again.
        // Told again after it, before the place is given back: a gateway that looked the token
        // up in between forgets it then. A place not given back frees itself after a while
        // (its token gone, it reads as never taken).
        await broadcast(ctx, COURIER_TOKENS_CHANGED_EVENT, changed);
        // Revoked at once by another call: that one's answer is the 204, this one's a repeat's.
        if (!(await tokens.remove(token._id))) throw missing();
        await broadcast(ctx, COURIER_TOKENS_CHANGED_EVENT, changed);
        await givePlaceBack(tokens.places, token.courierId, { id: tokenId, place: token.place });
        return null;
      },
    }),

    /**
     * Internal: the courier a token acts as (the gateway, on a cache miss). The courier is read
     * from the database, not from a cache, so that a retirement is never answered late.
     */
    authenticateCourier: implement('courier-matching.authenticateCourier', {
      visibility: 'public',
      params: authenticateCourierParams,
      async handler(ctx) {
        const token = await tokens.findByHash(ctx.params.tokenHash);
        if (!token) return null;
        const courier = await couriers.find(token.courierId);
        // A virtual courier's token (made before they were refused one) acts for nobody.
        if (!courier?.active || courier.virtual) return null;
        const at = now();
        // Not waited for: a database too busy to take the note must not hold up, nor fail, the
        // sign-in of a token that is good (its lookup counted against the holder's address).
        void noteTokenUse(
          token.lastUsedAt,
          at,
          () => tokens.touch(token._id, at),
          (message, details) =>
            ctx.service?.logger.warn(message, { ...details, tokenId: token.tokenId }),
        );
        return { courierId: token.courierId, tokenId: token.tokenId };
      },
    }),
  };
}
