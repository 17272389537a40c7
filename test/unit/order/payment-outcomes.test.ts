import type { Logger } from 'moleculer';
import type { PaymentOutcome } from '../../../libs/contracts/payment';
import type { DeliveryRecord } from '../../../services/order/delivery-record';
import { PaymentOutcomes } from '../../../services/order/payment-outcomes';
import type { Settlement } from '../../../services/order/settlement';
import type { OrderStore } from '../../../services/order/store';
import type { DeliveryTransitions } from '../../../services/order/transitions';

/**
 * A delivery checkout's outcome against the delivery as the order service finds it (the
 * transitions, the settlement and the payment service are the calls they would make; the
 * outcomes end to end are in test/integration).
 */
const OUTCOME: PaymentOutcome = {
  reference: 'ck-1',
  purpose: { kind: 'DELIVERY', id: 'd-1' },
  userId: 'merchant-1',
  amountKobo: 150_000,
  decidedAt: '2026-12-06T05:00:00.000Z',
};

const AWAITING_PAYMENT = {
  _id: 'd-1',
  lifecycle: {
    status: 'REQUEST_CREATED',
    owes: { creator: true, recipient: false },
    paid: { creator: false, recipient: false },
  },
  payment: { creator: { checkoutReference: 'ck-1' }, recipient: {} },
} as unknown as DeliveryRecord;

/** Outcomes handled against `reads` of the delivery in turn and `pending` for its request. */
function outcomesWith(reads: (DeliveryRecord | null)[], pending: boolean) {
  const done: string[] = [];
  const outcomes = new PaymentOutcomes({
    store: {
      pending: async () => (pending ? { _id: 'd-1' } : null),
    } as unknown as OrderStore,
    transitions: {
      current: async () => reads.shift() ?? null,
      apply: async (_id: string, event: { kind: string }) => {
        done.push(`apply ${event.kind}`);
        const status = event.kind === 'PAYMENT_FAILED' ? 'CANCELLED' : 'REQUEST_CREATED';
        return {
          applied: true,
          delivery: { ...AWAITING_PAYMENT, lifecycle: { ...AWAITING_PAYMENT.lifecycle, status } },
          transition: {},
        };
      },
    } as unknown as DeliveryTransitions,
    settlement: {
      afterTransition: async () => void done.push('afterTransition'),
      giveBackLateMoney: async () => void done.push('giveBackLateMoney'),
      announceCancelled: async () => void done.push('announceCancelled'),
    } as unknown as Settlement,
    services: () => ({
      call: async (action: string) => void done.push(action),
      broadcast: async () => undefined,
    }),
    logger: () => ({ warn: () => done.push('warned') }) as unknown as Logger,
  });
  return { outcomes, done };
}

it('marks the share paid of a delivery stored between its two reads, never credits the money back', async () => {
  // Not found, its request's document gone: stored meanwhile (the document is dropped last).
  const { outcomes, done } = outcomesWith([null, AWAITING_PAYMENT], false);
  await outcomes.succeeded(OUTCOME);
  expect(done).toEqual(['apply PAID', 'afterTransition', 'payment.acknowledge']);
});

it('leaves an outcome of a delivery still being created unacknowledged, to come again', async () => {
  const { outcomes, done } = outcomesWith([null], true);
  await outcomes.succeeded(OUTCOME);
  expect(done).toEqual([]);
});

it('gives the money of a delivery that never came to be back to its payer', async () => {
  const { outcomes, done } = outcomesWith([null, null], false);
  await outcomes.succeeded(OUTCOME);
  expect(done).toEqual(['giveBackLateMoney', 'payment.acknowledge']);
});

it('cancels the delivery of a declined payment, announces it, and acknowledges', async () => {
  const { outcomes, done } = outcomesWith([AWAITING_PAYMENT], false);
  await outcomes.failed({ ...OUTCOME, reason: 'DECLINED' });
  expect(done).toEqual([
    'apply PAYMENT_FAILED',
    'afterTransition',
    'announceCancelled',
    'payment.acknowledge',
  ]);
});
