import type { Logger } from 'moleculer';
import { badRequest, serviceUnavailable } from '../../libs/errors';
import {
  cancelAttemptId,
  deliveriesOfStaleSlots,
  lostCancelSlots,
  type CancelWindow,
} from './cancel-window';
import type { DeliveryRecord } from './delivery-record';
import { canCancel, transition } from './lifecycle';
import { changeableBy } from './parties';
import type { Settlement } from './settlement';
import { changeInDoubt, type DeliveryTransitions } from './transitions';

/** The store failed around a cancel: whether it was recorded is not known yet. */
export const CANCEL_UNKNOWN =
  'The cancel could not be confirmed; read the delivery in a few seconds, and send the cancel again only if it is not CANCELLED (a cancel of a cancelled delivery answers 400)';

export interface CancellationDeps {
  transitions: DeliveryTransitions;
  /** The delivery as its caller finds it (`DeliveryRequests.stored`). */
  stored: (deliveryId: string, userId: string) => Promise<DeliveryRecord | null>;
  settlement: Settlement;
  window: CancelWindow;
  /** How old a slot must be before its cancel is taken for stopped (`LOST_SLOT_AGE_MS`). */
  lostAfterMs: number;
  logger: () => Logger;
}

/**
 * A merchant's cancel: only its own delivery, only in a status that permits it, at most
 * twice in three hours. The window's slot is taken before the change and given back when
 * the change does not happen, so a refused or failed cancel uses none; a cancel recorded
 * before an error answers as one that went well.
 */
export class Cancellations {
  constructor(private readonly deps: CancellationDeps) {}

  async cancel(userId: string, deliveryId: string): Promise<DeliveryRecord> {
    const { transitions, window } = this.deps;
    const delivery = changeableBy(await this.deps.stored(deliveryId, userId), userId);
    if (!canCancel(delivery.lifecycle.status)) {
      const refused = transition(delivery.lifecycle, { kind: 'CANCEL' });
      throw badRequest(refused.ok ? 'This delivery cannot be cancelled now' : refused.message);
    }
    const attempt = cancelAttemptId(deliveryId);
    const giveBack = () =>
      window
        .release(userId, attempt)
        .catch((err: unknown) =>
          this.deps.logger().warn('cancel slot not given back; it frees with the window', { err }),
        );
    // A reservation unanswered (Redis slow past its command timeout) may have taken the slot
    // all the same: nothing was cancelled, so it is given back, or two such errors would use up
    // the user's cancels for hours.
    const reserve = () =>
      window.reserve(userId, attempt).catch(async (err: unknown) => {
        await giveBack();
        throw err;
      });
    let slot = await reserve();
    if (!slot.ok && (await this.freeLostSlots(userId))) slot = await reserve();
    if (!slot.ok) throw badRequest(window.exceededMessage(slot.retryAt));
    let applied;
    try {
      applied = await transitions.apply(deliveryId, { kind: 'CANCEL' }, { known: delivery });
    } catch (err) {
      // The change may be recorded all the same (the error came after its claim): then it
      // stands, its slot counts, and the sweep settles it (refund, packages, events). A cancel
      // by another party at that instant (a failed payment's) reads the same and keeps the slot
      // too: one slot at worst, for an error that already took a cancel's place.
      // undefined: not read (null: read, and gone).
      const now = await transitions.current(deliveryId).catch(() => undefined);
      if (now?.lifecycle.status === 'CANCELLED') return now;
      // Unknown whether it was recorded (not read, or its claim's insert unanswered: a write
      // timed out may land after this read): the slot stays counted (a cancel given back for
      // one that happened would let a third through the window; `freeLostSlots` frees it once
      // no cancel landed), and the caller is told to retry.
      if (now === undefined || changeInDoubt(err)) throw serviceUnavailable(CANCEL_UNKNOWN);
      await giveBack();
      throw err;
    }
    if (!applied.applied) {
      await giveBack();
      throw badRequest(applied.message);
    }
    const { settlement } = this.deps;
    // The cancel stands even when its refund fails here: the sweep gives the money back.
    await settlement.afterTransition(applied.delivery, applied.transition);
    await settlement.announceCancelled(applied.delivery);
    return applied.delivery;
  }

  /**
   * Gives back the slots of `userId`'s full window whose cancels stopped midway
   * (`lostCancelSlots`); true when one was. Read only when the window is full, from its own
   * deliveries' states. A failure leaves the window as it is: the cancel is refused as before.
   */
  private async freeLostSlots(userId: string): Promise<boolean> {
    const { window, transitions, lostAfterMs } = this.deps;
    try {
      const { now, slots } = await window.slots(userId);
      const cancelled = new Map<string, boolean>();
      for (const deliveryId of deliveriesOfStaleSlots(slots, now, lostAfterMs)) {
        const delivery = await transitions.current(deliveryId);
        cancelled.set(deliveryId, delivery?.lifecycle.status === 'CANCELLED');
      }
      const lost = lostCancelSlots(slots, cancelled, now, lostAfterMs);
      for (const attemptId of lost) await window.release(userId, attemptId);
      if (lost.length > 0) {
        this.deps.logger().info('cancel slots of cancels that stopped midway given back', {
          userId,
          attempts: lost,
        });
      }
      return lost.length > 0;
    } catch (err) {
      this.deps.logger().warn('cancel slots not checked for cancels that stopped midway', { err });
      return false;
    }
  }
}
