import { wordlist } from '@scure/bip39/wordlists/english.js';
import { cellToLatLng, getResolution, isValidCell, latLngToCell } from 'h3-js';

/**
 * Three-word phrases for H3 resolution-9 cells (about 0.1 km², a building or a yard), so
 * a customer can read a place over the phone: `89589c984c7ffff` ⇄ `state.evidence.odor`.
 *
 * A res-9 cell is a base cell (0..121) and nine base-7 digits, so the cells fit in the
 * integers [0, 122·7⁹) ≈ 4.9e9 < 2³³, and three 11-bit words from the 2048-word BIP-39
 * list hold 33 bits. The cell number is scrambled by a fixed permutation of [0, 2³³)
 * before it is split into words, so that neighbouring cells, whose numbers differ only
 * in the last digits, get unrelated phrases and a misheard word does not land next door.
 */

export interface LatLon {
  lat: number;
  lon: number;
}

const WORD_BITS = 11n;
const WORD_MASK = (1n << WORD_BITS) - 1n;
const INDEX_BITS = 3n * WORD_BITS;
const INDEX_MASK = (1n << INDEX_BITS) - 1n;

const RESOLUTION = 9;
const DIGIT_COUNT = 15; // an H3 index always has 15 digit slots; res 9 uses the first 9
const CELLS_PER_BASE_CELL = 7n ** BigInt(RESOLUTION);
const CELL_COUNT = 122n * CELLS_PER_BASE_CELL;

// H3 index layout (64 bits, high to low): reserved 1, mode 4, reserved 3, resolution 4,
// base cell 7, then 15 digits of 3 bits; digits past the resolution are all 7.
const BASE_CELL_SHIFT = 45n;
const CELL_MODE = 1n;
const RES9_HEADER = (CELL_MODE << 59n) | (BigInt(RESOLUTION) << 52n);
const UNUSED_DIGITS = (1n << BigInt(3 * (DIGIT_COUNT - RESOLUTION))) - 1n;

/**
 * The permutation: xor with a fixed key (so that cell 0 is not the fixed point
 * `abandon.abandon.abandon`), then three rounds of "multiply by an odd constant mod 2³³,
 * then xor the number with itself shifted right". Each step is a bijection of [0, 2³³)
 * (an odd number is invertible mod a power of two; an xor-shift is undone by repeating
 * it), so the whole is one too. Multiplying carries low-bit differences up into the first
 * word, the shift brings high bits back down. The multipliers are the 64-bit golden-ratio
 * and splitmix64 constants cut to 33 bits (forced odd), the key is MurmurHash3's c1:
 * arbitrary, but known to mix well.
 *
 * These numbers ARE the naming of every place: changing any of them renames the world and
 * breaks every phrase already printed on a label. The Lagos vector in the tests pins them.
 */
const KEY = 0xcc9e2d51n;
const ROUNDS: readonly { multiplier: bigint; shift: bigint }[] = [
  { multiplier: (0x9e3779b97f4a7c15n & INDEX_MASK) | 1n, shift: 16n },
  { multiplier: (0xbf58476d1ce4e5b9n & INDEX_MASK) | 1n, shift: 17n },
  { multiplier: (0x94d049bb133111ebn & INDEX_MASK) | 1n, shift: 16n },
];

/** The inverse of an odd `a` mod 2³³, by Newton's iteration (each step doubles the correct bits). */
function inverseOf(a: bigint): bigint {
  let inverse = a; // a·a ≡ 1 mod 8 for every odd a: three correct bits to start
  for (let i = 0; i < 5; i += 1) inverse = (inverse * (2n - a * inverse)) & INDEX_MASK;
  return inverse;
}

const INVERSE_ROUNDS = ROUNDS.map((round) => ({
  ...round,
  inverse: inverseOf(round.multiplier),
})).reverse();

function undoXorShift(y: bigint, shift: bigint): bigint {
  let x = y;
  for (let known = shift; known < INDEX_BITS; known += shift) x = y ^ (x >> shift);
  return x;
}

/** The fixed permutation of [0, 2³³) applied between cell numbers and words. */
export function scrambleIndex(index: bigint): bigint {
  let x = index ^ KEY;
  for (const { multiplier, shift } of ROUNDS) {
    x = (x * multiplier) & INDEX_MASK;
    x ^= x >> shift;
  }
  return x;
}

/** Inverse of {@link scrambleIndex}. */
export function unscrambleIndex(scrambled: bigint): bigint {
  let x = scrambled;
  for (const { inverse, shift } of INVERSE_ROUNDS) {
    x = (undoXorShift(x, shift) * inverse) & INDEX_MASK;
  }
  return x ^ KEY;
}

