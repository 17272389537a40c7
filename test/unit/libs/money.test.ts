import Decimal from 'decimal.js';
import fc from 'fast-check';
import { Money, formatKg, formatNaira, kgToGrams, nairaToKobo } from '../../../libs/money';

const NAIRA_FORMAT = /^-?\d+\.\d{2}$/;
const KG_FORMAT = /^-?\d+\.\d{5}$/;

describe('formatNaira', () => {
  it.each<[number | string, string]>([
    [0, '0.00'],
    [5, '0.05'],
    [10, '0.10'],
    [99, '0.99'],
    [100, '1.00'],
    [150, '1.50'],
    [123456, '1234.56'],
    [100000000, '1000000.00'],
    [Number.MAX_SAFE_INTEGER, '90071992547409.91'],
    ['123456', '1234.56'],
    ['12345678901234567890', '123456789012345678.90'],
  ])('formats %p kobo as %p', (kobo, expected) => {
    expect(formatNaira(kobo)).toBe(expected);
  });

  it('formats negative kobo (refunds, debits) with a leading minus', () => {
    expect(formatNaira(-5)).toBe('-0.05');
    expect(formatNaira(-123456)).toBe('-1234.56');
  });

  it('formats negative zero as 0.00', () => {
    expect(formatNaira(-0)).toBe('0.00');
  });

  it('accepts a Decimal', () => {
    expect(formatNaira(new Decimal(250))).toBe('2.50');
  });

  it('never uses exponential notation', () => {
    expect(formatNaira(1e21)).toBe('10000000000000000000.00');
    expect(formatNaira('1e3')).toBe('10.00');
  });

  it.each([1.5, 0.1, '10.01', -0.5])('rejects non-integer kobo %p with a RangeError', (kobo) => {
    expect(() => formatNaira(kobo)).toThrow(RangeError);
    expect(() => formatNaira(kobo)).toThrow(/kobo must be an integer/);
  });

  it.each([NaN, Infinity, -Infinity, 'Infinity'])('rejects %p with a RangeError', (kobo) => {
    expect(() => formatNaira(kobo)).toThrow(RangeError);
    expect(() => formatNaira(kobo)).toThrow(/kobo must be a finite number/);
  });

  it('rejects a string that is not a number', () => {
    expect(() => formatNaira('abc')).toThrow();
  });
});

describe('nairaToKobo', () => {
  it.each<[number | string, number]>([
    ['0', 0],
    [0, 0],
    ['1', 100],
    ['0.05', 5],
    ['1234.56', 123456],
    [1234.56, 123456],
    ['1234.5', 123450],
    [0.1 + 0.2, 30],
    ['10.004', 1000],
    ['10.005', 1001],
    ['10.0049999', 1000],
    ['10.009', 1001],
    ['0.005', 1],
    ['0.004', 0],
    ['1e2', 10000],
  ])('converts %p naira to %p kobo', (naira, expected) => {
    expect(nairaToKobo(naira)).toBe(expected);
  });

  it('rounds half away from zero for negative amounts', () => {
    expect(nairaToKobo('-10.005')).toBe(-1001);
    expect(nairaToKobo('-10.004')).toBe(-1000);
  });

  it('accepts a Decimal', () => {
    expect(nairaToKobo(new Decimal('2.505'))).toBe(251);
  });

  it('always returns an integer', () => {
    expect(Number.isInteger(nairaToKobo('3.14159'))).toBe(true);
  });

  it.each([NaN, Infinity, -Infinity])('rejects %p with a RangeError', (naira) => {
    expect(() => nairaToKobo(naira)).toThrow(RangeError);
    expect(() => nairaToKobo(naira)).toThrow(/amount must be a finite number/);
  });

  it.each(['abc', '', '12,50', 'NGN 5'])('rejects the non-number %p', (naira) => {
    expect(() => nairaToKobo(naira)).toThrow();
  });
});

describe('formatKg', () => {
  it.each<[number | string, string]>([
    [0, '0.00000'],
    [1, '0.00100'],
    [10, '0.01000'],
    [999, '0.99900'],
    [1000, '1.00000'],
    [2000, '2.00000'],
    [2500, '2.50000'],
    [123456789, '123456.78900'],
    ['1500', '1.50000'],
  ])('formats %p grams as %p kg', (grams, expected) => {
    expect(formatKg(grams)).toBe(expected);
  });

  it('keeps the sign of negative grams', () => {
    expect(formatKg(-1)).toBe('-0.00100');
  });

  it.each([0.5, 1.25, '2.2'])('rejects non-integer grams %p with a RangeError', (grams) => {
    expect(() => formatKg(grams)).toThrow(RangeError);
    expect(() => formatKg(grams)).toThrow(/grams must be an integer/);
  });

  it.each([NaN, Infinity, -Infinity])('rejects %p with a RangeError', (grams) => {
    expect(() => formatKg(grams)).toThrow(RangeError);
    expect(() => formatKg(grams)).toThrow(/grams must be a finite number/);
  });
});

