import type { Logger } from 'moleculer';
import type { Config } from '../../libs/config';
import { Periodic } from '../../libs/periodic';
import { RELEASE_MARGIN_MS } from '../../libs/mongo';
import { recipientsView } from '../../libs/contracts/order';
import { roleInEvent } from '../../libs/contracts/webhook';
import { SIGNATURE_HEADER, signatureHeader } from '../../libs/webhook-signature';
import {
  afterFailure,
  backloggedEndpoints,
  ENDPOINT_DELETED_WHY,
  isDelivered,
  isSuperseded,
  lanesOf,
  failureToRecord,
  failingForMs,
  shouldDisable,
  type FailingStreak,
  waitedPastRetention,
  waitsForEnable,
  MOST_SIGNING_SECRETS,
  LOST_POSITION_WHY,
  OLD_POSITION_WHY,
  STALE_POSITION_WHY,
  tooOldToSend,
  ownerShare,
  ROTATION_OVERLAP_MS,
  shareOf,
  signingSecrets,
  subscribes,
  withinOverlap,
  targetPolicy,
} from './dispatch-rules';
import { targetForLog, type OutboundPolicy } from '../../libs/outbound-url';
import { OwnerLookups } from '../../libs/owner-lookups';
import { post, type PostResult } from './poster';
import { enableRoute } from './notices';
import type { SecretBox } from '../../libs/secret-box';
import { attemptId } from '../../libs/messaging/outbox-records';
import type {
  AttemptRecord,
  EndpointRecord,
  EventRecord,
  QueuedRecord,
  WebhookStore,
} from './store';

/** Stale positions one look skips at most, behind the heads of their lanes. */
const PRUNE_AT_ONCE = 500;
/** The queue a dispatcher reads at once; the rest waits for the next look. */
export const QUEUE_READ = 5000;
/**
 * An endpoint with more entries than this in a full read is backlogged (failing, or disabled
 * with what waited for it): the next read of the same look leaves it out (`readQueue`).
 */
export const BACKLOGGED = 100;
/** Reads a look makes at most: the first, and two without the backlogged endpoints. */
const QUEUE_READS = 3;
/**
 * How long a dispatcher keeps an endpoint and its secrets without reading them again: a
 * rotation, a disable or a deletion takes effect within this (its own writes at once).
 */
const ENDPOINT_CACHE_MS = 1000;
/**
 * The latest messages of an endpoint read, before it is disabled, for a success that should
 * have ended its failing streak: by `_id`, once per disable at most.
 */
const STREAK_CHECK_MESSAGES = 100;

/** `at`, moved on by the time since `began` (`Date.now()`): work dated after its reads. */
const datedAfter = (at: Date, began: number) => new Date(at.getTime() + (Date.now() - began));
/**
 * How long after its claim an attempt may still start its request: the reads between them took
 * longer (a database stalling), and the request is not made but recorded failed, to be tried
 * again, rather than sent when a takeover (`abandonedAfterMs`) may send it too.
 */
export const SEND_START_BUDGET_MS = 5_000;
/** What an attempt not started in time (`SEND_START_BUDGET_MS`) records. */
export const NOT_STARTED_WHY =
  'not sent: the database answered too slowly before the request; it is tried again shortly';
/**
 * How long after its start an attempt nobody concluded (its dispatcher died) is taken as
 * failed: the time its request may start in, the request's deadline, and the write of its
 * result (`RELEASE_MARGIN_MS`, longer than any wait for the database), so that a dispatcher
 * still at work on a slow database is not taken over and the message sent twice.
 */
const abandonedAfterMs = (timeoutMs: number) =>
  SEND_START_BUDGET_MS + timeoutMs + RELEASE_MARGIN_MS;

/** How an attempt left its message, as far as this dispatcher's view of the queue goes. */
type Outcome =
  | { done: true }
  | { retryAt: Date; attempts: number; firstAttemptAt: Date | null }
  /** Another dispatcher holds it, or its endpoint is disabled: left until the next read. */
  | { passed: true };

/** An endpoint as the dispatcher sends to it: the record and the secrets that sign now. */
interface Target {
  endpoint: EndpointRecord;
  secrets: string[];
  /** Its latest secret was sealed under another WEBHOOK_SECRET_KEY: nothing signs. */
  unreadable: boolean;
}

