import fc from 'fast-check';
import { leadingItemsThatFit, pageInOneReply } from '../../../libs/reply-size';

describe('leadingItemsThatFit', () => {
  it('counts the items, from the first, whose JSON array is within the budget', () => {
    // ["aaaa"] is 8 bytes; each more one, 7 (a comma and 6).
    const items = ['aaaa', 'aaaa', 'aaaa'];
    expect(leadingItemsThatFit(items, 8)).toBe(1);
    expect(leadingItemsThatFit(items, 14)).toBe(1);
    expect(leadingItemsThatFit(items, 15)).toBe(2);
    expect(leadingItemsThatFit(items, 22)).toBe(3);
    expect(leadingItemsThatFit(items, 7)).toBe(0);
    expect(leadingItemsThatFit([], 2)).toBe(0);
  });

  it('is the longest prefix whose JSON fits, for any items', () => {
    fc.assert(
      fc.property(fc.array(fc.jsonValue()), fc.nat(2_000), (items, budget) => {
        const fit = leadingItemsThatFit(items, budget);
        const bytes = (n: number) => Buffer.byteLength(JSON.stringify(items.slice(0, n)));
        if (fit > 0) expect(bytes(fit)).toBeLessThanOrEqual(budget);
        if (fit < items.length) expect(bytes(fit + 1)).toBeGreaterThan(budget);
      }),
    );
  });
});

describe('pageInOneReply', () => {
  const large = 'x'.repeat(100_000);

  it('answers a page that fits, and does not measure one of at most alwaysFit', () => {
    const page = Array.from({ length: 9 }, () => large);
    expect(pageInOneReply(page, 0, 'items')).toBe(page);
    const tooLarge = Array.from({ length: 11 }, () => large);
    expect(pageInOneReply(tooLarge, 11, 'items')).toBe(tooLarge);
  });

  it('names a limit of 1 when not even the first item fits (one kept under older limits)', () => {
    const huge = Array.from({ length: 2 }, () => 'x'.repeat(1_000_000));
    expect(() => pageInOneReply(huge, 1, 'items')).toThrow(/ask for them with limit=1 or less/);
  });

  it('refuses a page that does not fit with a 400 on limit naming what fits', () => {
    const page = Array.from({ length: 11 }, () => large);
    expect(() => pageInOneReply(page, 5, 'items')).toThrow(
      expect.objectContaining({
        code: 400,
        type: 'VALIDATION_ERROR',
        message:
          'limit: these 11 items are too large to answer at once; ask for them with limit=9 or less',
        data: {
          errors: [
            {
              field: 'limit',
              message:
                'these 11 items are too large to answer at once; ask for them with limit=9 or less',
            },
          ],
        },
      }),
    );
  });
});
