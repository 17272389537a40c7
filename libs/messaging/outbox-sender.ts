import type { Logger } from 'moleculer';
import { backoffMs } from '../backoff';
import type { Config } from '../config';
import { runInLanes } from '../lanes';
import { Periodic } from '../periodic';
import { clipForJson, escapeRegExp } from '../text';
import { termiiNumber, type Channel, type ChannelSender } from './channels';

/**
 * PENDING until sent; FAILED once its attempts are spent (the last error is kept); SUPERSEDED
 * when a newer message made it pointless before it went (a proof code replaced).
 */
export const OUTBOX_STATUSES = ['PENDING', 'SENT', 'FAILED', 'SUPERSEDED'] as const;
export type OutboxStatus = (typeof OUTBOX_STATUSES)[number];

/** A message to a person as the sender needs it, whatever record its service keeps. */
export interface OutboxMessage {
  _id: string;
  channel: Channel;
  /** A phone number (SMS) or an e-mail address; empty when the person has none. */
  recipient: string;
  /** Null once dropped (a sent message's text in live). */
  text: string | null;
  /** The e-mail's subject; SMS have none. */
  subject: string;
  /** The text carries a secret (a proof code): its digits never reach a log in live. */
  secret: boolean;
  status: OutboxStatus;
  /** Attempts made so far; each was claimed before it was made. */
  attempts?: number;
  /** When the next attempt is due, once one failed. */
  nextAttemptAt?: Date;
  /** What kind of message it is, for the logs (order: its purpose). */
  label: string;
}

/** A message's place in its outbox's queue, whose order is by when it was made, then its id. */
export interface QueuePlace {
  createdAt: Date;
  _id: string;
}

/** One read of an outbox's queue. */
export interface DuePage {
  /** The messages read that are PENDING and due, in the queue's order. */
  messages: OutboxMessage[];
  /**
   * Where the next read starts: the place of the last one read (due or not, addressable or
   * not), or null when the read came short of its limit, the queue's end.
   */
  next: QueuePlace | null;
}

/**
 * Where a service keeps its messages to people and the claims of their attempts. A claim is an
 * insert of a document named after the message and the attempt's number, since FerretDB makes
 * no conditional update atomic (decision 16): whoever inserts it makes that attempt.
 */
export interface OutboxStore {
  /** Messages PENDING whose next attempt is due, oldest first, from after `after`. */
  due(now: Date, limit: number, after?: QueuePlace): Promise<DuePage>;
  get(id: string): Promise<OutboxMessage | null>;
  /** Claims attempt `n` of a message; false when it was claimed already. */
  claimAttempt(id: string, attempt: number, at: Date): Promise<boolean>;
  /** When attempt `n` of a message was claimed, or null when it never was. */
  attemptClaimedAt(id: string, attempt: number): Promise<Date | null>;
  /** Records the attempt that sent the message, and the address it went to. */
  markSent(id: string, attempt: number, recipient: string, dropText: boolean): Promise<void>;
  /** Whether the message was withdrawn while a sender held its attempt. */
  isWithdrawn(id: string): Promise<boolean>;
  /** Records the message SUPERSEDED (by the holder of its next attempt). */
  markWithdrawn(id: string, dropText: boolean): Promise<void>;
  /**
   * Whether the message became pointless since it was queued (a proof code a newer one took
   * over, a message of a delivery that ended, whose withdrawal may not have run or came before
   * it was queued, or one a change of its delivery made untrue): recorded SUPERSEDED then, not
   * sent. Asked before every attempt; an outbox
   * whose messages never go out of date leaves it out.
   */
  outdated?(message: OutboxMessage): Promise<boolean>;
  /** The message waits until `retryAt`, or is FAILED when null; only a message still PENDING. */
  markAttemptFailed(
    id: string,
    attempt: number,
    error: string,
    retryAt: Date | null,
    dropText: boolean,
  ): Promise<void>;
}

