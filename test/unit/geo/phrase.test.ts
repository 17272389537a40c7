import { wordlist } from '@scure/bip39/wordlists/english.js';
import fc from 'fast-check';
import {
  cellToChildren,
  cellToLatLng,
  cellToParent,
  cellToVertex,
  getBaseCellNumber,
  getPentagons,
  getResolution,
  gridDisk,
  isValidCell,
  latLngToCell,
  originToDirectedEdges,
} from 'h3-js';
import {
  decodePhrase,
  encodePhrase,
  readsAsPhrase,
  latLonToPhrase,
  phraseToLatLon,
  scrambleIndex,
  unscrambleIndex,
} from '../../../services/geo/phrase';
import { thrownBy } from '../helpers';

const LAGOS = { lat: 6.5244, lon: 3.3792 };
const LAGOS_CELL = '89589c984c7ffff';
const LAGOS_PHRASE = 'state.evidence.odor';

const TWO_POW_33 = 2n ** 33n;
const CELL_COUNT = 122n * 7n ** 9n;

/** The phrase whose three words carry the 33-bit number `scrambled`, bypassing the codec. */
function phraseOfScrambled(scrambled: bigint): string {
  return [22n, 11n, 0n].map((shift) => wordlist[Number((scrambled >> shift) & 2047n)]).join('.');
}

/** The message of the RangeError that `fn` throws. */
function rangeErrorOf(fn: () => unknown): string {
  const err = thrownBy(fn);
  expect(err).toBeInstanceOf(RangeError);
  return (err as RangeError).message;
}

const latitude = fc.double({ min: -90, max: 90, noNaN: true });
const longitude = fc.double({ min: -180, max: 180, noNaN: true });
const wordIndex = fc.integer({ min: 0, max: 2047 });

describe('known vector', () => {
  // Pins the permutation and the word list: if this changes, every printed phrase breaks.
  it('names the Lagos cell state.evidence.odor', () => {
    expect(latLngToCell(LAGOS.lat, LAGOS.lon, 9)).toBe(LAGOS_CELL);
    expect(encodePhrase(LAGOS_CELL)).toBe(LAGOS_PHRASE);
    expect(latLonToPhrase(LAGOS.lat, LAGOS.lon)).toBe(LAGOS_PHRASE);
    expect(decodePhrase(LAGOS_PHRASE)).toBe(LAGOS_CELL);
  });
});

describe('round trip', () => {
  it('round-trips all 12 pentagons at resolution 9', () => {
    const pentagons = getPentagons(9);
    expect(pentagons).toHaveLength(12);
    for (const cell of pentagons) expect(decodePhrase(encodePhrase(cell))).toBe(cell);
  });

  it('round-trips the cells of 20,000 random points', () => {
    fc.assert(
      fc.property(latitude, longitude, (lat, lon) => {
        const cell = latLngToCell(lat, lon, 9);
        const phrase = encodePhrase(cell);
        expect(phrase).toMatch(/^[a-z]+\.[a-z]+\.[a-z]+$/);
        expect(latLonToPhrase(lat, lon)).toBe(phrase);
        expect(decodePhrase(phrase)).toBe(cell);
      }),
      { numRuns: 20_000 },
    );
  });

  it('decodes every word triple either to a cell that encodes back to it, or not at all', () => {
    let named = 0;
    let unnamed = 0;
    fc.assert(
      fc.property(wordIndex, wordIndex, wordIndex, (a, b, c) => {
        const phrase = `${wordlist[a]}.${wordlist[b]}.${wordlist[c]}`;
        let cell: string;
        try {
          cell = decodePhrase(phrase);
        } catch (err) {
          expect(err).toBeInstanceOf(RangeError);
          expect((err as RangeError).message).toMatch(/does not name a place/);
          unnamed += 1;
          return;
        }
        expect(isValidCell(cell)).toBe(true);
        expect(getResolution(cell)).toBe(9);
        expect(encodePhrase(cell)).toBe(phrase);
        named += 1;
      }),
      { numRuns: 20_000 },
    );
    // 122·7⁹ / 2³³ ≈ 57 % of triples name a cell; both outcomes must show up.
    expect(named).toBeGreaterThan(0);
    expect(unnamed).toBeGreaterThan(0);
  });

  it('reads any letter case and surrounding whitespace', () => {
    expect(decodePhrase('  State.EVIDENCE.odor\n')).toBe(LAGOS_CELL);
    expect(encodePhrase(LAGOS_CELL.toUpperCase())).toBe(LAGOS_PHRASE);
  });

  it('gives the cell centre for a phrase', () => {
    const [lat, lon] = cellToLatLng(LAGOS_CELL);
    expect(phraseToLatLon(LAGOS_PHRASE)).toEqual({ lat, lon });
    // A res-9 cell is about 350 m across.
    expect(Math.abs(lat - LAGOS.lat)).toBeLessThan(0.005);
    expect(Math.abs(lon - LAGOS.lon)).toBeLessThan(0.005);
  });
});

