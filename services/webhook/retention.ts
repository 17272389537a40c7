import type { Logger } from 'moleculer';
import { PENDING_ITEM_MS, type OwnerListEntry } from '../../libs/owner-list';
import { attemptId } from '../../libs/messaging/outbox-records';
import { Periodic } from '../../libs/periodic';
import {
  CLAIM_HOLD_MS,
  ENDPOINT_DELETED_WHY,
  laneOf,
  LOST_POSITION_WHY,
  queueEntryOf,
} from './dispatch-rules';
import { messageIdOf, type MessageRecord, type QueuedRecord, type WebhookStore } from './store';

/**
 * Retention (decision 126): a message finished (delivered, given up, or a position skipped)
 * longer than `WEBHOOK_RETENTION_DAYS` ago is deleted with its attempts, its lane's mark and
 * its entry of the endpoint's list, and an event once none of its messages is left. Nothing
 * still to send is deleted. The sweep finds them by `_id` alone: it walks each endpoint's list
 * of messages (`webhook_endpoint_messages`) from the list's floor up, and stops at the first
 * message it must keep, so that what is left of a list is always the top of it, read in full
 * pages, and the floor is raised past what went.
 */

export const HOUR_MS = 3_600_000;
/** Messages one walk of an endpoint's list judges: one write per collection for them. */
export const RETENTION_BATCH = 100;
/** Messages a round deletes at most; the next round goes on from the lists' floors. */
export const RETENTION_ROUND = 2_000;
/** A replica's claim of an endpoint's batch older than this is of a sweep that stopped. */
const CLAIM_STALE_MS = 5 * 60_000;

/** What a sweep deletes, as the counter labels it. */
export const RETIRED_KINDS = [
  'message',
  'attempt',
  'event',
  'lane',
  'list',
  'endpoint',
  'secret',
] as const;
export type RetiredKind = (typeof RETIRED_KINDS)[number];
export type RetiredCounts = Record<RetiredKind, number>;

const noneRetired = (): RetiredCounts => ({
  message: 0,
  attempt: 0,
  event: 0,
  lane: 0,
  list: 0,
  endpoint: 0,
  secret: 0,
});

/** When a message last finished: a replay after a delivery may fail, and the other way round. */
export function finishedAt(message: MessageRecord): number {
  return Math.max(
    new Date(message.createdAt).getTime(),
    message.lastAttemptAt ? new Date(message.lastAttemptAt).getTime() : 0,
    message.deliveredAt ? new Date(message.deliveredAt).getTime() : 0,
  );
}

/**
 * How long before its deletion a message may no longer be replayed: a replay that read it
 * just before the sweep would queue a message being deleted. Larger than any pause between a
 * replay's read and its queue entry and than the replicas' clocks differ.
 */
export const replayMarginMs = (retentionMs: number) => Math.min(HOUR_MS, retentionMs / 4);

/** Whether a finished message is too near its deletion to be replayed. */
export function pastReplay(message: MessageRecord, now: Date, retentionMs: number): boolean {
  return finishedAt(message) < now.getTime() - retentionMs + replayMarginMs(retentionMs);
}

export interface RetentionDeps {
  store: WebhookStore;
  retentionMs: number;
  intervalMs: number;
  /** The deployment's environment, whose endpoints' messages an event may have. */
  environment: string;
  logger: () => Logger;
  /** Told what each round deleted (the Prometheus counter). */
  counted?: (deleted: RetiredCounts) => void;
}

/**
 * Deletes what retention lets go, on every replica. Replicas at once do no harm: every delete
 * is by `_id` and counted as what it found, and a batch of an endpoint's list is claimed by
 * inserting `<webhookId>:<n>` (n its first entry), so two replicas do not walk it together.
 */
