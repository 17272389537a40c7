import fc from 'fast-check';
import { attemptId, onTheWayMessages, retryDelayMs } from '../../../services/order/notifications';

const RETRY = { baseDelayMs: 10_000, maxDelayMs: 600_000 };

describe('retryDelayMs', () => {
  it('doubles from the base after each failed attempt, up to the cap', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((n) => retryDelayMs(n, RETRY))).toEqual([
      10_000, 20_000, 40_000, 80_000, 160_000, 320_000, 600_000, 600_000,
    ]);
  });

  it('never waits less than the base nor more than the cap, and never less than before', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 1, max: 1000 }),
        fc.integer({ min: 0, max: 1_000_000 }),
        (attempt, base, extra) => {
          const retry = { baseDelayMs: base, maxDelayMs: base + extra };
          const delay = retryDelayMs(attempt, retry);
          expect(delay).toBeGreaterThanOrEqual(base);
          expect(delay).toBeLessThanOrEqual(retry.maxDelayMs);
          expect(Number.isFinite(delay)).toBe(true);
          expect(retryDelayMs(attempt + 1, retry)).toBeGreaterThanOrEqual(delay);
        },
      ),
    );
  });
});

describe('messages', () => {
  it('names each attempt after its message', () => {
    expect(attemptId('d1:DELIVERY_CODE:SMS', 3)).toBe('d1:DELIVERY_CODE:SMS:3');
  });

  it('tells the recipient the courier is on the way, with the link, by SMS and e-mail', () => {
    const now = new Date('2030-01-01T10:00:00Z');
    const messages = onTheWayMessages(
      { _id: 'd1', trackingId: 'P2P-ABCDEF123456' },
      'https://waybill.example.com/track/P2P-ABCDEF123456',
      { name: 'Ada', phone: '+2348031234567', email: 'ada@example.com' },
      now,
    );
    expect(messages.map((m) => [m._id, m.recipient, m.secret, m.status])).toEqual([
      ['d1:COURIER_ON_THE_WAY:SMS', '+2348031234567', false, 'PENDING'],
      ['d1:COURIER_ON_THE_WAY:EMAIL', 'ada@example.com', false, 'PENDING'],
    ]);
    expect(messages[0].text).toContain('https://waybill.example.com/track/P2P-ABCDEF123456');
    expect(messages[0]).toMatchObject({ attempts: 0, nextAttemptAt: now, lastError: null });
  });
});