/**
 * The signing secrets opened, newest first. One sealed under another WEBHOOK_SECRET_KEY (the
 * key changed since) cannot be: an older one is left out of the signature, and when it is
 * the latest nothing signs, so that the attempt fails with a reason its owner can act on
 * rather than every attempt throwing unrecorded.
 */
function openSecrets(box: SecretBox, versions: readonly { sealed: string }[]) {
  const opened = versions.map((version) => {
    try {
      return box.open(version.sealed);
    } catch {
      return null;
    }
  });
  const unreadable = versions.length > 0 && opened[0] === null;
  const secrets = unreadable ? [] : opened.filter((secret): secret is string => secret !== null);
  return { secrets, unreadable };
}

export interface DispatcherDeps {
  store: WebhookStore;
  config: Config['webhook'];
  appEnv: Config['appEnv'];
  box: SecretBox;
  logger: () => Logger;
  /**
   * An endpoint failing since `failingSince` is to be disabled: its owner is told, once per
   * disable however many dispatchers get here. Answers the disable's time as first recorded.
   */
  recordDisable: (
    endpoint: EndpointRecord & { failingSince: Date },
    at: Date,
    lastError: string | null,
  ) => Promise<Date>;
  /** Each owner's host-name lookups, two at a time at most (shared with registrations). */
  lookups?: OwnerLookups;
}

/**
 * Sends queued messages: each lane (an endpoint and a delivery) one message at a time in
 * order, up to `concurrency` at once. Several dispatchers may run (replicas): an attempt is made
 * by whoever inserts its attempt document, so no message is sent twice at the same time, and
 * an attempt whose process died is taken as failed after its deadline.
 */
export class Dispatcher {
  private readonly periodic: Periodic;
  private readonly inFlight = new Map<string, Promise<void>>();
  /**
   * The lanes with an attempt under way here: one at a time each, even when a read of the queue
   * puts a message queued late (a stale position) before the one being sent.
   */
  private readonly busyLanes = new Set<string>();
  /** Attempts under way here per owner, each held to their share (`ownerShare`). */
  private readonly busyOwners = new Map<string, number>();
  /** The queue as last read, by lane, kept up to date with this dispatcher's own attempts. */
  private lanes = new Map<string, QueuedRecord[]>();
  /** Messages not to try again before the next read (see `Outcome`). */
  private readonly passed = new Set<string>();
  private readonly targets = new Map<string, { until: number; target: Target | null }>();
  /** The skips of stale positions under way (`pruneStalePositions`), one batch at a time. */
  private pruning: Promise<void> | undefined;

  private readonly lookups: OwnerLookups;
  private readonly policy: OutboundPolicy;

  constructor(private readonly deps: DispatcherDeps) {
    this.lookups = deps.lookups ?? new OwnerLookups(deps.config.timeoutMs);
    this.policy = targetPolicy(deps.config, deps.appEnv);
    this.periodic = new Periodic(
      deps.config.dispatchIntervalMs,
      () => this.look(new Date()),
      (err) => deps.logger().warn('webhook dispatch failed; the next look retries', { err }),
    );
  }

  start(): void {
    this.periodic.start();
  }

  async stop(): Promise<void> {
    await this.periodic.stop();
    await Promise.allSettled([...this.inFlight.values(), this.pruning]);
  }

  /**
   * Reads the queue and starts what is due; attempts that end start the next at once. What it
   * starts is dated `lookedAt` plus the time its reads took (up to three of a long queue):
   * dated when the look began, an attempt looked older than it was, and another replica took
   * it for abandoned before its deadline, sending the next while it was still under way.
   */
  async look(lookedAt: Date): Promise<void> {
    const began = Date.now();
    this.lanes = lanesOf(await this.readQueue());
    const now = datedAfter(lookedAt, began);
    this.passed.clear();
    for (const [id, cached] of this.targets) {
      if (cached.until <= now.getTime()) this.targets.delete(id);
    }
    this.pruneStalePositions(now);
    this.fill(now);
  }

