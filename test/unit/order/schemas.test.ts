import { randomUUID } from 'node:crypto';
import { courierFailedParams } from '../../../services/order/schemas';

describe('a courier’s failure report', () => {
  const deliveryId = randomUUID();

  it('takes the reason as plain text, trimmed', () => {
    const { value, error } = courierFailedParams.validate({ deliveryId, reason: '  flat tyre ' });
    expect(error).toBeUndefined();
    expect(value.reason).toBe('flat tyre');
  });

  it.each([
    ['a control character', 'flat\u0007tyre'],
    ['a lone surrogate', 'flat \ud800 tyre'],
    ['nothing but spaces', '   '],
  ])('refuses a reason with %s', (_what, reason) => {
    expect(courierFailedParams.validate({ deliveryId, reason }).error).toBeDefined();
  });
});