describe('the permutation', () => {
  it('is undone exactly by its inverse and stays within 33 bits', () => {
    const edges = [0n, 1n, CELL_COUNT - 1n, CELL_COUNT, TWO_POW_33 - 1n];
    for (const n of edges) expect(unscrambleIndex(scrambleIndex(n))).toBe(n);
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: TWO_POW_33 - 1n }), (n) => {
        const scrambled = scrambleIndex(n);
        expect(scrambled >= 0n && scrambled < TWO_POW_33).toBe(true);
        expect(unscrambleIndex(scrambled)).toBe(n);
        expect(scrambleIndex(unscrambleIndex(n))).toBe(n);
      }),
      { numRuns: 5_000 },
    );
  });

  it('gives neighbouring cells distinct, unrelated phrases', () => {
    const centres = fc.sample(fc.tuple(latitude, longitude), { numRuns: 300, seed: 9 });
    const cells = [
      LAGOS_CELL,
      ...getPentagons(9),
      ...centres.map(([a, b]) => latLngToCell(a, b, 9)),
    ];
    let pairs = 0;
    let sameFirstWord = 0;
    for (const cell of cells) {
      const disk = gridDisk(cell, 1);
      const phrases = disk.map(encodePhrase);
      expect(new Set(phrases).size).toBe(disk.length);
      const [first] = encodePhrase(cell).split('.');
      for (const phrase of phrases.slice(1)) {
        pairs += 1;
        if (phrase.split('.')[0] === first) sameFirstWord += 1;
      }
    }
    expect(pairs).toBeGreaterThan(1_500);
    // Unrelated words share the first one 1 time in 2048; allow a wide margin.
    expect(sameFirstWord / pairs).toBeLessThan(0.05);
  });
});

