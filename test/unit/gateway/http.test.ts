import { clientRequestId } from '../../../services/gateway/http';

describe('clientRequestId', () => {
  it('takes a sane X-Request-ID, and X-Correlation-ID over it', () => {
    expect(clientRequestId({ 'x-request-id': 'order-42/try-1' })).toBe('order-42/try-1');
    expect(clientRequestId({ 'x-request-id': 'a', 'x-correlation-id': 'b' })).toBe('b');
    expect(clientRequestId({ 'x-request-id': 'x'.repeat(128) })).toHaveLength(128);
  });

  it.each([
    ['none', {}],
    ['an empty one', { 'x-request-id': '' }],
    ['one with a space', { 'x-request-id': 'a b' }],
    ['one over 128 characters', { 'x-request-id': 'x'.repeat(129) }],
    ['a non-ASCII one', { 'x-request-id': 'zamówienie' }],
  ])('leaves %s to moleculer to make', (_case, headers) => {
    expect(clientRequestId(headers)).toBeUndefined();
  });
});
