import fc from 'fast-check';
import {
  allowedTypos,
  boundedDistance,
  scanWithinTypos,
} from '../../../../services/geo/gazetteer/fuzzy';
import { PackedStrings } from '../../../../services/geo/gazetteer/packed-strings';

/** Textbook optimal-string-alignment distance, full table. */
function osa(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(
        d[i - 1][j] + 1,
        d[i][j - 1] + 1,
        d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.length][b.length];
}

/** Distance from `a` to the closest prefix of `b`. */
function prefixOsa(a: string, b: string): number {
  let best = Infinity;
  for (let len = 0; len <= b.length; len++) best = Math.min(best, osa(a, b.slice(0, len)));
  return best;
}

const word = fc.string({ unit: fc.constantFrom('a', 'b', 'c', 'd'), maxLength: 10 });

describe('boundedDistance', () => {
  it.each([
    ['ibadn', 'ibadan', 1],
    ['lagso', 'lagos', 1],
    ['lagos', 'lagos', 0],
    ['kano', 'kaduna', 3],
  ])('%p ↔ %p within 2 is %p (3: more than 2)', (q, name, expected) => {
    expect(boundedDistance(q, name, 2, false)).toBe(expected);
  });

  it('matches prefixes in prefix mode', () => {
    expect(boundedDistance('ibadn', 'ibadan north', 1, true)).toBe(1);
    expect(boundedDistance('port harcuort', 'port harcourt city', 2, true)).toBe(1);
    expect(boundedDistance('lagso', 'lagos island', 1, false)).toBe(2);
  });

  it('equals the full-table distance, capped at max + 1', () => {
    fc.assert(
      fc.property(word, word, fc.integer({ min: 0, max: 3 }), (q, name, max) => {
        expect(boundedDistance(q, name, max, false)).toBe(Math.min(osa(q, name), max + 1));
      }),
      { numRuns: 2000 },
    );
  });

  it('in prefix mode equals the best distance to any prefix, capped at max + 1', () => {
    fc.assert(
      fc.property(word, word, fc.integer({ min: 0, max: 3 }), (q, name, max) => {
        let best = Infinity;
        for (let len = 0; len <= name.length; len++)
          best = Math.min(best, osa(q, name.slice(0, len)));
        expect(boundedDistance(q, name, max, true)).toBe(Math.min(best, max + 1));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('scanWithinTypos', () => {
  it('finds the same keys, with the same typos, as the full table for every key', () => {
    fc.assert(
      fc.property(
        fc.array(word, { maxLength: 60 }),
        word,
        fc.integer({ min: 0, max: 2 }),
        fc.boolean(),
        (words, q, max, prefix) => {
          const keys = [...words].sort();
          const found: [number, number][] = [];
          scanWithinTypos(q, new PackedStrings(keys), 0, keys.length, max, prefix, (i, typos) =>
            found.push([i, typos]),
          );
          const expected = keys
            .map((k, i): [number, number] => [i, prefix ? prefixOsa(q, k) : osa(q, k)])
            .filter(([, typos]) => typos <= max);
          expect(found).toEqual(expected);
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('allowedTypos', () => {
  it('allows none for short queries, one from 4 letters, two from 8', () => {
    expect(['abc', 'abcd', 'abcdefg', 'abcdefgh'].map(allowedTypos)).toEqual([0, 1, 1, 2]);
  });
});