/** Messages one read of the outbox takes; a run reads on from the last while each is full. */
const BATCH = 50;
/**
 * Reads one run makes at most (`BATCH` messages each): a run's every read may scan the queue
 * (FerretDB filters by scanning), and the next run starts from the queue's head again. So one
 * person's backlog of more than a run reads (and held back beyond their turns) still keeps
 * those queued behind it waiting until it drains below that: a lane kept on each place, left
 * out of the reads once held back, would lift it (decision 176).
 */
const MAX_READS_PER_RUN = 20;
/**
 * Attempts one run makes for one person (a lane) at most: the rest of theirs wait for the next
 * run, so that a merchant's pickup contact with hundreds of messages queued holds back neither
 * the people queued after them in the run nor the run's next read.
 */
export const LANE_TURNS_PER_RUN = 10;
/**
 * How long after its claim an attempt may still start its send: the claim's lease covers the
 * reads before the send, the send's deadline and the record of it, and one started later could
 * still be under way when another sender takes the claim over and sends the message again.
 */
const SEND_START_BUDGET_MS = 15_000;
/**
 * How long one send may take in all before its attempt is recorded failed: a provider's limit
 * (NOTIFY_TIMEOUT_MS) bounds each wait, but an SMTP send waits several times over (connection,
 * greeting, each command), and a server answering slowly, a little at a time, never trips them.
 * For SMTP, then: an SMS's request to Termii is bounded whole by that limit already.
 */
export const sendDeadlineMs = (timeoutMs: number) => 2 * timeoutMs;
/**
 * How long a claimed attempt may go unrecorded before it counts as lost with its sender: longer
 * than the send's deadline and the writes around it, so that a sender still at work is never
 * taken over (a takeover re-reads the message and finds it SENT).
 */
const claimLeaseMs = (timeoutMs: number) => sendDeadlineMs(timeoutMs) + 2 * SEND_START_BUDGET_MS;

/** Whether a message waits for its retry at `now` (an attempt failed, the next not yet due). */
const isWaiting = (message: OutboxMessage, now: Date) =>
  message.nextAttemptAt !== undefined && message.nextAttemptAt > now;

export interface OutboxSenderDeps {
  /** What the logs call a message of this outbox ("notification", "webhook notice"). */
  kind: string;
  config: Config['notifications'];
  appEnv: Config['appEnv'];
  store: OutboxStore;
  channels: Record<Channel, ChannelSender>;
  logger: () => Logger;
  /** In [0, 1): spreads the waits of messages that failed together (Math.random). */
  random?: () => number;
  /**
   * Keys a message's text may carry outside its links (a tracking id, which opens the
   * delivery's page), masked as `[key]` wherever a provider's error quotes one: a global
   * pattern (`g`), with the flags it is to match with.
   */
  keys?: RegExp;
}

/**
 * Sends an outbox by SMS and e-mail, in every replica of its service at once. Each attempt of a
 * message is claimed by inserting `<messageId>:<n>` before the provider is called, so replicas
 * never send one message together; a failed attempt waits (doubling, capped) for the next, and
 * the last one leaves the message FAILED with its error. At least once: a sender that stops
 * between the provider's accept and the record of it leaves a claim that another takes over
 * after its lease, and the person may get that message twice (once per such stop, and never
 * more than its attempts).
 */
export class OutboxSender {
  private readonly periodic: Periodic;
  private readonly live: boolean;

  constructor(private readonly deps: OutboxSenderDeps) {
    this.live = deps.appEnv === 'live';
    this.periodic = new Periodic(
      deps.config.intervalMs,
      () => this.sendDue(new Date()),
      (err) => deps.logger().warn(`${deps.kind} outbox not read; the next run retries`, { err }),
    );
  }

  start(): void {
    this.periodic.start();
  }

  async stop(): Promise<void> {
    await this.periodic.stop();
    for (const channel of Object.values(this.deps.channels)) channel.close?.();
  }

