import { compareText } from '../../libs/text';
import { createHash, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type Redis from 'ioredis';
import {
  WaybillError,
  badRequest,
  conflict,
  serviceUnavailable,
  toHttpError,
  unprocessable,
} from '../../libs/errors';
import { neverStarted } from '../../libs/resilience';
import { defineScripts, undoneIfFailed } from '../../libs/redis';
import { SecretBox } from '../../libs/secret-box';
import type { Retry } from '../../libs/contracts';
import type { HttpRoute } from '../../libs/service';
import { describeRequest, requestUserId, type GatewayRequest } from './http';

/**
 * `Idempotency-Key` on JSON POSTs of the API: a retried request answers what the first one
 * answered instead of doing it again. Keys belong to a user and live in Redis, by their hash;
 * the answers kept for replays are sealed under the key itself (`answerBox`), since some
 * carry what is shown once (a webhook endpoint's signing secret) and most carry people's
 * names and phone numbers: a copy of Redis alone reveals none of them.
 */
export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'Idempotent-Replayed';

/** Visible ASCII, as in HTTP header values; long enough for a UUID with a prefix or two. */
const KEY_FORMAT = /^[\x21-\x7e]{1,255}$/;

/** What `takesIdempotencyKey` reads of a route. */
export type IdempotencyRouteFields = 'group' | 'method' | 'body' | 'binary';

/**
 * The routes the header applies to: JSON POSTs of `/api`, whose answers are JSON envelopes
 * that can be kept and replayed. Anywhere else (`/file` uploads and downloads, reads) it is
 * ignored, not even checked: a download is a read, and bytes are not ours to keep in Redis.
 */
export function takesIdempotencyKey(
  http: Pick<HttpRoute, IdempotencyRouteFields> | undefined,
): boolean {
  return http?.group === 'api' && http.method === 'POST' && http.body !== 'stream' && !http.binary;
}

/**
 * What happened to a call whose work may have been done all the same: it timed out, or the
 * node running it went away before answering (moleculer's types); undefined for any other
 * error, whose own message stands.
 */
export function outcomeUnknownLead(err: unknown): string | undefined {
  const type = (err as { type?: unknown } | null)?.type;
  if (type === 'REQUEST_REJECTED') {
    return 'The service answering the request went away before it answered';
  }
  if (type === 'REQUEST_TIMEOUT' || type === 'REQUEST_SKIPPED') return 'The request timed out';
  return undefined;
}

/**
 * How to retry a request whose outcome is unknown (`outcomeUnknownLead`), by its action's retry
 * kind: "retry it" could do the work twice (a delivery paid twice). A `keyed` action names what
 * it creates after the `Idempotency-Key`, so a retry with the same key gets the first outcome;
 * a `never` action does not, and a retry after the key's hold would run it again.
 */
export function outcomeUnknownMessage(
  lead: string,
  kind: 'keyed' | 'never',
  /** Whether the request claimed an `Idempotency-Key` (`claimForRequest`), not only sent one. */
  keyed: boolean,
): string {
  const unknown = `${lead}; it may have completed or may still complete.`;
  if (kind === 'never') {
    return keyed
      ? `${unknown} Check before sending it again: it is not run again under this Idempotency-Key, so send a new key to run it again`
      : `${unknown} Check before sending it again`;
  }
  return !keyed
    ? `${unknown} Check before sending it again, and send an Idempotency-Key with such requests so that a retry gets the first outcome instead of repeating it`
    : `${unknown} Retry with the same Idempotency-Key to get its outcome without repeating it`;
}

/** Whether an answer can be kept for replays: JSON data, never a stream or bytes. */
function isStorable(body: unknown): boolean {
  return !(body instanceof Readable || body instanceof Uint8Array || body instanceof ArrayBuffer);
}

/** How the header appears in the OpenAPI document of every operation it applies to. */
export const IDEMPOTENCY_KEY_DOC = {
  parameter: {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description:
      'Any unique value (a UUID) per intended operation. A retry with the same key and body gets the first answer again (header `Idempotent-Replayed: true`) for 24 hours instead of repeating the work; on operations that change nothing (quotes, routes) the key only refuses a copy sent while the first runs, and a later retry runs again. An answer over 64 KB is not kept: its retries get 409 and the request is not run again. A refusal (4xx) frees the key at once (except on `POST /api/request`, whose delivery is named after the key: a request refused once started answers the same refusal to that key, so send a new one after fixing the cause); a failure that may have changed something (a 500, 504, or most 503s) holds it, and retries get 409 with `Retry-After` until it is released; on operations a second run would do again (a cancel, a proof code issued, a secret rotated, a webhook delivery replayed, a webhook registered) such a failure is never run again under the key: retries get 409 without `Retry-After` for 24 hours.',
    schema: { type: 'string', pattern: KEY_FORMAT.source },
  },
  errors: {
    409: 'A request with this Idempotency-Key is still in progress or its outcome is unknown; retry after the seconds in `Retry-After`. Without `Retry-After`: it completed with an answer too large to keep, or its outcome is unknown on an operation a second run would do again, and it is not run again under this key',
    422: 'This Idempotency-Key was already used for a different request',
  } as Record<number, string>,
};

/**
 * The largest answer kept for replays, as JSON (docs/api-conventions.md); sealed, it takes a
 * third more in Redis. Every answer of a write fits well within it. A larger one is not kept, and its key answers
 * retries 409 for as long as an answer would have been kept, never running the request again.
 */
export const MAX_KEPT_ANSWER_BYTES = 64 * 1024;

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

interface Entry {
  fingerprint: string;
  /**
   * The first request's own mark while it runs: its answer replaces, and its release deletes,
   * only the entry it claimed (`REPLACE_OWN`, `DELETE_OWN`), never one a later request claimed
   * once this one's ran out (a first request retried past `pendingMs`).
   */
  claim?: string;
  /** The answer, sealed (`answerBox`); absent while the first request is still running. */
  sealed?: string;
  /** The answer in clear, as kept before answers were sealed (read until such keys expire). */
  response?: StoredResponse;
  /** The request completed, its answer too large to keep (`MAX_KEPT_ANSWER_BYTES`). */
  tooLarge?: true;
  /**
   * The request is of an action that a second run would do again (retry kind `never`): its
   * entry lasts keepMs from the claim, and once the entry's time left (Redis's PTTL) is down
   * to this, its claimer's pendingMs has passed without an answer, and its outcome is unknown
   * for good (`outcomeNotKnown`), however the first run ended. Written by the claimer: a
   * gateway of other settings reads the hold the first request was given.
   */
  heldUntilTtl?: number;
  /** Such a request failed in a way that may have changed something: not run again. */
  unknown?: true;
}

/**
 * The box an answer is sealed in: under the key the client sends with the request and its
 * retries, with the user and a purpose of its own, so that neither the Redis key (the key's
 * bare hash) nor anything else Redis holds opens it.
 */
const answerBox = (subject: string, key: string) =>
  new SecretBox(`waybill idempotent answer\n${subject}\n${key}`);

export type Claim =
  | {
      kind: 'first';
      /** Stores the answer for replays; false when it could not (the answer still goes out). */
      complete(response: StoredResponse): Promise<boolean>;
      /**
       * After `err` from the call of `action` (sent again on a lost call when `retried`):
       * releases the key when the call surely changed nothing (`changedNothing`), else keeps
       * it held until pendingMs. Never throws.
       */
      fail(err: unknown, action: string, retried?: boolean): Promise<void>;
    }
  | { kind: 'replay'; response: StoredResponse };

/** The header's value, or undefined when the request has none; 400 for an unusable one. */
export function readIdempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (Array.isArray(header) || !KEY_FORMAT.test(header)) {
    throw badRequest(
      'Idempotency-Key must be one value of 1 to 255 visible ASCII characters, such as a UUID',
      [{ field: 'Idempotency-Key', message: 'send one key of 1-255 visible ASCII characters' }],
    );
  }
  return header;
}