export class RetentionSweep {
  private readonly periodic: Periodic;
  /**
   * When each endpoint's list may next have something to delete, as this replica last found
   * it: a list whose oldest message finished at t waits until t + retention, an empty one or
   * one whose oldest is still to send a whole retention (what is sent from now on finishes
   * from now on). Without it a round would read every endpoint's list.
   */
  private readonly notBefore = new Map<string, number>();
  /** The endpoints as last scanned: a new one has nothing to delete for a retention. */
  private endpoints: { ids: string[]; until: number } | undefined;

  constructor(private readonly deps: RetentionDeps) {
    this.periodic = new Periodic(
      deps.intervalMs,
      () => this.sweep(new Date()).then(() => undefined),
      (err) =>
        deps.logger().warn('webhook retention sweep failed; the next round retries', { err }),
    );
  }

  start(): void {
    this.periodic.start();
  }

  async stop(): Promise<void> {
    await this.periodic.stop();
  }

  /** One round at `now`: at most `most` messages deleted, a batch at a time. */
  async sweep(now: Date, most = RETENTION_ROUND): Promise<RetiredCounts> {
    const deleted = noneRetired();
    const cutoff = now.getTime() - this.deps.retentionMs;
    let budget = most;
    for (const webhookId of shuffled(await this.endpointIds(now))) {
      if (this.periodic.stopping || budget <= 0) break;
      if ((this.notBefore.get(webhookId) ?? 0) > now.getTime()) continue;
      for (;;) {
        const walked = await this.walk(webhookId, now, cutoff, Math.min(RETENTION_BATCH, budget));
        for (const kind of RETIRED_KINDS) deleted[kind] += walked.deleted[kind];
        budget -= walked.judged;
        if (!walked.more || budget <= 0 || this.periodic.stopping) break;
      }
    }
    if (deleted.message + deleted.list + deleted.endpoint > 0) {
      this.deps.counted?.(deleted);
      this.deps.logger().info('webhook retention deleted what it kept long enough', { deleted });
    }
    return deleted;
  }

  private async endpointIds(now: Date): Promise<string[]> {
    if (!this.endpoints || this.endpoints.until <= now.getTime()) {
      const ids = await this.deps.store.endpointIds();
      const rescanMs = Math.min(this.deps.retentionMs, HOUR_MS);
      this.endpoints = { ids, until: now.getTime() + rescanMs };
    }
    return this.endpoints.ids;
  }

  /**
   * Deletes the oldest of the endpoint's messages that may go, up to the first it keeps, and
   * raises its list's floor past them. `judged`: entries it deleted; `more` when all it read
   * went and there may be more.
   */
  private async walk(
    webhookId: string,
    now: Date,
    cutoff: number,
    size: number,
  ): Promise<{ deleted: RetiredCounts; judged: number; more: boolean }> {
    const { store, retentionMs } = this.deps;
    const nothing = { deleted: noneRetired(), judged: 0, more: false };
    const entries = await store.oldestMessages(webhookId, size);
    if (entries.length === 0) {
      // A deleted endpoint whose messages are all gone: forgotten once deleted a retention
      // ago, when no change racing its deletion can still be under way.
      const forgotten = await store.forgetDeletedEndpoint(
        webhookId,
        new Date(now.getTime() - retentionMs),
      );
      if (forgotten.endpoints + forgotten.secrets > 0) {
        this.notBefore.delete(webhookId);
        const { endpoints: endpoint, secrets: secret } = forgotten;
        return { ...nothing, deleted: { ...noneRetired(), endpoint, secret } };
      }
      this.notBefore.set(webhookId, now.getTime() + retentionMs);
      return nothing;
    }
    const claimId = `${webhookId}:${entries[0].n}`;
    if (!(await this.claim(claimId, now))) return nothing;
    try {
      const { going, keptUntil } = await this.goingOf(entries, now, cutoff);
      if (going.length < entries.length) {
        this.notBefore.set(webhookId, Math.max(keptUntil, now.getTime() + this.deps.intervalMs));
      }
      if (going.length === 0) return nothing;
      const messages = going.flatMap((g) => (g.message ? [g.message] : []));
      await store.markRetiring(messages.map((m) => m._id));
      const event = await this.retireEvents(messages);
      const retired = await store.retire(
        webhookId,
        {
          attemptIds: messages.flatMap((m) =>
            // One past the attempts it counts: an attempt claimed and never concluded.
            Array.from({ length: m.attempts + 1 }, (_, i) => attemptId(m._id, i + 1)),
          ),
          laneIds: [...new Set(messages.map((m) => laneOf(webhookId, m.deliveryId)))],
          messageIds: messages.map((m) => m._id),
        },
        going.map((g) => g.entry),
      );
      await store.passMessages(webhookId, going[going.length - 1].entry.n + 1);
      return {
        deleted: { ...retired, event, endpoint: 0, secret: 0 },
        judged: going.length,
        more: going.length === entries.length && entries.length === size,
      };
    } finally {
      await store.releaseRetention(claimId);
    }
  }

