import { randomUUID } from 'node:crypto';
import type { Config } from '../../libs/config';
import Joi from '../../libs/joi';
import { badRequest, conflict, notFound } from '../../libs/errors';
import { checkTargetUrl, resolvedHostRefusal, type Resolver } from '../../libs/outbound-url';
import { OwnerLookups } from '../../libs/owner-lookups';
import { action, requireUser, type ServiceActions, type WaybillContext } from '../../libs/service';
import { newWebhookSecret } from '../../libs/webhook-signature';
import { nameBasedId } from '../../libs/ids';
import { insertOnce } from '../../libs/mongo';
import { capRefusals, createInPlace, givePlaceBack } from '../../libs/places';
import {
  CLAIM_HOLD_MS,
  MOST_SIGNING_SECRETS,
  isSuperseded,
  queueEntryOf,
  ROTATION_OVERLAP_MS,
  targetPolicy,
} from './dispatch-rules';
import { pastReplay } from './retention';
import {
  createWebhookParams,
  deliveriesParams,
  replayParams,
  webhookDeliveryView,
  webhookIdParams,
  webhookView,
  webhookWithSecretView,
  type CreateWebhookParams,
  type DeliveriesParams,
  type ReplayParams,
  type WebhookIdParams,
} from './schemas';
import type { SecretBox } from '../../libs/secret-box';
import {
  endpointOwner,
  secretId,
  type EndpointRecord,
  type MessageRecord,
  type WebhookStore,
} from './store';
import { toWebhookDeliveryView, toWebhookView, toWebhookWithSecret } from './views';

export interface EndpointActionDeps {
  store: WebhookStore;
  config: Config['webhook'];
  appEnv: Config['appEnv'];
  box: SecretBox;
  now?: () => Date;
  /** Resolves a host name an owner gave to its addresses (tests inject one; DNS otherwise). */
  resolve?: (host: string, owner: string) => Promise<string[]>;
  /** Each owner's host-name lookups, two at a time at most (shared with the dispatcher). */
  lookups?: OwnerLookups;
}

const NOT_FOUND = (webhookId: string) =>
  `Webhook ${webhookId} not found; list yours with GET /api/webhooks`;

/** How long a registration waits for the URL's host to resolve. */
const RESOLVE_TIMEOUT_MS = 5000;

/** Every address of `host`, looked up in its owner's turn, given up after the timeout. */
async function resolveAll(resolve: Resolver, host: string): Promise<string[]> {
  const timeout = new Promise<never>((_, reject) => {
    setTimeout(() => reject(new Error('timed out')), RESOLVE_TIMEOUT_MS).unref();
  });
  return (await Promise.race([resolve(host, 0), timeout])).map((a) => a.address);
}

/** The refusal to replay a courier position skipped as stale. */
const skippedNotSent = (messageId: string) =>
  conflict(
    `Webhook delivery ${messageId} is a courier position skipped as stale; it is not sent again`,
  );

/**
 * The integrator's endpoints: registered, listed, removed, their secret rotated, enabled again
 * after a disable, and their messages listed and replayed (docs/webhooks.md).
 */