/**
 * JSON with object keys sorted at every depth: equal values, equal text. Iterative, so no
 * nesting overflows the stack. The text must not change between releases: fingerprints of
 * keys in Redis outlive a deploy.
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  // What is left to write, last first: a value (boxed), or text to write as it is.
  const todo: ({ value: unknown } | string)[] = [{ value }];
  for (let item = todo.pop(); item !== undefined; item = todo.pop()) {
    if (typeof item === 'string') {
      out.push(item);
      continue;
    }
    const current = item.value;
    if (Array.isArray(current)) {
      out.push('[');
      todo.push(']');
      for (let i = current.length - 1; i >= 0; i--) {
        todo.push({ value: current[i] });
        if (i > 0) todo.push(',');
      }
    } else if (current !== null && typeof current === 'object') {
      const entries = Object.entries(current as Record<string, unknown>)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => compareText(a, b));
      out.push('{');
      todo.push('}');
      for (let i = entries.length - 1; i >= 0; i--) {
        todo.push({ value: entries[i][1] }, `${JSON.stringify(entries[i][0])}:`);
        if (i > 0) todo.push(',');
      }
    } else {
      out.push(JSON.stringify(current) ?? 'null');
    }
  }
  return out.join('');
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('base64url');

/** What makes two requests "the same": method, path and parameters. */
export function requestFingerprint(method: string, path: string, params: unknown): string {
  return sha256(`${method} ${path}\n${canonicalJson(params)}`);
}

