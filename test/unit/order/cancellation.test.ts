import { randomUUID } from 'node:crypto';
import type { Logger } from 'moleculer';
import mongoose from 'mongoose';
import {
  cancelAttemptId,
  deliveriesOfStaleSlots,
  deliveryOfAttempt,
  lostCancelSlots,
  type CancelWindow,
} from '../../../services/order/cancel-window';
import { CANCEL_UNKNOWN, Cancellations } from '../../../services/order/cancellation';
import type { DeliveryRecord } from '../../../services/order/delivery-record';
import type { Settlement } from '../../../services/order/settlement';
import type { OrderStore } from '../../../services/order/store';
import { DeliveryTransitions } from '../../../services/order/transitions';
import { created } from '../../support/built-deliveries';

const USER = randomUUID();
const DELIVERY = randomUUID();

const deliveryIn = (status: string) =>
  ({ _id: DELIVERY, userId: USER, lifecycle: { status } }) as unknown as DeliveryRecord;

/**
 * A cancel over fakes of what it calls: the transition table's writer (`reads`, the statuses
 * `current` answers in turn; `apply` as given), a window that notes the slots given back, and
 * a settlement that notes what it announced (a failed broadcast it only logs: settlement.test).
 */
function cancelling(options: {
  reads: string[];
  apply: () => Promise<unknown>;
  reserve?: () => Promise<unknown>;
}) {
  const givenBack: string[] = [];
  const reads = [...options.reads];
  // Only the methods a cancel calls exist on each fake.
  const transitions = {
    current: async () => {
      const status = reads.shift() ?? 'REQUEST_CREATED';
      if (status === 'UNREADABLE') throw new Error('database is locked');
      return deliveryIn(status);
    },
    apply: options.apply,
  } as unknown as DeliveryTransitions;
  const window = {
    reserve: options.reserve ?? (async () => ({ ok: true })),
    release: async (_user: string, attempt: string) => void givenBack.push(attempt),
    exceededMessage: () => 'limit',
  } as unknown as CancelWindow;
  const announced: string[] = [];
  const settlement = {
    afterTransition: async () => undefined,
    announceCancelled: async (delivery: DeliveryRecord) =>
      void announced.push(delivery.lifecycle.status),
  } as unknown as Settlement;
  const warnings: string[] = [];
  const logger = () => ({ warn: (message: string) => warnings.push(message) }) as unknown as Logger;
  const cancellations = new Cancellations({
    transitions,
    stored: (deliveryId) => transitions.current(deliveryId),
    settlement,
    window,
    lostAfterMs: 15 * 60_000,
    logger,
  });
  return { cancel: () => cancellations.cancel(USER, DELIVERY), givenBack, warnings, announced };
}

