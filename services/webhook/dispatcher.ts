import type { Logger } from 'moleculer';
import type { Config } from '../../libs/config';
import { Periodic } from '../../libs/periodic';
import { signatureHeader } from '../../libs/webhook-signature';
import {
  afterFailure,
  dueHeads,
  excerpt,
  isDelivered,
  shouldDisable,
  signingSecrets,
} from './dispatch-rules';
import { post, type PostResult } from './poster';
import { enableRoute } from './notices';
import type { SecretBox } from './secret-box';
import { attemptId, type EndpointRecord, type QueuedRecord, type WebhookStore } from './store';

/** Both secrets sign for a day after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;
/** The queue a dispatcher reads at once; the rest waits for the next look. */
const QUEUE_READ = 5000;
/**
 * How long after its start an attempt nobody concluded (its dispatcher died) is taken as
 * failed: twice the deadline and some seconds, so that a dispatcher still at work (a slow
 * database around the request) is never taken over.
 */
export const abandonedAfterMs = (timeoutMs: number) => 2 * timeoutMs + 5_000;

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

  constructor(private readonly deps: DispatcherDeps) {
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
    await Promise.allSettled(this.inFlight.values());
  }

  /** Starts the attempts due now that this dispatcher has room for. */
  async look(now: Date): Promise<void> {
    const room = this.deps.config.concurrency - this.inFlight.size;
    if (room <= 0) return;
    const queue = await this.deps.store.queue(QUEUE_READ);
    const due = dueHeads(queue, now).filter((q) => !this.inFlight.has(q._id));
    for (const queued of due.slice(0, room)) {
      const run = this.attempt(queued, now)
        .catch((err: unknown) => {
          this.deps.logger().warn('webhook attempt not recorded; retried later', {
            messageId: queued._id,
            err: (err as Error).message,
          });
        })
        .finally(() => this.inFlight.delete(queued._id));
      this.inFlight.set(queued._id, run);
    }
  }

  /** Waits for the attempts under way (tests and benchmarks). */
  async settle(): Promise<void> {
    await Promise.allSettled(this.inFlight.values());
  }

  private async attempt(queued: QueuedRecord, now: Date): Promise<void> {
    const { store } = this.deps;
    const endpoint = await store.endpoint(queued.webhookId);
    if (!endpoint || endpoint.deleted) {
      await this.give(queued, 'the endpoint was deleted', now);
      return;
    }
    // A disabled endpoint's messages wait: enabling it again sends them, in order.
    if (endpoint.status !== 'ACTIVE') return;
    const n = queued.attempts + 1;
    const claimed = await store.claimAttempt({
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
    });
    if (!claimed) {
      await this.recover(queued, n, now);
      return;
    }
    const result = await this.send(endpoint, queued, now);
    const finishedAt = new Date(now.getTime() + result.durationMs);
    await store.finishAttempt(attemptId(queued._id, n), {
      finishedAt,
      statusCode: result.statusCode,
      error: result.error,
      durationMs: result.durationMs,
      responseExcerpt: result.responseExcerpt === null ? null : excerpt(result.responseExcerpt),
    });
    await this.conclude(endpoint, queued, n, result, finishedAt);
  }

  private async send(
    endpoint: EndpointRecord,
    queued: QueuedRecord,
    now: Date,
  ): Promise<PostResult> {
    const { store, box, config, appEnv } = this.deps;
    const event = await store.event(queued.eventId);
    if (!event) throw new Error(`event ${queued.eventId} of message ${queued._id} is missing`);
    const body = JSON.stringify({
      id: event._id,
      type: event.type,
      createdAt: new Date(event.createdAt).toISOString(),
      data: event.data,
    });
    const versions = signingSecrets(await store.latestSecrets(endpoint), now, ROTATION_OVERLAP_MS);
    const secrets = versions.map((v) => box.open(v.sealed));
    return post({
      url: endpoint.url,
      body,
      headers: {
        'waybill-signature': signatureHeader(secrets, body, Math.floor(now.getTime() / 1000)),
        'waybill-event-id': event._id,
        'waybill-event-type': event.type,
        'waybill-attempt': String(queued.attempts + 1),
      },
      timeoutMs: config.timeoutMs,
      policy: { requireHttps: appEnv === 'live', allowPrivate: config.allowPrivateTargets },
    });
  }

  /** After the n-th attempt: done, or rescheduled, or given up; the endpoint's health noted. */
  private async conclude(
    endpoint: EndpointRecord,
    queued: QueuedRecord,
    n: number,
    result: Pick<PostResult, 'statusCode' | 'error'>,
    at: Date,
  ): Promise<void> {
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
      if (endpoint.failingSince) await store.updateEndpoint(endpoint._id, { failingSince: null });
      return;
    }
    const firstAttemptAt = queued.firstAttemptAt ?? at;
    const next = afterFailure({
      failedAttempts: n,
      firstAttemptAt,
      now: at,
      retryWindowMs: config.retryWindowMs,
      backoff: { baseMs: config.backoffBaseMs, maxMs: config.backoffMaxMs },
      random: Math.random(),
      ephemeral: queued.ephemeral,
    });
    if ('retryAt' in next) {
      await store.updateMessage(queued._id, common);
      await store.reschedule(queued._id, {
        attempts: n,
        firstAttemptAt,
        nextAttemptAt: next.retryAt,
      });
    } else {
      await store.updateMessage(queued._id, { ...common, status: 'FAILED' });
      await store.dequeue(queued._id);
    }
    await this.noteFailure(endpoint, at, result);
  }

  private async noteFailure(
    endpoint: EndpointRecord,
    at: Date,
    result: Pick<PostResult, 'statusCode' | 'error'>,
  ): Promise<void> {
    const { store, config } = this.deps;
    const { failingSince } = endpoint;
    if (!failingSince) {
      await store.updateEndpoint(endpoint._id, { failingSince: at });
      return;
    }
    if (!shouldDisable(failingSince, at, config.disableAfterMs)) return;
    const hours = Math.round(config.disableAfterMs / 3_600_000);
    const reason = `Every attempt failed since ${failingSince.toISOString()} (${hours} h or more); fix the endpoint, then enable it with POST ${enableRoute(endpoint._id)}`;
    const lastError =
      result.error ?? (result.statusCode === null ? null : `HTTP ${result.statusCode}`);
    // The notice first: a dispatcher stopping between the two leaves the endpoint ACTIVE, and
    // its next failure comes here again; the other way round nothing would tell the owner.
    const disabledAt = await this.deps.recordDisable({ ...endpoint, failingSince }, at, lastError);
    await store.updateEndpoint(endpoint._id, {
      status: 'DISABLED',
      disabledAt,
      disabledReason: reason,
    });
    this.deps.logger().warn('webhook endpoint disabled; its owner is told by e-mail', {
      webhookId: endpoint._id,
      userId: endpoint.userId,
      url: endpoint.url,
      reason,
    });
  }

  /** Gives a message up without an attempt (its endpoint is gone). */
  private async give(queued: QueuedRecord, why: string, at: Date): Promise<void> {
    await this.deps.store.updateMessage(queued._id, {
      status: 'FAILED',
      lastError: why,
      lastAttemptAt: at,
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
