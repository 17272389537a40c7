import { backoffMs, type Backoff } from '../../libs/backoff';
import type { WebhookEventType } from '../../libs/contracts/webhook';
import type { Config } from '../../libs/config';
import { deniedRanges, type OutboundPolicy } from '../../libs/outbound-url';
import { clipForJson } from '../../libs/text';
import type { MessageRecord, QueuedRecord } from './store';

/**
 * How long a queue entry inserted as a claim of its message (a replay's, or the retention
 * sweep's conclusion of a lost one) is held from dispatchers: its holder writes the message's
 * status, then lets it go; one that stopped leaves it to be sent once the hold ends. Its
 * holder makes up to four calls to the database before its mark, each of which may wait
 * `MONGO_TIMEOUT_MS` (10 s at most): a hold ending before them would let a dispatcher send
 * and conclude the message, and the mark that follows say PENDING of a message sent.
 */
export const CLAIM_HOLD_MS = 60_000;

/** What a message given up because its endpoint was deleted says. */
export const ENDPOINT_DELETED_WHY = 'the endpoint was deleted';

/** What a skipped position's attempt and message say. */
export const STALE_POSITION_WHY =
  "not sent: a later event of this delivery was sent or waits to be, and a courier's position is stale by it";

/**
 * How old a courier's position may be at its turn and still be sent: one that waited longer
 * (its endpoint disabled, or a change of its delivery retried, meanwhile) would show the
 * courier where they were, perhaps after the delivery ended; a courier still moving sends a
 * newer one within COURIER_LOCATION_FLUSH_MS.
 */
export const POSITION_SENT_WITHIN_MS = 15 * 60_000;

export const OLD_POSITION_WHY =
  "not sent: more than 15 minutes old at its turn (its endpoint disabled, or a change of its delivery retried, meanwhile), and a courier's position is stale by then";

/** Whether a position made at `madeAt` is too old to be sent at `now`. */
export const tooOldToSend = (madeAt: Date, now: Date) =>
  now.getTime() - madeAt.getTime() > POSITION_SENT_WITHIN_MS;

/** What a position whose publication stopped before queueing it says, once found. */
export const LOST_POSITION_WHY =
  "not sent: its publication stopped before queueing it, and a courier's position is stale by the time that is found";

/**
 * The dispatcher's rules, pure: which endpoints take an event, which queued message of a
 * lane may go now, how long to wait after a failure, when to give up, which secrets sign.
 */

/** Where this deployment sends webhooks (libs/outbound-url): built once per user of it. */
export function targetPolicy(
  config: Pick<Config['webhook'], 'allowPrivateTargets' | 'deniedTargets'>,
  appEnv: string,
): OutboundPolicy {
  return {
    requireHttps: appEnv === 'live',
    allowPrivate: config.allowPrivateTargets,
    denied: deniedRanges(config.deniedTargets),
  };
}

/** An endpoint with no `events` list takes every event. */
export function subscribes(events: readonly string[] | null, type: WebhookEventType): boolean {
  return events === null || events.length === 0 || events.includes(type);
}

export interface Queued {
  _id: string;
  /** Messages of one lane go one at a time, in `sequence` order. */
  lane: string;
  sequence: number;
  nextAttemptAt: Date;
}

/**
 * The attempts one owner's endpoints may have under way in a dispatcher, all together: a
 * quarter of its room (one at least), so that a slow receiver with many deliveries waiting,
 * or one user's several endpoints at a server that never answers, cannot hold every request
 * slot while the other users' events wait behind them.
 */
export const ownerShare = (concurrency: number): number => Math.max(1, Math.floor(concurrency / 4));

/** Whose share a queued message counts against: its endpoint's owner (older entries: the endpoint). */
export const shareOf = (queued: { webhookId: string; userId?: string }): string =>
  queued.userId ?? `endpoint:${queued.webhookId}`;

/** The endpoints holding more than `most` of these queue entries. */
export function backloggedEndpoints(
  entries: readonly { webhookId: string }[],
  most: number,
): string[] {
  const counts = new Map<string, number>();
  for (const { webhookId } of entries) counts.set(webhookId, (counts.get(webhookId) ?? 0) + 1);
  return [...counts].filter(([, n]) => n > most).map(([webhookId]) => webhookId);
}

/** An endpoint's messages of one delivery: sent one at a time, in order. */
export const laneOf = (webhookId: string, deliveryId: string) => `${webhookId}:${deliveryId}`;