  /**
   * The queue as a look sees it: `QUEUE_READ` entries in storage order, and while a read comes
   * back full, the same again without the endpoints holding more than `BACKLOGGED` of its
   * entries. A backlog of a few endpoints (one failing for a day, one disabled with what waited
   * for it) would otherwise fill every read and hold every other endpoint's messages back; the
   * backlogged keep what the reads before found of them, so they go on too. Only a queue of
   * more than `QUEUE_READ` pays for the extra reads.
   */
  private async readQueue(): Promise<QueuedRecord[]> {
    const found = new Map<string, QueuedRecord>();
    const excluded = new Set<string>();
    for (let read = 0; read < QUEUE_READS; read++) {
      const entries = await this.deps.store.queue(QUEUE_READ, [...excluded]);
      for (const entry of entries) found.set(entry._id, entry);
      if (entries.length < QUEUE_READ) break;
      const backlogged = backloggedEndpoints(entries, BACKLOGGED);
      if (backlogged.length === 0) break;
      for (const webhookId of backlogged) excluded.add(webhookId);
    }
    return [...found.values()];
  }

  /** Waits for the attempts under way (tests and benchmarks). */
  async settle(): Promise<void> {
    await Promise.allSettled(this.inFlight.values());
  }

  /** Starts each lane's first message that is due, while there is room. */
  private fill(now: Date): void {
    for (const [lane, messages] of this.lanes) {
      if (this.periodic.stopping || this.inFlight.size >= this.deps.config.concurrency) return;
      const head = messages[0];
      if (!head) {
        this.lanes.delete(lane);
        continue;
      }
      if (this.busyLanes.has(lane) || this.passed.has(head._id)) continue;
      if (new Date(head.nextAttemptAt).getTime() > now.getTime()) continue;
      if (this.waits(head.webhookId, now)) continue;
      const busy = this.busyOwners.get(shareOf(head)) ?? 0;
      if (busy >= ownerShare(this.deps.config.concurrency)) continue;
      this.begin(head, now);
    }
  }

  /**
   * Whether the endpoint's messages wait, known from its target as read (disabled, within the
   * retention): its lanes are not begun. Begun, each would pass at once without I/O and its end
   * fill again from the start: a disabled endpoint's thousands of lanes held the event loop
   * about a second a look (found by the webhook audit).
   */
  private waits(webhookId: string, now: Date): boolean {
    const cached = this.targets.get(webhookId);
    const endpoint = cached && cached.until > now.getTime() ? cached.target?.endpoint : undefined;
    return endpoint !== undefined && waitsForEnable(endpoint, now, this.deps.config.retentionMs);
  }

  private begin(head: QueuedRecord, now: Date): void {
    const run = this.attempt(head, now)
      .then((outcome) => this.advance(head, outcome))
      .catch((err: unknown) => {
        this.passed.add(head._id);
        this.deps.logger().warn('webhook attempt not recorded; retried later', {
          messageId: head._id,
          err: (err as Error).message,
        });
      })
      .finally(() => {
        this.inFlight.delete(head._id);
        this.busyLanes.delete(head.lane);
        const owner = shareOf(head);
        const busy = (this.busyOwners.get(owner) ?? 1) - 1;
        if (busy > 0) this.busyOwners.set(owner, busy);
        else this.busyOwners.delete(owner);
        this.fill(new Date());
      });
    this.inFlight.set(head._id, run);
    this.busyLanes.add(head.lane);
    this.busyOwners.set(shareOf(head), (this.busyOwners.get(shareOf(head)) ?? 0) + 1);
  }

  /** Its lane as this dispatcher now knows it: the next message may go at once. */
  private advance(head: QueuedRecord, outcome: Outcome): void {
    if ('passed' in outcome) {
      this.passed.add(head._id);
      return;
    }
    const lane = this.lanes.get(head.lane);
    const at = lane?.findIndex((m) => m._id === head._id) ?? -1;
    if (!lane || at < 0) return;
    if ('done' in outcome) lane.splice(at, 1);
    else lane[at] = { ...lane[at], ...outcome, nextAttemptAt: outcome.retryAt };
  }

  /** The endpoint and its signing secrets, read at most every ENDPOINT_CACHE_MS. */
  private async target(webhookId: string, now: Date): Promise<Target | null> {
    const cached = this.targets.get(webhookId);
    if (cached && cached.until > now.getTime()) return cached.target;
    const { store, box } = this.deps;
    const stored = await store.endpoint(webhookId);
    // Its deletion's mark undone by a change that stopped before looking: nothing more is sent.
    const deleted = stored && !stored.deleted && (await store.deletionRecorded(webhookId));
    const endpoint = stored && deleted ? { ...stored, deleted } : stored;
    const versions = endpoint
      ? signingSecrets(
          await store.latestSecrets(endpoint, {
            most: MOST_SIGNING_SECRETS - 1,
            while: (successor) => withinOverlap(successor, now, ROTATION_OVERLAP_MS),
          }),
          now,
          ROTATION_OVERLAP_MS,
        )
      : [];
    const target = endpoint ? { endpoint, ...openSecrets(box, versions) } : null;
    this.targets.set(webhookId, { until: now.getTime() + ENDPOINT_CACHE_MS, target });
    return target;
  }