  /**
   * One run: the messages due, each person's (a channel's recipient) one after the other in
   * the order queued, up to NOTIFY_CONCURRENCY people at once, so that no provider is flooded
   * and a slow one holds back its own messages first; read on through the queue while it has
   * more. A message another sender is sending holds the person's later ones back until a later
   * run, and so does the person's `LANE_TURNS_PER_RUN`th attempt of the run; one whose attempt
   * failed waits for its retry while they go on. The reads go on from where the last one ended,
   * not from the head: messages held back (another replica's, or a person's beyond their turns)
   * never keep a run from those queued behind them.
   */
  async sendDue(now: Date): Promise<void> {
    /** People whose messages wait for a later run: the rest of theirs must not go first. */
    const heldBack = new Set<string>();
    const turns = new Map<string, number>();
    const laneOf = (message: OutboxMessage) => `${message.channel}:${message.recipient}`;
    let after: QueuePlace | undefined;
    for (let read = 0; read < MAX_READS_PER_RUN && !this.periodic.stopping; read++) {
      const page = await this.deps.store.due(read === 0 ? now : new Date(), BATCH, after);
      const open = page.messages.filter((message) => !heldBack.has(laneOf(message)));
      await runInLanes(open, laneOf, this.deps.config.concurrency, async (message) => {
        const lane = laneOf(message);
        const taken = turns.get(lane) ?? 0;
        // Stopping: what is not claimed yet is left for a later run (or another replica).
        if (this.periodic.stopping || taken >= LANE_TURNS_PER_RUN || heldBack.has(lane)) {
          heldBack.add(lane);
          return false;
        }
        try {
          // Each claim carries its own time: a run may take minutes, and a claim dated at
          // the run's start would look lost to the other replicas long before its lease ends.
          const outcome = await this.deliver(message, new Date());
          if (outcome === 'attempted') turns.set(lane, taken + 1);
          if (outcome !== 'held') return true;
        } catch (err) {
          // The store (or what addresses the message) failed around an attempt: the claim's
          // lease lets a later run take it over, and the person's later messages wait for it.
          this.deps
            .logger()
            .warn(`${this.deps.kind} attempt not recorded; a later run takes it over`, {
              messageId: message._id,
              err: (err as Error).message,
            });
        }
        heldBack.add(lane);
        return false;
      });
      if (!page.next) return;
      after = page.next;
    }
  }

  /**
   * Makes the message's next attempt (sent, failed for good, or waiting for a retry):
   * `attempted`; `held` when another sender holds it; `done` when it was sent, withdrawn or
   * ended meanwhile, or waits for its retry.
   */
  private async deliver(message: OutboxMessage, now: Date): Promise<'attempted' | 'held' | 'done'> {
    const { store, config } = this.deps;
    const { maxAttempts } = config.retry;
    const attempt = await this.claim(message, now);
    if (attempt === 'held' || attempt === 'done') return attempt;
    // A message's first attempt, claimed: nobody attempted it before, so nobody can have
    // recorded it since it was listed. Any later attempt (a retry, or one passing over a
    // sender that stopped or outlived its lease) reads it again first: it may have been sent
    // after all, or withdrawn while its earlier attempt was under way.
    const first = attempt === 1 && (message.attempts ?? 0) === 0;
    const current = first ? message : await store.get(message._id);
    if (!current || current.status !== 'PENDING' || (current.attempts ?? 0) >= attempt) {
      return 'done';
    }
    if (
      (!first && (await store.isWithdrawn(current._id))) ||
      // Unanswered (the database away a moment), it is sent: a code it cannot tell is dead
      // must not cost its attempt, nor, the last one, its only sending.
      (await store.outdated?.(current).catch(() => false))
    ) {
      await store.markWithdrawn(current._id, this.live);
      return 'done';
    }
    if (attempt > maxAttempts) {
      await this.failed(
        current,
        maxAttempts,
        'its last sender stopped before it recorded how the attempt went',
        null,
      );
      return 'attempted';
    }
    if (!current.recipient || current.text === null) {
      const missing =
        current.text === null
          ? 'text'
          : current.channel === 'SMS'
            ? 'phone number'
            : 'e-mail address';
      await this.failed(current, attempt, `no ${missing} to send it to or with`, null);
      return 'attempted';
    }
    if (Date.now() - now.getTime() > SEND_START_BUDGET_MS) {
      // The reads above took so long (a database stalling) that the send could outlast the
      // claim's lease: the attempt is left unmade, and a later run takes its claim over.
      this.deps.logger().warn(`${this.deps.kind} attempt given up before its send`, {
        messageId: current._id,
        attempt,
        afterMs: Date.now() - now.getTime(),
      });
      return 'held';
    }
    const outgoing = { to: current.recipient, subject: current.subject, text: current.text };
    try {
      await withinDeadline(sendDeadlineMs(config.timeoutMs), (signal) =>
        this.deps.channels[current.channel].send(outgoing, signal),
      );
    } catch (err) {
      const retryAt =
        attempt < maxAttempts
          ? new Date(
              Date.now() +
                backoffMs(
                  attempt,
                  { baseMs: config.retry.baseDelayMs, maxMs: config.retry.maxDelayMs },
                  // A provider's outage fails many at once: spread, their retries do not all
                  // come back together.
                  (this.deps.random ?? Math.random)(),
                ),
            )
          : null;
      await this.failed(current, attempt, this.describe(err, current), retryAt);
      return 'attempted';
    }
    await this.recordSent(current, attempt, now);
    this.deps.logger().info(`${this.deps.kind} sent`, {
      messageId: current._id,
      channel: current.channel,
      label: current.label,
      attempt,
    });
    return 'attempted';
  }

