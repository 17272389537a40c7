import { recipientsView } from '../../../libs/contracts/order';

const NOW = new Date('2030-01-01T12:02:10Z');
import { toldToRecipient, WEBHOOK_EVENT_TYPES } from '../../../libs/contracts/webhook';
import { changeableBy, linkedRecipient, readableBy, roleOf } from '../../../services/order/parties';

const delivery = { userId: 'creator', recipientUserId: 'recipient' };
const unlinked = { userId: 'creator' };

describe('who may see and change a delivery', () => {
  it('names the creator and the linked recipient, and nobody else', () => {
    expect(roleOf(delivery, 'creator')).toBe('CREATOR');
    expect(roleOf(delivery, 'recipient')).toBe('RECIPIENT');
    expect(roleOf(delivery, 'someone')).toBeNull();
    expect(roleOf(unlinked, 'recipient')).toBeNull();
    expect(roleOf({ userId: 'creator', recipientUserId: null }, 'recipient')).toBeNull();
  });

  it('lets both read, only the creator change; tells anyone else it does not exist', () => {
    expect(readableBy(delivery, 'recipient')).toBe(delivery);
    expect(changeableBy(delivery, 'creator')).toBe(delivery);
    expect(() => changeableBy(delivery, 'recipient')).toThrow(
      expect.objectContaining({ code: 403 }),
    );
    for (const allowed of [readableBy, changeableBy]) {
      expect(() => allowed(delivery, 'someone')).toThrow(expect.objectContaining({ code: 404 }));
      expect(() => allowed(null, 'creator')).toThrow(expect.objectContaining({ code: 404 }));
    }
  });

  it('never links a delivery to its creator', () => {
    expect(linkedRecipient('creator', { id: 'recipient' })).toBe('recipient');
    expect(linkedRecipient('creator', { id: 'creator' })).toBeNull();
    expect(linkedRecipient('creator', null)).toBeNull();
  });
});

describe('what a linked recipient is shown', () => {
  const view = {
    id: 'd',
    userId: 'creator',
    apiKeyId: 'key',
    status: 'REQUEST_CREATED',
    deliveryFee: '1000.00',
    deliveryFeeTotal: '1200.00',
    hubCommission: '50.00',
    tierIds: { distance: 't' },
    tariffVersion: 'v1',
    deliveryFeePayer: 'CREATOR',
    p2pDelivery: { id: 'p', userId: 'creator', profileId: 'profile', status: 'PENDING' },
  };

  it('leaves out the pickup’s contact e-mail, the creator’s own', () => {
    const origin = { address: 'Lekki', contactName: 'Ada', contactEmail: 'ada@example.com' };
    expect(recipientsView({ ...view, origin }, NOW).origin).toEqual({
      address: 'Lekki',
      contactName: 'Ada',
    });
  });

  it('leaves out the creator’s account, key, tariff and prices', () => {
    expect(recipientsView(view, NOW)).toEqual({
      id: 'd',
      status: 'REQUEST_CREATED',
      deliveryFeePayer: 'CREATOR',
      p2pDelivery: { id: 'p', status: 'PENDING' },
    });
  });

  it('keeps the total when the recipient pays a share of it', () => {
    for (const payer of ['RECIPIENT', 'SPLIT']) {
      expect(recipientsView({ ...view, deliveryFeePayer: payer }, NOW)).toMatchObject({
        deliveryFeeTotal: '1200.00',
      });
    }
  });

  const courier = {
    name: 'Tunde',
    currentLocation: { country: 'Nigeria', lat: 6.5, lon: 3.4 },
    eta: { from: '2030-01-01T12:13:27.000Z', to: '2030-01-01T12:21:04.000Z' },
  };

  it('shows where the courier is on the way to them, its area before the pickup, not once it goes back to the sender', () => {
    expect(recipientsView({ ...view, status: 'IN_TRANSIT', courier }, NOW).courier).toEqual(
      courier,
    );
    const near = { ...courier, currentLocation: { country: 'Nigeria', lat: 6.5034, lon: 3.4071 } };
    for (const status of ['COURIER_ASSIGNED', 'ARRIVED_AT_PICKUP']) {
      // Its cell, and the arrival window on 5-minute marks, as the tracking page shows anyone:
      // the window's width to the second would give the distance to the pickup.
      expect(recipientsView({ ...view, status, courier: near }, NOW).courier).toEqual({
        ...courier,
        currentLocation: { country: 'Nigeria', lat: 6.5, lon: 3.41 },
        eta: { from: '2030-01-01T12:10:00.000Z', to: '2030-01-01T12:25:00.000Z' },
      });
    }
    expect(recipientsView({ ...view, status: 'RETURNING', courier }, NOW).courier).toEqual({
      name: 'Tunde',
      currentLocation: null,
      eta: null,
    });
  });

  it('hears of every event but the creator’s payments and the courier’s positions on the way back', () => {
    const told = (type: (typeof WEBHOOK_EVENT_TYPES)[number], status: string) =>
      toldToRecipient({ type, data: { status } });
    for (const type of WEBHOOK_EVENT_TYPES) {
      expect(told(type, 'IN_TRANSIT')).toBe(!type.startsWith('payment.'));
      for (const status of ['COURIER_ASSIGNED', 'ARRIVED_AT_PICKUP']) {
        expect(told(type, status)).toBe(
          !type.startsWith('payment.') && type !== 'courier.location',
        );
      }
      expect(told(type, 'RETURNING')).toBe(
        !type.startsWith('payment.') && type !== 'courier.location',
      );
    }
  });
});