  /**
   * Records where the endpoint's failing streak began (null: it succeeded). Its attempt's
   * outcome is recorded whatever becomes of this write: one that fails (another write of the
   * endpoint held it all the wait, the database away) leaves this dispatcher's copy as it was,
   * so that the endpoint's next outcome writes it again.
   */
  private async recordStreak(webhookId: string, failingSince: Date | null): Promise<void> {
    const marks = { failingSince, lastFailedAt: failingSince, failingForMs: failingSince && 0 };
    await this.streakWrite(webhookId, async () => {
      await this.deps.store.updateEndpoint(webhookId, marks);
      this.noteChange(webhookId, marks);
    });
  }

  /**
   * Records how long the streak has failed by this failure at `at` (`failingForMs`), only on
   * the streak it was counted for: this dispatcher's copy may be of one ended since.
   */
  private async recordProgress(webhookId: string, streak: FailingStreak, at: Date) {
    const { config, store } = this.deps;
    const progress = {
      lastFailedAt: at,
      failingForMs: failingForMs(streak, at, config.backoffMaxMs),
    };
    await this.streakWrite(webhookId, async () => {
      if (await store.recordStreakProgress(webhookId, streak.failingSince, progress)) {
        this.noteChange(webhookId, progress);
      }
    });
  }

  /** A write of the streak; one that fails is made again by the endpoint's next outcome. */
  private async streakWrite(webhookId: string, write: () => Promise<void>): Promise<void> {
    try {
      await write();
    } catch (err) {
      this.deps.logger().warn('webhook endpoint’s failing streak not recorded yet', {
        webhookId,
        err: (err as Error).message,
      });
    }
  }

  /** This dispatcher's own change to an endpoint, seen by its next attempts at once. */
  private noteChange(webhookId: string, changes: Partial<EndpointRecord>): void {
    const cached = this.targets.get(webhookId)?.target;
    if (cached) cached.endpoint = { ...cached.endpoint, ...changes };
  }

  private async attempt(queued: QueuedRecord, startedAt: Date): Promise<Outcome> {
    const { store } = this.deps;
    const began = Date.now();
    const target = await this.target(queued.webhookId, startedAt);
    // Dated after the endpoint and its secrets were read, as `look` dates after its reads.
    const now = datedAfter(startedAt, began);
    if (!target || target.endpoint.deleted) {
      await this.give(queued, ENDPOINT_DELETED_WHY, now);
      return { done: true };
    }
    // A disabled endpoint's messages wait: enabling it again sends them, in order; for as long
    // as retention keeps what was sent, then they are given up.
    if (waitsForEnable(target.endpoint, now, this.deps.config.retentionMs)) return { passed: true };
    if (target.endpoint.status !== 'ACTIVE') return this.giveUpWaiting(queued, now);
    const n = queued.attempts + 1;
    const claimed = await this.claim(queued, n, now);
    if (!claimed) {
      await this.recover(queued, n, now);
      return { passed: true };
    }
    if (queued.ephemeral && (await this.superseded(queued))) return this.skip(queued, n, now);
    const event = await store.event(queued.eventId);
    if (queued.ephemeral) {
      // A position whose publication failed is forgotten by it (fan-out), a message of it
      // stored all the same by a retry on another replica: stale by now, nobody's failure.
      if (!event) return this.skip(queued, n, now, LOST_POSITION_WHY);
      // Replayed by its owner, who asked for that position as it was: sent whatever its age.
      if (queued.replay !== true && tooOldToSend(new Date(event.createdAt), now)) {
        return this.skip(queued, n, now, OLD_POSITION_WHY);
      }
    }
    if (Date.now() - now.getTime() > SEND_START_BUDGET_MS) {
      this.deps.logger().warn('webhook attempt not started in time; it is tried again', {
        messageId: queued._id,
        attempt: n,
        afterMs: Date.now() - now.getTime(),
      });
      return this.notStarted(queued, n, now);
    }
    // The mark goes beside the request: this dispatcher looks at the lane's next message only
    // once both are done. Lanes without positions need none.
    const marks = !queued.ephemeral && subscribes(target.endpoint.events, 'courier.location');
    const [result] = await Promise.all([
      this.send(target, queued, event, n, now),
      marks ? this.markLane(queued) : undefined,
    ]);
    const finishedAt = new Date(now.getTime() + result.durationMs);
    await store.finishAttempt(attemptId(queued._id, n), {
      finishedAt,
      statusCode: result.statusCode,
      error: result.error,
      durationMs: result.durationMs,
      responseExcerpt: result.responseExcerpt,
    });
    return this.conclude(target.endpoint, queued, n, result, finishedAt);
  }

