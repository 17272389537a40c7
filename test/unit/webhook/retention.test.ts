import {
  finishedAt,
  HOUR_MS,
  pastReplay,
  replayMarginMs,
} from '../../../services/webhook/retention';
import type { MessageRecord } from '../../../services/webhook/store';

const DAY = 86_400_000;
const T0 = new Date('2030-01-01T00:00:00Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

function message(fields: Partial<MessageRecord>): MessageRecord {
  return {
    _id: 'm',
    webhookId: 'w',
    eventId: 'e',
    type: 'delivery.status_changed',
    deliveryId: 'd',
    sequence: 10,
    status: 'DELIVERED',
    attempts: 1,
    lastAttemptAt: null,
    lastStatusCode: null,
    lastError: null,
    deliveredAt: null,
    createdAt: T0,
    ...fields,
  };
}

describe('finishedAt', () => {
  it('is the latest of its creation, last attempt and delivery', () => {
    expect(finishedAt(message({}))).toBe(T0.getTime());
    // Delivered, then replayed and given up: kept from the failure.
    const replayed = message({ status: 'FAILED', deliveredAt: at(1_000), lastAttemptAt: at(DAY) });
    expect(finishedAt(replayed)).toBe(at(DAY).getTime());
    expect(finishedAt(message({ deliveredAt: at(5), lastAttemptAt: at(5) }))).toBe(at(5).getTime());
  });
});

describe('pastReplay', () => {
  it('refuses a replay from an hour before the deletion (a quarter of a short retention)', () => {
    expect(replayMarginMs(30 * DAY)).toBe(HOUR_MS);
    expect(replayMarginMs(4_000)).toBe(1_000);
    const done = message({ deliveredAt: T0, lastAttemptAt: T0 });
    const retention = 30 * DAY;
    expect(pastReplay(done, at(retention - HOUR_MS), retention)).toBe(false);
    expect(pastReplay(done, at(retention - HOUR_MS + 1), retention)).toBe(true);
  });
});