describe('a cancel', () => {
  it('recorded before an error answers as one that went well, its slot kept', async () => {
    const { cancel, givenBack } = cancelling({
      reads: ['REQUEST_CREATED', 'CANCELLED'],
      apply: async () => {
        throw new Error('the projection failed after the claim');
      },
    });
    expect((await cancel()).lifecycle.status).toBe('CANCELLED');
    expect(givenBack).toEqual([]);
  });

  it('not recorded gives its slot back and answers the error', async () => {
    const { cancel, givenBack } = cancelling({
      reads: ['REQUEST_CREATED', 'REQUEST_CREATED'],
      apply: async () => {
        throw new Error('the database is down');
      },
    });
    await expect(cancel()).rejects.toThrow('the database is down');
    expect(givenBack).toHaveLength(1);
  });

  it('whose slot was not confirmed taken gives it back and changes nothing', async () => {
    const applied: string[] = [];
    const { cancel, givenBack } = cancelling({
      reads: ['REQUEST_CREATED'],
      apply: async () => void applied.push('cancel'),
      // Redis took the slot, and answered after the command's timeout.
      reserve: async () => {
        throw new Error('The cancel limit store is unavailable; nothing was cancelled, retry');
      },
    });
    await expect(cancel()).rejects.toThrow('nothing was cancelled');
    expect(givenBack).toHaveLength(1);
    expect(applied).toEqual([]);
  });

  it('not known to be recorded keeps its slot and asks for a retry (503)', async () => {
    const { cancel, givenBack } = cancelling({
      reads: ['REQUEST_CREATED', 'UNREADABLE'],
      apply: async () => {
        throw new Error('the projection failed after the claim');
      },
    });
    await expect(cancel()).rejects.toMatchObject({ code: 503, message: CANCEL_UNKNOWN });
    expect(givenBack).toEqual([]);
  });

  /** A real transition table over a store whose claim of the cancel fails with `claimError`. */
  const claimFailing = (claimError: Error) => {
    const { delivery } = created();
    // Only what `apply` calls on its way to the claim.
    const store = {
      enteringStatus: async () => undefined,
      claimTransition: async () => {
        throw claimError;
      },
    } as unknown as OrderStore;
    const transitions = new DeliveryTransitions(store);
    return () => transitions.apply(delivery._id, { kind: 'CANCEL' }, { known: delivery });
  };

  it('whose claim went unanswered keeps its slot and asks for a retry (503), though not read cancelled yet', async () => {
    // The insert was sent; the server may carry it out after this read.
    const timedOut = new mongoose.mongo.MongoNetworkTimeoutError('connection 3 timed out');
    const { cancel, givenBack } = cancelling({
      reads: ['REQUEST_CREATED', 'REQUEST_CREATED'],
      apply: claimFailing(timedOut),
    });
    await expect(cancel()).rejects.toMatchObject({ code: 503, message: CANCEL_UNKNOWN });
    expect(givenBack).toEqual([]);
  });

  it('whose claim the database refused gives its slot back and answers the error', async () => {
    const busy = new mongoose.mongo.MongoServerError({
      ok: 0,
      code: 1,
      errmsg: 'database is locked (5) (SQLITE_BUSY)',
    });
    const { cancel, givenBack } = cancelling({
      reads: ['REQUEST_CREATED', 'REQUEST_CREATED'],
      apply: claimFailing(busy),
    });
    await expect(cancel()).rejects.toBe(busy);
    expect(givenBack).toHaveLength(1);
  });

  it('made, is announced to the tracking pages, its slot kept', async () => {
    const { cancel, givenBack, announced } = cancelling({
      reads: ['REQUEST_CREATED'],
      apply: async () => ({
        applied: true,
        delivery: deliveryIn('CANCELLED'),
        transition: {},
      }),
    });
    expect((await cancel()).lifecycle.status).toBe('CANCELLED');
    expect(givenBack).toEqual([]);
    expect(announced).toEqual(['CANCELLED']);
  });
});

describe('the slots of cancels that stopped midway', () => {
  const NOW = Date.UTC(2030, 0, 2, 12);
  const AGE = 15 * 60_000;
  const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
  const slot = (deliveryId: string, ageMs: number) => ({
    attemptId: cancelAttemptId(deliveryId),
    takenAt: NOW - ageMs,
  });

  it('names each attempt after its delivery, uniquely', () => {
    const first = cancelAttemptId(a);
    expect(deliveryOfAttempt(first)).toBe(a);
    expect(cancelAttemptId(a)).not.toBe(first);
    // The version before named attempts by a bare UUID: no delivery.
    expect(deliveryOfAttempt(randomUUID())).toBeUndefined();
  });

  it('are the old slots of deliveries not cancelled, and all but the newest of a cancelled one', () => {
    // An attempt stopped before its change, then a retry that cancelled.
    const stoppedFirst = slot(a, 3 * AGE);
    const cancelledOnRetry = slot(a, 2 * AGE);
    const notCancelled = slot(b, 2 * AGE);
    const slots = [stoppedFirst, cancelledOnRetry, notCancelled];
    expect(deliveriesOfStaleSlots(slots, NOW, AGE)).toEqual([a, b]);
    const states = new Map([
      [a, true],
      [b, false],
    ]);
    expect(lostCancelSlots(slots, states, NOW, AGE)).toEqual([
      stoppedFirst.attemptId,
      notCancelled.attemptId,
    ]);
    // The newest kept whatever the order listed.
    expect(lostCancelSlots([cancelledOnRetry, stoppedFirst], states, NOW, AGE)).toEqual([
      stoppedFirst.attemptId,
    ]);
  });

  it('leave a cancel that may still be under way, a delivery not read and an id of the version before', () => {
    const young = slot(b, AGE);
    const unread = slot(c, 2 * AGE);
    const old = { attemptId: randomUUID(), takenAt: NOW - 2 * AGE };
    const slots = [young, unread, old];
    expect(deliveriesOfStaleSlots(slots, NOW, AGE)).toEqual([c]);
    expect(lostCancelSlots(slots, new Map([[b, false]]), NOW, AGE)).toEqual([]);
    // A cancelled delivery with an attempt under way keeps every slot: that attempt, refused,
    // gives back its own.
    const happened = slot(a, 2 * AGE);
    const retry = slot(a, 1000);
    expect(lostCancelSlots([retry, happened], new Map([[a, true]]), NOW, AGE)).toEqual([]);
  });
});
