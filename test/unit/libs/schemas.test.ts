import fc from 'fast-check';
import { plainText } from '../../../libs/schemas';

describe('plainText', () => {
  const schema = plainText(20);

  it.each([['Running shoes'], ['Две пары, размер 42'], ['👟 x2'], ['one\ntwo\tthree']])(
    'accepts %j',
    (text) => {
      expect(schema.validate(text).error).toBeUndefined();
    },
  );

  it.each([['nul\u0000'], ['bell\u0007'], ['escape\u001b[31m'], ['lone \ud800'], ['\udc00 low']])(
    'refuses %j with a message naming the field',
    (text) => {
      const { error } = schema.label('name').validate(text);
      expect(error?.message).toBe(
        '"name" must be plain text: no control characters other than tabs and line breaks',
      );
    },
  );

  it('trims and bounds the length', () => {
    expect(schema.validate('  shoes  ').value).toBe('shoes');
    expect(schema.validate('x'.repeat(21)).error).toBeDefined();
  });

  it('never takes more than 3 bytes of JSON per character it accepts (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 20 }), (text) => {
        const { value, error } = plainText(20).validate(text);
        if (error) return;
        const bytes = Buffer.byteLength(JSON.stringify(value)) - 2;
        expect(bytes).toBeLessThanOrEqual(3 * value.length);
      }),
      { numRuns: 5000 },
    );
  });
});
