import { backoffMs } from '../../libs/backoff';
import type { Logger } from 'moleculer';
import type { Config } from '../../libs/config';
import { Periodic } from '../../libs/periodic';
import type { ChannelSender } from './notification-channels';
import { EMAIL_SUBJECTS, type Channel, type NotificationRecord } from './notifications';
import type { OrderStore } from './store';

/** Messages one run takes; the next run takes the rest. */
const BATCH = 50;
/**
 * How long a claimed attempt may go unrecorded before it counts as lost with its sender: longer
 * than the send's own time limit and the writes around it, so that a sender still at work is
 * never taken over (a takeover re-reads the message and finds it SENT).
 */
const claimLeaseMs = (timeoutMs: number) => 2 * timeoutMs + 30_000;

export interface NotificationSenderDeps {
  config: Config['notifications'];
  appEnv: Config['appEnv'];
  store: OrderStore;
  channels: Record<Channel, ChannelSender>;
  logger: () => Logger;
}

/**
 * Sends the notification outbox by SMS and e-mail, in every order replica at once. Each
 * attempt of a message is claimed by inserting `<notificationId>:<n>` before the provider is
 * called, so replicas never send one message together; a failed attempt waits (doubling, capped)
 * for the next, and the last one leaves the message FAILED with its error. At least once: a
 * sender that stops between the provider's accept and the record of it leaves a claim that
 * another takes over after its lease, and the person may get that message twice (once per such
 * stop, and never more than its attempts).
 */
export class NotificationSender {
  private readonly periodic: Periodic;
  private readonly live: boolean;

  constructor(private readonly deps: NotificationSenderDeps) {
    this.live = deps.appEnv === 'live';
    this.periodic = new Periodic(
      deps.config.intervalMs,
      () => this.sendDue(new Date()),
      (err) => deps.logger().warn('notification outbox not read; the next run retries', { err }),
    );
  }

  start(): void {
    this.periodic.start();
  }

  stop(): Promise<void> {
    return this.periodic.stop();
  }

  /** One run: every message due, one after the other (a provider is not flooded). */
  async sendDue(now: Date): Promise<void> {
    for (const message of await this.deps.store.dueNotifications(now, BATCH)) {
      try {
        await this.deliver(message, now);
      } catch (err) {
        // The store failed around an attempt: the claim's lease lets a later run take it over.
        this.deps.logger().warn('notification attempt not recorded; a later run takes it over', {
          notificationId: message._id,
          err: (err as Error).message,
        });
      }
    }
  }

  private async deliver(message: NotificationRecord, now: Date): Promise<void> {
    const { store, config } = this.deps;
    const { maxAttempts } = config.retry;
    const attempt = await this.claim(message, now);
    if (attempt === null) return;
    if (attempt > maxAttempts) {
      await this.failed(
        message,
        maxAttempts,
        'its last sender stopped before it recorded how the attempt went',
        null,
      );
      return;
    }
    // Read again once claimed: a message sent after the list was read is not sent twice.
    const current = await store.notification(message._id);
    if (!current || current.status !== 'PENDING' || (current.attempts ?? 0) >= attempt) return;
    if (!current.recipient || current.text === null) {
      const missing =
        current.text === null
          ? 'text'
          : current.channel === 'SMS'
            ? 'phone number'
            : 'e-mail address';
      await this.failed(current, attempt, `no ${missing} to send it to or with`, null);
      return;
    }
    try {
      await this.deps.channels[current.channel].send({
        to: current.recipient,
        subject: EMAIL_SUBJECTS[current.purpose],
        text: current.text,
      });
    } catch (err) {
      const retryAt =
        attempt < maxAttempts
          ? new Date(
              Date.now() +
                backoffMs(attempt, {
                  baseMs: config.retry.baseDelayMs,
                  maxMs: config.retry.maxDelayMs,
                }),
            )
          : null;
      await this.failed(current, attempt, this.describe(err, current), retryAt);
      return;
    }
    await store.markSent(current._id, attempt, this.live);
    this.deps.logger().info('notification sent', {
      notificationId: current._id,
      channel: current.channel,
      purpose: current.purpose,
      attempt,
    });
  }

  /**
   * The attempt this sender may make: the next one when it claims it, null when another sender
   * holds it. A claim whose sender never recorded the outcome within the lease is passed over
   * (that attempt may have reached the person: the at-least-once case).
   */
  private async claim(message: NotificationRecord, now: Date): Promise<number | null> {
    const { store, config } = this.deps;
    const lease = claimLeaseMs(config.timeoutMs);
    for (let attempt = (message.attempts ?? 0) + 1; ; attempt++) {
      if (attempt > config.retry.maxAttempts) return attempt;
      if (await store.claimNotificationAttempt(message._id, attempt, now)) return attempt;
      const claimedAt = await store.notificationAttemptAt(message._id, attempt);
      if (claimedAt && now.getTime() - claimedAt.getTime() < lease) return null;
    }
  }

  private async failed(
    message: NotificationRecord,
    attempt: number,
    error: string,
    retryAt: Date | null,
  ): Promise<void> {
    await this.deps.store.markAttemptFailed(message._id, attempt, error, retryAt, this.live);
    this.deps
      .logger()
      .warn(retryAt ? 'notification not sent; retried later' : 'notification FAILED', {
        notificationId: message._id,
        channel: message.channel,
        purpose: message.purpose,
        attempt,
        error,
        ...(retryAt ? { retryAt: retryAt.toISOString() } : {}),
      });
  }

  /**
   * What went wrong, as kept on the message and logged. A provider may echo what it was sent:
   * in live the digits of a secret's text never stay (codes are secrets).
   */
  private describe(err: unknown, message: NotificationRecord): string {
    const text = err instanceof Error ? err.message : String(err);
    return this.live && message.secret ? text.replace(/\d{4,}/g, '[digits]') : text;
  }
}
