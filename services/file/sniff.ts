import type { SniffableType } from '../../libs/config';

/** What a file is, judged from its first bytes. */
export interface Sniffed {
  mime: SniffableType;
  /** Canonical extension, without the dot. */
  ext: string;
}

/** Bytes needed to recognise every type below (an ISO-BMFF `ftyp` box with its brands). */
export const SNIFF_LENGTH = 64;

/** The extension stored with each type: keys carry it, never the client's own. */
export const EXTENSIONS: Record<SniffableType, string> = {
  'image/jpeg': 'jpg',
  'image/png': 'png',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'image/avif': 'avif',
  'image/heic': 'heic',
  'image/heif': 'heif',
  'application/pdf': 'pdf',
};

/** Extensions a client may use for each type; others give way to the canonical one. */
export const ALIASES: Record<SniffableType, string[]> = {
  'image/jpeg': ['jpg', 'jpeg', 'jpe', 'jfif'],
  'image/png': ['png'],
  'image/gif': ['gif'],
  'image/webp': ['webp'],
  'image/avif': ['avif'],
  'image/heic': ['heic'],
  'image/heif': ['heif'],
  'application/pdf': ['pdf'],
};

/**
 * The extension of a stored file: the client's own, lower-cased, when it names the sniffed
 * type (`photo.JPEG` stays `jpeg`), else the type's canonical one (`x.html` holding a PNG
 * becomes `png`). A key's extension therefore never contradicts its content.
 */
export function extensionFor(sniffed: Sniffed, filename: string | undefined): string {
  const match = /\.([A-Za-z0-9]{1,8})$/.exec(filename ?? '');
  const original = match?.[1].toLowerCase();
  return original && ALIASES[sniffed.mime].includes(original) ? original : sniffed.ext;
}

const startsWith = (head: Buffer, bytes: number[] | string, offset = 0) => {
  const expected = typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : Buffer.from(bytes);
  return (
    head.length >= offset + expected.length &&
    head.subarray(offset, offset + expected.length).equals(expected)
  );
};

const HEIC_BRANDS = new Set(['heic', 'heix', 'heim', 'heis', 'hevc', 'hevx']);
const AVIF_BRANDS = new Set(['avif', 'avis']);
const HEIF_BRANDS = new Set(['mif1', 'msf1']);

/** ISO-BMFF images (AVIF, HEIC, HEIF): an `ftyp` box first, named by its brands. */
function sniffFtyp(head: Buffer): SniffableType | null {
  if (head.length < 16 || !startsWith(head, 'ftyp', 4)) return null;
  const boxSize = head.readUInt32BE(0);
  if (boxSize < 16 || boxSize % 4 !== 0) return null;
  const major = head.toString('latin1', 8, 12);
  const end = Math.min(boxSize, head.length);
  const compatible: string[] = [];
  for (let at = 16; at + 4 <= end; at += 4) compatible.push(head.toString('latin1', at, at + 4));
  const brands = [major, ...compatible];
  if (brands.some((b) => AVIF_BRANDS.has(b))) return 'image/avif';
  if (brands.some((b) => HEIC_BRANDS.has(b))) return 'image/heic';
  if (brands.some((b) => HEIF_BRANDS.has(b))) return 'image/heif';
  return null;
}

function sniffMime(head: Buffer): SniffableType | null {
  if (startsWith(head, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (startsWith(head, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (startsWith(head, 'GIF87a') || startsWith(head, 'GIF89a')) return 'image/gif';
  if (startsWith(head, 'RIFF') && startsWith(head, 'WEBPVP8', 8)) return 'image/webp';
  if (startsWith(head, '%PDF-')) return 'application/pdf';
  return sniffFtyp(head);
}

/**
 * The type of a file from its magic numbers, or null when it is none of the types we
 * know. The client's declared type and file name are never consulted.
 */
export function sniff(head: Buffer): Sniffed | null {
  const mime = sniffMime(head);
  return mime ? { mime, ext: EXTENSIONS[mime] } : null;
}
