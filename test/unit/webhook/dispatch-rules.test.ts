import fc from 'fast-check';
import {
  afterFailure,
  ownerShare,
  backloggedEndpoints,
  shareOf,
  attemptError,
  ERROR_BYTES,
  excerpt,
  EXCERPT_BYTES,
  isDelivered,
  isSuperseded,
  lanesOf,
  MOST_SIGNING_SECRETS,
  shouldDisable,
  failingForMs,
  failureToRecord,
  streakQuietMs,
  waitedPastRetention,
  waitsForEnable,
  signingSecrets,
  subscribes,
} from '../../../services/webhook/dispatch-rules';

const at = (ms: number) => new Date(ms);
const backoff = { baseMs: 1000, maxMs: 60_000 };

describe('subscribes', () => {
  it('takes every event without a list, and only the listed ones with one', () => {
    expect(subscribes(null, 'delivery.paid')).toBe(true);
    expect(subscribes(['delivery.paid'], 'delivery.paid')).toBe(true);
    expect(subscribes(['delivery.paid'], 'delivery.created')).toBe(false);
  });
});

describe('lanesOf', () => {
  const queued = (lane: string, sequence: number, id = `${lane}-${sequence}`, queuedAt = 0) => ({
    _id: id,
    lane,
    sequence,
    nextAttemptAt: at(queuedAt),
  });

  it('groups the queue by lane, each in the order its messages go', () => {
    const lanes = lanesOf([
      queued('a', 20),
      queued('b', 5),
      queued('a', 10),
      queued('a', 10, 'a-0'),
    ]);
    expect([...lanes.keys()]).toEqual(['a', 'b']);
    expect(lanes.get('a')?.map((q) => q._id)).toEqual(['a-0', 'a-10', 'a-20']);
  });

  it('puts the older of two positions read at one version first, whatever their ids', () => {
    const lanes = lanesOf([queued('a', 19, 'p-a', 2_000), queued('a', 19, 'p-z', 1_000)]);
    expect(lanes.get('a')?.map((q) => q._id)).toEqual(['p-z', 'p-a']);
  });

  it('keeps every message once, in its lane, sorted (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ lane: fc.constantFrom('a', 'b', 'c'), sequence: fc.nat(50) })),
        (items) => {
          const queue = items.map((q, i) => queued(q.lane, q.sequence, `m${i}`));
          const lanes = lanesOf(queue);
          expect([...lanes.values()].flat()).toHaveLength(queue.length);
          for (const [lane, messages] of lanes) {
            messages.forEach((m, i) => {
              expect(m.lane).toBe(lane);
              if (i > 0) expect(m.sequence).toBeGreaterThanOrEqual(messages[i - 1].sequence);
            });
          }
        },
      ),
    );
  });
});

describe('isSuperseded', () => {
  // A position read at version 3 (sequence 39) and the changes around it.
  const position = { sequence: 39 };

  it('sends a position nothing later of its delivery went before or waits behind', () => {
    expect(isSuperseded(position, 0, null)).toBe(false);
    expect(isSuperseded(position, 0, 30)).toBe(false);
  });

  it('skips a position once a later change was sent, or anything waits behind it', () => {
    expect(isSuperseded(position, 0, 40)).toBe(true);
    expect(isSuperseded(position, 1, null)).toBe(true);
    expect(isSuperseded(position, 1, 30)).toBe(true);
  });

  it('sends a position exactly when nothing waits and no later change went (property)', () => {
    fc.assert(
      fc.property(fc.nat(100), fc.nat(3), fc.option(fc.nat(100)), (sequence, behind, mark) => {
        const sent = !isSuperseded({ sequence }, behind, mark);
        expect(sent).toBe(behind === 0 && (mark === null || mark <= sequence));
      }),
    );
  });
});

describe('backoff', () => {
  it('gives up once the next try would fall after the retry window', () => {
    const common = {
      firstAttemptAt: at(0),
      retryWindowMs: 10_000,
      backoff,
      random: 0.5,
      ephemeral: false,
    };
    expect(afterFailure({ ...common, failedAttempts: 1, now: at(0) })).toEqual({
      retryAt: at(1000),
    });
    // The 4th wait is 8 s: from 3 s it would end at 11 s, after the 10 s window.
    expect(afterFailure({ ...common, failedAttempts: 4, now: at(3000) })).toEqual({ giveUp: true });
    expect(afterFailure({ ...common, failedAttempts: 3, now: at(3000) })).toEqual({
      retryAt: at(7000),
    });
    expect(afterFailure({ ...common, failedAttempts: 1, now: at(9500) })).toEqual({ giveUp: true });
    expect(afterFailure({ ...common, failedAttempts: 1, now: at(0), ephemeral: true })).toEqual({
      giveUp: true,
    });
  });
});

