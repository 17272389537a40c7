import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../../libs/config';
import { BUCKET_GRACE_MS, bucketStart } from '../../libs/time-buckets';
import type { VerifiedTransaction } from '../../services/payment/checkout';
import type { CheckoutProvider } from '../../services/payment/checkout-providers';
import {
  CheckoutStore,
  LATE_CHECK_BUCKET_MS,
  defineCheckoutModels,
  type LateCheckRecord,
} from '../../services/payment/checkout-store';
import { LateChecks } from '../../services/payment/late-checks';
import { recipientsCheckout } from '../support/checkout-records';
import { useStoreDatabase } from '../support/store-database';

/**
 * The late checks of expired Paystack checkouts as the payment sweep finds them: listed in
 * 5-minute buckets of their next check's time and read by `_id` from the sweep's cursor to now
 * (libs/time-buckets), on the real database. The provider is a fake that answers as told.
 */
let recording = false;
const lateCheckFilters: unknown[] = [];
const db = useStoreDatabase('payment', defineCheckoutModels, (event) => {
  const command = event.command as Record<string, unknown>;
  if (!recording || command[event.commandName] !== 'checkout_late_checks') return;
  const filters = [
    command.filter,
    ...((command.updates as { q: unknown }[] | undefined) ?? []).map((u) => u.q),
    ...((command.deletes as { q: unknown }[] | undefined) ?? []).map((d) => d.q),
  ];
  lateCheckFilters.push(...filters.filter((f) => f !== undefined));
});

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const bucketOf = (at: number) => bucketStart(at, LATE_CHECK_BUCKET_MS);

/** Paystack as the sweep asks it: what it says of each transaction, and who asked what. */
class Provider {
  readonly asked: string[] = [];
  readonly says = new Map<string, VerifiedTransaction | Error>();

  async verify(reference: string): Promise<VerifiedTransaction | null> {
    this.asked.push(reference);
    await sleep(20);
    const said = this.says.get(reference) ?? {
      status: 'abandoned',
      amountKobo: 0,
      currency: 'NGN',
    };
    if (said instanceof Error) throw said;
    return said;
  }

  askedOf(reference: string): number {
    return this.asked.filter((r) => r === reference).length;
  }
}

let provider: Provider;
const paid: string[] = [];
const warnings: string[] = [];
const config = {
  ...loadConfig({}).payment,
  provider: 'paystack' as const,
  sweepIntervalMs: 50,
  lateChecksMs: [HOUR, 6 * HOUR, DAY, 3 * DAY],
};

/** One payment replica's late checks on the shared database, through `through` if given. */
function replica(through?: CheckoutStore) {
  const store = through ?? new CheckoutStore(() => db.models);
  const checks = new LateChecks({
    config,
    store,
    provider: provider as unknown as CheckoutProvider,
    logger: () => ({ warn: (msg: string) => void warnings.push(msg) }),
    recheckMs: MINUTE,
    pay: async (session) => void paid.push(session._id),
    uncredited: async () => undefined,
  });
  return { store, checks };
}

let store: CheckoutStore;

beforeEach(async () => {
  const m = db.models;
  await Promise.all(
    [
      m.CheckoutLateCheck,
      m.CheckoutLateClaim,
      m.SweepCursor,
      m.LateCheckBucketEntry,
      m.LateCheckBucketHead,
      m.LateCheckBucketClaim,
      m.CheckoutPass,
    ].map((model) => (model as typeof m.CheckoutLateCheck).deleteMany({})),
  );
  provider = new Provider();
  paid.length = 0;
  warnings.length = 0;
  lateCheckFilters.length = 0;
  store = new CheckoutStore(() => db.models);
});

/** A Paystack checkout that expired with its transaction handed out: its reference. */
async function expiredCheckout(): Promise<string> {
  const session = recipientsCheckout(5_000);
  await db.models.CheckoutSession.create(session);
  await db.models.CheckoutOpened.create({
    _id: session._id,
    providerReference: session._id,
    authorizationUrl: 'https://checkout.paystack.test/x',
    accessCode: 'x',
    openedAt: new Date(),
  });
  return session._id;
}

/**
 * A late check stored as a node would have stored it: listed in `bucket` (none: by a node of
 * the version before, in no bucket at all).
 */
async function storedCheck(
  reference: string,
  nextCheckAt: number,
  bucket?: number,
  checks = 0,
): Promise<void> {
  const record: LateCheckRecord = {
    _id: reference,
    expiredAt: new Date(nextCheckAt - config.lateChecksMs[checks]),
    checks,
    nextCheckAt: new Date(nextCheckAt),
  };
  if (bucket !== undefined) {
    await store.lateCheckBuckets.add(bucket, reference);
    record.listedIn = bucket;
  }
  await db.models.CheckoutLateCheck.create(record);
}

const lateCheck = (reference: string) => store.lateCheck(reference);

