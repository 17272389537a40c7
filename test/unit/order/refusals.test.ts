import { Errors } from 'moleculer';
import { conflict, notFound, serviceUnavailable, WaybillError } from '../../../libs/errors';
import { isNoDebit, isRefusal } from '../../../services/order/requests';

/** An error as it arrives from another node: a plain object with its fields. */
const fromAnotherNode = (err: Error) =>
  JSON.parse(JSON.stringify({ ...err, message: err.message }));

describe('which failures of a request are refusals it must answer again on a retry', () => {
  it.each([
    ['a 400 of ours', new WaybillError('BAD_REQUEST', 'packagesId.0 is not yours')],
    ['a 404 of ours', notFound('Courier not found')],
    ['a 409 of ours', conflict('in use')],
    ['a 422 of ours', new WaybillError('UNPROCESSABLE', 'Insufficient balance')],
  ])('%s is one, here or from another node', (_what, err) => {
    expect(isRefusal(err)).toBe(true);
    expect(isRefusal(fromAnotherNode(err))).toBe(true);
  });

  it.each([
    ['no node runs the action (404)', new Errors.ServiceNotFoundError({ action: 'payment.debit' })],
    [
      'the node is stopping (404)',
      new Errors.ServiceNotAvailableError({ action: 'payment.debit', nodeID: 'payment-1' }),
    ],
    [
      'its queue is full (429)',
      new Errors.QueueIsFullError({ action: 'x', nodeID: 'n', size: 1, limit: 1 }),
    ],
    ['a rate limit (429)', new WaybillError('TOO_MANY_REQUESTS', 'slow down')],
    ['a body too slow (408)', new WaybillError('BODY_TIMEOUT', 'too slow')],
    ['a 503', serviceUnavailable('down')],
    ['a plain Error', new Error('boom')],
  ])('%s is not', (_what, err) => {
    expect(isRefusal(err)).toBe(false);
    expect(isRefusal(fromAnotherNode(err))).toBe(false);
  });

  it('takes only the payment service’s own 404 as "no debit to give back"', () => {
    expect(isNoDebit(notFound('No debit x of this wallet to refund'))).toBe(true);
    expect(isNoDebit(fromAnotherNode(notFound('No debit x of this wallet to refund')))).toBe(true);
    expect(isNoDebit(new Errors.ServiceNotFoundError({ action: 'payment.refund' }))).toBe(false);
    expect(
      isNoDebit(new Errors.ServiceNotAvailableError({ action: 'payment.refund', nodeID: 'p' })),
    ).toBe(false);
  });
});