  private async send(
    target: Target,
    queued: QueuedRecord,
    event: EventRecord | null,
    n: number,
    now: Date,
  ): Promise<PostResult> {
    const { config } = this.deps;
    // Registered half-way by a version that stored the endpoint before its secret: failing
    // (so its owner is told, and the endpoint disabled in time) beats throwing at every look.
    if (target.secrets.length === 0) {
      const rotate = `rotate it with POST /api/webhooks/${queued.webhookId}/rotate-secret`;
      const error = target.unreadable
        ? `the endpoint's signing secret cannot be read with this deployment's WEBHOOK_SECRET_KEY (changed since it was sealed); ${rotate}`
        : `the endpoint has no signing secret; ${rotate}`;
      return { statusCode: null, error, durationMs: 0, responseExcerpt: null };
    }
    if (!event) throw new Error(`event ${queued.eventId} of message ${queued._id} is missing`);
    const role = roleInEvent(event, target.endpoint.userId);
    const body = JSON.stringify({
      id: event._id,
      type: event.type,
      createdAt: new Date(event.createdAt).toISOString(),
      role,
      data:
        role === 'RECIPIENT' ? recipientsView(event.data, new Date(event.createdAt)) : event.data,
    });
    return post({
      url: target.endpoint.url,
      body,
      headers: {
        [SIGNATURE_HEADER.toLowerCase()]: signatureHeader(
          target.secrets,
          body,
          Math.floor(now.getTime() / 1000),
        ),
        'waybill-event-id': event._id,
        'waybill-event-type': event.type,
        'waybill-attempt': String(n),
      },
      timeoutMs: config.timeoutMs,
      policy: this.policy,
      resolve: this.lookups.of(target.endpoint.userId),
    });
  }

  /**
   * An attempt whose request was not made in time (`SEND_START_BUDGET_MS`): recorded as such and
   * tried again after the shortest wait. Nobody's failure: the endpoint's streak is not fed, and
   * a courier position, which a failure gives up, is not given up for it.
   */
  private async notStarted(queued: QueuedRecord, n: number, at: Date): Promise<Outcome> {
    const { store, config } = this.deps;
    await store.finishAttempt(attemptId(queued._id, n), {
      finishedAt: at,
      statusCode: null,
      error: NOT_STARTED_WHY,
      durationMs: 0,
      responseExcerpt: null,
    });
    await store.updateMessage(queued._id, {
      attempts: n,
      lastAttemptAt: at,
      lastStatusCode: null,
      lastError: NOT_STARTED_WHY,
    });
    const retryAt = new Date(Date.now() + config.backoffBaseMs);
    await store.reschedule(queued._id, { attempts: n, nextAttemptAt: retryAt });
    return { retryAt, attempts: n, firstAttemptAt: queued.firstAttemptAt };
  }

