import { runPass, type BackfillPass } from '../../libs/backfills';
import { conflict, serviceBusy, type FieldError } from '../../libs/errors';
import { DELETED, OLDER_CLAIMS_RECORDED, type PackageRecord, type PackageStore } from './store';

/** What `package.assign` made of a delivery's request for packages. */
export type Assignment =
  | { outcome: 'assigned' }
  /** The delivery recorded other packages, or was released: it takes nothing now. */
  | { outcome: 'conflict'; message: string }
  /** Some packages cannot be taken: none is. */
  | { outcome: 'refused'; refused: FieldError[] };

/** The refusal of the `i`-th package of a selection, which the delivery cannot take. */
const unavailable = (i: number, id: string): FieldError => ({
  field: `packagesId.${i}`,
  message: `package ${id} is not available`,
});

/**
 * Gives the packages to a delivery, each by inserting its claim, so two deliveries can never
 * both take a package; all or none, and again as often as asked. The selection is recorded
 * first, so that a release finds the claims by `_id`. A release closes the selection before it
 * reads the claims, and an assign reads it again after its claims and marks: either the
 * release read them, or the assign sees it closed and gives them back itself. So a late assign
 * (its request timed out, was undone and released) cannot leave packages held by a delivery
 * that does not exist.
 */
export async function assignPackages(
  store: PackageStore,
  { userId, deliveryId, packageIds }: { userId: string; deliveryId: string; packageIds: string[] },
): Promise<Assignment> {
  const recorded = await store.recordSelection(deliveryId, packageIds);
  if (recorded === 'released') return released(deliveryId);
  if (recorded === 'other') {
    return {
      outcome: 'conflict',
      message: `Delivery ${deliveryId} was given another selection of packages; it cannot take others`,
    };
  }
  // Decided by an earlier run: answered alike, and nothing is taken again.
  const decided = await store.assignOutcome(deliveryId);
  if (decided) return decided;
  const taken: string[] = [];
  const refused: FieldError[] = [];
  for (const [i, id] of packageIds.entries()) {
    const usable = await store.isLive(userId, id);
    const outcome = usable ? await store.claim(id, userId, deliveryId) : DELETED;
    if (outcome === 'taken') taken.push(id);
    else if (outcome !== 'already') {
      // A delete that stopped between its claim and its mark: its owner asked for it, so it is
      // finished here, and the package is no longer listed or priced as if it were there.
      if (usable && outcome === DELETED) await store.markDeleted(id);
      refused.push(unavailable(i, id));
    }
  }
  if (refused.length > 0) {
    // Decided before anything is given back: a run that decided first that the delivery holds
    // every package is followed, its claims left alone.
    const outcome = await store.decideAssign(deliveryId, { outcome: 'refused', refused });
    if (outcome.outcome === 'refused') await store.dropClaims(taken, deliveryId);
    return outcome;
  }
  const notHeld = await store.markTaken(packageIds, deliveryId);
  if (await store.isReleased(deliveryId)) {
    await undo(store, deliveryId, packageIds);
    return released(deliveryId);
  }
  // A package found the delivery's ('already') and given back since by another run of this
  // assign, refused (a retry beside its first run): refused as it was. And whatever this run
  // wants, a run that decided first is followed: refused, what this one took and marked is
  // given back as the release of a late assign gives it.
  const outcome = await store.decideAssign(
    deliveryId,
    notHeld.length === 0
      ? { outcome: 'assigned' }
      : {
          outcome: 'refused',
          refused: notHeld.map((id) => unavailable(packageIds.indexOf(id), id)),
        },
  );
  if (outcome.outcome === 'refused') await undo(store, deliveryId, packageIds);
  return outcome;
}

/**
 * The packages a delivery took, as they stand once no edit of theirs is under way. An edit
 * checks the claim before it writes and again after: one that wrote after this delivery's claim
 * puts the package back as it was and is refused. Read in between, the package would carry
 * values its owner was told were refused, and the delivery be priced and insured on them. Once
 * no edit holds a package, any edit after it meets the claim before it writes.
 */
