import type { Logger } from 'moleculer';
import { LookupCache } from '../../libs/lookup-cache';
import { targetForOwner } from '../../libs/outbound-url';
import { outboxStoreOver } from '../../libs/messaging/outbox-records';
import type { OutboxMessage, OutboxStore } from '../../libs/messaging/outbox-sender';
import type { EndpointRecord, NoticeRecord, WebhookStore } from './store';

export const DISABLED_SUBJECT = 'Your Waybill webhook endpoint was disabled';

/**
 * How long an owner's address, once asked, addresses their notices: the run of the sender that
 * listed a notice, not its next attempt (`NOTIFY_RETRY_BASE_MS` later at the soonest), which
 * asks again and so goes to an address the owner has corrected meanwhile.
 */
const OWNER_ADDRESS_KEPT_MS = 5_000;

/**
 * One notice per disable. A disable is named by its failing streak (`failingSince`), not by the
 * moment it was recorded: two dispatchers that conclude failures of one endpoint together both
 * disable it, each at its own instant, and must agree on the one notice. Enabling the endpoint
 * clears `failingSince`, so the next disable is another streak and another notice.
 */
export const disabledNoticeId = (webhookId: string, failingSince: Date) =>
  `endpoint-disabled:${webhookId}:${failingSince.getTime()}`;

/** The route that enables an endpoint again, as the owner calls it. */
export const enableRoute = (webhookId: string) => `/api/webhooks/${webhookId}/enable`;

/** What the owner reads: which endpoint, since when, why if known, and what to do. */
export function disabledNoticeText(notice: {
  url: string;
  webhookId: string;
  failingSince: Date;
  disabledAt: Date;
  lastError: string | null;
  publicBaseUrl: string;
}): string {
  return [
    `Waybill stopped sending events to your webhook endpoint ${notice.url} (${notice.webhookId}) at ${notice.disabledAt.toISOString()}: every attempt to reach it failed since ${notice.failingSince.toISOString()}.`,
    ...(notice.lastError ? [`The last attempt failed with: ${notice.lastError}.`] : []),
    `Messages queued before it was disabled wait; events that happen while it is disabled are not sent to it. Fix the endpoint, then enable it again with POST ${notice.publicBaseUrl}${enableRoute(notice.webhookId)} (with your API key): what waited is sent, in order, within each event's retry window.`,
  ].join('\n\n');
}

export interface DisableNoticesDeps {
  store: WebhookStore;
  publicBaseUrl: string;
  /**
   * The owner's e-mail address (account.getUser); '' when the account is gone. Throws when the
   * account service cannot say now: the notice waits for the next run.
   */
  ownerEmail: (userId: string) => Promise<string>;
  logger: () => Logger;
}

/**
 * The owners' side of a disable: the notice recorded once with the disable, and the outbox the
 * shared sender (libs/messaging/outbox-sender.ts) sends by e-mail. The owner's address is asked
 * for when the notice is due, not when the endpoint is disabled: a dispatcher must not wait on
 * the account service, and a lookup that fails is asked again at the next run.
 */
export class DisableNotices {
  /**
   * Owners' addresses as asked lately: a notice's attempt reads it again (`get`) moments after
   * `due` addressed it, and must not fail, its attempt spent, because the account service
   * did not answer the second time.
   */
  private readonly ownerAddresses: LookupCache<string>;

  constructor(private readonly deps: DisableNoticesDeps) {
    this.ownerAddresses = new LookupCache<string>({
      cacheMs: OWNER_ADDRESS_KEPT_MS,
      lookup: (userId) => deps.ownerEmail(userId),
      maxEntries: 1_000,
    });
  }

  /**
   * Records the disable of an endpoint failing since `failingSince`, with the notice to its
   * owner, once however many dispatchers record it; answers when it was disabled, as the first
   * to record it saw it, so that every dispatcher writes the same `disabledAt`.
   */
  async record(
    endpoint: EndpointRecord & { failingSince: Date },
    at: Date,
    lastError: string | null,
  ): Promise<Date> {
    const { store, publicBaseUrl } = this.deps;
    const notice: NoticeRecord = {
      _id: disabledNoticeId(endpoint._id, endpoint.failingSince),
      webhookId: endpoint._id,
      userId: endpoint.userId,
      recipient: null,
      subject: DISABLED_SUBJECT,
      text: disabledNoticeText({
        // Without its query: a token there would sit in a mailbox, and in staging's log sink.
        url: targetForOwner(endpoint.url),
        webhookId: endpoint._id,
        failingSince: endpoint.failingSince,
        disabledAt: at,
        lastError,
        publicBaseUrl,
      }),
      disabledAt: at,
      status: 'PENDING',
      createdAt: at,
      sentAt: null,
      attempts: 0,
      nextAttemptAt: at,
      lastError: null,
    };
    if (await store.insertNotice(notice)) return at;
    const first = await store.notices.get(notice._id);
    return first ? new Date(first.disabledAt) : at;
  }

  /**
   * The notices as the sender reads them, each addressed to its owner as it is read: nothing is
   * written to a notice but by the holder of its attempt (the address goes on record with the
   * send, `markSent`), since FerretDB writes a document whole (decision 97). One whose owner's
   * address cannot be known now waits: left out of `due`; a later attempt's `get` uses the
   * address `due` found for it moments before, and fails only when none is known,
   * for a later run to take over.
   */
  outbox(): OutboxStore {
    const records = outboxStoreOver(this.deps.store.notices, toOutboxMessage);
    return {
      ...records,
      due: async (now, limit, after) => {
        const due: OutboxMessage[] = [];
        const { records: notices, next } = await this.deps.store.notices.due(now, limit, after);
        for (const notice of notices) {
          try {
            due.push(await this.addressed(notice));
          } catch (err) {
            this.deps.logger().warn("webhook notice waits: the owner's address is not known now", {
              noticeId: notice._id,
              userId: notice.userId,
              err: (err as Error).message,
            });
          }
        }
        return { messages: due, next };
      },
      get: async (id) => {
        const notice = await this.deps.store.notices.get(id);
        return notice && this.addressed(notice);
      },
    };
  }

  /**
   * The notice as sent: a PENDING one to its owner's address as the account service gives it
   * (kept `OWNER_ADDRESS_KEPT_MS`), any other as recorded (the sender only reads where it
   * stands).
   */
  private async addressed(notice: NoticeRecord): Promise<OutboxMessage> {
    if (notice.status !== 'PENDING' || notice.recipient !== null) return toOutboxMessage(notice);
    const recipient = (await this.ownerAddresses.get(notice.userId)) ?? '';
    return toOutboxMessage({ ...notice, recipient });
  }
}

/** A notice as the shared sender takes it: an e-mail, with nothing secret in it. */
const toOutboxMessage = (notice: NoticeRecord): OutboxMessage => ({
  _id: notice._id,
  channel: 'EMAIL',
  // The outbox addresses a PENDING notice before the sender sees it (`addressed`): null is never
  // sent.
  recipient: notice.recipient ?? '',
  text: notice.text,
  subject: notice.subject,
  secret: false,
  status: notice.status,
  attempts: notice.attempts,
  nextAttemptAt: notice.nextAttemptAt,
  label: 'endpoint-disabled',
});
