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
