import type { Logger } from 'moleculer';
import type { Announcer } from '../../../services/order/announcer';
import type { DeliveryRecord } from '../../../services/order/delivery-record';
import type { Effect } from '../../../services/order/lifecycle';
import type { Outbox } from '../../../services/order/outbox';
import type { ProofChecks } from '../../../services/order/proofs';
import { Settlement } from '../../../services/order/settlement';
import { DELIVERY_STATUS_CHANGED_EVENT } from '../../../libs/contracts/order';
import type { OrderStore, TransitionRecord } from '../../../services/order/store';

/**
 * The order a transition's effects are carried out in, and that each is tried whatever became
 * of the others (the services are the calls they would make; the sweep's retries and the
 * services themselves are tested end to end in test/integration).
 */

const DELIVERED_POD = {
  _id: 'd-1',
  userId: 'merchant-1',
  trackingId: 'T-1',
  assignment: { courierId: 'courier-1' },
  payOnDelivery: { collectAmountKobo: 250_000, remitTo: 'MERCHANT_WALLET' },
  payment: {},
  scheduledAt: null,
} as unknown as DeliveryRecord;

function settlementWith(
  failing: Set<string>,
  announcer = {} as Announcer,
  answerWithinMs = 7_500,
  outbox = {} as Outbox,
) {
  const calls: string[] = [];
  const broadcasts: string[] = [];
  const done: string[][] = [];
  const warnings: unknown[] = [];
  const settlement = new Settlement({
    store: {
      workDone: async (_t: unknown, flags: string[]) => void done.push(flags),
    } as unknown as OrderStore,
    scheduledSearchLeadMs: 0,
    answerWithinMs,
    announcer,
    outbox,
    proofs: {} as ProofChecks,
    services: () => ({
      call: async (name: string) => {
        calls.push(name);
        if (failing.has(name)) throw new Error(`${name} unavailable`);
        return {};
      },
      broadcast: async (event: string) => {
        if (failing.has('broadcast')) throw new Error('NATS is reconnecting');
        broadcasts.push(event);
      },
    }),
    logger: () => ({ warn: (...args: unknown[]) => warnings.push(args) }) as unknown as Logger,
  });
  return { settlement, calls, broadcasts, done, warnings };
}

const transition = (effects: Effect[]) =>
  ({ _id: 'd-1:7', effects, at: new Date(), unsettled: true }) as unknown as TransitionRecord;

it('posts the cash a courier collected before it frees the courier, then the rest', async () => {
  const { settlement, calls } = settlementWith(new Set());
  await settlement.settle(
    DELIVERED_POD,
    transition([
      { kind: 'RELEASE_PACKAGES' },
      { kind: 'END_MATCHING' },
      { kind: 'REMIT_COLLECTED' },
    ]),
  );
  expect(calls).toEqual([
    'payment.collectOnDelivery',
    'courier-matching.endMatching',
    'package.release',
  ]);
});

it('tries every effect when one fails, and reports the first failure unsettled', async () => {
  const { settlement, calls, done, warnings } = settlementWith(
    new Set(['courier-matching.endMatching', 'package.release']),
  );
  await expect(
    settlement.settle(
      DELIVERED_POD,
      transition([
        { kind: 'RELEASE_PACKAGES' },
        { kind: 'END_MATCHING' },
        { kind: 'REMIT_COLLECTED' },
      ]),
    ),
  ).rejects.toThrow('courier-matching.endMatching unavailable');
  expect(calls).toEqual([
    'payment.collectOnDelivery',
    'courier-matching.endMatching',
    'package.release',
  ]);
  expect(done).toEqual([]); // still unsettled: the sweep tries them all again
  expect(warnings).toHaveLength(1);
});

it('frees the courier even when the cash cannot be posted', async () => {
  const { settlement, calls } = settlementWith(new Set(['payment.collectOnDelivery']));
  await expect(
    settlement.settle(
      DELIVERED_POD,
      transition([{ kind: 'END_MATCHING' }, { kind: 'REMIT_COLLECTED' }]),
    ),
  ).rejects.toThrow('payment.collectOnDelivery unavailable');
  expect(calls).toEqual(['payment.collectOnDelivery', 'courier-matching.endMatching']);
});

