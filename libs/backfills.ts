import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'moleculer';
import type { Model } from 'mongoose';
import { backoffMs } from './backoff';
import { insertOnce, raiseById } from './mongo';

/**
 * A service's passes over what was stored before a record of ours existed: a list a read goes
 * by, a hash entry a key is found by, a mark a sweep reads (decision 78). The first pass runs
 * when the service first starts. During a rolling update (or after a rollback), replicas of a
 * version without those records keep storing documents without them, so each node passes
 * again once the update has had time to end (`BACKFILL_AFTER_ROLLOUT_MS`), over what was
 * stored since the latest pass began. Every pass is safe to run twice or on two replicas: what
 * it adds is added once.
 */
export type BackfillPass = 'start' | 'after-rollout';

/**
 * How far before the first pass began the second one reads: a document stamped by a replica
 * whose clock runs behind ours is still read.
 */
export const CLOCK_SKEW_MS = 5 * 60_000;

/** The documents that record a backfill's passes: `_id` names the pass. */
export interface PassRecords {
  /** The record by `_id`, with when its pass began (none on records older than that field). */
  find(id: string): Promise<{ startedAt?: Date | null } | null>;
  /** Records the pass once; a repeat leaves the first record. */
  insert(id: string, startedAt: Date): Promise<void>;
  /** Records a pass that began at `startedAt`, unless a later one is recorded. */
  raise(id: string, startedAt: Date): Promise<void>;
}

/** Pass records kept as documents of a collection of ours, with the fields it requires. */
export function passRecordsIn(
  // The models differ in their document types; only their documents by `_id` are used.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  model: Model<any>,
  required: Record<string, unknown> = {},
): PassRecords {
  return {
    find: async (id) => (await model.findById(id).lean()) as { startedAt?: Date | null } | null,
    insert: async (id, startedAt) => {
      await insertOnce(() => model.create({ ...required, _id: id, startedAt }));
    },
    // Two raises at once may keep the earlier time: the next pass reads a little more.
    raise: (id, startedAt) => raiseById(model, id, { startedAt }, { setOnInsert: required }),
  };
}

/** The record of the latest pass of a backfill whose first pass is recorded as `firstId`. */
export const latestPassId = (firstId: string) => `${firstId}:latest`;

/**
 * Runs one pass of a backfill whose first pass is recorded as `firstId`: `fill(since)` adds what
 * was stored since `since` (everything for null). The first pass runs once, recording when it
 * began; so does an `after-rollout` pass that finds none (the first failed, or never ran).
 * Every later pass fills from the latest pass recorded (`<firstId>:latest`), less
 * `CLOCK_SKEW_MS`, and records its own. After a first pass recorded before its start was kept,
 * there is nothing to read from: it records its start for the passes after it.
 */
export async function runPass(
  pass: BackfillPass,
  records: PassRecords,
  firstId: string,
  fill: (since: Date | null) => Promise<void>,
  now: () => Date = () => new Date(),
): Promise<void> {
  const first = await records.find(firstId);
  if (!first) {
    const startedAt = now();
    await fill(null);
    await records.insert(firstId, startedAt);
    return;
  }
  if (pass === 'start') return;
  const latestId = latestPassId(firstId);
  const latest = await records.find(latestId);
  const from = [first.startedAt, latest?.startedAt]
    .filter((at): at is Date => at instanceof Date || typeof at === 'string')
    .map((at) => new Date(at).getTime());
  const startedAt = now();
  if (from.length > 0) await fill(new Date(Math.max(...from) - CLOCK_SKEW_MS));
  await records.raise(latestId, startedAt);
}

/** What a pass reads when it reads what was stored since `since`: a filter on `field`. */
export const storedSince = (field: string, since: Date | null) =>
  since ? { [field]: { $gte: since } } : {};

/**
 * The field a writer of this version sets on a document whose records (its list entries, its
 * hash entry) it wrote before storing it. A pass reads only documents without it: those of
 * replicas of an older version, not the thousands this version stored since the latest pass
 * (decision 81). A record added to a collection later needs a mark of its own.
 */
export const RECORDED_FIRST = 'recordedFirst';