/**
 * The path of the route a request matched, its params filled in: `/api/request/:deliveryId/cancel`
 * becomes `/api/request/<id>/cancel` whether the request was sent to that, to `/API/Request/<id>/cancel`
 * or with a trailing slash, which all match it. A request sent as declared gets its own path back,
 * so fingerprints (and the tokens named after them) are those of keys claimed before.
 */
export function matchedRoutePath(template: string, params: unknown): string {
  const values = (params ?? {}) as Record<string, unknown>;
  return template.replace(/:(\w+)/g, (_, name: string) =>
    encodeURIComponent(String(values[name] ?? '')),
  );
}

/** One request under one key: the same for its retries, different for any other request. */
export function idempotencyToken(key: string, fingerprint: string): string {
  return sha256(`${key}\n${fingerprint}`);
}

/**
 * Whether a failed call of `action` surely changed nothing, so its key may be used again at
 * once: a refusal (any 4xx: services refuse before they change anything), or moleculer saying
 * the action never started, of a call sent once. Everything else may have changed something
 * and keeps the key: a 500, a 504, a 503 of a dependency, REQUEST_REJECTED (the node went away
 * holding the request, perhaps after it committed), and a call that may have been `retried`
 * (a lost call is sent again): its last attempt never starting says nothing of the first, which
 * a node that then went away may have committed. Errors are read by `type`, as they cross NATS
 * as plain objects.
 */
export function changedNothing(err: unknown, action: string, retried = false): boolean {
  return toHttpError(err).status < 500 || (!retried && neverStarted(err, action));
}

/** The 409 of a key whose request completed with an answer too large to keep. */
const answerNotKept = () =>
  conflict(
    `The request with this Idempotency-Key completed, but its answer was larger than ${MAX_KEPT_ANSWER_BYTES / 1024} KB and was not kept for replays; it is not run again under this key. Read its outcome with the API, or send a new key to run the request again`,
  );

/** The 409 of a key whose request (retry kind `never`) may have run, and is not run again. */
const outcomeNotKnown = () =>
  conflict(
    'The request with this Idempotency-Key may have completed: it failed or timed out before answering, and its outcome is unknown. It is not run again under this key, since running it twice would do it twice; read its outcome with the API, or send a new key to run the request again',
  );

/** The 409 of a held key, with the seconds until it is released at the latest. */
function keyHeld(ttlMs: number) {
  const seconds = Math.max(1, Math.ceil(ttlMs / 1000));
  return conflict(
    `A request with this Idempotency-Key is still in progress or its outcome is unknown; retry after ${seconds} second${seconds === 1 ? '' : 's'}`,
    { retryAfter: seconds },
  );
}

/**
 * A request of a user to a route that takes the header (`takesIdempotencyKey`) and names a
 * key claims it before it runs; anything else runs as it is (undefined). The first run hands
 * services `meta.idempotencyToken`, so one that creates a record names it after the request
 * and even a run whose answer was lost (a gateway gone mid-request) cannot be repeated by a
 * later retry.
 */
