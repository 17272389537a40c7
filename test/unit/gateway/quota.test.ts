import fc from 'fast-check';
import { countsOfBatch, quotaHeaders, type QuotaDecision } from '../../../services/gateway/quota';

describe('quotaHeaders', () => {
  it('reports limit, remaining and reset of an allowed request, without Retry-After', () => {
    const decision: QuotaDecision = { allowed: true, limit: 600, remaining: 599, resetSeconds: 60 };
    expect(quotaHeaders(decision)).toEqual({
      'RateLimit-Limit': '600',
      'RateLimit-Remaining': '599',
      'RateLimit-Reset': '60',
    });
  });

  it('adds Retry-After, equal to the reset, to a refused request', () => {
    const decision: QuotaDecision = { allowed: false, limit: 10, remaining: 0, resetSeconds: 17 };
    expect(quotaHeaders(decision)).toEqual({
      'RateLimit-Limit': '10',
      'RateLimit-Remaining': '0',
      'RateLimit-Reset': '17',
      'Retry-After': '17',
    });
  });

  it('reports the last allowed request with 0 remaining and no Retry-After', () => {
    const headers = quotaHeaders({ allowed: true, limit: 1, remaining: 0, resetSeconds: 1 });
    expect(headers['RateLimit-Remaining']).toBe('0');
    expect(headers).not.toHaveProperty('Retry-After');
  });

  it('has string values of the decision, and Retry-After exactly when refused (property)', () => {
    const decision = fc.record({
      allowed: fc.boolean(),
      limit: fc.integer({ min: 1, max: 1_000_000 }),
      remaining: fc.nat(1_000_000),
      resetSeconds: fc.integer({ min: 1, max: 86_400 }),
    });
    fc.assert(
      fc.property(decision, (d) => {
        const headers = quotaHeaders(d);
        expect(headers['RateLimit-Limit']).toBe(String(d.limit));
        expect(headers['RateLimit-Remaining']).toBe(String(d.remaining));
        expect(headers['RateLimit-Reset']).toBe(String(d.resetSeconds));
        for (const value of Object.values(headers)) expect(value).toMatch(/^\d+$/);
        if (d.allowed) expect(Object.keys(headers)).toHaveLength(3);
        else expect(headers['Retry-After']).toBe(String(d.resetSeconds));
      }),
    );
  });
});

describe('countsOfBatch', () => {
  it('gives the requests counted together the counts they would have had one by one', () => {
    expect(countsOfBatch(7, [1, 1, 1])).toEqual([5, 6, 7]);
    expect(countsOfBatch(1, [1])).toEqual([1]);
  });

  it('gives a read the count after the requests before it', () => {
    expect(countsOfBatch(7, [0, 1, 0, 1, 0])).toEqual([5, 6, 6, 7, 7]);
    expect(countsOfBatch(3, [0, 0])).toEqual([3, 3]);
  });

  it('ends at the total, one apart, as many as the requests (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 500 }), fc.nat(1_000_000), (requests, before) => {
        const counts = countsOfBatch(before + requests, Array<number>(requests).fill(1));
        expect(counts).toHaveLength(requests);
        expect(counts[0]).toBe(before + 1);
        expect(counts.at(-1)).toBe(before + requests);
        counts.forEach((count, i) => i > 0 && expect(count - counts[i - 1]).toBe(1));
      }),
    );
  });

  it('counts as if the reads among the requests were not there (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(0, 1)), fc.nat(1_000_000), (adds, before) => {
        const total = before + adds.filter(Boolean).length;
        const counts = countsOfBatch(total, adds);
        const counted = counts.filter((_, i) => adds[i] === 1);
        expect(counted).toEqual(countsOfBatch(total, Array<number>(counted.length).fill(1)));
        adds.forEach((added, i) => {
          if (added === 0) expect(counts[i]).toBe(before + adds.slice(0, i).filter(Boolean).length);
        });
      }),
    );
  });
});
