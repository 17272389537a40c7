/** Letters that NFKD leaves whole: they carry no separable accent. */
const UNDECOMPOSED: Readonly<Record<string, string>> = {
  ß: 'ss',
  æ: 'ae',
  œ: 'oe',
  ø: 'o',
  đ: 'd',
  ð: 'd',
  þ: 'th',
  ł: 'l',
  ı: 'i',
  ħ: 'h',
};

const PLAIN = /^[A-Za-z]+(?: [A-Za-z]+)*$/;

/**
 * The form every place name and query is compared in, by every service: lower case, accents
 * stripped ("São Paulo" → "sao paulo"), apostrophes dropped ("Nuku'alofa" → "nukualofa"), any
 * other run of punctuation or spaces collapsed to one space ("Ado-Ekiti" → "ado ekiti").
 */
export function foldName(text: string): string {
  // Most names are plain ASCII words; skipping Unicode normalisation for them halves load time.
  if (PLAIN.test(text)) return text.toLowerCase();
  return text
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[ßæœøđðþłıħ]/g, (ch) => UNDECOMPOSED[ch] ?? ch)
    .replace(/['’‘`ʻʼ]/g, '')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

/** `text` as a literal inside a regular expression. */
export const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Code-unit order: the same on every machine, unlike localeCompare. */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Control characters other than tabs and line breaks, and lone surrogates (in unicode mode a
 * lone surrogate is its own code point, of category Cs): what is not plain text. JSON spells
 * each in six bytes (`\u001b`), and no reader sees what they were.
 */
export const UNSHOWN = /(?![\t\n\r])\p{Cc}|\p{Cs}/gu;

/** `UNSHOWN` and tabs and line breaks too: what a one-line name (a file's) loses. */
export const UNPRINTED = /\p{Cc}|\p{Cs}/gu;

/**
 * A C0 control as its picture (U+2400 block: ␀, ␛) and DEL as ␡, so that a binary or
 * ANSI-coloured answer still reads as what it was; C1 controls and lone surrogates as U+FFFD,
 * which is what a decoder writes for bytes it cannot read.
 */
function picture(ch: string): string {
  const code = ch.charCodeAt(0);
  if (code < 0x20) return String.fromCharCode(0x2400 + code);
  return code === 0x7f ? '\u2421' : '\ufffd';
}

/**
 * `text` with what `UNSHOWN` matches shown as `picture` does: how text kept before a rule made
 * it plain text is answered (three bytes a character in JSON, not six).
 */
export const readable = (text: string) => text.replace(UNSHOWN, picture);

/** What JSON escapes among the characters `UNSHOWN` leaves, each in two bytes. */
const ESCAPED_IN_TWO = new Set(['"', '\\', '\t', '\n', '\r']);

/** One code point's bytes in a JSON string, once `UNSHOWN` is gone: UTF-8's, or an escape's. */
function jsonBytes(ch: string): number {
  const code = ch.codePointAt(0) ?? 0;
  if (code < 0x80) return ESCAPED_IN_TWO.has(ch) ? 2 : 1;
  return code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
}

const ELLIPSIS = '…';

/**
 * Someone else's text as an answer may carry it: at most `maxBytes` once written as a JSON
 * string (UTF-8, its quotes aside), which is its size on NATS, cut between code points and
 * ended with `…` when cut, and unreadable characters shown as `picture` does. Its result passed
 * again comes back unchanged, so text kept by an older rule can be clipped when it is read.
 */
export function clipForJson(text: string, maxBytes: number): string {
  const shown = readable(text);
  if (Buffer.byteLength(JSON.stringify(shown)) - 2 <= maxBytes) return shown;
  const room = maxBytes - Buffer.byteLength(ELLIPSIS);
  let size = 0;
  let end = 0;
  for (const ch of shown) {
    size += jsonBytes(ch);
    if (size > room) break;
    end += ch.length;
  }
  return shown.slice(0, end) + ELLIPSIS;
}
