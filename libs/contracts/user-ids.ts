import { isWaybillError } from '../errors';
import { call, type Caller } from './call';

/**
 * Whether an account has this id. A courier's wallet is named by the courier's id as a user's
 * is by theirs, so a courier must never have a user's (decision 109).
 */
export async function isUserId(caller: Caller, id: string): Promise<boolean> {
  try {
    await call(caller, 'account.getUser', { userId: id });
    return true;
  } catch (err) {
    // Ours only: moleculer's own "service not found" is a 404 too, and says nothing of users.
    if (isWaybillError(err) && err.code === 404) return false;
    throw err;
  }
}

/**
 * What is wrong with a courier whose id is a user's: one that a version before the refusal at
 * its creation stored (decision 109). Its wallet is the user's, so nothing of the courier's is
 * shown or credited there.
 */
export const courierHasUserId = (courierId: string) =>
  `Courier ${courierId} has a user's id, so its wallet is that user's`;