  /**
   * The attempt this sender may make: the next one when it claims it (one past the last, to
   * record it failed, when all were spent: claimed too, so that it is recorded once); `held`
   * when another sender holds it. A claim whose sender never recorded the outcome within the
   * lease is passed over (that attempt may have reached the person: the at-least-once case);
   * one recorded since the message was listed is not: the message was sent or ended (`done`),
   * waits for its retry (`done`: the person's later ones go on), or is due again, its next
   * attempt claimed.
   */
  private async claim(message: OutboxMessage, now: Date): Promise<number | 'held' | 'done'> {
    const { store, config } = this.deps;
    const lease = claimLeaseMs(config.timeoutMs);
    for (let attempt = (message.attempts ?? 0) + 1; ; attempt++) {
      if (await store.claimAttempt(message._id, attempt, now)) return attempt;
      const claimedAt = await store.attemptClaimedAt(message._id, attempt);
      if (claimedAt && now.getTime() - claimedAt.getTime() < lease) return 'held';
      const current = await store.get(message._id);
      if (!current || current.status !== 'PENDING') return 'done';
      if (isWaiting(current, now)) return 'done';
      attempt = Math.max(attempt, current.attempts ?? 0);
    }
  }

  /**
   * Records the send, tried again while the claim's lease lasts: a send left unrecorded is taken
   * over once the lease ends, and the person gets the message twice.
   */
  private async recordSent(message: OutboxMessage, attempt: number, claimedAt: Date) {
    const { store, config } = this.deps;
    const recordBy = claimedAt.getTime() + claimLeaseMs(config.timeoutMs) - SEND_START_BUDGET_MS;
    for (let wait = 250; ; wait *= 2) {
      try {
        await store.markSent(message._id, attempt, message.recipient, this.live);
        return;
      } catch (err) {
        // Stopping, for a few seconds more at most: the stop waits for the run, within its
        // grace (STOP_GRACE_MS), and a send left unrecorded is sent again by another replica.
        if (Date.now() + wait > recordBy || (this.periodic.stopping && wait > 2_000)) throw err;
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  private async failed(
    message: OutboxMessage,
    attempt: number,
    error: string,
    retryAt: Date | null,
  ): Promise<void> {
    await this.deps.store.markAttemptFailed(message._id, attempt, error, retryAt, this.live);
    const { kind } = this.deps;
    this.deps.logger().warn(retryAt ? `${kind} not sent; retried later` : `${kind} FAILED`, {
      messageId: message._id,
      channel: message.channel,
      label: message.label,
      attempt,
      error,
      ...(retryAt ? { retryAt: retryAt.toISOString() } : {}),
    });
  }

  /**
   * What went wrong, as kept on the message and logged. A provider may echo what it was sent:
   * the address never stays in it (the logs are no place for people's addresses), nor do the
   * message's links and keys (a tracking page's or a checkout's: whoever holds one holds the
   * page), and in live neither do the digits of a secret's text (codes are secrets).
   */
  private describe(err: unknown, message: OutboxMessage): string {
    const error = err instanceof Error ? err.message : String(err);
    const unlinked = withoutLinks(withoutAddress(error, message), message.text);
    const { keys } = this.deps;
    const text = keys ? unlinked.replace(keys, '[key]') : unlinked;
    const told = this.live && message.secret ? text.replace(/\d{4,}/g, '[digits]') : text;
    return keptError(told);
  }
}

/**
 * The most of a send's error a message keeps, in bytes of JSON: an SMTP server's or a
 * gateway's answer is quoted whole in it, and a delivery's messages (some 40) are listed in
 * one NATS reply (decision 33).
 */
export const LAST_ERROR_MAX_BYTES = 512;

/** An error as a message keeps and support reads it: at most `LAST_ERROR_MAX_BYTES`. */
export const keptError = (error: string) => clipForJson(error, LAST_ERROR_MAX_BYTES);

/** The shortest address worth masking: `a@b.c`, or five digits. */
const MIN_ADDRESS_LENGTH = 5;

/**
 * `text` with the message's address, as given or as a provider writes it (an SMTP server
 * quotes the e-mail address, any case; an SMS provider the number's digits alone), masked.
 */
export function withoutAddress(
  text: string,
  message: Pick<OutboxMessage, 'recipient' | 'channel'>,
) {
  const recipient = message.recipient.trim();
  const forms = [recipient, recipient.toLowerCase()];
  if (message.channel === 'SMS') forms.push(termiiNumber(recipient));
  let masked = text;
  // A form shorter than an address can be (a number of a few digits) would mask other text.
  for (const form of new Set(forms.filter((f) => f.length >= MIN_ADDRESS_LENGTH))) {
    masked = masked.replace(new RegExp(escapeRegExp(form), 'gi'), '[recipient]');
  }
  return masked;
}

/** The shortest last part of a link worth masking alone: a capability, not a word. */
const MIN_CAPABILITY_LENGTH = 8;

/**
 * `text` with the links of the message's `sent` text masked, whole or by the last part of
 * their path (a tracking id, a checkout reference), which a provider may quote apart or
 * encoded.
 */
export function withoutLinks(text: string, sent: string | null): string {
  let masked = text;
  const links = (sent?.match(/https?:\/\/[^\s<>"']+/g) ?? []).map((link) =>
    // The sentence's own stop is not the link's.
    link.replace(/[.,;:!?)]+$/, ''),
  );
  for (const link of new Set(links)) {
    const last = link.split(/[?#]/)[0].split('/').pop() ?? '';
    for (const form of last.length >= MIN_CAPABILITY_LENGTH ? [link, last] : [link]) {
      masked = masked.replace(new RegExp(escapeRegExp(form), 'gi'), '[link]');
    }
  }
  return masked;
}

/**
 * `send`'s outcome, or a failure once `ms` passed without it. The send's signal aborts then:
 * a channel that heeds it drops the message (an SMTP mail still queued, or its connection);
 * one that cannot may still reach the person, and the retry sends it again (the at-least-once
 * case), but never while this attempt's claim holds.
 */
async function withinDeadline(
  ms: number,
  send: (signal: AbortSignal) => Promise<void>,
): Promise<void> {
  const given = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, fail) => {
    timer = setTimeout(() => {
      const why = new Error(`no answer from the provider within ${ms} ms; it may have been sent`);
      fail(why);
      given.abort(why);
    }, ms);
  });
  try {
    await Promise.race([send(given.signal), late]);
  } finally {
    clearTimeout(timer);
  }
}
