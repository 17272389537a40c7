import type { DeliveryRecord } from '../../../services/order/delivery-record';
import { DELIVERY_STATUSES } from '../../../services/order/lifecycle';
import { proofCodeMessages } from '../../../services/order/notifications';
import { recipientsView } from '../../../libs/contracts/order';
import {
  toCourierDeliveryView,
  toCreatedView,
  toDeliveryView,
  toNotificationView,
  toProofView,
} from '../../../services/order/views';
import {
  after,
  ASSIGN,
  courierAway,
  courierUnderWay,
  created,
  deliveries,
  NOW,
  proofOf,
} from '../../support/built-deliveries';
import { documentedAnswers } from '../document-answers';

/**
 * The order service's answers, as its views build them from deliveries in every state that
 * changes their shape, against the answers `/openapi.json` documents: no courier and a courier,
 * wallet, checkout, pay-on-delivery (to the merchant's wallet or a courier's), a recipient's
 * share, scheduled, cancelled, failed, with proofs scanned, and a linked recipient's view.
 */
const answerErrors = documentedAnswers();

const cases = Object.entries(deliveries());
const courierFor = (d: DeliveryRecord) =>
  d.assignment ? (d.lifecycle.status === 'IN_TRANSIT' ? courierUnderWay : courierAway) : undefined;

describe('the order service’s answers against /openapi.json', () => {
  // Any status: a retry with the same Idempotency-Key whose first answer is no longer kept is
  // answered from the delivery as it is then (a checkout since paid, a courier assigned...).
  it.each(cases)('POST /api/request: %s', (_, { delivery, addresses }) => {
    const view = toCreatedView(delivery, addresses);
    expect(answerErrors('/api/request', 'post', 201, view)).toEqual([]);
  });

  it.each(cases)('GET /api/deliveries/{deliveryId}, GET /api/deliveries: %s', (_, c) => {
    const { delivery, addresses } = c;
    const view = toDeliveryView(delivery, addresses, courierFor(delivery));
    expect(answerErrors('/api/deliveries/{deliveryId}', 'get', 200, view)).toEqual([]);
    expect(answerErrors('/api/deliveries', 'get', 200, [view])).toEqual([]);
    expect(answerErrors('/admin/deliveries/{deliveryId}', 'get', 200, view)).toEqual([]);
    // Its linked recipient's view, less the creator's own fields.
    const theirs = recipientsView(view, new Date());
    expect(answerErrors('/api/deliveries/{deliveryId}', 'get', 200, theirs)).toEqual([]);
  });

  it.each(cases)('the courier’s view: %s', (_, { delivery, addresses }) => {
    const view = toCourierDeliveryView(delivery, addresses);
    expect(answerErrors('/courier/deliveries/current', 'get', 200, view)).toEqual([]);
    expect(answerErrors('/courier/deliveries/{deliveryId}/collected', 'post', 200, view)).toEqual(
      [],
    );
  });

  it('the courier’s current delivery when there is none, a cancel, a proof and notifications', () => {
    const { delivery } = created();
    expect(answerErrors('/courier/deliveries/current', 'get', 200, null)).toEqual([]);
    expect(
      answerErrors('/api/request/{deliveryId}/cancel', 'post', 201, {
        delivery: { id: delivery._id },
      }),
    ).toEqual([]);
    const scanned = after(
      delivery,
      ASSIGN,
      { kind: 'ARRIVED_AT_PICKUP' },
      { kind: 'COLLECTED', proof: proofOf(delivery, 'COLLECTION', '123456') },
    );
    for (const proof of [...delivery.proofs, ...scanned.proofs]) {
      expect(
        answerErrors(
          '/api/deliveries/{deliveryId}/proofs/{proofId}/code',
          'post',
          201,
          toProofView(proof),
        ),
      ).toEqual([]);
    }
    const contact = { name: 'Ada Obi', phone: '+2348031234567', email: 'ada@example.com' };
    const messages = proofCodeMessages(delivery, 'COLLECTION', '123456', contact, NOW);
    const sent = { ...messages[0], status: 'SENT' as const, attempts: 1, sentAt: NOW };
    const failed = { ...messages[1], status: 'FAILED' as const, attempts: 5, lastError: '550' };
    for (const showText of [true, false]) {
      const views = [...messages, sent, failed].map((m) => toNotificationView(m, showText));
      expect(answerErrors('/admin/notifications', 'get', 200, views)).toEqual([]);
    }
  });

  it('reads deliveries in every status, created by wallet and by checkout', () => {
    const statuses = new Set(cases.map(([, c]) => c.delivery.lifecycle.status));
    expect([...statuses].sort()).toEqual([...DELIVERY_STATUSES].sort());
    const created = cases.map(([, c]) => toCreatedView(c.delivery, c.addresses));
    expect(created.some((v) => 'delivery' in v)).toBe(true);
    expect(created.some((v) => 'access_code' in ('data' in v ? v.data : {}))).toBe(true);
  });
});