  /** After the n-th attempt: done, or rescheduled, or given up; the endpoint's health noted. */
  private async conclude(
    endpoint: EndpointRecord,
    queued: QueuedRecord,
    n: number,
    result: Pick<PostResult, 'statusCode' | 'error'>,
    at: Date,
  ): Promise<Outcome> {
    const { store, config } = this.deps;
    const common = {
      attempts: n,
      lastAttemptAt: at,
      lastStatusCode: result.statusCode,
      lastError: result.error,
    };
    if (isDelivered(result.statusCode)) {
      await store.updateMessage(queued._id, { ...common, status: 'DELIVERED', deliveredAt: at });
      await store.dequeue(queued._id);
      // What this dispatcher knows now, as for a failure: a failure of another attempt may have
      // begun a streak since this one's snapshot was read.
      const { failingSince } = this.targets.get(endpoint._id)?.target?.endpoint ?? endpoint;
      if (failingSince || endpoint.failingSince) await this.recordStreak(endpoint._id, null);
      return { done: true };
    }
    const firstAttemptAt = queued.firstAttemptAt ?? at;
    const next = afterFailure({
      // A replay's waits count from its own first attempt, as its retry window does.
      failedAttempts: n - (queued.replayedAfter ?? 0),
      firstAttemptAt,
      now: at,
      retryWindowMs: config.retryWindowMs,
      backoff: { baseMs: config.backoffBaseMs, maxMs: config.backoffMaxMs },
      random: Math.random(),
      ephemeral: queued.ephemeral,
    });
    let outcome: Outcome;
    if ('retryAt' in next) {
      await store.updateMessage(queued._id, common);
      await store.reschedule(queued._id, {
        attempts: n,
        firstAttemptAt,
        nextAttemptAt: next.retryAt,
      });
      outcome = { retryAt: next.retryAt, attempts: n, firstAttemptAt };
    } else {
      await store.updateMessage(queued._id, { ...common, status: 'FAILED' });
      await store.dequeue(queued._id);
      outcome = { done: true };
    }
    await this.noteFailure(endpoint, at, result);
    return outcome;
  }

  private async noteFailure(
    endpoint: EndpointRecord,
    at: Date,
    result: Pick<PostResult, 'statusCode' | 'error'>,
  ): Promise<void> {
    const { store, config } = this.deps;
    // What this dispatcher knows now: the snapshot its attempt began with may be older than a
    // failure another of its attempts recorded meanwhile.
    const known = this.targets.get(endpoint._id)?.target?.endpoint ?? endpoint;
    const failing = streakOf(known);
    if (!failing) {
      await this.recordStreak(endpoint._id, at);
      return;
    }
    if (failureToRecord(failing, at, config.backoffMaxMs)) {
      await this.recordProgress(endpoint._id, failing, at);
    }
    if (!shouldDisable(failing, at, config)) return;
    const streak = await this.streakAsStored(endpoint._id, at);
    if (!streak) return;
    const hours = Math.round(config.disableAfterMs / 3_600_000);
    const reason = `Every attempt failed since ${streak.toISOString()} (${hours} h or more); fix the endpoint, then enable it with POST ${enableRoute(endpoint._id)}`;
    const lastError =
      result.error ?? (result.statusCode === null ? null : `HTTP ${result.statusCode}`);
    // Only while the streak stands as stored: an enable, or another dispatcher's success, may
    // have been written since it was read.
    const disabled = await store.disableEndpoint(endpoint._id, streak, async (current) => {
      // The notice first: a dispatcher stopping between the two leaves the endpoint ACTIVE,
      // and its next failure comes here again; the other way round nothing would tell the owner.
      const failing = { ...current, failingSince: streak };
      const disabledAt = await this.deps.recordDisable(failing, at, lastError);
      return { status: 'DISABLED', disabledAt, disabledReason: reason };
    });
    if (!disabled) {
      await this.beginStreakIfEnded(endpoint._id, at);
      return;
    }
    this.noteChange(endpoint._id, disabled);
    this.deps.logger().warn('webhook endpoint disabled; its owner is told by e-mail', {
      webhookId: endpoint._id,
      userId: endpoint.userId,
      url: targetForLog(endpoint.url),
      reason,
    });
  }

  /**
   * The failing streak to disable the endpoint for, as stored: another dispatcher's success
   * within this one's cache window ended the one it knows. Null when no disable is due (nor
   * possible: the endpoint was deleted or disabled meanwhile); a streak found ended starts again
   * with this failure.
   */
  private async streakAsStored(webhookId: string, at: Date): Promise<Date | null> {
    const { store, config } = this.deps;
    const stored = await store.endpoint(webhookId);
    if (!stored || stored.deleted || stored.status !== 'ACTIVE') return null;
    const failing = streakOf(stored);
    if (!failing) {
      await this.recordStreak(webhookId, at);
      return null;
    }
    const { failingSince } = failing;
    this.noteChange(webhookId, failing);
    if (!shouldDisable(failing, at, config)) return null;
    // A success since, that did not end the streak (on another replica whose copy of the
    // endpoint did not show it yet): the streak begins again now.
    if (await this.succeededSince(webhookId, failingSince)) {
      await this.recordStreak(webhookId, at);
      return null;
    }
    return failingSince;
  }