  /** Whether this replica may walk the batch: it claimed it, or its holder stopped. */
  private async claim(claimId: string, now: Date): Promise<boolean> {
    const { store } = this.deps;
    if (await store.claimRetention(claimId, now)) return true;
    const held = await store.retentionClaim(claimId);
    // Gone: its holder is done, and what this replica read of the list is already deleted.
    return held !== null && now.getTime() - new Date(held.at).getTime() >= CLAIM_STALE_MS;
  }

  /**
   * The entries from the oldest that may go, each with its message (null: deleted by a sweep
   * that stopped before the entry, or never stored by a publication that stopped): up to the
   * first message still to send, finished since `cutoff`, or queued again (a replay). With
   * when the first kept may go at the soonest (0: unknown, the next round looks again).
   */
  private async goingOf(entries: OwnerListEntry[], now: Date, cutoff: number) {
    const { store, retentionMs } = this.deps;
    const messages = await Promise.all(entries.map((e) => store.message(e.itemId)));
    const candidates: { entry: OwnerListEntry; message: MessageRecord | null }[] = [];
    // Still to send, or sent again: it finishes later than now, and its retention runs from then.
    const afterSending = now.getTime() + retentionMs;
    let keptUntil = 0;
    for (const [i, entry] of entries.entries()) {
      const message = messages[i];
      const at = new Date(entry.at).getTime();
      const gone = message === null && at < cutoff && now.getTime() - at >= PENDING_ITEM_MS;
      const due = message !== null && message.status !== 'PENDING' && finishedAt(message) < cutoff;
      if (!gone && !due) {
        if (message?.status === 'PENDING') {
          // A message that may yet be lost is looked at again once it can be told, if that
          // comes before it could be retired.
          const young = now.getTime() - at < PENDING_ITEM_MS;
          keptUntil = young ? Math.min(afterSending, at + PENDING_ITEM_MS) : afterSending;
          if (!young) await this.queueIfLost(message, now);
        } else if (message) keptUntil = finishedAt(message) + retentionMs;
        break;
      }
      candidates.push({ entry, message });
    }
    const queued = await Promise.all(
      candidates.map((c) => (c.message ? store.queued(c.message._id) : null)),
    );
    const firstQueued = queued.findIndex((q) => q !== null);
    if (firstQueued < 0) return { going: candidates, keptUntil };
    return { going: candidates.slice(0, firstQueued), keptUntil: afterSending };
  }