describe('kgToGrams', () => {
  it.each<[number | string, number]>([
    [0, 0],
    ['1', 1000],
    [2, 2000],
    ['2.5', 2500],
    ['0.001', 1],
    ['0.0005', 1],
    ['0.0004', 0],
    ['1.2345', 1235],
    ['1.23449', 1234],
    [0.1 + 0.2, 300],
    ['-0.0015', -2],
  ])('converts %p kg to %p grams', (kg, expected) => {
    expect(kgToGrams(kg)).toBe(expected);
  });

  it.each([NaN, Infinity, -Infinity])('rejects %p with a RangeError', (kg) => {
    expect(() => kgToGrams(kg)).toThrow(RangeError);
    expect(() => kgToGrams(kg)).toThrow(/weight must be a finite number/);
  });
});

describe('money and weight properties', () => {
  const kobo = fc.integer({ min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER });
  const grams = fc.integer({ min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER });

  it('nairaToKobo(formatNaira(k)) === k for integer kobo', () => {
    fc.assert(
      fc.property(kobo, (k) => {
        expect(nairaToKobo(formatNaira(k))).toBe(k);
      }),
      { numRuns: 1000 },
    );
  });

  it('formatNaira always has exactly two decimals and an optional minus', () => {
    fc.assert(
      fc.property(kobo, (k) => {
        expect(formatNaira(k)).toMatch(NAIRA_FORMAT);
      }),
      { numRuns: 1000 },
    );
  });

  it('formatNaira keeps the sign and magnitude as digits', () => {
    fc.assert(
      fc.property(kobo, (k) => {
        const text = formatNaira(k);
        expect(text.startsWith('-')).toBe(k < 0);
        expect(BigInt(text.replace('.', ''))).toBe(BigInt(k));
      }),
    );
  });

  it('nairaToKobo(formatNaira(k)) === k for big kobo given as strings', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }), (k) => {
        const text = formatNaira(k.toString());
        expect(text).toMatch(NAIRA_FORMAT);
        expect(BigInt(text.replace('.', ''))).toBe(k);
      }),
    );
  });

  it('kgToGrams(formatKg(g)) === g for integer grams', () => {
    fc.assert(
      fc.property(grams, (g) => {
        const text = formatKg(g);
        expect(text).toMatch(KG_FORMAT);
        expect(kgToGrams(text)).toBe(g);
      }),
      { numRuns: 1000 },
    );
  });

  it('nairaToKobo is within half a kobo of the exact amount', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -1_000_000_000, max: 1_000_000_000 }),
        fc.integer({ min: 0, max: 999 }),
        (whole, thousandths) => {
          const naira = new Decimal(whole).plus(new Decimal(thousandths).dividedBy(1000));
          const k = nairaToKobo(naira.toString());
          expect(Number.isInteger(k)).toBe(true);
          expect(new Decimal(k).minus(naira.times(100)).abs().lessThanOrEqualTo(0.5)).toBe(true);
        },
      ),
    );
  });

  it('nairaToKobo is monotonic', () => {
    fc.assert(
      fc.property(
        fc.double({ min: -1e9, max: 1e9, noNaN: true }),
        fc.double({ min: -1e9, max: 1e9, noNaN: true }),
        (a, b) => {
          const [lo, hi] = a <= b ? [a, b] : [b, a];
          expect(nairaToKobo(lo)).toBeLessThanOrEqual(nairaToKobo(hi));
        },
      ),
    );
  });
});

describe('conversions refuse what they cannot represent exactly', () => {
  it('throws RangeError for text that is not a number', () => {
    expect(() => nairaToKobo('abc')).toThrow(RangeError);
    expect(() => kgToGrams('1,5')).toThrow(RangeError);
  });

  it('throws RangeError past the safe integer range', () => {
    expect(() => nairaToKobo('1e17')).toThrow(/too large/);
  });
});

describe('formatNaira and formatKg on safe integers (printed without decimals)', () => {
  const safeInteger = fc.oneof(
    fc.integer({ min: -1_000_000, max: 1_000_000 }),
    fc.integer({ min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }),
    fc.constantFrom(0, -0, 1, -1, 99, 100, 101, 999, 1000, 1001, Number.MAX_SAFE_INTEGER),
  );

  it('print what exact decimal arithmetic prints (property)', () => {
    fc.assert(
      fc.property(safeInteger, (n) => {
        expect(formatNaira(n)).toBe(new Money(n).dividedBy(100).toFixed(2));
        expect(formatKg(n)).toBe(new Money(n).dividedBy(1000).toFixed(5));
      }),
      { numRuns: 5_000 },
    );
  });
});