/** The document as a writer that recorded it first stores it. */
export function markedRecorded<T extends object>(document: T): T & { recordedFirst: true } {
  return { ...document, [RECORDED_FIRST]: true as const };
}

/** What a pass reads: stored since `since` (on `field`) by a writer that did not record it first. */
export const unrecordedSince = (field: string, since: Date | null) => ({
  ...storedSince(field, since),
  [RECORDED_FIRST]: { $exists: false },
});

export interface Backfill {
  /** What it fills, for the log: "deliveries stored before the users' lists". */
  what: string;
  run(pass: BackfillPass): Promise<void>;
  /** Its first pass ends before the service reports started (readers would miss items). */
  awaited?: boolean;
}

/**
 * How long after a background pass fails it runs again, doubling each time up to the rollout
 * time: nothing else would run it before the node's next start, and what it records (a release
 * that reads no claim trusts it, decision 136) should not wait for that.
 */
export const BACKFILL_RETRY_FIRST_MS = 30_000;

/**
 * Tries of an awaited first pass before the start fails, and the first wait between them
 * (doubling): a moment's failure (the database failing over) late in a long first scan would
 * otherwise fail the start, and the restarted process scan again from the beginning.
 */
export const AWAITED_PASS_TRIES = 4;
export const AWAITED_PASS_RETRY_MS = 2_000;

/** Runs a service's backfills: the first pass as it starts, the second after a rollout's time. */
export class Backfills {
  private timer: NodeJS.Timeout | undefined;
  private readonly retries = new Set<NodeJS.Timeout>();
  private readonly running = new Set<Promise<void>>();
  private stopped = false;

  constructor(
    private readonly backfills: readonly Backfill[],
    private readonly afterRolloutMs: number,
  ) {}

  /** Resolves once the awaited first passes are done; the others go on in the background. */
  async start(logger: Logger): Promise<void> {
    this.stopped = false;
    for (const backfill of this.backfills) {
      if (backfill.awaited) await this.awaitedPass(backfill, logger);
    }
    // Stopped while an awaited pass ran: nothing more.
    if (this.stopped) return;
    for (const backfill of this.backfills) {
      if (!backfill.awaited) this.inBackground(backfill, 'start', logger);
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      for (const backfill of this.backfills) this.inBackground(backfill, 'after-rollout', logger);
    }, this.afterRolloutMs);
    // A node stopping before the time comes is not held up by it.
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const retry of this.retries) clearTimeout(retry);
    this.retries.clear();
    await Promise.allSettled(this.running);
  }

  /** An awaited first pass, tried again in place before its failure fails the start. */
  private async awaitedPass(backfill: Backfill, logger: Logger): Promise<void> {
    for (let failed = 0; ; failed++) {
      try {
        return await backfill.run('start');
      } catch (err) {
        if (this.stopped || failed + 1 >= AWAITED_PASS_TRIES) throw err;
        const retryInMs = backoffMs(failed + 1, {
          baseMs: AWAITED_PASS_RETRY_MS,
          maxMs: 4 * AWAITED_PASS_RETRY_MS,
        });
        logger.warn(`${backfill.what} are not all recorded yet: ${String(err)}`, {
          pass: 'start',
          retryInMs,
        });
        await sleep(retryInMs);
        // Stopped while it waited: no pass on a closing database.
        if (this.stopped) throw err;
      }
    }
  }

  private inBackground(backfill: Backfill, pass: BackfillPass, logger: Logger, failed = 0): void {
    const run = backfill
      .run(pass)
      .catch((err: unknown) => {
        const retryInMs = backoffMs(failed + 1, {
          baseMs: BACKFILL_RETRY_FIRST_MS,
          maxMs: this.afterRolloutMs,
        });
        logger.warn(`${backfill.what} are not all recorded yet: ${String(err)}`, {
          pass,
          retryInMs,
        });
        this.retryLater(retryInMs, () => this.inBackground(backfill, pass, logger, failed + 1));
      })
      .finally(() => this.running.delete(run));
    this.running.add(run);
  }

  private retryLater(delayMs: number, retry: () => void): void {
    if (this.stopped) return;
    const timer = setTimeout(() => {
      this.retries.delete(timer);
      retry();
    }, delayMs);
    timer.unref();
    this.retries.add(timer);
  }
}
