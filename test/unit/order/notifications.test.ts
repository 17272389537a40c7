import { PROOF_TYPES } from '../../../services/order/delivery-record';
import {
  onTheWayMessages,
  proofCodeMessages,
  proofCodeMessageIds,
  proofCodeOfMessage,
} from '../../../services/order/notifications';

describe('messages', () => {
  it('tells the recipient the courier is on the way, with the link, by SMS and e-mail', () => {
    const now = new Date('2030-01-01T10:00:00Z');
    const messages = onTheWayMessages(
      { _id: 'd1', trackingId: 'P2P-ABCDEF123456' },
      'https://waybill.example.com/track/P2P-ABCDEF123456',
      { name: 'Ada', phone: '+2348031234567', email: 'ada@example.com' },
      now,
    );
    expect(messages.map((m) => [m._id, m.recipient, m.secret, m.status])).toEqual([
      ['d1:COURIER_ON_THE_WAY:SMS', '+2348031234567', false, 'PENDING'],
      ['d1:COURIER_ON_THE_WAY:EMAIL', 'ada@example.com', false, 'PENDING'],
    ]);
    expect(messages[0].text).toContain('https://waybill.example.com/track/P2P-ABCDEF123456');
    expect(messages[0]).toMatchObject({ attempts: 0, nextAttemptAt: now, lastError: null });
  });
});

describe('return codes', () => {
  const contact = { name: 'Ada', phone: '+2348031234567', email: 'ada@example.com' };
  const delivery = { _id: 'd1', trackingId: 'P2P-ABCDEF123456' };
  const textOf = (generation: number, replacing?: boolean) =>
    proofCodeMessages(delivery, 'RETURN', '246810', contact, new Date(), generation, replacing)[0]
      .text;

  it('tell the sender their packages are coming back, with the code to give the courier', () => {
    expect(textOf(1)).toBe(
      'Waybill delivery P2P-ABCDEF123456 is coming back to you: your return code is 246810. Give it to the courier only when they bring the package back to you.',
    );
    // The first sent after a number taken and never queued still reads as the first.
    expect(textOf(2, false)).toBe(textOf(1));
    expect(textOf(2)).toBe(
      'Waybill delivery P2P-ABCDEF123456: your new return code is 246810. Give it to the courier only when they bring the package back to you.',
    );
  });
});

describe('proofCodeOfMessage', () => {
  const deliveryId = '3f1c2a8e-9b7d-4c6e-8f0a-1b2c3d4e5f60';

  it("reads back every proof code message's delivery, type and generation", () => {
    for (const type of PROOF_TYPES) {
      for (const generation of [1, 2, 6]) {
        for (const id of proofCodeMessageIds(deliveryId, type, generation)) {
          expect(proofCodeOfMessage(id)).toEqual({ deliveryId, type, generation });
        }
      }
    }
  });

  it('is null for any other message', () => {
    expect(proofCodeOfMessage(`${deliveryId}:COURIER_ON_THE_WAY:SMS`)).toBeNull();
    expect(proofCodeOfMessage(`${deliveryId}:REQUEST_CREATED:EMAIL`)).toBeNull();
    expect(proofCodeOfMessage(`${deliveryId}:DELIVERY_CODE:SMS:2:extra`)).toBeNull();
  });
});