export function createEndpointActions(deps: EndpointActionDeps): ServiceActions {
  const { store, config, appEnv, box } = deps;
  const now = deps.now ?? (() => new Date());
  const lookups = deps.lookups ?? new OwnerLookups(RESOLVE_TIMEOUT_MS);
  const resolve = deps.resolve ?? ((host, owner) => resolveAll(lookups.of(owner), host));
  const policy = targetPolicy(config, appEnv);

  /** Refuses a URL we must not call, by its form and by where its name points now. */
  async function checkUrl(raw: string, owner: string): Promise<string> {
    const checked = checkTargetUrl(raw, policy);
    if (!checked.ok) throw badRequest(checked.reason, [{ field: 'url', message: checked.reason }]);
    const host = checked.url.hostname.replace(/^\[|\]$/g, '');
    // One answer whether the name does not resolve or resolves to a private address: telling
    // them apart, or naming the address, would map our internal network for the caller.
    const noPublicAddress = () => {
      const message = `url host ${host} has no public address; give a host name with a public DNS record`;
      return badRequest(message, [{ field: 'url', message }]);
    };
    let addresses: string[];
    try {
      addresses = await resolve(host, owner);
    } catch {
      throw noPublicAddress();
    }
    if (resolvedHostRefusal(host, addresses, policy) !== undefined) throw noPublicAddress();
    return checked.url.toString();
  }

  async function ownEndpoint(ctx: WaybillContext<WebhookIdParams>): Promise<EndpointRecord> {
    const endpoint = await store.endpoint(ctx.params.webhookId);
    if (!endpoint || !(await isLiveOf(endpoint, requireUser(ctx)))) {
      throw notFound(NOT_FOUND(ctx.params.webhookId));
    }
    return endpoint;
  }

  /** Whether the endpoint is `userId`'s, of this environment, and not deleted. */
  async function isLiveOf(endpoint: EndpointRecord, userId: string): Promise<boolean> {
    return (
      !endpoint.deleted &&
      endpoint.userId === userId &&
      endpoint.environment === appEnv &&
      !(await store.deletionRecorded(endpoint._id))
    );
  }

  /** Gives the endpoint its next secret version, sealed; answers it in clear, once. */
  async function nextSecret(endpoint: EndpointRecord, at: Date) {
    for (;;) {
      const [latest] = await store.latestSecrets(endpoint);
      const n = (latest?.n ?? 0) + 1;
      const secret = newWebhookSecret();
      const claimed = await store.claimSecret({
        _id: secretId(endpoint._id, n),
        webhookId: endpoint._id,
        n,
        sealed: box.seal(secret),
        createdAt: at,
      });
      // Two rotations at once: the loser takes the next number, so each caller's secret signs.
      if (!claimed) continue;
      // Claimed, the secret signs from now on (`latestSecrets` reads on past the version the
      // endpoint names), so its caller must see it: the version is a hint, and a write of it
      // that fails (another write of the endpoint held it all the wait) is left to the next.
      let hinted = true;
      const live = await store
        .updateEndpoint(endpoint._id, { secretVersion: n })
        .catch(async () => {
          hinted = false;
          return !(await store.deletionRecorded(endpoint._id));
        });
      if (!live) throw notFound(NOT_FOUND(endpoint._id));
      // The version this one pushed past the signing secrets read (`MOST_SIGNING_SECRETS`):
      // sealed, but of no more use; a delete that fails is left to the endpoint's retention.
      // Only once the hint names this one: reads walk up from the hint, and must not meet a
      // gap there.
      if (hinted && n > MOST_SIGNING_SECRETS) {
        await store.dropSecret(endpoint._id, n - MOST_SIGNING_SECRETS).catch(() => undefined);
      }
      const previousExpires = latest ? new Date(at.getTime() + ROTATION_OVERLAP_MS) : null;
      return { secret, previousExpires, endpoint: { ...endpoint, secretVersion: n } };
    }
  }

  /**
   * An endpoint's first signing secret, opened, for a keyed registration answered again: a
   * 409 when there is none (left by an older version's registration cut short) or it cannot
   * be opened (sealed under an earlier WEBHOOK_SECRET_KEY), as the dispatcher fails those.
   */
  async function firstSecret(webhookId: string, endpointStored = true): Promise<string> {
    const stored = await store.secret(webhookId, 1);
    const opened = stored ? openedOrNull(stored.sealed) : null;
    if (opened !== null) return opened;
    // An endpoint never stored (its registration stopped after its secret) has nothing to
    // rotate: a new key registers one.
    const rotate = endpointStored
      ? `rotate it with POST /api/webhooks/${webhookId}/rotate-secret for a new one, or `
      : '';
    throw conflict(
      `This Idempotency-Key registered webhook ${webhookId}, whose secret cannot be read again; ${rotate}send a new key to register another`,
    );
  }

  function openedOrNull(sealed: string): string | null {
    try {
      return box.open(sealed);
    } catch {
      return null;
    }
  }

  /**
   * The endpoint a keyed registration made before, answered as it was: null when none was
   * stored. One changed since (its secret rotated, or deleted) is not answered as new.
   */
  async function registeredBefore(webhookId: string, userId: string) {
    const endpoint = await store.endpoint(webhookId);
    const changed = (since: string) =>
      conflict(
        `This Idempotency-Key registered webhook ${webhookId}, ${since} since; find it in GET /api/webhooks, or send a new key to register another`,
      );
    if (!endpoint) {
      // Deleted, then forgotten by retention; its deletion mark stays, and an endpoint stored
      // again under its id would be taken for deleted by every dispatcher and call (the id is
      // this user's and this key's alone).
      if (await store.deletionRecorded(webhookId)) throw changed('deleted');
      return null;
    }
    if (endpoint.userId !== userId) return null;
    if (!(await isLiveOf(endpoint, userId))) throw changed('deleted');
    // By its secrets, not `secretVersion`: a rotation may have stored its secret alone.
    const [latest] = await store.latestSecrets(endpoint);
    if (latest && latest.n !== 1) throw changed('its secret rotated');
    return toWebhookWithSecret(endpoint, await firstSecret(webhookId), null);
  }

  return {
    createWebhook: action({
      // Named after the request's Idempotency-Key, so a client's retry finds the endpoint the
      // first run made. Still `never` for the gateway's own retries: sent to a webhook node of
      // the version before (a rolling update, a rollback), a retry would register a second.
      retry: 'never',
      http: {
        group: 'api',
        method: 'POST',
        path: '/webhooks',
        status: 201,
        creates: 'webhookId',
        message: 'Webhook created',
        summary: 'Register a webhook endpoint',
        description:
          "Events of the deliveries your keys create are POSTed to `url`, signed with `Waybill-Signature` (docs/webhooks.md). The answer's `secret` is shown once.",
        response: webhookWithSecretView,
        errors: {
          400: 'Invalid input, or a URL Waybill must not call (not https in live, a private or link-local address, a host that does not resolve)',
          409: 'WEBHOOK_MAX_ENDPOINTS endpoints already (or registrations under way hold the last places: retry in a few seconds); or the Idempotency-Key registered an endpoint changed since (deleted, or its secret rotated), or one whose secret cannot be read again (rotate it): find it in GET /api/webhooks, or send a new key',
        },
      },
      params: createWebhookParams,
      async handler(ctx: WaybillContext<CreateWebhookParams>) {
        const userId = requireUser(ctx);
        const token = ctx.meta.idempotencyToken;
        const webhookId = token ? nameBasedId('webhook', userId, token) : randomUUID();
        // Registered by an earlier run of this request: the gateway forgot its answer (Redis
        // lost it, or the run ended after the key's hold), the database has not.
        const earlier = token ? await registeredBefore(webhookId, userId) : null;
        if (earlier) return earlier;
        const existing = await store.endpointsOf(userId, appEnv);
        const cap = config.maxEndpoints;
        const refused = capRefusals({
          owner: 'You',
          things: 'webhook endpoints',
          underWay: 'registrations',
          advice: 'delete one with DELETE /api/webhooks/:webhookId',
          error: conflict,
        });
        // Full: refused before its host is looked up, which may take the resolver's time.
        if (existing.length >= cap) throw refused('full', existing.length, cap);
        const url = await checkUrl(ctx.params.url, userId);
        const at = now();
        let secret = newWebhookSecret();
        const endpoint = await createInPlace({
          store: store.places,
          owner: endpointOwner(userId, appEnv),
          cap,
          live: existing,
          holder: webhookId,
          now: at,
          refused,
          insert: async (place) => {
            // Its first secret before the endpoint: a stored endpoint always has one to sign
            // with. Once a place is held: a registration refused at the cap writes nothing.
            const claimed = await store.claimSecret({
              _id: secretId(webhookId, 1),
              webhookId,
              n: 1,
              sealed: box.seal(secret),
              createdAt: at,
            });
            // An earlier run of the request drew it: its endpoint signs with that one.
            if (!claimed) {
              secret = await firstSecret(webhookId, (await store.endpoint(webhookId)) !== null);
            }
            const record: EndpointRecord = {
              _id: webhookId,
              userId,
              environment: appEnv,
              url,
              events: ctx.params.events ?? null,
              description: ctx.params.description || null,
              secretVersion: 1,
              status: 'ACTIVE',
              failingSince: null,
              disabledAt: null,
              disabledReason: null,
              deleted: false,
              createdAt: at,
              place,
            };
            if (await insertOnce(() => store.insertEndpoint(record))) return record;
            // Stored meanwhile by an earlier run of the request, in a place of its own.
            return (await store.endpoint(webhookId)) ?? record;
          },
          stored: async () => (await store.endpoint(webhookId)) !== null,
        });
        return toWebhookWithSecret(endpoint, secret, null);
      },
    }),

    listWebhooks: action({
      retry: 'safe',
      http: {
        group: 'api',
        method: 'GET',
        path: '/webhooks',
        message: 'Webhooks retrieved',
        summary: 'List your webhook endpoints',
        response: Joi.array().items(webhookView),
      },
      params: Joi.object({}),
      async handler(ctx: WaybillContext) {
        const userId = requireUser(ctx);
        return (await store.endpointsOf(userId, appEnv)).map(toWebhookView);
      },
    }),

    removeWebhook: action({
      // Done once, a repeat answers 404 for the endpoint it deleted.
      retry: 'never',
      http: {
        group: 'api',
        method: 'DELETE',
        path: '/webhooks/:webhookId',
        status: 204,
        message: 'Webhook deleted',
        summary: 'Delete a webhook endpoint',
        description: 'Nothing more is sent to it, including messages not yet delivered.',
        errors: { 404: 'No such webhook of yours' },
      },
      params: webhookIdParams,
      async handler(ctx: WaybillContext<WebhookIdParams>) {
        const endpoint = await ownEndpoint(ctx);
        await store.deleteEndpoint(endpoint._id);
        const owner = endpointOwner(endpoint.userId, endpoint.environment);
        await givePlaceBack(store.places, owner, { id: endpoint._id, place: endpoint.place });
        return null;
      },
    }),

    rotateWebhookSecret: action({
      retry: 'never',
      http: {
        group: 'api',
        method: 'POST',
        path: '/webhooks/:webhookId/rotate-secret',
        status: 201,
        message: 'Webhook secret rotated',
        summary: 'Give a webhook endpoint a new signing secret',
        description:
          'The new secret is shown once. For 24 hours the old one signs too (two `v1` in `Waybill-Signature`), so receivers can switch without missing an event.',
        response: webhookWithSecretView,
        errors: { 404: 'No such webhook of yours' },
      },
      params: webhookIdParams,
      async handler(ctx: WaybillContext<WebhookIdParams>) {
        const endpoint = await ownEndpoint(ctx);
        const { secret, previousExpires, endpoint: stored } = await nextSecret(endpoint, now());
        return toWebhookWithSecret(stored, secret, previousExpires);
      },
    }),

    enableWebhook: action({
      retry: 'safe',
      http: {
        group: 'api',
        method: 'POST',
        path: '/webhooks/:webhookId/enable',
        message: 'Webhook enabled',
        summary: 'Enable a webhook endpoint disabled after failing',
        description:
          'Messages queued before it was disabled are sent, in order, each tried at least once more; one that fails again is retried within its 24-hour retry window, counted from its first attempt, and given up past it. Those of an endpoint disabled longer than WEBHOOK_RETENTION_DAYS were given up then (replay what you need). Events that happened while it was disabled were not queued for it.',
        response: webhookView,
        errors: {
          404: 'No such webhook of yours',
          409: 'Another change of the endpoint held it for 5 s (send this one again)',
        },
      },
      params: webhookIdParams,
      async handler(ctx: WaybillContext<WebhookIdParams>) {
        const endpoint = await ownEndpoint(ctx);
        // Enabled already: as it is, its failing streak counted on. Cleared, an endpoint that
        // fails for good and is enabled on a timer "to be safe" would never be disabled, its
        // owner never told, and every event retried for 24 hours.
        if (endpoint.status === 'ACTIVE') return toWebhookView(endpoint);
        const enabled = {
          status: 'ACTIVE' as const,
          failingSince: null,
          lastFailedAt: null,
          failingForMs: null,
          disabledAt: null,
          disabledReason: null,
        };
        if (!(await store.updateEndpoint(endpoint._id, enabled))) {
          throw notFound(NOT_FOUND(endpoint._id));
        }
        return toWebhookView({ ...endpoint, ...enabled });
      },
    }),

    webhookDeliveries: action({
      retry: 'safe',
      http: {
        group: 'api',
        method: 'GET',
        path: '/webhooks/:webhookId/deliveries',
        message: 'Webhook deliveries retrieved',
        summary: "List a webhook endpoint's messages and their attempts",
        description:
          'Newest first, each with its latest 10 attempts (numbered `n`, so the first shown tells how many came before). Each attempt records when it started, how long it took, the status answered (or the error, at most 256 bytes) and the start of the answer: at most 512 bytes in UTF-8 as this JSON spells it, cut between characters and ended with `…`, control characters shown as their pictures (`␀`, `␛`) and bytes that are not UTF-8 as `�`.',
        response: Joi.array().items(webhookDeliveryView),
        errors: { 404: 'No such webhook of yours' },
      },
      params: deliveriesParams,
      async handler(ctx: WaybillContext<DeliveriesParams>) {
        const endpoint = await ownEndpoint(ctx);
        const messages = await store.messagesOf(endpoint._id, ctx.params.limit, ctx.params.offset);
        return Promise.all(
          messages.map(async (m) =>
            toWebhookDeliveryView(m, await store.attemptsOf(m), await store.queued(m._id)),
          ),
        );
      },
    }),

    replayWebhookDelivery: action({
      retry: 'never',
      http: {
        group: 'api',
        method: 'POST',
        path: '/webhooks/:webhookId/deliveries/:webhookDeliveryId/replay',
        status: 202,
        message: 'Webhook delivery queued again',
        summary: 'Send a message again',
        description:
          "Queues a new attempt of a delivered or failed message, now and in its delivery's order. The event keeps its `id`: receivers that deduplicate by it see a repeat.",
        response: webhookDeliveryView,
        errors: {
          404: 'No such webhook of yours, or no such message of it',
          409: 'The message is still queued (its next attempt is on its way), is a courier position skipped as stale or older than a change of its delivery sent since, or is about to be deleted (retention)',
        },
      },
      params: replayParams,
      async handler(ctx: WaybillContext<ReplayParams>) {
        const endpoint = await ownEndpoint(ctx);
        const message = await store.message(ctx.params.webhookDeliveryId);
        if (!message || message.webhookId !== endpoint._id) {
          throw notFound(
            `Webhook delivery ${ctx.params.webhookDeliveryId} not found; list them with GET /api/webhooks/${endpoint._id}/deliveries`,
          );
        }
        if (message.status === 'SKIPPED') throw skippedNotSent(message._id);
        const at = now();
        // The retention sweep may be deleting it: queued now, it would be sent unlogged.
        if (message.status !== 'PENDING' && pastReplay(message, at, config.retentionMs)) {
          throw conflict(
            `Webhook delivery ${message._id} is about to be deleted (kept WEBHOOK_RETENTION_DAYS after it finished); it is not sent again`,
          );
        }
        const event = await store.event(message.eventId);
        if (!event) throw notFound(`The event of webhook delivery ${message._id} is gone`);
        // A position replayed is still one: tried once, and skipped if a later event of its
        // delivery went since (it would show the delivery as it was).
        const queued = {
          ...queueEntryOf(message, endpoint.userId, at),
          firstAttemptAt: at,
          replay: true,
          // Its waits start again from the shortest, as its retry window does.
          replayedAfter: message.attempts,
        };
        // One that a change of its delivery sent since outdates is refused now, its log left as
        // it is, rather than accepted and then skipped, its DELIVERED or FAILED overwritten.
        if (queued.ephemeral && isSuperseded(queued, 0, await store.laneMark(queued.lane))) {
          throw conflict(
            `Webhook delivery ${message._id} is a courier position older than a change of its delivery sent since; sent again, it would show the delivery as it was. The delivery's later events and positions were sent after it`,
          );
        }
        // Queued first, held: the entry (`_id` = the message's) is the replay's claim, which
        // one replay gets (decision 16), and only its holder writes the message's status. A
        // replay that finds an entry (another replay's, or its dispatcher's about to conclude
        // it) writes nothing: putting back the status it had read overwrote the other's PENDING
        // or the dispatcher's outcome. Held, the entry is not sent before the message reads
        // PENDING, so a dispatcher writes its outcome after ours, not under it; a replay that
        // stops before releasing it leaves it sent once the hold ends.
        // From now, not from `at`: the reads since took what they took.
        const held = { ...queued, nextAttemptAt: new Date(now().getTime() + CLAIM_HOLD_MS) };
        if (!(await store.requeue(held))) {
          throw conflict(
            `Webhook delivery ${message._id} is still queued; its next attempt is on its way`,
          );
        }
        let settled: MessageRecord;
        try {
          // Read before the entry was ours, the message may have been sent and concluded since
          // (it was PENDING, or another replay's attempt went): a dispatcher writes the message,
          // then takes its entry off the queue, so read again now it is final. The replay's
          // attempt follows its last one; from a count read before, it would find that attempt
          // taken and be concluded from it, sending nothing.
          settled = (await store.message(message._id)) ?? message;
          if (settled.status === 'SKIPPED') throw skippedNotSent(message._id);
          // On the held entry before the mark: a replay that stops after it leaves an entry sent
          // as the attempt after the last once the hold ends.
          if (settled.attempts !== message.attempts) {
            await store.reschedule(message._id, {
              attempts: settled.attempts,
              replayedAfter: settled.attempts,
            });
          }
          await store.updateMessage(message._id, { status: 'PENDING' });
        } catch (err) {
          // Not marked: not sent either (the log would keep its former status while it is).
          await store.dequeue(message._id);
          throw err;
        }
        await store.reschedule(message._id, { nextAttemptAt: at });
        const pending = { ...settled, status: 'PENDING' as const };
        return toWebhookDeliveryView(pending, await store.attemptsOf(settled), queued);
      },
    }),
  };
}