/** The queue entry that sends `message` next, from `at`, in its endpoint owner's share. */
export function queueEntryOf(message: MessageRecord, userId: string, at: Date): QueuedRecord {
  return {
    _id: message._id,
    webhookId: message.webhookId,
    userId,
    eventId: message.eventId,
    lane: laneOf(message.webhookId, message.deliveryId),
    sequence: message.sequence,
    attempts: message.attempts,
    firstAttemptAt: null,
    nextAttemptAt: at,
    // A courier's position: tried once, skipped once stale.
    ephemeral: message.type === 'courier.location',
  };
}

/**
 * The queue by lane, each lane's messages in the order they go: by sequence, then as queued,
 * then by id. Only a lane's first may be attempted; the others wait for it (a delivery's events
 * arrive in order). Two messages share a sequence only when both are positions read at one
 * version of the delivery: the one queued first is the older.
 */
export function lanesOf<T extends Queued>(queue: readonly T[]): Map<string, T[]> {
  const lanes = new Map<string, T[]>();
  for (const message of queue) {
    const lane = lanes.get(message.lane);
    if (lane) lane.push(message);
    else lanes.set(message.lane, [message]);
  }
  for (const lane of lanes.values()) {
    lane.sort(
      (x, y) =>
        x.sequence - y.sequence ||
        new Date(x.nextAttemptAt).getTime() - new Date(y.nextAttemptAt).getTime() ||
        (x._id < y._id ? -1 : x._id > y._id ? 1 : 0),
    );
  }
  return lanes;
}

/**
 * Whether a courier's position at the head of its lane is stale, and so not sent: another
 * message of the lane waits behind it (a later change, or a later position), or a change of a
 * later version was sent already (`laneMark`, the highest sequence of a change attempted in
 * the lane). Sent anyway, it would reach the endpoint after that change with the delivery as it
 * was before it — a delivered delivery shown arriving (decision 77).
 */
export function isSuperseded(
  position: { sequence: number },
  queuedBehind: number,
  laneMark: number | null,
): boolean {
  return queuedBehind > 0 || (laneMark !== null && laneMark > position.sequence);
}

export type AfterFailure = { retryAt: Date } | { giveUp: true };

/**
 * What follows a failed attempt: another after the backoff, unless that would fall after the
 * retry window (counted from the first attempt). A `courier.location` is stale by its next
 * one: it is tried once.
 */
export function afterFailure(input: {
  failedAttempts: number;
  firstAttemptAt: Date;
  now: Date;
  retryWindowMs: number;
  backoff: Backoff;
  random: number;
  ephemeral: boolean;
}): AfterFailure {
  if (input.ephemeral) return { giveUp: true };
  const retryAt =
    input.now.getTime() + backoffMs(input.failedAttempts, input.backoff, input.random);
  if (retryAt > input.firstAttemptAt.getTime() + input.retryWindowMs) return { giveUp: true };
  return { retryAt: new Date(retryAt) };
}

/**
 * An endpoint's failing streak: its first failure; its latest and how long failures had kept
 * coming by then, as last written (both absent on a streak a version before began).
 */
export interface FailingStreak {
  failingSince: Date;
  lastFailedAt?: Date | null;
  failingForMs?: number | null;
}

/**
 * The longest quiet a failing streak counts as failing. While an endpoint has something to
 * send, its failing attempts come at least every `WEBHOOK_BACKOFF_MAX_MS`; a longer quiet means
 * nothing was tried (a position, tried once, then no event for a weekend), and is left out of
 * the streak's length: two failures two days apart are not two days of failures.
 */
export const streakQuietMs = (backoffMaxMs: number) => Math.max(2 * backoffMaxMs, 60_000);

const latestFailure = (streak: FailingStreak) =>
  Math.max(streak.failingSince.getTime(), streak.lastFailedAt?.getTime() ?? 0);

/**
 * How long failures have kept coming in the streak, as of a failure at `now`: its quiets left
 * out. A streak a version before began (no length kept) counts from its first failure, as it
 * did then.
 */
export function failingForMs(streak: FailingStreak, now: Date, backoffMaxMs: number): number {
  if (streak.lastFailedAt == null || streak.failingForMs == null) {
    return now.getTime() - streak.failingSince.getTime();
  }
  const sinceLatest = now.getTime() - latestFailure(streak);
  return streak.failingForMs + (sinceLatest > streakQuietMs(backoffMaxMs) ? 0 : sinceLatest);
}

