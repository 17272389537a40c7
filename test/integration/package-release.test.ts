import { randomUUID } from 'node:crypto';
import { toHttpError } from '../../libs/errors';
import { CLAIM_END_LEASE_MS } from '../../libs/mongo';
import {
  assignPackages,
  heldPackages,
  recordOlderClaimHolders,
  releasePackages,
} from '../../services/package/assignment';
import {
  DELETED,
  GIVEN_BACK,
  OLDER_CLAIMS_RECORDED,
  PackageStore,
  definePackageModels,
} from '../../services/package/store';
import { WriterLocks } from '../../libs/writer-locks';
import { STORED_PACKAGE, useStoreDatabase } from '../support/store-database';

/**
 * `package.release` finds a delivery's claims through the selection its `package.assign`
 * recorded first, each by `_id` (decision 72), on the real server: through a stop between the
 * steps, a retry, a refused selection, and claims stored before selections were recorded.
 */
/** The filters of the reads of `package_claims` (finds), as the driver sends them. */
const claimReads: Record<string, unknown>[] = [];
const db = useStoreDatabase('package', definePackageModels, (event) => {
  if (event.commandName === 'find' && event.command.find === 'package_claims') {
    claimReads.push(event.command.filter as Record<string, unknown>);
  }
});
const store = new PackageStore(() => db.models);
const save = async (userId: string) => (await store.insert({ userId, ...STORED_PACKAGE }))._id;
const openIds = async (userId: string) => (await store.listOpen(userId)).map((p) => p._id).sort();

const assign = async (userId: string, deliveryId: string, packageIds: string[]) =>
  (await assignPackages(store, { userId, deliveryId, packageIds })).outcome;

/** `package.release`; `stopBeforeDrop` stops where a crash would leave it half done. */
async function release(deliveryId: string, { stopBeforeDrop = false } = {}) {
  if (!stopBeforeDrop) return releasePackages(store, deliveryId);
  await store.closeSelection(deliveryId);
  const held = await store.claimedBy(deliveryId);
  await store.markReturned(held, deliveryId);
  return held.length;
}

/**
 * `package.release` as order calls it: again while another call ends a claim of the delivery
 * (503), as its sweep would.
 */