/** The store, its every listing of a check in a bucket failing with `why`. */
function relistFailing(why: string): CheckoutStore {
  const failing = Object.create(store) as CheckoutStore;
  failing.relistLate = async () => {
    throw new Error(why);
  };
  return failing;
}

/** A replica's late checks, the sweep's cursor an hour back, and the time it was put there. */
async function sweepingFromAnHourAgo(through?: CheckoutStore) {
  const now = Date.now();
  await store.lateCheckBuckets.pass(bucketOf(now - HOUR));
  return { ...replica(through), now };
}

it('makes a due check once while two replicas sweep at once, then lists the next in its own bucket, read by `_id` alone', async () => {
  const [a, b] = [replica(), replica()];
  const now = Date.now();
  await store.lateCheckBuckets.pass(bucketOf(now - HOUR));
  const reference = await expiredCheckout();
  // Its first check is past (the sweep was behind): listed in the bucket of now.
  await store.watchLate(reference, new Date(now - HOUR - MINUTE), new Date(now - MINUTE));
  expect((await lateCheck(reference))?.listedIn).toBe(bucketOf(now));
  const notYet = await expiredCheckout();
  await store.watchLate(notYet, new Date(now), new Date(now + HOUR));

  recording = true;
  try {
    await Promise.all([a.checks.sweep(new Date()), b.checks.sweep(new Date())]);
    const next = await lateCheck(reference);
    expect(provider.askedOf(reference)).toBe(1);
    expect(next).toMatchObject({ checks: 1 });
    const sixHours = new Date(next!.expiredAt).getTime() + 6 * HOUR;
    expect(new Date(next!.nextCheckAt).getTime()).toBe(sixHours);
    expect(next?.listedIn).toBe(bucketOf(sixHours));
    expect(provider.askedOf(notYet)).toBe(0);
    expect((await lateCheck(notYet))?.listedIn).toBe(bucketOf(now + HOUR));

    // Nothing more is due: a sweep asks nothing.
    await a.checks.sweep(new Date());
    expect(provider.asked).toHaveLength(1);
  } finally {
    recording = false;
  }
  expect(lateCheckFilters.length).toBeGreaterThan(0);
  for (const filter of lateCheckFilters) expect(Object.keys(filter as object)).toEqual(['_id']);
});

it('passes the buckets whose checks all left, stops before one whose check another replica holds, and passes it once made', async () => {
  const { checks, now } = await sweepingFromAnHourAgo();
  const held = await expiredCheckout();
  const free = await expiredCheckout();
  await storedCheck(held, now - 40 * MINUTE, bucketOf(now - 40 * MINUTE));
  await storedCheck(free, now - 25 * MINUTE, bucketOf(now - 25 * MINUTE));
  const claim = await store.claimLateCheck(held, 0, 60_000);
  expect(claim).not.toBeNull();

  await checks.sweep(new Date());
  expect(provider.askedOf(free)).toBe(1);
  expect(provider.askedOf(held)).toBe(0);
  expect(await store.lateCheckBuckets.cursor(new Date())).toBe(bucketOf(now - 40 * MINUTE));

  await store.releaseLateCheck(claim!);
  await checks.sweep(new Date());
  expect(provider.askedOf(held)).toBe(1);
  expect(provider.askedOf(free)).toBe(1);
  const cursor = await store.lateCheckBuckets.cursor(new Date());
  expect(cursor).toBeGreaterThanOrEqual(bucketOf(now - BUCKET_GRACE_MS));
  expect(cursor).toBeLessThan(bucketOf(Date.now()));
});

it('puts a check the provider cannot answer behind the others, so that the cursor moves on, and makes it once the provider answers', async () => {
  const { checks, now } = await sweepingFromAnHourAgo();
  const reference = await expiredCheckout();
  await storedCheck(reference, now - 40 * MINUTE, bucketOf(now - 40 * MINUTE));
  provider.says.set(reference, new Error('Paystack is down'));

  await checks.sweep(new Date());
  expect(provider.askedOf(reference)).toBe(1);
  expect(warnings).toContain('late check skipped; a later sweep retries');
  const behind = await lateCheck(reference);
  expect(behind).toMatchObject({ checks: 0 });
  expect(behind?.listedIn).toBeGreaterThanOrEqual(bucketOf(now));
  expect(await store.lateCheckBuckets.cursor(new Date())).toBeGreaterThan(
    bucketOf(now - 40 * MINUTE),
  );
  // Its claim was given up: the next sweep asks again once it is due.
  provider.says.set(reference, { status: 'success', amountKobo: 5_000, currency: 'NGN' });
  await sleep(config.sweepIntervalMs * 2);
  await checks.sweep(new Date());
  expect(paid).toEqual([reference]);
  expect(await lateCheck(reference)).toBeNull();
});