// The codec's capacity depends on exactly 2048 distinct words; fail at load, not on a label.
if (wordlist.length !== 2048 || new Set(wordlist).size !== 2048) {
  throw new Error('the BIP-39 English word list must hold 2048 distinct words');
}
const WORD_INDEX: ReadonlyMap<string, number> = new Map(wordlist.map((word, i) => [word, i]));

function isRes9Cell(h3Index: string): boolean {
  return isValidCell(h3Index) && getResolution(h3Index) === RESOLUTION;
}

/** A res-9 cell → its number in [0, 122·7⁹): base cell, then the nine digits in base 7. */
function cellNumber(h3Index: string): bigint {
  const bits = BigInt(`0x${h3Index}`);
  let n = (bits >> BASE_CELL_SHIFT) & 0x7fn;
  for (let digit = 1; digit <= RESOLUTION; digit += 1) {
    n = n * 7n + ((bits >> BigInt(3 * (DIGIT_COUNT - digit))) & 7n);
  }
  return n;
}

/** Inverse of {@link cellNumber}; the result may be no cell (pentagons skip some digits). */
function cellOfNumber(n: bigint): string {
  let digits = 0n;
  let rest = n % CELLS_PER_BASE_CELL;
  for (let digit = RESOLUTION; digit >= 1; digit -= 1) {
    digits |= (rest % 7n) << BigInt(3 * (DIGIT_COUNT - digit));
    rest /= 7n;
  }
  const baseCell = n / CELLS_PER_BASE_CELL;
  return (RES9_HEADER | (baseCell << BASE_CELL_SHIFT) | digits | UNUSED_DIGITS).toString(16);
}

type WordsOrReason = { words: readonly number[] } | { reason: string };

/** The word indexes of a phrase, or why it is not one. Case and outer whitespace are ignored. */
function readWords(phrase: unknown): WordsOrReason {
  if (typeof phrase !== 'string') return { reason: 'a phrase must be a string' };
  const parts = phrase.trim().toLowerCase().split('.');
  if (parts.length !== 3 || parts.includes('')) {
    return { reason: 'a phrase is three words separated by dots, like "apple.river.stone"' };
  }
  const words: number[] = [];
  for (const part of parts) {
    const index = WORD_INDEX.get(part);
    if (index === undefined) return { reason: `unknown word '${part}'` };
    words.push(index);
  }
  return { words };
}

/**
 * Whether `text` is written as a phrase, listed words or not: three runs of letters joined by
 * dots and nothing else. A place name is never so written, and a mistyped phrase searched for
 * as one finds some town of a word of it ("orange.garden.sugr": Orange, France).
 */
export function readsAsPhrase(text: string): boolean {
  return /^\p{L}+\.\p{L}+\.\p{L}+$/u.test(text.trim());
}

/** A resolution-9 H3 cell → its phrase, lower case and dot-separated. */
export function encodePhrase(h3Index: string): string {
  if (typeof h3Index !== 'string' || !/^[0-9a-f]{15,16}$/i.test(h3Index) || !isRes9Cell(h3Index)) {
    throw new RangeError(`not a resolution-${RESOLUTION} H3 cell: ${JSON.stringify(h3Index)}`);
  }
  const scrambled = scrambleIndex(cellNumber(h3Index));
  return [2n, 1n, 0n]
    .map((i) => wordlist[Number((scrambled >> (i * WORD_BITS)) & WORD_MASK)])
    .join('.');
}

/** A phrase → its resolution-9 H3 cell. Accepts any letter case and surrounding whitespace. */
export function decodePhrase(phrase: string): string {
  const read = readWords(phrase);
  if ('reason' in read) throw new RangeError(read.reason);
  const scrambled = read.words.reduce((n, word) => (n << WORD_BITS) | BigInt(word), 0n);
  const n = unscrambleIndex(scrambled);
  const cell = n < CELL_COUNT ? cellOfNumber(n) : undefined;
  if (cell === undefined || !isRes9Cell(cell)) {
    throw new RangeError(`this phrase does not name a place: '${phrase.trim()}'`);
  }
  return cell;
}

/** The centre of the cell a phrase names. */
export function phraseToLatLon(phrase: string): LatLon {
  const [lat, lon] = cellToLatLng(decodePhrase(phrase));
  return { lat, lon };
}

/** The phrase of the resolution-9 cell that contains the point. */
export function latLonToPhrase(lat: number, lon: number): string {
  if (typeof lat !== 'number' || !(lat >= -90 && lat <= 90)) {
    throw new RangeError(`latitude must be a number from -90 to 90, got ${String(lat)}`);
  }
  if (typeof lon !== 'number' || !(lon >= -180 && lon <= 180)) {
    throw new RangeError(`longitude must be a number from -180 to 180, got ${String(lon)}`);
  }
  return encodePhrase(latLngToCell(lat, lon, RESOLUTION));
}