describe('decodePhrase rejects', () => {
  it.each(['state.evidence', 'state.evidence.odor.ship', 'state evidence odor', 'state..odor'])(
    '%p: not three words',
    (phrase) => {
      expect(rangeErrorOf(() => decodePhrase(phrase))).toMatch(
        /a phrase is three words separated by dots/,
      );
    },
  );

  it.each(['', '   ', '.', '..'])('%p: empty', (phrase) => {
    expect(rangeErrorOf(() => decodePhrase(phrase))).toMatch(/three words separated by dots/);
  });

  it('names the unknown word', () => {
    expect(rangeErrorOf(() => decodePhrase('state.xyz.odor'))).toBe("unknown word 'xyz'");
    expect(rangeErrorOf(() => decodePhrase('state.evidence.ODOUR'))).toBe("unknown word 'odour'");
  });

  it.each<unknown>([42, null, undefined, {}, ['state', 'evidence', 'odor'], 10n])(
    'non-string %p',
    (value) => {
      expect(rangeErrorOf(() => decodePhrase(value as string))).toBe('a phrase must be a string');
    },
  );

  it('a triple whose number is past the last cell', () => {
    const phrase = phraseOfScrambled(scrambleIndex(TWO_POW_33 - 1n));
    expect(readsAsPhrase(phrase)).toBe(true);
    expect(rangeErrorOf(() => decodePhrase(phrase))).toMatch(/this phrase does not name a place/);
    // The last number still names a cell: base cell 121, every digit 6.
    const last = decodePhrase(phraseOfScrambled(scrambleIndex(CELL_COUNT - 1n)));
    expect(last).toBe('89f3b6db6dbffff');
    expect(getBaseCellNumber(last)).toBe(121);
  });

  it('a triple for a digit pattern that pentagons skip', () => {
    // Pentagon base cells have no sub-cells whose first non-zero digit is 1.
    const baseCell = BigInt(getBaseCellNumber(getPentagons(9)[0]));
    const skipped = baseCell * 7n ** 9n + 7n ** 8n;
    const phrase = phraseOfScrambled(scrambleIndex(skipped));
    expect(rangeErrorOf(() => decodePhrase(phrase))).toMatch(/this phrase does not name a place/);
  });
});

describe('encodePhrase rejects', () => {
  const edge = originToDirectedEdges(LAGOS_CELL)[0];
  const vertex = cellToVertex(LAGOS_CELL, 0);

  it.each([
    ['resolution 8', cellToParent(LAGOS_CELL, 8)],
    ['resolution 10', cellToChildren(LAGOS_CELL, 10)[0]],
    ['resolution 0', cellToParent(LAGOS_CELL, 0)],
    ['a directed edge', edge],
    ['a vertex', vertex],
    ['an empty string', ''],
    ['a word', 'hello'],
    ['a bad hex digit', '89589c984c7fffg'],
    ['a cell with a space', ` ${LAGOS_CELL}`],
    ['a broken cell', '89589c984c70fff'],
  ])('%s', (_what, h3Index) => {
    expect(rangeErrorOf(() => encodePhrase(h3Index))).toMatch(/not a resolution-9 H3 cell/);
  });

  it.each<unknown>([42, null, undefined, {}])('non-string %p', (value) => {
    expect(rangeErrorOf(() => encodePhrase(value as string))).toMatch(/not a resolution-9 H3 cell/);
  });
});

describe('latLonToPhrase', () => {
  it.each([
    [91, 0, /latitude/],
    [-91, 0, /latitude/],
    [NaN, 0, /latitude/],
    [Infinity, 0, /latitude/],
    [0, 181, /longitude/],
    [0, -181, /longitude/],
    [0, NaN, /longitude/],
  ])('rejects lat %p, lon %p', (lat, lon, message) => {
    expect(rangeErrorOf(() => latLonToPhrase(lat, lon))).toMatch(message);
  });

  it('accepts the edges of the ranges', () => {
    for (const [lat, lon] of [
      [90, 180],
      [-90, -180],
    ]) {
      expect(decodePhrase(latLonToPhrase(lat, lon))).toBe(latLngToCell(lat, lon, 9));
    }
  });
});

describe('readsAsPhrase', () => {
  it.each([
    LAGOS_PHRASE,
    ' State.Evidence.Odor ',
    'abandon.abandon.zoo',
    // Written as one, listed words or not: refused as a phrase, never searched as a place.
    'orange.garden.sugr',
    'state.xyz.odor',
    'été.rivière.pierre',
  ])('takes %p', (text) => {
    expect(readsAsPhrase(text)).toBe(true);
  });

  it.each([
    '',
    'state.evidence',
    'state.evidence.odor.',
    'state..odor',
    'state evidence odor',
    'state.evidence odor.x',
    'flat.2.odor',
    '12 Marina Road, Lagos',
    'St. Louis, Missouri',
  ])('leaves %p to the geocoder', (text) => {
    expect(readsAsPhrase(text)).toBe(false);
  });
});
