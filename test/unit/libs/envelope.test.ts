import fc from 'fast-check';
import { errorEnvelope, successEnvelope } from '../../../libs/envelope';
import type { FieldError } from '../../../libs/errors';

const ENVELOPE_KEYS = [
  'environment',
  'message',
  'method',
  'path',
  'statusCode',
  'timestamp',
  'url',
].sort();

const input = {
  statusCode: 404,
  method: 'GET',
  path: '/admin/users/42',
  url: '/admin/users/42?expand=keys',
  message: 'User 42 not found',
  environment: 'staging',
};

describe('successEnvelope', () => {
  it('wraps data with success true and the message', () => {
    const data = { id: 'u1', name: 'Ada' };
    const envelope = successEnvelope('User retrieved', data);
    expect(envelope).toEqual({ success: true, message: 'User retrieved', data });
    expect(Object.keys(envelope).sort()).toEqual(['data', 'message', 'success']);
    expect(envelope.data).toBe(data);
  });

  it.each([null, [], 0, '', false])('keeps falsy or empty data %p as is', (data) => {
    const envelope = successEnvelope('ok', data);
    expect('data' in envelope).toBe(true);
    expect(envelope.data).toBe(data);
  });
});

describe('errorEnvelope', () => {
  const now = new Date('2024-05-06T07:08:09.010Z');

  it('has exactly the envelope keys when there are no field errors', () => {
    const envelope = errorEnvelope({ ...input, now });
    expect(Object.keys(envelope).sort()).toEqual(ENVELOPE_KEYS);
    expect(envelope).toEqual({ ...input, timestamp: '2024-05-06T07:08:09.010Z' });
  });

  it('does not copy `now` or unexpected keys into the envelope', () => {
    const envelope = errorEnvelope({ ...input, now, extra: 'x' } as typeof input);
    expect(envelope).not.toHaveProperty('now');
    expect(envelope).not.toHaveProperty('extra');
  });

  it('leaves errors out when the list is empty', () => {
    const envelope = errorEnvelope({ ...input, errors: [], now });
    expect(envelope).not.toHaveProperty('errors');
    expect(Object.keys(envelope).sort()).toEqual(ENVELOPE_KEYS);
  });

  it('includes errors when there are some', () => {
    const errors: FieldError[] = [{ field: 'email', message: 'email is required' }];
    const envelope = errorEnvelope({ ...input, statusCode: 400, errors, now });
    expect(envelope.errors).toEqual(errors);
    expect(Object.keys(envelope).sort()).toEqual([...ENVELOPE_KEYS, 'errors'].sort());
  });

  it('stamps the current time as an ISO-8601 string when `now` is not given', () => {
    const before = Date.now();
    const envelope = errorEnvelope(input);
    const after = Date.now();
    expect(envelope.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    const stamped = Date.parse(envelope.timestamp);
    expect(stamped).toBeGreaterThanOrEqual(before);
    expect(stamped).toBeLessThanOrEqual(after);
  });

  it('serialises to JSON with the same content', () => {
    const envelope = errorEnvelope({ ...input, now });
    expect(JSON.parse(JSON.stringify(envelope))).toEqual(envelope);
  });

  it('has errors if and only if the input has a non-empty list (property)', () => {
    const fieldError = fc.record({ field: fc.string(), message: fc.string() });
    fc.assert(
      fc.property(
        fc.option(fc.array(fieldError, { maxLength: 5 }), { nil: undefined }),
        fc.integer({ min: 400, max: 599 }),
        fc.date({ noInvalidDate: true }),
        (errors, statusCode, date) => {
          const envelope = errorEnvelope({ ...input, statusCode, errors, now: date });
          expect(envelope.statusCode).toBe(statusCode);
          expect(envelope.timestamp).toBe(date.toISOString());
          if (errors && errors.length > 0) expect(envelope.errors).toEqual(errors);
          else expect(envelope).not.toHaveProperty('errors');
        },
      ),
    );
  });
});