describe('waitedPastRetention', () => {
  const DAY = 86_400_000;
  const now = new Date('2026-12-05T12:00:00.000Z');
  const disabled = (daysAgo: number | null) => ({
    status: 'DISABLED',
    disabledAt: daysAgo === null ? null : new Date(now.getTime() - daysAgo * DAY),
  });
  it('gives up once the endpoint stayed disabled as long as the retention, not sooner', () => {
    expect(waitedPastRetention(disabled(30), now, 30 * DAY)).toBe(true);
    expect(waitedPastRetention(disabled(29.9), now, 30 * DAY)).toBe(false);
  });
  it('never for an active endpoint, or one whose disable has no time', () => {
    expect(waitedPastRetention({ status: 'ACTIVE', disabledAt: new Date(0) }, now, DAY)).toBe(
      false,
    );
    expect(waitedPastRetention(disabled(null), now, DAY)).toBe(false);
  });
  it('keeps a disabled endpoint’s messages waiting until then; not an active or deleted one’s', () => {
    const waits = (endpoint: { status: string; disabledAt: Date | null }, deleted = false) =>
      waitsForEnable({ ...endpoint, deleted }, now, 30 * DAY);
    expect(waits(disabled(29.9))).toBe(true);
    expect(waits(disabled(30))).toBe(false);
    expect(waits(disabled(1), true)).toBe(false);
    expect(waits({ status: 'ACTIVE', disabledAt: null })).toBe(false);
  });
});

describe('a failing streak', () => {
  const HOUR = 3_600_000;
  const limits = { disableAfterMs: 24 * HOUR, backoffMaxMs: HOUR };
  /** A streak begun at 0, as this version records one. */
  const begun = { failingSince: at(0), lastFailedAt: at(0), failingForMs: 0 };

  it('is disabled once its failures kept coming for the limit without a success', () => {
    expect(shouldDisable(null, at(48 * HOUR), limits)).toBe(false);
    const filled = { ...begun, lastFailedAt: at(23 * HOUR), failingForMs: 23 * HOUR };
    expect(shouldDisable(filled, at(24 * HOUR - 1), limits)).toBe(false);
    expect(shouldDisable(filled, at(24 * HOUR), limits)).toBe(true);
    // Begun by a version before (no length kept): counted from its first failure, as then.
    expect(shouldDisable({ failingSince: at(0) }, at(24 * HOUR), limits)).toBe(true);
  });

  it('leaves its quiets out: two failures two days apart are not two days of failing', () => {
    expect(streakQuietMs(HOUR)).toBe(2 * HOUR);
    expect(streakQuietMs(10)).toBe(60_000);
    expect(failingForMs(begun, at(2 * HOUR), HOUR)).toBe(2 * HOUR);
    expect(failingForMs(begun, at(48 * HOUR), HOUR)).toBe(0);
    expect(shouldDisable(begun, at(48 * HOUR), limits)).toBe(false);
    // A day of failures, a night's quiet, then the next: the night is not counted.
    const day = { ...begun, lastFailedAt: at(12 * HOUR), failingForMs: 12 * HOUR };
    expect(failingForMs(day, at(24 * HOUR), HOUR)).toBe(12 * HOUR);
    expect(failureToRecord(begun, at(HOUR / 2 - 1), HOUR)).toBe(false);
    expect(failureToRecord(begun, at(HOUR / 2), HOUR)).toBe(true);
  });

  it('counts whole a streak whose failures come at most the longest wait apart, a few late (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 10, max: 4 * HOUR }),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 1, maxLength: 200 }),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 200 }),
        (backoffMaxMs, gaps, lateness) => {
          // Failures up to the longest wait apart (and a second), each up to a tenth of the
          // quiet late, each recorded as the dispatchers record it.
          const quiet = streakQuietMs(backoffMaxMs);
          const streak = { ...begun };
          let now = 0;
          for (const [i, gap] of gaps.entries()) {
            // Whole milliseconds, as dates hold them.
            now += Math.round(gap * backoffMaxMs + (lateness[i] ?? 0) * (quiet / 10) + 1_000 * gap);
            if (failingForMs(streak, at(now), backoffMaxMs) !== now) return false;
            if (failureToRecord(streak, at(now), backoffMaxMs)) {
              Object.assign(streak, {
                failingForMs: failingForMs(streak, at(now), backoffMaxMs),
                lastFailedAt: at(now),
              });
            }
          }
          return true;
        },
      ),
    );
  });
});

