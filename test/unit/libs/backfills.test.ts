import type { Logger } from 'moleculer';
import {
  AWAITED_PASS_RETRY_MS,
  AWAITED_PASS_TRIES,
  BACKFILL_RETRY_FIRST_MS,
  Backfills,
  CLOCK_SKEW_MS,
  markedRecorded,
  runPass,
  storedSince,
  unrecordedSince,
  type PassRecords,
} from '../../../libs/backfills';

/** Pass records in memory, as a collection keyed by `_id` keeps them. */
function memoryRecords(initial: Record<string, { startedAt?: Date | null }> = {}) {
  const docs = new Map(Object.entries(initial));
  const records: PassRecords = {
    find: async (id) => docs.get(id) ?? null,
    insert: async (id, startedAt) => {
      if (!docs.has(id)) docs.set(id, { startedAt });
    },
    raise: async (id, startedAt) => {
      const at = docs.get(id)?.startedAt;
      if (!at || at < startedAt) docs.set(id, { startedAt });
    },
  };
  return { records, docs };
}

const T0 = new Date('2026-11-24T10:00:00Z');
const T1 = new Date('2026-11-24T10:40:00Z');
const T2 = new Date('2026-11-26T09:00:00Z');
const skewed = (at: Date) => new Date(at.getTime() - CLOCK_SKEW_MS);

/** A fill that records what it was asked for. */
function recording() {
  const asked: (Date | null)[] = [];
  return { asked, fill: async (since: Date | null) => void asked.push(since) };
}

describe('runPass', () => {
  it('fills everything once at the first start, recording when it began', async () => {
    const { records, docs } = memoryRecords();
    const { asked, fill } = recording();
    await runPass('start', records, '$done', fill, () => T0);
    await runPass('start', records, '$done', fill, () => T1);
    expect(asked).toEqual([null]);
    expect(docs.get('$done')).toEqual({ startedAt: T0 });
  });

  it('fills after each rollout what was stored since the latest pass began, less the skew', async () => {
    const { records, docs } = memoryRecords({ $done: { startedAt: T0 } });
    const { asked, fill } = recording();
    await runPass('after-rollout', records, '$done', fill, () => T1);
    // A rollback, days of an older version, then the update again: from the last pass on.
    await runPass('after-rollout', records, '$done', fill, () => T2);
    expect(asked).toEqual([skewed(T0), skewed(T1)]);
    expect(docs.get('$done:latest')).toEqual({ startedAt: T2 });
  });

  it('runs the first pass after a rollout when none has ended', async () => {
    const { records, docs } = memoryRecords();
    const { asked, fill } = recording();
    await runPass('after-rollout', records, '$done', fill, () => T1);
    expect(asked).toEqual([null]);
    expect(docs.get('$done')).toEqual({ startedAt: T1 });
  });

  it('reads nothing after a first pass whose start was not kept, then from its own start', async () => {
    const { records, docs } = memoryRecords({ $done: {} });
    const { asked, fill } = recording();
    await runPass('after-rollout', records, '$done', fill, () => T1);
    expect(asked).toEqual([]);
    expect(docs.get('$done:latest')).toEqual({ startedAt: T1 });
    await runPass('after-rollout', records, '$done', fill, () => T2);
    expect(asked).toEqual([skewed(T1)]);
  });

  it('records nothing when the fill fails, so that the pass runs again', async () => {
    const { records, docs } = memoryRecords();
    await expect(
      runPass('start', records, '$done', async () => {
        throw new Error('server gone');
      }),
    ).rejects.toThrow('server gone');
    expect(docs.size).toBe(0);
  });
});

describe('storedSince', () => {
  it('reads everything without a time, and from it on the field with one', () => {
    expect(storedSince('createdAt', null)).toEqual({});
    expect(storedSince('updatedAt', T0)).toEqual({ updatedAt: { $gte: T0 } });
  });
});

describe('unrecordedSince and markedRecorded', () => {
  it('reads only documents without the mark a writer that recorded them first sets', () => {
    const unmarked = { recordedFirst: { $exists: false } };
    expect(unrecordedSince('createdAt', null)).toEqual(unmarked);
    expect(unrecordedSince('createdAt', T0)).toEqual({ createdAt: { $gte: T0 }, ...unmarked });
    const document = { _id: 'a', userId: 'u' };
    expect(markedRecorded(document)).toEqual({ _id: 'a', userId: 'u', recordedFirst: true });
    expect(document).toEqual({ _id: 'a', userId: 'u' });
  });
});