export async function heldPackages(
  store: PackageStore,
  packageIds: string[],
): Promise<PackageRecord[]> {
  const free = await Promise.all(packageIds.map((id) => store.edits.awaitFree(id)));
  const edited = packageIds.find((_, i) => !free[i]);
  if (edited) {
    // A refusal: the delivery's request is undone and its packages given back at once.
    throw conflict(
      `Package ${edited} is being edited by its owner; send the request again in a few seconds (with a new Idempotency-Key if you sent one)`,
    );
  }
  const held = await store.findHeld(packageIds);
  return packageIds.map((id) => held.get(id) as PackageRecord);
}

/**
 * Gives back what an assign took after its delivery's release began. The release may have
 * read the claims before the marks, even dropped them, and another delivery taken a package
 * since: this delivery's packages are given back as one more take of their own, and a package
 * another delivery holds is marked as its claim says.
 */
async function undo(store: PackageStore, deliveryId: string, packageIds: string[]) {
  const holders = await Promise.all(packageIds.map((id) => store.holderOf(id)));
  const mine = packageIds.filter((_, i) => holders[i] === null || holders[i] === deliveryId);
  await store.markReturned(
    mine.map((packageId) => ({ packageId, take: 'undone' })),
    deliveryId,
  );
  await Promise.all(
    packageIds.map((id, i) => {
      const holder = holders[i];
      const another = holder !== null && holder !== deliveryId && holder !== DELETED;
      return another ? store.markTaken([id], holder) : undefined;
    }),
  );
  await store.dropClaims(mine, deliveryId);
}

const released = (deliveryId: string): Assignment => ({
  outcome: 'conflict',
  message: `Delivery ${deliveryId} has given its packages back; it cannot take them again`,
});

/**
 * Gives a delivery's packages back (cancellation, failed payment, an undone request): it closes
 * the selection to later assigns, then gives back those of its packages it holds, each read by
 * `_id`. Claims are dropped last, so a retry after a partial run finds what is left. Answers
 * how many it gave back. A claim still there that another call is ending fails the release
 * (503): that call may have stopped before its delete, and no other call may come back to the
 * claim; the release's caller, calling again, takes it over once its end's lease is over.
 */
export async function releasePackages(store: PackageStore, deliveryId: string): Promise<number> {
  await store.closeSelection(deliveryId);
  const held = await store.claimedBy(deliveryId);
  await store.markReturned(held, deliveryId);
  const endingElsewhere = await store.dropClaims(
    held.map((h) => h.packageId),
    deliveryId,
  );
  if (endingElsewhere > 0) {
    throw serviceBusy(
      `Packages of delivery ${deliveryId} are being given back by another call; call again in a moment`,
      5,
    );
  }
  return held.length;
}

/**
 * A pass over the claims an older version took without recording a selection (decision 136):
 * each holder whose selection does not name the claim is recorded, so that its releases, and
 * only they, read every claim. A holder already released is released again here: its release
 * may have run before the older replica's claim (a late assign, or one during a rollback). An
 * unnamed claim's holder is recorded before its selection is read, and a release closes the
 * selection before it reads the record, so one of the two finds the claim; a named one the
 * release reads by `_id`, unless it was read before the claim, which the closed selection
 * then shows. A holder that fails does not stop the others; the pass then fails, is not
 * recorded, and runs again (libs/backfills), over the same claims.
 */
export async function recordOlderClaimHolders(
  store: PackageStore,
  pass: BackfillPass,
): Promise<void> {
  await runPass(pass, store.olderClaimPasses(), OLDER_CLAIMS_RECORDED, async (since) => {
    const done = new Set<string>();
    let failed: unknown;
    for await (const claim of store.olderClaimsSince(since)) {
      if (done.has(claim.holder)) continue;
      try {
        if (await recordOlderClaim(store, claim)) done.add(claim.holder);
      } catch (err) {
        failed = err;
      }
    }
    if (failed) throw failed;
  });
}

/**
 * Records an older claim's holder unless its selection names the claim, and gives its packages
 * back if the holder is released. True once the holder is recorded: its release reads every
 * claim, so its other claims need nothing more.
 */
async function recordOlderClaim(
  store: PackageStore,
  claim: { _id: string; holder: string },
): Promise<boolean> {
  let selection = await store.selectionOf(claim.holder);
  const named = selection?.packageIds.includes(claim._id) ?? false;
  if (!named) {
    await store.recordOlderClaimHolder(claim.holder);
    selection = await store.selectionOf(claim.holder);
  }
  if (selection?.released) await releasePackages(store, claim.holder);
  return !named;
}