it('lists the checks a node of the version before stored through the backfill, and makes each when due', async () => {
  const { checks, now } = await sweepingFromAnHourAgo();
  const due = await expiredCheckout();
  const tomorrow = await expiredCheckout();
  await storedCheck(due, now - 5 * MINUTE);
  await storedCheck(tomorrow, now + DAY);

  // In no bucket: no sweep finds them.
  await checks.sweep(new Date());
  expect(provider.asked).toEqual([]);

  await store.listStoredLateChecks('start');
  expect((await lateCheck(due))?.listedIn).toBe(bucketOf(now));
  expect((await lateCheck(tomorrow))?.listedIn).toBe(bucketOf(now + DAY));
  await checks.sweep(new Date());
  expect(provider.asked).toEqual([due]);
  expect(await lateCheck(due)).toMatchObject({ checks: 1 });
});

it('moves a check listed before its time (as a node of the version before leaves it) to its own bucket, and passes the old one', async () => {
  const { checks, now } = await sweepingFromAnHourAgo();
  const reference = await expiredCheckout();
  // Checked at -30 minutes by a node that set its next time and left its bucket.
  await storedCheck(reference, now + DAY, bucketOf(now - 30 * MINUTE), 2);

  await checks.sweep(new Date());
  expect(provider.asked).toEqual([]);
  expect(await lateCheck(reference)).toMatchObject({ checks: 2, listedIn: bucketOf(now + DAY) });
  expect(await store.lateCheckBuckets.cursor(new Date())).toBeGreaterThan(
    bucketOf(now - 30 * MINUTE),
  );
});

it('finds a check listed behind the cursor (a writer paused past the grace) by looking behind it, and makes it', async () => {
  const { checks } = replica();
  const now = Date.now();
  await store.lateCheckBuckets.pass(bucketOf(now - 20 * MINUTE));
  const reference = await expiredCheckout();
  await storedCheck(reference, now - 40 * MINUTE, bucketOf(now - 40 * MINUTE));

  await checks.sweep(new Date());
  expect(provider.asked).toEqual([reference]);
  expect(warnings).toContain('late checks found behind the sweep’s cursor; making them');
  expect(await lateCheck(reference)).toMatchObject({ checks: 1 });
});

it('leaves a check listed early where it is when its move fails, due when it was, and moves it on the next sweep', async () => {
  const failing = relistFailing('database timed out');
  const { now } = await sweepingFromAnHourAgo();
  const reference = await expiredCheckout();
  await storedCheck(reference, now + 3 * DAY, bucketOf(now - 30 * MINUTE), 3);

  await replica(failing).checks.sweep(new Date());
  expect(warnings).toContain('late check not moved to its bucket; a later sweep retries');
  // Its last check stays 3 days ahead, not put 10 s ahead: nobody asks the provider early.
  const kept = await lateCheck(reference);
  expect(kept).toMatchObject({ checks: 3, listedIn: bucketOf(now - 30 * MINUTE) });
  expect(new Date(kept!.nextCheckAt).getTime()).toBe(now + 3 * DAY);
  expect(await store.lateCheckBuckets.cursor(new Date())).toBe(bucketOf(now - 30 * MINUTE));

  await replica().checks.sweep(new Date());
  expect(provider.asked).toEqual([]);
  expect(await lateCheck(reference)).toMatchObject({
    checks: 3,
    listedIn: bucketOf(now + 3 * DAY),
  });
});

it('lists a check whose watch stopped before its entry when the watch is tried again, and never points a record at a bucket without its entry', async () => {
  const { checks, now } = await sweepingFromAnHourAgo();
  const reference = await expiredCheckout();
  const failing = relistFailing('stopped');
  await expect(
    failing.watchLate(reference, new Date(now - HOUR), new Date(now - MINUTE)),
  ).rejects.toThrow('stopped');
  // Inserted without a bucket, as the version before inserts one: the backfill's to list.
  expect((await lateCheck(reference))?.listedIn).toBeUndefined();

  // The expiry is tried again, and so is its watch.
  await store.watchLate(reference, new Date(now - HOUR), new Date(now - MINUTE));
  expect((await lateCheck(reference))?.listedIn).toBe(bucketOf(now));
  await checks.sweep(new Date());
  expect(provider.asked).toEqual([reference]);
});

it('never lists a check back in an earlier bucket when a write from an older read comes last', async () => {
  const now = Date.now();
  const reference = await expiredCheckout();
  await store.watchLate(reference, new Date(now - HOUR), new Date(now - MINUTE));
  // One replica made check 0 and listed check 1 six hours on.
  const sixHours = new Date(now + 5 * HOUR);
  const listedIn = await store.lateChecked(reference, 1, sixHours);
  expect(listedIn).toBe(bucketOf(sixHours.getTime()));
  // Another, whose check 0 failed, puts it behind a sweep later, after that.
  await store.lateChecked(reference, 0, new Date(Date.now() + 50));
  const record = await lateCheck(reference);
  expect(record?.listedIn).toBe(bucketOf(sixHours.getTime()));
});