describe('Backfills', () => {
  const logger = () => ({ warn: jest.fn() }) as unknown as Logger & { warn: jest.Mock };

  afterEach(() => jest.useRealTimers());

  it('awaits the awaited first passes, runs the others behind, and each again after the rollout time', async () => {
    jest.useFakeTimers();
    const passes: string[] = [];
    let releaseBehind: () => void = () => undefined;
    const backfills = new Backfills(
      [
        {
          what: 'behind',
          run: (pass) => {
            passes.push(`behind:${pass}`);
            return pass === 'start'
              ? new Promise<void>((resolve) => (releaseBehind = resolve))
              : Promise.resolve();
          },
        },
        {
          what: 'awaited',
          run: async (pass) => void passes.push(`awaited:${pass}`),
          awaited: true,
        },
      ],
      60_000,
    );
    await backfills.start(logger());
    expect(passes).toEqual(['awaited:start', 'behind:start']);
    jest.advanceTimersByTime(59_999);
    expect(passes).toHaveLength(2);
    jest.advanceTimersByTime(1);
    expect(passes).toEqual([
      'awaited:start',
      'behind:start',
      'behind:after-rollout',
      'awaited:after-rollout',
    ]);
    releaseBehind();
    await backfills.stop();
  });

  it('logs a background pass that failed and schedules nothing once stopped', async () => {
    jest.useFakeTimers();
    const log = logger();
    const run = jest.fn(async () => {
      throw new Error('server gone');
    });
    const backfills = new Backfills([{ what: 'lists', run }], 1_000);
    await backfills.start(log);
    await backfills.stop();
    expect(log.warn).toHaveBeenCalledWith('lists are not all recorded yet: Error: server gone', {
      pass: 'start',
      retryInMs: 1_000,
    });
    jest.advanceTimersByTime(5_000);
    expect(run).toHaveBeenCalledTimes(1);
  });

  it('runs a failed background pass again, waiting twice as long each time up to the rollout time', async () => {
    jest.useFakeTimers();
    const log = logger();
    const passes: string[] = [];
    let failures = 3;
    const run = jest.fn(async (pass: string) => {
      passes.push(pass);
      if (failures-- > 0) throw new Error('server busy');
    });
    const backfills = new Backfills([{ what: 'holders', run }], 100_000);
    await backfills.start(log);
    const after = async (ms: number) => {
      await jest.advanceTimersByTimeAsync(ms - 1);
      const before = passes.length;
      await jest.advanceTimersByTimeAsync(1);
      expect(passes.length).toBe(before + 1);
    };
    await after(BACKFILL_RETRY_FIRST_MS);
    await after(2 * BACKFILL_RETRY_FIRST_MS);
    // The rollout's own pass comes first (at 100 s); the retry after it waits 100 s, not 120.
    await after(100_000 - 3 * BACKFILL_RETRY_FIRST_MS);
    expect(passes).toEqual(['start', 'start', 'start', 'after-rollout']);
    expect(log.warn.mock.calls.map(([, meta]) => meta)).toEqual([
      { pass: 'start', retryInMs: BACKFILL_RETRY_FIRST_MS },
      { pass: 'start', retryInMs: 2 * BACKFILL_RETRY_FIRST_MS },
      { pass: 'start', retryInMs: 100_000 },
    ]);
    // The third failure's retry, 100 s after it (at 90 s), then nothing more: it succeeded.
    await after(90_000);
    await jest.advanceTimersByTimeAsync(1_000_000);
    expect(passes).toEqual(['start', 'start', 'start', 'after-rollout', 'start']);
    await backfills.stop();
  });

  it('runs no retry once stopped, however soon it was due', async () => {
    jest.useFakeTimers();
    const run = jest.fn(async () => {
      throw new Error('server gone');
    });
    const backfills = new Backfills([{ what: 'holders', run }], 1_000_000);
    await backfills.start(logger());
    // The failure is in: its retry is scheduled.
    await jest.advanceTimersByTimeAsync(0);
    await backfills.stop();
    await jest.advanceTimersByTimeAsync(10 * BACKFILL_RETRY_FIRST_MS);
    expect(run).toHaveBeenCalledTimes(1);
  });

  it('schedules nothing when stopped while an awaited pass ran', async () => {
    jest.useFakeTimers();
    let finish: () => void = () => undefined;
    const run = jest.fn(
      (pass: string) =>
        new Promise<void>((resolve) => {
          if (pass === 'start') finish = resolve;
          else resolve();
        }),
    );
    const backfills = new Backfills([{ what: 'keys', run, awaited: true }], 1_000);
    const starting = backfills.start(logger());
    const stopping = backfills.stop();
    finish();
    await Promise.all([starting, stopping]);
    jest.advanceTimersByTime(5_000);
    expect(run).toHaveBeenCalledTimes(1);
  });
});

describe('an awaited first pass', () => {
  const logger = () => ({ warn: jest.fn() }) as unknown as Logger & { warn: jest.Mock };

  afterEach(() => jest.useRealTimers());

  it('is tried again in place after a failure, and the start waits for it', async () => {
    jest.useFakeTimers();
    const log = logger();
    let failures = 2;
    const run = jest.fn(async (pass: string) => {
      if (pass === 'start' && failures-- > 0) throw new Error('not primary');
    });
    const backfills = new Backfills([{ what: 'keys', run, awaited: true }], 1_000_000);
    let started = false;
    const starting = backfills.start(log).then(() => (started = true));
    await jest.advanceTimersByTimeAsync(AWAITED_PASS_RETRY_MS);
    expect(started).toBe(false);
    await jest.advanceTimersByTimeAsync(2 * AWAITED_PASS_RETRY_MS);
    await starting;
    expect(run).toHaveBeenCalledTimes(3);
    expect(log.warn.mock.calls.map(([, meta]) => meta)).toEqual([
      { pass: 'start', retryInMs: AWAITED_PASS_RETRY_MS },
      { pass: 'start', retryInMs: 2 * AWAITED_PASS_RETRY_MS },
    ]);
    await backfills.stop();
  });

  it('fails the start once it failed AWAITED_PASS_TRIES times', async () => {
    jest.useFakeTimers();
    const run = jest.fn(async () => {
      throw new Error('server gone');
    });
    const backfills = new Backfills([{ what: 'keys', run, awaited: true }], 1_000_000);
    const starting = backfills.start(logger());
    const failed = expect(starting).rejects.toThrow('server gone');
    await jest.advanceTimersByTimeAsync(60_000);
    await failed;
    expect(run).toHaveBeenCalledTimes(AWAITED_PASS_TRIES);
    await backfills.stop();
  });
});
