import { randomUUID } from 'node:crypto';
import type { Logger } from 'moleculer';
import type { CancelWindow } from '../../../services/order/cancel-window';
import { CANCEL_UNKNOWN, Cancellations } from '../../../services/order/cancellation';
import type { DeliveryRecord } from '../../../services/order/delivery-record';
import type { Settlement } from '../../../services/order/settlement';
import type { DeliveryTransitions } from '../../../services/order/transitions';

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