async function releaseAsOrder(deliveryId: string): Promise<number> {
  for (let calls = 1; ; calls++) {
    try {
      return await release(deliveryId);
    } catch (err) {
      if (toHttpError(err).status !== 503 || calls === 50) throw err;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}

it('finishes a delete that stopped between its claim and its mark when a delivery asks for the package', async () => {
  const userId = randomUUID();
  const [kept, halfDeleted] = [await save(userId), await save(userId)];
  expect(await store.claim(halfDeleted, userId, DELETED)).toBe('taken');
  expect(await openIds(userId)).toEqual([kept, halfDeleted].sort());
  expect(await assign(userId, randomUUID(), [kept, halfDeleted])).toBe('refused');
  // Refused, as any package its owner deleted; no longer listed; the other given back.
  expect(await openIds(userId)).toEqual([kept]);
  expect(await assign(userId, randomUUID(), [kept])).toBe('assigned');
});

/**
 * Runs `before` when a claim's insert has failed on the claim there and before that claim is
 * read, as a release landing in between would, and `after` once it is read (`times` reads).
 */
function betweenInsertAndRead(
  before: () => Promise<unknown>,
  { times = 1, after = async () => undefined as unknown } = {},
) {
  const findById = db.models.Claim.findById.bind(db.models.Claim);
  let left = times;
  // The reads `before` and `after` make themselves are theirs.
  let meanwhile = false;
  return jest.spyOn(db.models.Claim, 'findById').mockImplementation(((id: string) => {
    if (left === 0 || meanwhile) return findById(id);
    left -= 1;
    const read = (async () => {
      meanwhile = true;
      await before();
      meanwhile = false;
      const found = await findById(id).lean();
      meanwhile = true;
      await after();
      meanwhile = false;
      return found;
    })();
    return { lean: () => read };
  }) as unknown as typeof db.models.Claim.findById);
}

it('takes a package, for a delivery or a delete, whose claim was given back between the refused insert and its read', async () => {
  const userId = randomUUID();
  const [forDelivery, forDelete] = [await save(userId), await save(userId)];
  const [first, second] = [randomUUID(), randomUUID()];
  expect(await assign(userId, first, [forDelivery, forDelete])).toBe('assigned');
  // The first delivery is cancelled just as the next claim meets its claim.
  const spy = betweenInsertAndRead(() => release(first));
  try {
    expect(await assign(userId, second, [forDelivery])).toBe('assigned');
  } finally {
    spy.mockRestore();
  }
  expect(await store.holderOf(forDelivery)).toBe(second);
  // A delete meets the second delivery's claim, given back meanwhile: it deletes the package
  // (a 404 said it was not found, and it was listed again).
  const again = betweenInsertAndRead(() => release(second));
  try {
    expect(await store.claim(forDelivery, userId, DELETED)).toBe('taken');
  } finally {
    again.mockRestore();
  }
  expect(await store.holderOf(forDelivery)).toBe(DELETED);
  expect(await store.holderOf(forDelete)).toBeNull();
});

it('refuses, and deletes nothing, when every claim a take meets is given back before it is read', async () => {
  const userId = randomUUID();
  const pkg = await save(userId);
  const holders = [randomUUID(), randomUUID(), randomUUID()];
  expect(await assign(userId, holders[0], [pkg])).toBe('assigned');
  // Each read finds the claim gone, and another delivery has taken it before the next insert.
  let turn = 0;
  const spy = betweenInsertAndRead(() => release(holders[turn]), {
    times: holders.length,
    after: async () => {
      turn += 1;
      if (turn < holders.length) await assign(userId, holders[turn], [pkg]);
    },
  });
  try {
    expect(await store.claim(pkg, userId, randomUUID())).toBe(GIVEN_BACK);
  } finally {
    spy.mockRestore();
  }
  expect(turn).toBe(holders.length);
  // An assign told so refuses the package, and takes it for no delete.
  let current = randomUUID();
  expect(await assign(userId, current, [pkg])).toBe('assigned');
  const again = betweenInsertAndRead(() => release(current), {
    times: 3,
    after: async () => {
      current = randomUUID();
      await assign(userId, current, [pkg]);
    },
  });
  try {
    expect(await assign(userId, randomUUID(), [pkg])).toBe('refused');
  } finally {
    again.mockRestore();
  }
  expect(await store.holderOf(pkg)).toBe(current);
  await release(current);
  expect(await openIds(userId)).toEqual([pkg]);
  expect(await assign(userId, randomUUID(), [pkg])).toBe('assigned');
});

/** The claim reads `work` makes, and whether each named one `_id`. */
async function claimReadsOf(work: () => Promise<unknown>) {
  claimReads.length = 0;
  await work();
  return claimReads.map((f) => typeof f._id === 'string');
}

it('reads only the claims of the selection, by `_id`, and a retried release finishes once', async () => {
  const userId = randomUUID();
  const [a, b, c] = [await save(userId), await save(userId), await save(userId)];
  const deliveryId = randomUUID();
  expect(await assign(userId, deliveryId, [a, b])).toBe('assigned');
  // A retried assign changes nothing.
  expect(await assign(userId, deliveryId, [a, b])).toBe('assigned');
  expect(await openIds(userId)).toEqual([c]);
  const takes = (await store.claimedBy(deliveryId)).map((h) => h.take);

  // Stopped after giving the packages back, before dropping the claims: the retry finds the
  // same takes (the same re-listing tags) and ends it. Each claim read by `_id`, as the
  // selection names it and again as its package is given back.
  expect(await claimReadsOf(() => release(deliveryId, { stopBeforeDrop: true }))).toEqual([
    true,
    true,
    true,
    true,
  ]);
  const retried = await store.claimedBy(deliveryId);
  expect(retried.map((h) => h.take)).toEqual(takes);
  expect(await release(deliveryId)).toBe(2);
  expect(await release(deliveryId)).toBe(0);
  expect(await openIds(userId)).toEqual([a, b, c].sort());
  // Saved three, each taken package listed again once for its one take.
  expect(await store.savedCount(userId)).toBe(5);
});

it("leaves another delivery's claim on a package of a refused selection", async () => {
  const userId = randomUUID();
  const [a, b] = [await save(userId), await save(userId)];
  const [winner, loser] = [randomUUID(), randomUUID()];
  expect(await assign(userId, winner, [b])).toBe('assigned');
  expect(await assign(userId, loser, [a, b])).toBe('refused');
  expect(await claimReadsOf(() => release(loser))).toEqual([true, true]);
  expect(await openIds(userId)).toEqual([a]);
  expect(await store.holderOf(b)).not.toBeNull();
  // Released, the loser takes nothing again.
  expect(await assign(userId, loser, [b])).toBe('conflict');
  // A selection is the first one asked: a delivery claims nothing outside it.
  expect(await assign(userId, winner, [a])).toBe('conflict');
  expect(await store.holderOf(a)).toBeNull();
  expect(await release(winner)).toBe(1);
  expect(await openIds(userId)).toEqual([a, b].sort());
});

it('releases nothing, by `_id`, for an assign that stopped before its claims', async () => {
  const userId = randomUUID();
  const a = await save(userId);
  const deliveryId = randomUUID();
  expect(await store.recordSelection(deliveryId, [a])).toBe('recorded');
  expect(await claimReadsOf(() => release(deliveryId))).toEqual([true]);
  expect(await openIds(userId)).toEqual([a]);
  // The assign, retried after the release, takes nothing.
  expect(await assign(userId, deliveryId, [a])).toBe('conflict');
  expect(await store.holderOf(a)).toBeNull();
  expect(await openIds(userId)).toEqual([a]);
});

it('gives nothing to an assign that arrives after its release (a request timed out and undone)', async () => {
  const userId = randomUUID();
  const [a, b] = [await save(userId), await save(userId)];
  const deliveryId = randomUUID();
  expect(await release(deliveryId)).toBe(0);
  expect(await assign(userId, deliveryId, [a, b])).toBe('conflict');
  for (const id of [a, b]) expect(await store.holderOf(id)).toBeNull();
  expect(await openIds(userId)).toEqual([a, b].sort());
  // Released twice, or again later: still nothing to take.
  expect(await release(deliveryId)).toBe(0);
  expect(await assign(userId, deliveryId, [a])).toBe('conflict');
});

it('leaves no package held when an assign and the release of its delivery race', async () => {
  const userId = randomUUID();
  const outcomes = new Map<string, number>();
  for (let round = 0; round < 20; round++) {
    const packageIds = [await save(userId), await save(userId)];
    const deliveryId = randomUUID();
    const [assigned] = await Promise.all([
      assign(userId, deliveryId, packageIds),
      new Promise((resolve) => setTimeout(resolve, round % 7)).then(() =>
        releaseAsOrder(deliveryId),
      ),
    ]);
    outcomes.set(assigned, (outcomes.get(assigned) ?? 0) + 1);
    for (const id of packageIds) expect(await store.holderOf(id)).toBeNull();
  }
  // Every package saved is open again, each listed once.
  expect(await openIds(userId)).toHaveLength(40);
  expect([...outcomes.keys()].every((o) => o === 'assigned' || o === 'conflict')).toBe(true);
});

const markOf = async (packageId: string) =>
  (await db.models.Package.findById(packageId).lean())?.p2pDeliveryId;

/**
 * A late assign of package `a` that stops between its claims and its marks, where `between`
 * runs (and makes its marks, `mark`, when it likes); answers the assign's outcome.
 */
async function lateAssign(
  userId: string,
  late: string,
  a: string,
  between: (mark: () => Promise<void>) => Promise<void>,
) {
  const markTaken = store.markTaken.bind(store);
  const spy = jest.spyOn(store, 'markTaken').mockImplementationOnce(async (ids, deliveryId) => {
    let notHeld: string[] = [];
    await between(async () => {
      notHeld = await markTaken(ids, deliveryId);
    });
    return notHeld;
  });
  try {
    return await assign(userId, late, [a]);
  } finally {
    spy.mockRestore();
  }
}

it('leaves a package with the delivery that took it after the release of a late assign', async () => {
  const userId = randomUUID();
  const a = await save(userId);
  const [late, next] = [randomUUID(), randomUUID()];
  // Between the late assign's claims and its marks: its release, then another delivery takes it.
  const outcome = await lateAssign(userId, late, a, async (mark) => {
    expect(await release(late)).toBe(1);
    expect(await assign(userId, next, [a])).toBe('assigned');
    await mark();
  });
  expect(outcome).toBe('conflict');
  expect(await store.holderOf(a)).toBe(next);
  expect(await markOf(a)).toBe(next);
  expect(await openIds(userId)).toEqual([]);
  expect(await release(next)).toBe(1);
  expect(await openIds(userId)).toEqual([a]);
});

it("marks a package as its claim says when a late assign's mark lands over the next taker's", async () => {
  const userId = randomUUID();
  const a = await save(userId);
  const [late, next] = [randomUUID(), randomUUID()];
  const outcome = await lateAssign(userId, late, a, async (mark) => {
    await mark();
    expect(await release(late)).toBe(1);
    expect(await assign(userId, next, [a])).toBe('assigned');
    // The late assign's write, begun while it still held the claim, lands now.
    await db.models.Package.updateOne({ _id: a }, { $set: { p2pDeliveryId: late } });
  });
  expect(outcome).toBe('conflict');
  expect(await markOf(a)).toBe(next);
  expect(await openIds(userId)).toEqual([]);
});

/** What a version before selections wrote when it took packages: claims and marks, no selection. */
async function takeAsOlderVersion(userId: string, deliveryId: string, packageIds: string[]) {
  for (const _id of packageIds) await db.models.Claim.create({ _id, holder: deliveryId, userId });
  await store.markTaken(packageIds, deliveryId);
  expect(await openIds(userId)).toEqual(expect.not.arrayContaining(packageIds));
}

it('still releases claims stored before selections were recorded, by reading them all', async () => {
  const userId = randomUUID();
  const [a, b] = [await save(userId), await save(userId)];
  const deliveryId = randomUUID();
  await takeAsOlderVersion(userId, deliveryId, [a, b]);
  expect(await openIds(userId)).toEqual([]);
  // The scan, then each claim by `_id` as its package is given back and as it is dropped.
  expect(await claimReadsOf(() => release(deliveryId))).toEqual([false, true, true, true, true]);
  expect(await openIds(userId)).toEqual([a, b].sort());
  expect(await release(deliveryId)).toBe(0);
});

describe('once the claims older versions took are recorded by their holders (decision 136)', () => {
  const olderHolder = (deliveryId: string) =>
    db.models.OlderClaimHolder.findById(deliveryId).lean();

  it('releases a delivery without a selection by `_id` alone, and an older holder by the scan', async () => {
    const userId = randomUUID();
    const [a, b, c] = [await save(userId), await save(userId), await save(userId)];
    const [older, current] = [randomUUID(), randomUUID()];
    await takeAsOlderVersion(userId, older, [a, b]);
    expect(await assign(userId, current, [c])).toBe('assigned');
    // Before any pass: a delivery without a selection may be an older version's.
    expect(await claimReadsOf(() => release(randomUUID()))).toEqual([false]);

    await recordOlderClaimHolders(store, 'start');
    // Recorded at the first pass, but older replicas may still be assigning: still the scan.
    expect(await olderHolder(older)).not.toBeNull();
    expect(await claimReadsOf(() => release(randomUUID()))).toEqual([false]);
    await recordOlderClaimHolders(store, 'after-rollout');
    expect(
      await db.models.OlderClaimHolder.findById(`${OLDER_CLAIMS_RECORDED}:latest`).lean(),
    ).not.toBeNull();

    // Its selection names its claim: not an older holder, and released by `_id`.
    expect(await olderHolder(current)).toBeNull();
    expect(await claimReadsOf(() => release(randomUUID()))).toEqual([]);
    expect(await claimReadsOf(() => release(current))).toEqual([true, true, true]);
    // The older holder's release reads every claim, and gives back both of its packages.
    const reads = await claimReadsOf(async () => expect(await release(older)).toBe(2));
    expect(reads[0]).toBe(false);
    expect(await openIds(userId)).toEqual([a, b, c].sort());
  });

  it('gives back, once, what an older replica took for a delivery already released', async () => {
    const userId = randomUUID();
    const a = await save(userId);
    const deliveryId = randomUUID();
    // Released first (a rollback's older replica still assigning), its claim taken after.
    expect(await release(deliveryId)).toBe(0);
    await takeAsOlderVersion(userId, deliveryId, [a]);
    // Two replicas' passes at once. One may meet the claim the other is giving back and fail
    // (503, "being given back by another call"): its pass is not recorded and runs again
    // (libs/backfills), as here. Neither may fail otherwise.
    const passes = await Promise.allSettled([
      recordOlderClaimHolders(store, 'after-rollout'),
      recordOlderClaimHolders(store, 'after-rollout'),
    ]);
    for (const pass of passes) {
      if (pass.status === 'rejected') {
        expect(pass.reason).toMatchObject({ message: expect.stringMatching(/another call/) });
      }
    }
    await recordOlderClaimHolders(store, 'after-rollout');
    expect(await store.holderOf(a)).toBeNull();
    expect(await openIds(userId)).toEqual([a]);
    // Saved once, given back once.
    expect(await store.savedCount(userId)).toBe(2);
    expect(await release(deliveryId)).toBe(0);
  });

  it('gives back an older claim its released selection names, taken after the release read it', async () => {
    const userId = randomUUID();
    const a = await save(userId);
    const deliveryId = randomUUID();
    // This version's assign recorded the selection and stopped; its retry reached a replica of
    // the version before, which claimed after the release had read the claim by `_id`.
    expect(await store.recordSelection(deliveryId, [a])).toBe('recorded');
    expect(await release(deliveryId)).toBe(0);
    await takeAsOlderVersion(userId, deliveryId, [a]);
    await recordOlderClaimHolders(store, 'after-rollout');
    expect(await store.holderOf(a)).toBeNull();
    expect(await openIds(userId)).toEqual([a]);
    // Named by its selection: its release reads it by `_id`, no need to read them all.
    expect(await olderHolder(deliveryId)).toBeNull();
  });

  it('fails a pass that meets a claim another call is ending, after the others, and gives it back when run again', async () => {
    const userId = randomUUID();
    const [a, b] = [await save(userId), await save(userId)];
    const [ending, plain] = [randomUUID(), randomUUID()];
    for (const [deliveryId, packageId] of [
      [ending, a],
      [plain, b],
    ]) {
      expect(await release(deliveryId)).toBe(0);
      await takeAsOlderVersion(userId, deliveryId, [packageId]);
    }
    // Another call claimed the end of `ending`'s claim and stopped before its delete.
    const claim = await db.models.Claim.findById(a).lean();
    const end = `${a}:${ending}:${claim!.createdAt.getTime()}:1`;
    await db.models.ClaimEnd.create({ _id: end, at: new Date() });
    const latest = async () =>
      (await db.models.OlderClaimHolder.findById(`${OLDER_CLAIMS_RECORDED}:latest`).lean())
        ?.startedAt;
    const before = await latest();
    await expect(recordOlderClaimHolders(store, 'after-rollout')).rejects.toMatchObject({
      code: 503,
    });
    // The other holder was given back all the same; the pass is not recorded as run, so the
    // next one reads the claim again.
    expect(await store.holderOf(b)).toBeNull();
    expect(await latest()).toEqual(before);
    expect(await olderHolder(ending)).not.toBeNull();
    expect(await store.holderOf(a)).toBe(ending);
    await db.models.ClaimEnd.updateOne(
      { _id: end },
      { at: new Date(Date.now() - CLAIM_END_LEASE_MS - 1) },
    );
    await recordOlderClaimHolders(store, 'after-rollout');
    expect(await store.holderOf(a)).toBeNull();
    expect(await openIds(userId)).toEqual([a, b].sort());
    expect(await store.savedCount(userId)).toBe(4);
  });

  it("marks this version's claims, and records no holder for an older version's deletion", async () => {
    const userId = randomUUID();
    const [a, b, c] = [await save(userId), await save(userId), await save(userId)];
    expect(await assign(userId, randomUUID(), [a])).toBe('assigned');
    expect(await store.claim(b, userId, DELETED)).toBe('taken');
    for (const id of [a, b]) {
      expect(await db.models.Claim.findById(id).lean()).toMatchObject({ recordedFirst: true });
    }
    await db.models.Claim.create({ _id: c, holder: DELETED, userId });
    await recordOlderClaimHolders(store, 'after-rollout');
    expect(await olderHolder(DELETED)).toBeNull();
  });
});

it("leaves another delivery's claim that a late second release read as its own delivery's", async () => {
  const userId = randomUUID();
  const a = await save(userId);
  const [first, next] = [randomUUID(), randomUUID()];
  expect(await assign(userId, first, [a])).toBe('assigned');
  const firsts = await db.models.Claim.findById(a).lean();
  // The second of two releases of `first` read the claim as `first`'s before the first one
  // dropped it and `next` took the package; its delete would meet `next`'s claim.
  expect(await release(first)).toBe(1);
  expect(await assign(userId, next, [a])).toBe('assigned');
  const nexts = await db.models.Claim.findById(a).lean();
  const read = jest.spyOn(db.models.Claim, 'findById').mockReturnValueOnce({
    lean: async () => firsts,
  } as never);
  const deletes = jest.spyOn(db.models.Claim, 'deleteOne');
  // The first release ended that claim: the second deletes nothing, and, finding it gone,
  // answers nothing left to end (its release does not fail).
  expect(await store.dropClaims([a], first)).toBe(0);
  expect(deletes).not.toHaveBeenCalled();
  deletes.mockRestore();
  read.mockRestore();
  expect(await db.models.Claim.findById(a).lean()).toEqual(nexts);
  expect(await release(first)).toBe(0);
  expect(await release(next)).toBe(1);
});

it('gives a package to one delivery when releases of its holder race two takers', async () => {
  // Measured before claims were ended by one call: two deliveries took one package in 12
  // rounds of 50 (the second release deleted the next claim and put it back after a third
  // delivery had claimed).
  const userId = randomUUID();
  for (let round = 0; round < 20; round++) {
    const a = await save(userId);
    const holder = randomUUID();
    expect(await assign(userId, holder, [a])).toBe('assigned');
    const taken: string[] = [];
    const take = async (deliveryId: string) => {
      for (let tries = 0; tries < 200; tries++) {
        const outcome = await store.claim(a, userId, deliveryId);
        if (outcome === 'taken') taken.push(deliveryId);
        // DELETED: the claim went between this insert and its read.
        if (outcome !== holder && outcome !== DELETED) return;
      }
    };
    // The claims' drops of three releases at once (their steps before it take turns).
    await Promise.all([
      Promise.all([1, 2, 3].map(() => store.dropClaims([a], holder))),
      take(randomUUID()),
      take(randomUUID()),
    ]);
    expect(taken).toHaveLength(1);
    expect(await store.holderOf(a)).toBe(taken[0]);
    expect(await db.models.ClaimEnd.countDocuments({ _id: new RegExp(`^${a}:`) })).toBe(1);
  }
});

it('takes over the end of a claim whose caller stopped before its delete, once its lease is over', async () => {
  const userId = randomUUID();
  const a = await save(userId);
  const deliveryId = randomUUID();
  expect(await assign(userId, deliveryId, [a])).toBe('assigned');
  const claim = await db.models.Claim.findById(a).lean();
  const instance = `${a}:${deliveryId}:${claim!.createdAt.getTime()}`;
  // Another call claimed the end and stopped: the release fails, for its caller to call again.
  await db.models.ClaimEnd.create({ _id: `${instance}:1`, at: new Date() });
  await expect(release(deliveryId)).rejects.toMatchObject({
    code: 503,
    message: `Packages of delivery ${deliveryId} are being given back by another call; call again in a moment`,
    data: { retryAfter: 5 },
  });
  expect(await store.holderOf(a)).toBe(deliveryId);
  // Past the lease, the next call takes the end over and drops the claim.
  await db.models.ClaimEnd.updateOne(
    { _id: `${instance}:1` },
    { at: new Date(Date.now() - CLAIM_END_LEASE_MS - 1) },
  );
  expect(await release(deliveryId)).toBe(1);
  expect(await store.holderOf(a)).toBeNull();
  expect(await db.models.ClaimEnd.findById(`${instance}:2`).lean()).not.toBeNull();
  expect(await openIds(userId)).toEqual([a]);
});
/**
 * A package taken by `first`, released, then taken by `next`; `held` is what `first` held, for
 * a late second release of `first`.
 */
async function takenAgain() {
  const userId = randomUUID();
  const a = await save(userId);
  const [first, next] = [randomUUID(), randomUUID()];
  expect(await assign(userId, first, [a])).toBe('assigned');
  const held = await store.claimedBy(first);
  expect(await release(first)).toBe(1);
  expect(await assign(userId, next, [a])).toBe('assigned');
  return { userId, a, first, next, held };
}

it('marks a package as its claim says when a late release clears the next taker’s mark', async () => {
  const { userId, a, first, next, held } = await takenAgain();
  // A second release of `first`, late, read the package still marked `first` and wrote it
  // back cleared after `next` had marked it.
  await db.models.Package.updateOne({ _id: a }, { $set: { p2pDeliveryId: null } });
  await store.markReturned(held, first);
  expect(await markOf(a)).toBe(next);
  expect(await openIds(userId)).toEqual([]);
});

it('lists a package again when the holder a late release marked it for has given it back meanwhile', async () => {
  const { userId, a, first, next, held } = await takenAgain();
  // A late release of `first` read the claim as `next`'s; `next` gave the package back before
  // its mark for `next` landed.
  expect(await release(next)).toBe(1);
  const read = jest.spyOn(store, 'holderOf').mockResolvedValueOnce(next);
  await store.markReturned(held, first);
  read.mockRestore();
  expect(await markOf(a)).toBeNull();
  expect(await openIds(userId)).toEqual([a]);
});

it('keeps the mark, and not the edit, of a package a delivery takes while it is edited', async () => {
  // The edit's write could put back the copy it read, without the delivery's mark: the package
  // then looked open while the delivery held it (FerretDB writes the whole document). An edit
  // that finds the package claimed after its write is refused, as if the claim came first.
  const userId = randomUUID();
  for (let round = 0; round < 12; round++) {
    const packageId = await save(userId);
    const [original] = [...(await store.findHeld([packageId])).values()];
    const deliveryId = randomUUID();
    // Claimed as the edit begins (it checked the claim just before), marked as it is written.
    expect(await store.claim(packageId, userId, deliveryId)).toBe('taken');
    const [edited] = await Promise.all([
      store.updateOpen(userId, packageId, { description: `Round ${round}` }),
      store.markTaken([packageId], deliveryId),
    ]);
    const [stored] = [...(await store.findHeld([packageId])).values()];
    expect(stored.p2pDeliveryId).toBe(deliveryId);
    expect(edited).toBeNull();
    // Refused, so not written either: the delivery gives back the package it took.
    expect(stored.description).toBe(original.description);
  }
  expect(await openIds(userId)).toEqual([]);
});

it('keeps the mark of a delivery that takes a package just after an edit found it held by nobody', async () => {
  // The edit checked the claim after its write and found none; the delivery then claimed and
  // marked the package before the edit looked at the mark: it is the delivery's, not a
  // released one's, and clearing it left the package listed and counted open while the
  // delivery held it, with nothing to mark it again.
  const userId = randomUUID();
  const packageId = await save(userId);
  const deliveryId = randomUUID();
  const holderOf = store.holderOf.bind(store);
  let first = true;
  const read = jest.spyOn(store, 'holderOf').mockImplementation(async (id) => {
    if (id !== packageId || !first) return holderOf(id);
    first = false;
    const none = await holderOf(id);
    expect(await store.claim(packageId, userId, deliveryId)).toBe('taken');
    expect(await store.markTaken([packageId], deliveryId)).toEqual([]);
    return none;
  });
  try {
    const edited = await store.updateOpen(userId, packageId, { description: 'Edited first' });
    expect(edited).toMatchObject({ description: 'Edited first', p2pDeliveryId: deliveryId });
  } finally {
    read.mockRestore();
  }
  expect(await markOf(packageId)).toBe(deliveryId);
  expect(await openIds(userId)).toEqual([]);
});

/**
 * A delivery's assign whose retry runs beside its first run: the first claims p1 and meets p2
 * with another delivery; the retry finds p1 already the delivery's and waits before p2 until
 * `between` has played the first run's refusal and the other delivery's release of p2.
 */
async function retryBesideFirstRun(between: (delivery: string, p1: string) => Promise<void>) {
  const userId = randomUUID();
  const [p1, p2] = [await save(userId), await save(userId)];
  const [other, delivery] = [randomUUID(), randomUUID()];
  expect(await assign(userId, other, [p2])).toBe('assigned');
  expect(await store.claim(p1, userId, delivery)).toBe('taken');
  const claim = store.claim.bind(store);
  let reached!: () => void;
  const atP2 = new Promise<void>((resolve) => (reached = resolve));
  let goOn!: () => void;
  const proceed = new Promise<void>((resolve) => (goOn = resolve));
  const spy = jest.spyOn(store, 'claim').mockImplementation(async (id, owner, holder) => {
    if (id === p2) {
      reached();
      await proceed;
    }
    return claim(id, owner, holder);
  });
  let retried: string;
  try {
    const retry = assign(userId, delivery, [p1, p2]);
    await atP2;
    await between(delivery, p1);
    expect(await release(other)).toBe(1);
    goOn();
    retried = await retry;
  } finally {
    spy.mockRestore();
  }
  return { userId, p1, p2, delivery, retried };
}

/** The first run's refusal, decided before it gives anything back. */
const firstRunRefuses = (delivery: string) =>
  store.decideAssign(delivery, {
    outcome: 'refused',
    refused: [{ field: 'packagesId.1', message: 'package is not available' }],
  });

it.each([
  ['after the first run gave p1 back', true],
  ['before the first run gave p1 back', false],
])(
  'refuses a retried assign beside its refused first run, the retry marking %s',
  async (_when, droppedFirst) => {
    const { userId, p1, p2, delivery, retried } = await retryBesideFirstRun(async (d, p) => {
      await firstRunRefuses(d);
      if (droppedFirst) await store.dropClaims([p], d);
    });
    expect(retried).toBe('refused');
    // The first run's drop, when it comes after: nothing is left to give back.
    await store.dropClaims([p1], delivery);
    expect(await store.holderOf(p1)).toBeNull();
    expect(await store.holderOf(p2)).toBeNull();
    expect(await openIds(userId)).toEqual([p1, p2].sort());
    // Decided: a later run answers the same, taking nothing.
    expect(await assign(userId, delivery, [p1, p2])).toBe('refused');
    expect(await store.holderOf(p1)).toBeNull();
  },
);

it('answers assigned to a first run whose refusal comes after its retry decided it holds every package', async () => {
  const { userId, p1, p2, delivery, retried } = await retryBesideFirstRun(async () => undefined);
  expect(retried).toBe('assigned');
  // The first run, refusing late, follows the retry, and gives nothing back.
  expect((await firstRunRefuses(delivery)).outcome).toBe('assigned');
  expect(await store.holderOf(p1)).toBe(delivery);
  expect(await store.holderOf(p2)).toBe(delivery);
  expect(await openIds(userId)).toEqual([]);
});

it('waits out an edit, or a lock past its lease, before reading a taken package', async () => {
  const userId = randomUUID();
  const packageId = await save(userId);
  const locks = WriterLocks.named(() => db.models, 'PackageEdit', 'Package', {
    waitMs: 200,
    leaseMs: 60_000,
  });
  const token = await locks.acquire(packageId);
  expect(await locks.awaitFree(packageId)).toBe(false);
  // Its writer stopped long ago: the lock holds nothing.
  await db.models.PackageEditLock.updateOne(
    { _id: packageId },
    { $set: { at: new Date(Date.now() - 61_000) } },
  );
  expect(await locks.awaitFree(packageId)).toBe(true);
  await locks.release(packageId, token as string);
  expect(await locks.awaitFree(packageId)).toBe(true);
});

it('prices a delivery on the package as it stands once an edit it refused has put it back', async () => {
  const userId = randomUUID();
  const packageId = await save(userId);
  const deliveryId = randomUUID();
  // An edit under way: it found no claim, and is about to write quantity 9.
  const token = await store.edits.acquire(packageId);
  expect(token).not.toBeNull();
  expect(await assign(userId, deliveryId, [packageId])).toBe('assigned');
  await db.models.Package.updateOne({ _id: packageId }, { $set: { quantity: 9 } });
  let read: number | undefined;
  const snapshot = heldPackages(store, [packageId]).then(([held]) => (read = held.quantity));
  await new Promise((resolve) => setTimeout(resolve, 200));
  expect(read).toBeUndefined();
  // The edit meets the claim after its write: it puts the package back and is refused.
  await db.models.Package.updateOne({ _id: packageId }, { $set: { quantity: 1 } });
  await store.edits.release(packageId, token as string);
  await snapshot;
  expect(read).toBe(1);
});

it('clears the mark of a delivery released while an edit was written, which the edit’s copy put back', async () => {
  const userId = randomUUID();
  const packageId = await save(userId);
  const released = randomUUID();
  // The edit's write (the first) as FerretDB makes it from a copy read while that delivery
  // held the package.
  let writes = 0;
  const Package = Object.create(db.models.Package) as typeof db.models.Package;
  Package.updateOne = ((filter: object, update: { $set: object }) =>
    db.models.Package.updateOne(
      filter,
      writes++ === 0 ? { $set: { ...update.$set, p2pDeliveryId: released } } : update,
    )) as unknown as typeof Package.updateOne;
  const editing = new PackageStore(() => ({ ...db.models, Package }));
  const edited = await editing.updateOpen(userId, packageId, { description: 'Edited' });
  expect(edited).toMatchObject({ description: 'Edited', p2pDeliveryId: null });
  const [stored] = [...(await store.findHeld([packageId])).values()];
  expect(stored).toMatchObject({ description: 'Edited', p2pDeliveryId: null });
  expect(await openIds(userId)).toEqual([packageId]);
});

it('leaves no mark of a delivery that gave the package back while an edit it refused was written', async () => {
  const userId = randomUUID();
  const packageId = await save(userId);
  const deliveryId = randomUUID();
  expect(await assign(userId, deliveryId, [packageId])).toBe('assigned');
  // The edit read the claim as the delivery's; the delivery gave the package back before the
  // edit's mark for it landed.
  expect(await release(deliveryId)).toBe(1);
  const read = jest.spyOn(store, 'holderOf').mockResolvedValueOnce(deliveryId);
  expect(await store.updateOpen(userId, packageId, { description: 'Edited' })).toBeNull();
  read.mockRestore();
  expect(await markOf(packageId)).toBeNull();
  expect(await openIds(userId)).toEqual([packageId]);
});
