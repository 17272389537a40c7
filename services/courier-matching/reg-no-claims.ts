/**
 * Registration numbers are unique among couriers. FerretDB neither makes a conditional update
 * atomic (decision 16) nor answers a unique index broken by an update as a duplicate key (it
 * fails with an internal error), so a number is taken by inserting a claim whose `_id` is the
 * number, before the courier is written with it, and given back once the courier no longer
 * has it.
 *
 * A process that dies between the two writes leaves a claim its courier never took (or no
 * longer has). Such a claim is released to the next taker once it is older than any write
 * could still be in flight.
 */

/** How long a claim may wait for its courier to carry the number before another may take it. */
export const CLAIM_GRACE_MS = 10 * 60_000;

export interface RegNoClaim {
  /** The registration number. */
  _id: string;
  courierId: string;
  createdAt: Date;
}

/**
 * Whether a claim still holds its number: its courier carries the number, or may still be
 * about to (the claim is younger than the grace). `holderRegNo` is the claiming courier's
 * current number, undefined when that courier does not exist (yet).
 */
export function claimHolds(claim: RegNoClaim, holderRegNo: string | undefined, now: Date): boolean {
  return holderRegNo === claim._id || now.getTime() - claim.createdAt.getTime() < CLAIM_GRACE_MS;
}
