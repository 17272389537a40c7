import { SNIFFABLE_TYPES } from '../../../libs/config';
import { LONGEST_NEW_FILE_KEY, newFileKey } from '../../../libs/contracts/file';
import {
  ALIASES,
  EXTENSIONS,
  SNIFF_LENGTH,
  extensionFor,
  sniff,
  type Sniffed,
} from '../../../services/file/sniff';

const bytes = (...parts: (number[] | string)[]) =>
  Buffer.concat(
    parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))),
  );

/** An ISO-BMFF `ftyp` box with a major brand and compatible brands, then padding. */
function ftyp(major: string, ...compatible: string[]): Buffer {
  const size = 16 + 4 * compatible.length;
  const box = Buffer.alloc(size);
  box.writeUInt32BE(size, 0);
  box.write('ftyp', 4, 'latin1');
  box.write(major, 8, 'latin1');
  compatible.forEach((brand, i) => box.write(brand, 16 + 4 * i, 'latin1'));
  return Buffer.concat([box, Buffer.alloc(32)]);
}

const SAMPLES: [string, Buffer, string, string][] = [
  ['JPEG (JFIF)', bytes([0xff, 0xd8, 0xff, 0xe0, 0, 0x10], 'JFIF'), 'image/jpeg', 'jpg'],
  ['JPEG (Exif)', bytes([0xff, 0xd8, 0xff, 0xe1], 'Exif'), 'image/jpeg', 'jpg'],
  [
    'PNG',
    bytes([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13], 'IHDR'),
    'image/png',
    'png',
  ],
  ['GIF87a', bytes('GIF87a', [1, 0, 1, 0]), 'image/gif', 'gif'],
  ['GIF89a', bytes('GIF89a', [1, 0, 1, 0]), 'image/gif', 'gif'],
  ['WebP (lossy)', bytes('RIFF', [0x24, 0, 0, 0], 'WEBPVP8 '), 'image/webp', 'webp'],
  ['WebP (lossless)', bytes('RIFF', [0x24, 0, 0, 0], 'WEBPVP8L'), 'image/webp', 'webp'],
  ['WebP (extended)', bytes('RIFF', [0x24, 0, 0, 0], 'WEBPVP8X'), 'image/webp', 'webp'],
  ['PDF', bytes('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n'), 'application/pdf', 'pdf'],
  ['AVIF', ftyp('avif', 'mif1', 'miaf'), 'image/avif', 'avif'],
  ['AVIF sequence', ftyp('avis', 'msf1'), 'image/avif', 'avif'],
  ['AVIF under a mif1 major brand', ftyp('mif1', 'avif'), 'image/avif', 'avif'],
  ['HEIC', ftyp('heic', 'mif1'), 'image/heic', 'heic'],
  ['HEIC (heix)', ftyp('heix', 'mif1'), 'image/heic', 'heic'],
  ['HEIF', ftyp('mif1', 'miaf'), 'image/heif', 'heif'],
];

describe('sniff', () => {
  it.each(SAMPLES)('recognises %s', (_name, head, mime, ext) => {
    expect(sniff(head)).toEqual({ mime, ext });
  });

  it.each<[string, Buffer]>([
    ['an empty file', Buffer.alloc(0)],
    ['HTML', bytes('<!DOCTYPE html><html><script>alert(1)</script>')],
    [
      'SVG (script-capable)',
      bytes('<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg">'),
    ],
    ['plain text', bytes('hello, world')],
    ['an ELF binary', bytes([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0])],
    ['a ZIP archive', bytes('PK', [3, 4, 20, 0])],
    ['a Windows executable', bytes('MZ', [0x90, 0])],
    ['a truncated PNG signature', bytes([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a])],
    ['two bytes of JPEG', bytes([0xff, 0xd8])],
    ['GIF with an unknown version', bytes('GIF90a')],
    ['RIFF that is not WebP (WAV)', bytes('RIFF', [0x24, 0, 0, 0], 'WAVEfmt ')],
    ['PDF not at offset 0', bytes(' %PDF-1.7')],
    ['an MP4 video', ftyp('isom', 'iso2', 'mp41')],
    [
      'an ftyp box with a bad size',
      Buffer.concat([bytes([0, 0, 0, 3], 'ftypavif'), Buffer.alloc(16)]),
    ],
  ])('refuses %s', (_name, head) => {
    expect(sniff(head)).toBeNull();
  });

  it('knows every type that FILE_ALLOWED_TYPES may name, and no other', () => {
    expect(Object.keys(EXTENSIONS).sort()).toEqual([...SNIFFABLE_TYPES].sort());
    const recognised = new Set(SAMPLES.map(([, , mime]) => mime));
    expect([...recognised].sort()).toEqual([...SNIFFABLE_TYPES].sort());
  });

  it('needs no more than SNIFF_LENGTH bytes', () => {
    for (const [, head, mime] of SAMPLES) {
      expect(sniff(head.subarray(0, SNIFF_LENGTH))?.mime).toBe(mime);
    }
  });

  it('ignores what follows the signature', () => {
    const png = SAMPLES[2][1];
    expect(sniff(Buffer.concat([png, bytes('<html>')]))?.mime).toBe('image/png');
  });
});

describe('extensionFor', () => {
  const jpeg: Sniffed = { mime: 'image/jpeg', ext: 'jpg' };
  const png: Sniffed = { mime: 'image/png', ext: 'png' };

  it.each<[string | undefined, Sniffed, string]>([
    ['photo.jpg', jpeg, 'jpg'],
    ['photo.JPEG', jpeg, 'jpeg'],
    ['scan.jfif', jpeg, 'jfif'],
    ['photo', jpeg, 'jpg'],
    [undefined, jpeg, 'jpg'],
    ['photo.png', jpeg, 'jpg'],
    ['page.html', png, 'png'],
    ['shell.php.png', png, 'png'],
    ['image.png.exe', png, 'png'],
    ['x.svg', png, 'png'],
    ['.png', png, 'png'],
    ['weird.pn g', png, 'png'],
    ['unicode.ｐｎｇ', png, 'png'],
  ])('%j holding %j is stored as .%s', (filename, sniffed, ext) => {
    expect(extensionFor(sniffed, filename)).toBe(ext);
  });

  it('gives keys no longer than the longest a hosted URL leaves room for', () => {
    const user = '0b6f1c1e-6a7e-4a63-9d6e-1c9f3a8d2b10';
    for (const ext of Object.values(ALIASES).flat()) {
      expect(newFileKey(user, ext).length).toBeLessThanOrEqual(LONGEST_NEW_FILE_KEY.length);
    }
    // Not longer than it need be either: a byte of CDN_BASE_URL is given up for each.
    const longest = Math.max(
      ...Object.values(ALIASES)
        .flat()
        .map((e) => e.length),
    );
    expect(newFileKey(user, 'x'.repeat(longest)).length).toBe(LONGEST_NEW_FILE_KEY.length);
  });
});