  /**
   * After a disable that no longer stood (a success, the owner's enable, written since the
   * streak was read): this failure begins the next streak if the one stored has ended.
   */
  private async beginStreakIfEnded(webhookId: string, at: Date): Promise<void> {
    await this.streakAsStored(webhookId, at);
  }

  /** Whether one of the endpoint's latest messages was delivered after `since`. */
  private async succeededSince(webhookId: string, since: Date): Promise<boolean> {
    const latest = await this.deps.store.messagesOf(webhookId, STREAK_CHECK_MESSAGES, 0);
    return latest.some((m) => m.deliveredAt && m.deliveredAt.getTime() > since.getTime());
  }

  /**
   * Attempt n of the message, this dispatcher's if it inserted the attempt first; `made`, an
   * attempt decided without a request (a give-up), recorded as it is claimed.
   */
  private claim(
    queued: QueuedRecord,
    n: number,
    now: Date,
    made: Partial<AttemptRecord> = {},
  ): Promise<boolean> {
    return this.deps.store.claimAttempt({
      _id: attemptId(queued._id, n),
      messageId: queued._id,
      webhookId: queued.webhookId,
      n,
      startedAt: now,
      finishedAt: null,
      statusCode: null,
      error: null,
      durationMs: null,
      responseExcerpt: null,
      replay: queued.replay === true,
      ...made,
    });
  }

  /** Whether a position at the head of its lane is stale (`isSuperseded`). */
  private async superseded(position: QueuedRecord): Promise<boolean> {
    const lane = this.lanes.get(position.lane) ?? [];
    const behind = lane.filter((m) => m._id !== position._id).length;
    const mark = behind > 0 ? null : await this.deps.store.laneMark(position.lane);
    return isSuperseded(position, behind, mark);
  }

  /**
   * A change's mark, written at most once it is sent: a mark that failed leaves a position
   * that trails the change to be sent after it, which is less harmful than an attempt not
   * recorded (sent again by the recovery).
   */
  private async markLane(change: QueuedRecord): Promise<void> {
    try {
      await this.deps.store.markLane(change.lane, change.sequence);
    } catch (err) {
      this.deps.logger().warn('webhook lane mark not written; a stale position may follow', {
        messageId: change._id,
        err: (err as Error).message,
      });
    }
  }

  /**
   * A stale position's n-th attempt, claimed and not made: the attempt says so (a dispatcher
   * dying before the message does is concluded as a skip by `recover`), the log says why.
   */
  private async skip(
    position: QueuedRecord,
    n: number,
    at: Date,
    why = STALE_POSITION_WHY,
  ): Promise<Outcome> {
    await this.deps.store.finishAttempt(attemptId(position._id, n), {
      finishedAt: at,
      error: why,
      durationMs: 0,
      skipped: true,
    });
    await this.concludeSkip(position, n, at, why);
    return { done: true };
  }

  private async concludeSkip(
    position: QueuedRecord,
    n: number,
    at: Date,
    why: string,
  ): Promise<void> {
    await this.deps.store.updateMessage(position._id, {
      status: 'SKIPPED',
      attempts: n,
      lastAttemptAt: at,
      lastError: why,
    });
    await this.deps.store.dequeue(position._id);
  }

  /**
   * Skips, in the background, the positions that wait in a lane behind its head with a later
   * message after them (stale whatever happens to the head): an endpoint retrying one change
   * for hours would otherwise gather one position per delivery under way per flush.
   */
  private pruneStalePositions(lookedAt: Date): void {
    if (this.pruning) return;
    const began = Date.now();
    const stale: QueuedRecord[] = [];
    for (const lane of this.lanes.values()) {
      for (const message of lane.slice(1, -1)) {
        // A replay holds its entry until it has marked the message PENDING: skipped before,
        // the mark would land after the skip, on a message no longer queued.
        const held = message.replay === true && new Date(message.nextAttemptAt) > lookedAt;
        if (message.ephemeral && !held && stale.length < PRUNE_AT_ONCE) stale.push(message);
      }
    }
    if (stale.length === 0) return;
    const skipped = new Set(stale.map((m) => m._id));
    for (const [id, lane] of this.lanes) {
      this.lanes.set(
        id,
        lane.filter((m) => !skipped.has(m._id)),
      );
    }
    this.pruning = (async () => {
      for (const position of stale) {
        if (this.periodic.stopping) break;
        const n = position.attempts + 1;
        // Each claim dated when it is made: some hundreds of them, one after the other, dated
        // at the look, would look abandoned to another replica before they were concluded.
        const at = datedAfter(lookedAt, began);
        if (await this.claim(position, n, at)) await this.skip(position, n, at);
      }
    })()
      .catch((err: unknown) => {
        this.deps.logger().warn('stale courier positions not all skipped; the next look goes on', {
          err: (err as Error).message,
        });
      })
      .finally(() => {
        this.pruning = undefined;
      });
  }