export async function claimForRequest(
  store: IdempotencyStore,
  req: GatewayRequest,
  http: Pick<HttpRoute, IdempotencyRouteFields> | undefined,
  meta: Record<string, unknown>,
  params: unknown,
  retry?: Retry,
): Promise<Claim | undefined> {
  const userId = requestUserId(meta);
  if (!takesIdempotencyKey(http) || !userId) return undefined;
  const key = readIdempotencyKey(req.headers[IDEMPOTENCY_HEADER]);
  if (key === undefined) return undefined;
  const { method, path: sentPath } = describeRequest(req);
  // The route matched, not the path as sent: routes match whatever the case, with or without
  // a trailing slash, and a retry sent so is the same request.
  const template = req.$alias?.fullPath;
  const path = template ? matchedRoutePath(template, params) : sentPath;
  // Headers that change what the request does (`Waybill-Simulate`) are part of it too.
  const options = meta.optionHeaders;
  const fingerprint = requestFingerprint(method, path, options ? { params, options } : params);
  // An action of no declared kind is taken for the kind that is never run twice.
  const claim = await store.claim(userId, key, fingerprint, retry ?? 'never');
  if (claim.kind === 'first') meta.idempotencyToken = idempotencyToken(key, fingerprint);
  return claim;
}

/** Sets `KEYS[1]` to `ARGV[2]` for `ARGV[3]` ms if it still holds `ARGV[1]`; 1 when it did. */
const REPLACE_OWN = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`;

/** Deletes `KEYS[1]` if it still holds `ARGV[1]`. */
const DELETE_OWN = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('DEL', KEYS[1])`;

interface OwnEntryCommands {
  replaceOwnIdempotencyEntry(key: string, own: string, next: string, ms: number): Promise<number>;
  deleteOwnIdempotencyEntry(key: string, own: string): Promise<number>;
}

export class IdempotencyStore {
  private readonly redis: Redis & OwnEntryCommands;

  constructor(
    redis: Redis,
    private readonly keyPrefix: string,
    private readonly windows: {
      /** How long a first request holds its key: longer than any request may run. */
      pendingMs: number;
      /** How long a finished request's answer is replayed. */
      keepMs: number;
    },
  ) {
    this.redis = defineScripts<OwnEntryCommands>(redis, {
      replaceOwnIdempotencyEntry: REPLACE_OWN,
      deleteOwnIdempotencyEntry: DELETE_OWN,
    });
  }

  /**
   * Claims `key` for this request, or explains why not: the same request still running (409),
   * or the key already used for another request (422). Replays a finished one. What is kept
   * follows the action's retry kind: an action that changes nothing twice (`safe`: reads,
   * quotes, routes) is run again by a retry, its answer not kept, the key only refusing a copy
   * sent meanwhile; one that names what it creates after the key (`keyed`) may be run again
   * once the key's hold is over, and gets its first outcome; one that would do its work again
   * (`never`: a cancel, a code issued, a secret rotated) is never run twice under a key.
   */
  async claim(
    subject: string,
    key: string,
    fingerprint: string,
    retry: Retry = 'keyed',
  ): Promise<Claim> {
    try {
      return await this.tryClaim(subject, key, fingerprint, retry);
    } catch (err) {
      if (err instanceof WaybillError) throw err;
      throw serviceUnavailable(
        'Idempotency keys cannot be checked right now; retry in a few seconds',
      );
    }
  }