it('answers a change after a while when its follow-up hangs, and carries the effects out all the same', async () => {
  let announced: () => void = () => undefined;
  const hanging = {
    applied: () => new Promise<boolean>((resolve) => (announced = () => resolve(true))),
  } as unknown as Announcer;
  const { settlement, calls } = settlementWith(new Set(), hanging, 50);
  const cancelled = transition([{ kind: 'END_MATCHING' }, { kind: 'RELEASE_PACKAGES' }]);
  // The webhook service never answers: the change is answered all the same.
  await settlement.afterTransition(DELIVERED_POD, cancelled);
  expect(calls).toEqual([]);
  announced();
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  expect(calls).toEqual(['courier-matching.endMatching', 'package.release']);
});

it('broadcasts a change to the tracking streams before, not after, its webhook events are handed over', async () => {
  const hanging = { applied: () => new Promise<boolean>(() => undefined) } as unknown as Announcer;
  const { settlement, broadcasts } = settlementWith(new Set(), hanging, 50);
  const pickedUp = {
    ...transition([]),
    step: { status: 'PICKED_UP', hidden: false },
  } as unknown as TransitionRecord;
  const picked = {
    ...DELIVERED_POD,
    lifecycle: { status: 'PICKED_UP', p2pStatus: 'PICKED_UP' },
  } as unknown as DeliveryRecord;
  // The webhook service never answers: the tracking pages hear of the change all the same.
  await settlement.afterTransition(picked, pickedUp);
  expect(broadcasts).toEqual([DELIVERY_STATUS_CHANGED_EVENT]);
});

it('carries a change’s effects out, and records them done, when its broadcast fails', async () => {
  const announcer = { applied: async () => true } as unknown as Announcer;
  const { settlement, calls, done, warnings } = settlementWith(new Set(['broadcast']), announcer);
  const cancelled = {
    ...transition([{ kind: 'END_MATCHING' }, { kind: 'RELEASE_PACKAGES' }]),
    step: { status: 'CANCELLED', hidden: false },
  } as unknown as TransitionRecord;
  await settlement.afterTransition(DELIVERED_POD, cancelled);
  expect(calls).toEqual(['courier-matching.endMatching', 'package.release']);
  expect(done).toEqual([['unsettled']]);
  expect(warnings).toEqual([['delivery status change not broadcast', expect.anything()]]);
});

it('withdraws the messages a delivery has not sent when it ends, beside its other effects', async () => {
  const withdrawn: string[] = [];
  const outbox = {
    withdrawUnsent: async (delivery: DeliveryRecord) => void withdrawn.push(delivery._id),
  } as unknown as Outbox;
  const { settlement, calls } = settlementWith(new Set(), {} as Announcer, 7_500, outbox);
  await settlement.settle(
    DELIVERED_POD,
    transition([
      { kind: 'RELEASE_PACKAGES' },
      { kind: 'END_MATCHING' },
      { kind: 'WITHDRAW_MESSAGES' },
    ]),
  );
  expect(withdrawn).toEqual([DELIVERED_POD._id]);
  expect(calls).toEqual(['courier-matching.endMatching', 'package.release']);
});

it('starts no search for a delivery that ended before its payment’s effect was settled', async () => {
  const { settlement, calls } = settlementWith(new Set());
  const cancelled = {
    ...DELIVERED_POD,
    lifecycle: { status: 'CANCELLED' },
  } as unknown as DeliveryRecord;
  await settlement.settle(cancelled, transition([{ kind: 'MATCHING_ELIGIBLE' }]));
  expect(calls).toEqual([]);
});

it('keeps a transition unsettled for an effect of a later version, carrying out the ones it knows', async () => {
  const { settlement, calls, done } = settlementWith(new Set());
  const later = { kind: 'PAINT_THE_VAN' } as unknown as Effect;
  await expect(
    settlement.settle(DELIVERED_POD, transition([later, { kind: 'RELEASE_PACKAGES' }])),
  ).rejects.toThrow('delivery effect PAINT_THE_VAN is unknown to this version');
  expect(calls).toEqual(['package.release']);
  expect(done).toEqual([]);
});

it('announces a cancel, and only logs a broadcast that failed: the cancel happened', async () => {
  const { settlement, warnings } = settlementWith(new Set(['broadcast']));
  await expect(settlement.announceCancelled(DELIVERED_POD)).resolves.toBeUndefined();
  expect(warnings).toEqual([
    ['delivery cancel not announced', { deliveryId: 'd-1', err: expect.any(Error) }],
  ]);
});
