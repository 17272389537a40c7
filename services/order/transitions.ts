import { writeMayHaveLanded } from '../../libs/mongo';
import type { DeliveryRecord, StepRecord } from './delivery-record';
import { recordIds, returnProof } from './delivery-record';
import { transition, type DeliveryStatus, type LifecycleEvent } from './lifecycle';
import { transitionId, type OrderStore, type TransitionRecord } from './store';
import { transitionEvents } from './webhook-events';

/**
 * What a delivery's steps become after a transition records one: the new step is the active
 * one, unless it is hidden (a payment confirmed), which leaves the step shown as active so.
 */
export function withStep(steps: StepRecord[], step: StepRecord | null): StepRecord[] {
  if (!step) return steps;
  if (step.hidden) return [...steps, { ...step, active: false }];
  return [...steps.map((s) => ({ ...s, active: false })), step];
}

/** What one transition changes of a delivery besides its lifecycle and steps. */
function eventChanges(record: DeliveryRecord, t: TransitionRecord): Partial<DeliveryRecord> {
  const { event } = t;
  if (event.kind === 'COURIER_ASSIGNED') {
    return { assignment: { courierId: event.courierId, at: t.at } };
  }
  if (event.kind === 'PAYMENT_FAILED') return { paymentFailed: { share: event.share, at: t.at } };
  if (event.kind === 'FAILED') {
    const failure = { reason: event.reason, at: t.at };
    // Keyed on the effect, not the status: a transition stored by a version before return
    // codes sends none, so it adds no proof nobody would be sent the code of.
    const sends = t.effects.some((e) => e.kind === 'SEND_RETURN_CODE');
    const proof = sends ? returnProof(record, t.at) : null;
    return proof ? { failure, proofs: [...record.proofs, proof] } : { failure };
  }
  if (
    (event.kind === 'COLLECTED' || event.kind === 'DELIVERED' || event.kind === 'RETURNED') &&
    event.proof
  ) {
    const scanned = event.proof;
    return {
      proofs: record.proofs.map((p) =>
        p.id === scanned.id ? { ...p, code: scanned.code, scannedAt: t.at } : p,
      ),
    };
  }
  return {};
}

/** A delivery with the transitions after its stored version folded in. */
export function fold(record: DeliveryRecord, transitions: TransitionRecord[]): DeliveryRecord {
  let folded = record;
  for (const t of transitions) {
    folded = {
      ...folded,
      ...eventChanges(folded, t),
      lifecycle: t.lifecycle,
      version: t.version,
      steps: withStep(folded.steps, t.step),
      updatedAt: t.at,
    };
  }
  return folded;
}

/**
 * The transition `event` makes the delivery's next, its work marked to do; or why the
 * lifecycle refuses it now.
 */
export function nextTransition(
  delivery: DeliveryRecord,
  event: LifecycleEvent,
  now: Date,
): TransitionRecord | string {
  const result = transition(delivery.lifecycle, event);
  if (!result.ok) return result.message;
  // Never dated before the change it follows: a writer that took its moment, then lost its
  // claim to one made after it, dates its own with that one's (`updatedAt`, then the webhook's
  // `createdAt`, keep the order of `sequence`).
  const at = new Date(Math.max(now.getTime(), delivery.updatedAt?.getTime() ?? 0));
  const deliveryId = delivery._id;
  const version = delivery.version + 1;
  const step: StepRecord | null = result.step
    ? {
        id: recordIds(deliveryId).step(version),
        step: result.step.step,
        active: true,
        hidden: result.step.hidden,
        updatedAt: at,
      }
    : null;
  const record: TransitionRecord = {
    _id: transitionId(deliveryId, version),
    deliveryId,
    version,
    event,
    lifecycle: result.next,
    step,
    effects: result.effects,
    ...(result.effects.length > 0 ? { unsettled: true } : {}),
    at,
  };
  if (transitionEvents(record).length > 0) record.unannounced = true;
  return record;
}

/** The fields of the delivery document that the transitions change. */
const projected = (d: DeliveryRecord) => ({
  lifecycle: d.lifecycle,
  steps: d.steps,
  proofs: d.proofs,
  assignment: d.assignment ?? null,
  failure: d.failure ?? null,
  paymentFailed: d.paymentFailed ?? null,
  updatedAt: d.updatedAt,
});

const movedSince = (from: DeliveryStatus, delivery: DeliveryRecord) =>
  `This delivery is ${delivery.lifecycle.status}, no longer ${from}: read it again and decide on what it is now`;

