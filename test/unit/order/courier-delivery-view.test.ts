import type { DeliveryRecord } from '../../../services/order/delivery-record';
import { toCourierDeliveryView } from '../../../services/order/views';
import { after, ASSIGN, created, proofOf } from '../../support/built-deliveries';

/**
 * What the courier holding a delivery is shown: only what the trip still needs (decision 156).
 * A delivery with both codes and one paid on delivery, taken through the run to each end.
 */
describe('the courier’s view of a delivery', () => {
  const coded = created({ requireDeliveryProofCode: true });
  const cash = created({ payOnDelivery: true });
  const collect = ({ delivery }: typeof coded) =>
    after(
      delivery,
      ASSIGN,
      { kind: 'ARRIVED_AT_PICKUP' },
      { kind: 'COLLECTED', proof: proofOf(delivery, 'COLLECTION', '123456') },
    );
  const toDropoff = (d: DeliveryRecord) =>
    after(d, { kind: 'IN_TRANSIT' }, { kind: 'ARRIVED_AT_DROPOFF' });
  const goBack = (d: DeliveryRecord) => after(d, { kind: 'FAILED', reason: 'Nobody at the door' });
  const view = (d: DeliveryRecord) => toCourierDeliveryView(d, coded.addresses);

  it('shows both stops, the codes to ask for and the cash to collect on the way', () => {
    expect(view(after(coded.delivery, ASSIGN)).collectionCodeRequired).toBe(true);
    const atDropoff = view(toDropoff(collect(coded)));
    expect(atDropoff).toMatchObject({
      status: 'ARRIVED_AT_DROPOFF',
      collectionCodeRequired: false,
      deliveryCodeRequired: true,
      returnCodeRequired: false,
    });
    expect(atDropoff.pickup?.contactName).toBeTruthy();
    expect(atDropoff.dropoff?.contactName).toBe('Ada Obi');
    expect(atDropoff.dropoff?.contactPhone).toBe('+2348031234567');
    expect(view(toDropoff(collect(cash))).collectOnDelivery).toMatch(/^\d+\.\d{2}$/);
  });

  it('going back, leaves out the drop-off, its code and the cash no one will pay', () => {
    const returning = view(goBack(collect(coded)));
    expect(returning).toMatchObject({ status: 'RETURNING', dropoff: null });
    expect(returning.deliveryCodeRequired).toBe(false);
    // The sender takes the packages back: the pickup and its contact are the trip now.
    expect(returning.pickup?.contactName).toBeTruthy();
    expect(returning.pickup?.contactPhone).toBeTruthy();
    expect(view(goBack(collect(cash))).collectOnDelivery).toBeNull();
  });

  it.each([
    [
      'delivered',
      after(toDropoff(collect(coded)), {
        kind: 'DELIVERED',
        proof: proofOf(coded.delivery, 'DELIVERY', '654321'),
      }),
    ],
    ['delivered, cash collected', after(toDropoff(collect(cash)), { kind: 'DELIVERED' })],
    ['failed before collection', after(cash.delivery, ASSIGN, { kind: 'FAILED', reason: 'Tyre' })],
    ['returned', after(goBack(collect(cash)), { kind: 'RETURNED' })],
  ])('once %s, answers its last step without stops, note, codes or cash', (_, ended) => {
    expect(view({ ...ended, note: 'Gate code 4411' })).toMatchObject({
      pickup: null,
      dropoff: null,
      note: null,
      collectionCodeRequired: false,
      deliveryCodeRequired: false,
      returnCodeRequired: false,
      collectOnDelivery: null,
    });
  });

  it('tells the slot of a SCHEDULED delivery to hand it over in, while it is still to deliver', () => {
    // 14:00 to 17:00 in Lagos (UTC+1), as pricing answered the slot.
    const slot = {
      slotStartsAt: new Date('2030-03-06T13:00:00.000Z'),
      slotEndsAt: new Date('2030-03-06T16:00:00.000Z'),
    };
    const booked = { ...coded.delivery, ...slot };
    expect(view(after(booked, ASSIGN)).deliverBetween).toEqual({
      from: '2030-03-06T13:00:00.000Z',
      to: '2030-03-06T16:00:00.000Z',
    });
    expect(view(after(coded.delivery, ASSIGN)).deliverBetween).toBeNull();
    expect(view(goBack(collect({ ...coded, delivery: booked }))).deliverBetween).toBeNull();
  });
});