  private async tryClaim(
    subject: string,
    key: string,
    fingerprint: string,
    retry: Retry,
  ): Promise<Claim> {
    const redisKey = `${this.keyPrefix}${subject}:${sha256(key)}`;
    const box = answerBox(subject, key);
    const lasting = retry === 'never';
    const { pendingMs, keepMs } = this.windows;
    for (let attempt = 0; attempt < 3; attempt++) {
      const claimed: Entry = {
        fingerprint,
        claim: randomUUID(),
        ...(lasting && { heldUntilTtl: keepMs - pendingMs }),
      };
      const pending = JSON.stringify(claimed);
      const taken = await undoneIfFailed(
        () => this.redis.set(redisKey, pending, 'PX', lasting ? keepMs : pendingMs, 'NX'),
        () => this.redis.deleteOwnIdempotencyEntry(redisKey, pending),
      );
      if (taken === 'OK') return this.firstClaim(redisKey, pending, fingerprint, box, retry);
      // The entry and its time left read together: an answer stored between two reads would
      // be told with the pending entry's hold.
      const { raw, ttl } = await this.entryAndTimeLeft(redisKey);
      if (raw === null) continue; // released or expired between the calls
      const entry = JSON.parse(raw) as Entry;
      if (entry.fingerprint !== fingerprint) {
        throw unprocessable(
          'This Idempotency-Key was already used for a different request; send a new key for a new request',
        );
      }
      if (entry.tooLarge) throw answerNotKept();
      if (entry.unknown) throw outcomeNotKnown();
      if (entry.sealed) {
        return { kind: 'replay', response: JSON.parse(box.open(entry.sealed)) as StoredResponse };
      }
      if (entry.response) return { kind: 'replay', response: entry.response };
      if (entry.heldUntilTtl === undefined) throw keyHeld(ttl);
      // Measured by Redis's clock alone, against the hold its claimer gave it.
      const holdLeft = ttl - entry.heldUntilTtl;
      if (holdLeft > 0) throw keyHeld(holdLeft);
      // The first run cannot still be going, and no answer came: it ended, in a gateway gone
      // before it answered or whose answer could not be stored, having done its work or not.
      throw outcomeNotKnown();
    }
    throw conflict('This Idempotency-Key is changing hands; retry in a moment', {
      retryAfter: 1,
    });
  }

  /** The entry at `redisKey` and its time left (PTTL), read in one transaction. */
  private async entryAndTimeLeft(redisKey: string): Promise<{ raw: string | null; ttl: number }> {
    const replies = (await this.redis.multi().get(redisKey).pttl(redisKey).exec()) ?? [];
    const [got, left] = replies;
    const failure = got?.[0] ?? left?.[0];
    if (failure) throw failure;
    return { raw: (got?.[1] as string | null | undefined) ?? null, ttl: Number(left?.[1] ?? -2) };
  }

  private firstClaim(
    redisKey: string,
    /** The entry as this request claimed it. */
    pending: string,
    fingerprint: string,
    box: SecretBox,
    retry: Retry,
  ): Claim {
    const keepAnswer = retry !== 'safe';
    const release = () =>
      this.redis.deleteOwnIdempotencyEntry(redisKey, pending).catch(() => undefined);
    return {
      kind: 'first',
      complete: async (response) => {
        if (!keepAnswer) {
          await release();
          return true;
        }
        // Not stored, so the key waits out pendingMs: a stream would be stored as its
        // internals (buffered bytes included) and replayed as JSON.
        if (!isStorable(response.body)) return false;
        const answer = JSON.stringify(response);
        // Too large to keep: the key is held all the same, saying so to a retry. The answer is
        // measured, as documented, not its sealed form (a third larger).
        const entry: Entry =
          Buffer.byteLength(answer) > MAX_KEPT_ANSWER_BYTES
            ? { fingerprint, tooLarge: true }
            : { fingerprint, sealed: box.seal(answer) };
        const stored = JSON.stringify(entry);
        try {
          // Its claim ran out and another request holds the key now: that one's to answer.
          const replaced = await this.redis.replaceOwnIdempotencyEntry(
            redisKey,
            pending,
            stored,
            this.windows.keepMs,
          );
          return replaced === 1;
        } catch {
          return false;
        }
      },
      // A refused request frees its key; one whose outcome is unknown (a timeout, a crash)
      // keeps it until pendingMs passes, so a retry cannot do the work twice meanwhile, or
      // for good (keepMs) where a retry after that would do it twice. An action that changes
      // nothing twice is released whatever its failure.
      fail: async (err, action, retried) => {
        if (!keepAnswer || changedNothing(err, action, retried)) {
          await release();
          return;
        }
        if (retry !== 'never') return; // unreleased, the key only waits out pendingMs
        // Said at once, not once the hold runs out: a retry meanwhile would be told to wait
        // for an outcome that will never be known.
        const unknown = JSON.stringify({ fingerprint, unknown: true } satisfies Entry);
        await this.redis
          .replaceOwnIdempotencyEntry(redisKey, pending, unknown, this.windows.keepMs)
          .catch(() => undefined);
      },
    };
  }
}
