import { attemptId } from '../../../../libs/messaging/outbox-records';

describe('outbox records', () => {
  it('names each attempt after its message', () => {
    expect(attemptId('d1:DELIVERY_CODE:SMS', 3)).toBe('d1:DELIVERY_CODE:SMS:3');
  });
});