describe('backloggedEndpoints', () => {
  it('are those holding more than the most of a read', () => {
    const read = [
      ...Array.from({ length: 5 }, () => ({ webhookId: 'a' })),
      ...Array.from({ length: 3 }, () => ({ webhookId: 'b' })),
      { webhookId: 'c' },
    ];
    expect(backloggedEndpoints(read, 3)).toEqual(['a']);
    expect(backloggedEndpoints(read, 2).sort()).toEqual(['a', 'b']);
    expect(backloggedEndpoints(read, 5)).toEqual([]);
    expect(backloggedEndpoints([], 0)).toEqual([]);
  });
});

describe('ownerShare', () => {
  it('is a quarter of the room, one at least', () => {
    expect([1, 3, 4, 7, 8, 32, 1000].map(ownerShare)).toEqual([1, 1, 1, 1, 2, 8, 250]);
  });

  it('is counted per owner, or per endpoint for an entry queued before owners were noted', () => {
    expect(shareOf({ webhookId: 'w1', userId: 'u1' })).toBe(
      shareOf({ webhookId: 'w2', userId: 'u1' }),
    );
    expect(shareOf({ webhookId: 'w1' })).not.toBe(shareOf({ webhookId: 'w2' }));
    expect(shareOf({ webhookId: 'u1' })).not.toBe(shareOf({ webhookId: 'w', userId: 'u1' }));
  });
});

describe('signingSecrets', () => {
  const v = (n: number, createdAt: number) => ({ n, createdAt: at(createdAt) });
  it('signs with the latest, and the previous one during the overlap', () => {
    expect(signingSecrets([v(1, 0)], at(5), 100)).toEqual([v(1, 0)]);
    expect(signingSecrets([v(1, 0), v(2, 50)], at(100), 100)).toEqual([v(2, 50), v(1, 0)]);
    expect(signingSecrets([v(1, 0), v(2, 50)], at(150), 100)).toEqual([v(2, 50)]);
    expect(signingSecrets([], at(0), 100)).toEqual([]);
  });

  it('keeps each secret a rotation promised, through later rotations within the overlap', () => {
    // Rotated at 50, then again at 60: version 1 was promised until 150.
    const versions = [v(1, 0), v(2, 50), v(3, 60)];
    expect(signingSecrets(versions, at(100), 100)).toEqual([v(3, 60), v(2, 50), v(1, 0)]);
    expect(signingSecrets(versions, at(150), 100)).toEqual([v(3, 60), v(2, 50)]);
    expect(signingSecrets(versions, at(160), 100)).toEqual([v(3, 60)]);
    // Rotated every moment: the header keeps the latest few.
    const many = Array.from({ length: 10 }, (_, i) => v(i + 1, i));
    expect(signingSecrets(many, at(20), 100).map((x) => x.n)).toEqual(
      Array.from({ length: MOST_SIGNING_SECRETS }, (_, i) => 10 - i),
    );
  });
});

describe('answers', () => {
  it('counts 2xx as delivered, anything else as a failure', () => {
    expect([200, 204, 299].every(isDelivered)).toBe(true);
    expect([null, 199, 301, 404, 500].some(isDelivered)).toBe(false);
  });

  it('keeps an excerpt of long answers and errors, by their bytes as sent', () => {
    expect(excerpt('short')).toBe('short');
    expect(excerpt('x'.repeat(EXCERPT_BYTES + 10))).toBe(`${'x'.repeat(EXCERPT_BYTES - 3)}…`);
    expect(Buffer.byteLength(excerpt('漢'.repeat(EXCERPT_BYTES)))).toBeLessThanOrEqual(
      EXCERPT_BYTES,
    );
    expect(attemptError('no answer within 10000 ms')).toBe('no answer within 10000 ms');
    expect(Buffer.byteLength(attemptError('DNS:a.example.com, '.repeat(100)))).toBe(ERROR_BYTES);
  });
});
