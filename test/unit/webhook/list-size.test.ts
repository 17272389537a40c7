import { WEBHOOK_EVENT_TYPES } from '../../../libs/contracts/webhook';
import { deliveriesParams } from '../../../services/webhook/schemas';
import {
  ATTEMPTS_SHOWN,
  MESSAGE_STATUSES,
  type AttemptRecord,
  type MessageRecord,
  type QueuedRecord,
} from '../../../services/webhook/store';
import { toWebhookDeliveryView } from '../../../services/webhook/views';
import { NATS_MAX_PAYLOAD, PACKET_ALLOWANCE, largestAllowed } from '../../support/message-size';

const longest = (values: readonly string[]) =>
  values.reduce((a, b) => (b.length > a.length ? b : a));

/** The largest `limit` the delivery log takes. */
const largestPage = largestAllowed(deliveriesParams.extract('limit'));

/**
 * What attempts may hold, as older versions kept them: 512 characters of the answer and the
 * error whole (a TLS error lists every name of the receiver's certificate).
 */
const STORED_TEXTS: Record<string, string> = {
  ASCII: 'x'.repeat(512),
  'JSON escapes': '"\\'.repeat(256),
  Cyrillic: 'ж'.repeat(512),
  CJK: '漢'.repeat(512),
  'undecodable bytes': '\ufffd'.repeat(512),
  emoji: '😀'.repeat(256),
  'control characters': '\u0001'.repeat(512),
  'a certificate of many names': `ERR_TLS_CERT_ALTNAME_INVALID: Hostname/IP does not match certificate's altnames: ${'DNS:漢.example.com, '.repeat(500)}`,
};

function largestPageOf(text: string): number {
  const at = new Date(Date.UTC(2025, 11, 31, 23, 59, 59, 999));
  const message: MessageRecord = {
    _id: '0b6f7c1e-2d3a-4b5c-8d9e-0f1a2b3c4d5e',
    webhookId: '1c7e8d2f-3e4b-4c6d-9e0f-1a2b3c4d5e6f',
    eventId: '2d8f9e3a-4f5c-4d7e-8f1a-2b3c4d5e6f7a',
    type: longest(WEBHOOK_EVENT_TYPES) as MessageRecord['type'],
    deliveryId: '3e9a0f4b-5a6d-4e8f-9a2b-3c4d5e6f7a8b',
    sequence: Number.MAX_SAFE_INTEGER,
    status: longest(MESSAGE_STATUSES) as MessageRecord['status'],
    attempts: Number.MAX_SAFE_INTEGER,
    lastAttemptAt: at,
    lastStatusCode: 599,
    lastError: text,
    deliveredAt: at,
    createdAt: at,
  };
  const queued = { nextAttemptAt: at } as QueuedRecord;
  // An attempt holds an answer or an error, never both; the page is measured as if each did.
  const attempts: AttemptRecord[] = Array.from({ length: ATTEMPTS_SHOWN }, () => ({
    _id: `${message._id}:${Number.MAX_SAFE_INTEGER}`,
    messageId: message._id,
    webhookId: message.webhookId,
    n: Number.MAX_SAFE_INTEGER,
    startedAt: at,
    finishedAt: at,
    statusCode: 599,
    error: text,
    durationMs: Number.MAX_SAFE_INTEGER,
    responseExcerpt: text,
    replay: false,
  }));
  const page = Array.from({ length: largestPage }, () =>
    toWebhookDeliveryView(message, attempts, queued),
  );
  return Buffer.byteLength(JSON.stringify(page));
}

describe('the largest page of GET /api/webhooks/:webhookId/deliveries', () => {
  it('is 100 messages of 10 attempts each', () => {
    expect(largestPage).toBe(100);
    expect(ATTEMPTS_SHOWN).toBe(10);
  });

  it.each(Object.keys(STORED_TEXTS))('fits in one NATS message, attempts holding %s', (kind) => {
    expect(largestPageOf(STORED_TEXTS[kind]) + PACKET_ALLOWANCE).toBeLessThan(NATS_MAX_PAYLOAD);
  });
});