export type Applied =
  | { applied: true; delivery: DeliveryRecord; transition: TransitionRecord }
  | { applied: false; delivery: DeliveryRecord; message: string };

/** The errors of claims whose insert may have been made all the same (`writeMayHaveLanded`). */
const claimsInDoubt = new WeakSet<object>();

/**
 * Whether `err`, thrown by `DeliveryTransitions.apply`, leaves it unknown whether the change
 * was recorded: its claim's insert failed other than by the server refusing it, and may land
 * after a read that did not find it yet. Any other error of `apply` came before its claim, or
 * after it stood.
 */
export const changeInDoubt = (err: unknown): boolean =>
  typeof err === 'object' && err !== null && claimsInDoubt.has(err);

/**
 * A delivery's state changes as an append-only chain of transitions, `<deliveryId>:<n>`, as
 * the ledger's entries are: whoever inserts number n+1 made the change, and a loser reads
 * the winner's and decides again. The delivery document is a projection of the chain,
 * repaired on read when a writer stopped before updating it.
 */
export class DeliveryTransitions {
  constructor(
    private readonly store: OrderStore,
    /** Told of a delivery document left for the next read to repair. */
    private readonly onProjectionLeft: (deliveryId: string, err: unknown) => void = () => undefined,
  ) {}

  /** The delivery as its chain says it is now, or null. */
  async current(deliveryId: string): Promise<DeliveryRecord | null> {
    const stored = await this.store.delivery(deliveryId);
    if (!stored) return null;
    const later: TransitionRecord[] = [];
    for (let v = stored.version + 1; ; v++) {
      const next = await this.store.transition(deliveryId, v);
      if (!next) break;
      later.push(next);
    }
    if (later.length === 0) return stored;
    const repaired = fold(stored, later);
    await this.projectOrLeave(deliveryId, repaired);
    return repaired;
  }

  /**
   * Writes the delivery document as the chain now makes it. One that fails is left for the
   * next read to repair: the chain is the record, and a change claimed must not be answered as
   * an error (its retry would be refused as done), nor a read fail on a write it did not need.
   */
  private async projectOrLeave(
    deliveryId: string,
    delivery: DeliveryRecord,
    listedStatus?: DeliveryStatus,
  ): Promise<void> {
    await this.store
      .project(deliveryId, delivery.version, projected(delivery), listedStatus)
      .catch((err: unknown) => this.onProjectionLeft(deliveryId, err));
  }

  /**
   * Applies an event if the lifecycle allows it now. The transition is stored with its
   * effects marked unsettled and its events unannounced; the caller carries them out
   * (`Settlement.afterTransition`), or the sweep does.
   * `known` is the delivery as the caller has just read it (`current`), tried first instead of
   * reading it again: if another writer has moved it on since, the claim of the next number
   * fails and the delivery is read afresh, as after any lost race.
   */
  async apply(
    deliveryId: string,
    event: LifecycleEvent,
    {
      now = new Date(),
      known,
      from,
    }: {
      now?: Date;
      known?: DeliveryRecord;
      /** Only from this status: a change made meanwhile refuses the event, not redirects it. */
      from?: DeliveryStatus;
    } = {},
  ): Promise<Applied> {
    let readFirst: DeliveryRecord | undefined = known;
    for (;;) {
      const delivery = readFirst ?? (await this.current(deliveryId));
      readFirst = undefined;
      if (!delivery) throw new Error(`delivery ${deliveryId} does not exist`);
      if (from && delivery.lifecycle.status !== from) {
        return { applied: false, delivery, message: movedSince(from, delivery) };
      }
      const record = nextTransition(delivery, event, now);
      if (typeof record === 'string') return { applied: false, delivery, message: record };
      const { version, lifecycle: next } = record;
      const entering = next.status !== delivery.lifecycle.status;
      if (entering) await this.store.enteringStatus(delivery, next.status, version);
      const claimed = await this.store.claimTransition(record).catch((err: unknown) => {
        if (writeMayHaveLanded(err) && typeof err === 'object' && err !== null) {
          claimsInDoubt.add(err);
        }
        throw err;
      });
      if (!claimed) continue;
      const folded = fold(delivery, [record]);
      await this.projectOrLeave(deliveryId, folded, entering ? next.status : undefined);
      return { applied: true, delivery: folded, transition: record };
    }
  }
}