  /**
   * Gives up a message its endpoint, disabled longer than retention, kept waiting. The
   * endpoint is read again first (the cached one may be a second old: an enable since then
   * sends it), and its next attempt is claimed already given up, with why, so that a
   * dispatcher seeing the endpoint enabled meanwhile either sends it or finds it given up,
   * never both, and one that takes over from a stopped give-up concludes it as one (`recover`).
   */
  private async giveUpWaiting(queued: QueuedRecord, now: Date): Promise<Outcome> {
    const { store, config } = this.deps;
    const endpoint = await store.endpoint(queued.webhookId);
    if (!endpoint || !waitedPastRetention(endpoint, now, config.retentionMs)) {
      this.targets.delete(queued.webhookId);
      return { passed: true };
    }
    const n = queued.attempts + 1;
    const days = Math.round(config.retentionMs / 86_400_000);
    const why = `given up: the endpoint stayed disabled for ${days} days (WEBHOOK_RETENTION_DAYS); enable it to receive new events, and replay what you still need`;
    const givenUp = { finishedAt: now, error: why, durationMs: 0, givenUp: true };
    if (!(await this.claim(queued, n, now, givenUp))) {
      await this.recover(queued, n, now);
      return { passed: true };
    }
    await this.give(queued, why, now, n);
    return { done: true };
  }

  /**
   * Gives a message up: without an attempt when its endpoint is gone; as attempt `n`, claimed
   * given up, when it stayed disabled past the retention (`giveUpWaiting`).
   */
  private async give(
    queued: QueuedRecord,
    why: string | null,
    at: Date,
    n?: number,
  ): Promise<void> {
    await this.deps.store.updateMessage(queued._id, {
      status: 'FAILED',
      lastError: why,
      lastAttemptAt: at,
      ...(n === undefined ? {} : { attempts: n, lastStatusCode: null }),
    });
    await this.deps.store.dequeue(queued._id);
  }

  /**
   * Someone else holds the n-th attempt. Usually a replica making it now: nothing to do. When
   * its maker died before concluding (the attempt unfinished past its deadline, or finished
   * and never concluded), it is concluded from what it recorded.
   */
  private async recover(seen: QueuedRecord, n: number, now: Date): Promise<void> {
    const { store, config } = this.deps;
    const queued = await store.queued(seen._id);
    if (!queued || queued.attempts >= n) return;
    const attempt = await store.attempt(seen._id, n);
    if (!attempt) return;
    // A skip or a give-up whose maker stopped before the message: what it decided stands.
    if (attempt.skipped) {
      const why = attempt.error ?? STALE_POSITION_WHY;
      return this.concludeSkip(queued, n, new Date(attempt.startedAt), why);
    }
    if (attempt.givenUp) {
      return this.give(queued, attempt.error, new Date(attempt.startedAt), n);
    }
    const finishedAt = attempt.finishedAt ? new Date(attempt.finishedAt) : null;
    const since = finishedAt ?? new Date(attempt.startedAt);
    if (now.getTime() - since.getTime() <= abandonedAfterMs(config.timeoutMs)) return;
    const endpoint = await store.endpoint(queued.webhookId);
    if (!endpoint) return;
    const result = finishedAt
      ? { statusCode: attempt.statusCode, error: attempt.error }
      : { statusCode: null, error: 'the dispatcher stopped during the attempt' };
    await this.conclude(endpoint, queued, n, result, finishedAt ?? now);
  }
}

/** The endpoint's failing streak as written on it, or null when it is not failing. */
function streakOf(endpoint: EndpointRecord): FailingStreak | null {
  const { failingSince, lastFailedAt } = endpoint;
  return failingSince ? { failingSince, lastFailedAt, failingForMs: endpoint.failingForMs } : null;
}
