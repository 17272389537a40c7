import {
  creationEvents,
  eventSequence,
  transitionEvents,
  webhookEventId,
  type ChangeOfState,
} from '../../../services/order/webhook-events';
import type { Lifecycle } from '../../../services/order/lifecycle';

const lifecycle = (status: string, extra: Partial<Lifecycle> = {}) =>
  ({ status, p2pStatus: status, ...extra }) as unknown as Lifecycle;

const change = (over: Partial<ChangeOfState>): ChangeOfState => ({
  event: { kind: 'ARRIVED_AT_PICKUP' },
  lifecycle: lifecycle('ARRIVED_AT_PICKUP'),
  effects: [],
  step: { hidden: false },
  ...over,
});

describe('webhook events of a change', () => {
  it('name each change once, by its most specific event', () => {
    expect(transitionEvents(change({}))).toEqual(['delivery.status_changed']);
    expect(
      transitionEvents(
        change({
          event: { kind: 'COURIER_ASSIGNED', courierId: 'c' },
          lifecycle: lifecycle('COURIER_ASSIGNED'),
        }),
      ),
    ).toEqual(['courier.assigned']);
    expect(
      transitionEvents(change({ event: { kind: 'DELIVERED' }, lifecycle: lifecycle('DELIVERED') })),
    ).toEqual(['delivery.delivered']);
    expect(
      transitionEvents(change({ event: { kind: 'CANCEL' }, lifecycle: lifecycle('CANCELLED') })),
    ).toEqual(['delivery.cancelled']);
  });

  it('tell a failed payment and the cancel it causes', () => {
    expect(
      transitionEvents(
        change({
          event: { kind: 'PAYMENT_FAILED', share: 'creator' },
          lifecycle: lifecycle('CANCELLED'),
        }),
      ),
    ).toEqual(['payment.failed', 'delivery.cancelled']);
  });

  it('tell a delivery paid when matching may start, not its status change too', () => {
    expect(
      transitionEvents(
        change({
          event: { kind: 'PAID', share: 'creator' },
          lifecycle: lifecycle('PENDING'),
          effects: [{ kind: 'MATCHING_ELIGIBLE' }],
        }),
      ),
    ).toEqual(['delivery.paid']);
  });

  it('say nothing of hidden steps', () => {
    expect(transitionEvents(change({ step: { hidden: true } }))).toEqual([]);
    expect(transitionEvents(change({ step: null }))).toEqual([]);
  });

  it('number a delivery’s events in order, with stable ids', () => {
    expect(eventSequence(0, 1)).toBeLessThan(eventSequence(1, 0));
    expect(eventSequence(3, 2)).toBeLessThan(eventSequence(4, 0));
    expect(webhookEventId('d', 10)).toBe(webhookEventId('d', 10));
    expect(webhookEventId('d', 10)).not.toBe(webhookEventId('d', 11));
    expect(webhookEventId('d', 10)).not.toBe(webhookEventId('e', 10));
  });

  it('announce a creation, paid on the spot or not', () => {
    const owes = { creator: true, recipient: false };
    const paidNow = lifecycle('REQUEST_CREATED', {
      owes,
      paid: { creator: true, recipient: false },
    });
    const unpaid = lifecycle('REQUEST_CREATED', {
      owes,
      paid: { creator: false, recipient: false },
    });
    expect(creationEvents(paidNow)).toEqual(['delivery.created', 'delivery.paid']);
    expect(creationEvents(unpaid)).toEqual(['delivery.created']);
  });
});