/**
 * Whether a failure at `now` is written as the streak's latest (with its length): once a
 * quarter of the quiet at most, a write per failing endpoint every half hour rather than one
 * per failure. Failures come at most half the quiet apart while they keep coming, so the mark
 * lags by less than the quiet, and a streak being filled is counted whole.
 */
export function failureToRecord(streak: FailingStreak, now: Date, backoffMaxMs: number): boolean {
  return now.getTime() - latestFailure(streak) >= streakQuietMs(backoffMaxMs) / 4;
}

/**
 * An endpoint whose failures, without a success, have kept coming for the limit
 * (`failingForMs`) is disabled.
 */
export function shouldDisable(
  streak: FailingStreak | null,
  now: Date,
  limits: { disableAfterMs: number; backoffMaxMs: number },
): boolean {
  return streak !== null && failingForMs(streak, now, limits.backoffMaxMs) >= limits.disableAfterMs;
}

/**
 * Whether a disabled endpoint's waiting messages are given up: it stayed disabled as long as
 * retention keeps what was sent (decision 151). Until then enabling it sends them, in order.
 */
export function waitedPastRetention(
  endpoint: { status: string; disabledAt: Date | null },
  now: Date,
  retentionMs: number,
): boolean {
  if (endpoint.status !== 'DISABLED' || !endpoint.disabledAt) return false;
  return now.getTime() - new Date(endpoint.disabledAt).getTime() >= retentionMs;
}

/**
 * Whether the endpoint's messages wait for it to be enabled again: disabled, not deleted, and
 * not yet as long as retention keeps what was sent. Neither sent nor given up meanwhile.
 */
export function waitsForEnable(
  endpoint: { status: string; disabledAt: Date | null; deleted: boolean },
  now: Date,
  retentionMs: number,
): boolean {
  return (
    !endpoint.deleted &&
    endpoint.status !== 'ACTIVE' &&
    !waitedPastRetention(endpoint, now, retentionMs)
  );
}

/** Both secrets sign for a day after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

export interface SecretVersion {
  n: number;
  createdAt: Date;
}

/**
 * Secrets that sign one message at most: rotations faster than a day apart drop the oldest,
 * so that a header stays a few hundred bytes however often an endpoint is rotated.
 */
export const MOST_SIGNING_SECRETS = 4;

/**
 * The secrets that sign now, newest first: the latest, and each one before it while its
 * successor is younger than `overlapMs`, so that a receiver holding any secret a rotation's
 * answer promised (`previousSecretExpiresAt`) keeps verifying until then, however many
 * rotations came meanwhile (up to `MOST_SIGNING_SECRETS`).
 */
export function signingSecrets<T extends SecretVersion>(
  versions: readonly T[],
  now: Date,
  overlapMs: number,
): T[] {
  const signing: T[] = [];
  for (const version of [...versions].sort((a, b) => b.n - a.n)) {
    const successor = signing.at(-1);
    if (successor && !withinOverlap(successor, now, overlapMs)) break;
    if (signing.length === MOST_SIGNING_SECRETS) break;
    signing.push(version);
  }
  return signing;
}

/** Whether the version before `successor` still signs: `successor` is younger than the overlap. */
export const withinOverlap = (successor: SecretVersion, now: Date, overlapMs: number) =>
  now.getTime() - successor.createdAt.getTime() < overlapMs;

/**
 * What an attempt keeps of the answer: enough to debug, never a whole page. Counted in bytes as
 * the delivery log sends it (`clipForJson`), not in characters: a page of 100 messages with
 * 10 attempts each must fit one NATS message (decision 33) whatever the receiver answered,
 * and 512 characters of CJK, of undecodable bytes or of control characters are 1.5 to 3 KB.
 */
export const EXCERPT_BYTES = 512;

/**
 * What an attempt keeps of why there was no answer. Most reasons are a line, but a TLS error
 * names every name the receiver's certificate holds, and a name error the whole host name.
 */
export const ERROR_BYTES = 256;

export const excerpt = (body: string): string => clipForJson(body, EXCERPT_BYTES);

export const attemptError = (error: string): string => clipForJson(error, ERROR_BYTES);

/** A 2xx answer is a delivery; anything else (and no answer) is a failure to retry. */
export const isDelivered = (statusCode: number | null): boolean =>
  statusCode !== null && statusCode >= 200 && statusCode < 300;