  /**
   * Queues again a message still to send that nothing would send, the first such of its
   * endpoint, which would otherwise keep the endpoint's later messages past their retention:
   * its publication stopped between storing it and queueing it and was not repeated for this
   * endpoint (a courier's position is published once; an endpoint disabled meanwhile is left
   * out of the repeat), or a replay's undo stopped half-way. Only once it is older than a
   * publication lasts (the caller's), and never twice (the entry's `_id` is the message's).
   * A position, or a message of a deleted endpoint, is concluded unsent instead.
   */
  private async queueIfLost(message: MessageRecord, now: Date): Promise<void> {
    const { store } = this.deps;
    if (await store.queued(message._id)) return;
    const endpoint = await store.endpoint(message.webhookId);
    const gone = !endpoint || endpoint.deleted;
    // The owner only places the entry among its endpoints' (a forgotten endpoint has none).
    const entry = queueEntryOf(message, endpoint?.userId ?? '', now);
    if (gone || message.type === 'courier.location') {
      return this.concludeUnsent(message, entry, gone ? ENDPOINT_DELETED_WHY : LOST_POSITION_WHY);
    }
    // Read again now its entry is known gone: a dispatcher writes a message's outcome before
    // it takes the entry off the queue, so a message concluded since the first read (given up,
    // delivered) reads so now, and must not be sent again.
    if (!(await this.stillAsRead(message))) return;
    if (await store.requeue(entry)) {
      this.deps.logger().warn('a webhook message nothing would send is queued again', {
        webhookId: message.webhookId,
        messageId: message._id,
      });
    }
  }

  /** Whether the message is still PENDING after the attempts it was read with. */
  private async stillAsRead(message: MessageRecord): Promise<boolean> {
    const current = await this.deps.store.message(message._id);
    return current?.status === 'PENDING' && current.attempts === message.attempts;
  }

  /**
   * Concludes unsent, so that the walk may pass it once retained its time, a lost message that
   * must not go: to a deleted endpoint nothing goes, and a position found lost is stale (a
   * change after it may have gone, and the lane's mark that tells so be retired with the older
   * messages). Claimed first by its queue entry, held, as a replay claims it: a replay racing
   * this finds the entry taken and writes nothing, and this writes nothing over a replay's.
   */
  private async concludeUnsent(message: MessageRecord, entry: QueuedRecord, why: string) {
    const { store } = this.deps;
    const now = entry.nextAttemptAt;
    const held = { ...entry, nextAttemptAt: new Date(now.getTime() + CLAIM_HOLD_MS) };
    if (!(await store.requeue(held))) return;
    try {
      if (!(await this.stillAsRead(message))) return;
      const failed = why === ENDPOINT_DELETED_WHY;
      await store.updateMessage(message._id, {
        status: failed ? 'FAILED' : 'SKIPPED',
        lastError: why,
        lastAttemptAt: now,
      });
      this.deps.logger().warn('a webhook message nothing would send is concluded unsent', {
        webhookId: message.webhookId,
        messageId: message._id,
        why,
      });
    } finally {
      await store.dequeue(message._id);
    }
  }

  /**
   * Deletes the events of these messages (marked retiring) that no other message needs. An
   * event's messages are those of its owners' endpoints (a deleted endpoint's are never sent
   * nor shown); each sweep marks its messages before it looks at the others, so of two sweeps
   * retiring an event's last two messages at once, the later to look sees both marked.
   */
  private async retireEvents(messages: MessageRecord[]): Promise<number> {
    const { store, environment } = this.deps;
    const ofOwner = store.endpointsReadOnce(environment);
    const counts = await Promise.all(
      [...new Set(messages.map((m) => m.eventId))].map(async (eventId) => {
        const event = await store.event(eventId);
        if (!event) return 0;
        const owners = [event.userId, ...(event.recipientUserId ? [event.recipientUserId] : [])];
        const endpoints = (await Promise.all(owners.map(ofOwner))).flat();
        const others = await Promise.all(
          endpoints.map((e) => store.message(messageIdOf(e._id, eventId))),
        );
        if (others.some((m) => m !== null && m.retiring !== true)) return 0;
        return store.deleteEvent(eventId);
      }),
    );
    return counts.reduce((a, b) => a + b, 0);
  }
}

/** The ids in random order: replicas' rounds start at different endpoints. */
function shuffled<T>(items: readonly T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy;
}
