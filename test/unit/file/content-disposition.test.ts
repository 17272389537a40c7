import fc from 'fast-check';
import { contentDisposition } from '../../../services/file/content-disposition';

/** The filename a browser would take from the header: filename* when present. */
function decodedName(header: string): string {
  const star = /filename\*=UTF-8''([^;]+)/.exec(header);
  if (star) return decodeURIComponent(star[1]);
  return /filename="([^"]*)"/.exec(header)?.[1] ?? '';
}

describe('contentDisposition', () => {
  it('quotes a plain ASCII name, without filename*', () => {
    expect(contentDisposition('5d8c2a3e-3f1b-4c47-8d7e-0a1b2c3d4e5f.png')).toBe(
      'attachment; filename="5d8c2a3e-3f1b-4c47-8d7e-0a1b2c3d4e5f.png"',
    );
    expect(contentDisposition('my photo (1).jpg')).toBe('attachment; filename="my photo (1).jpg"');
  });

  it.each<[string, string, string]>([
    ['résumé.pdf', 'r_sum_.pdf', 'r%C3%A9sum%C3%A9.pdf'],
    ['фото.png', '____.png', '%D1%84%D0%BE%D1%82%D0%BE.png'],
    ['图片.jpg', '__.jpg', '%E5%9B%BE%E7%89%87.jpg'],
    ['smile 😀.gif', 'smile __.gif', 'smile%20%F0%9F%98%80.gif'],
  ])('adds filename* for non-ASCII %s', (name, fallback, encoded) => {
    expect(contentDisposition(name)).toBe(
      `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`,
    );
  });

  it.each<[string, string]>([
    ['a"b.png', 'a_b.png'],
    ['a\\b.png', 'b.png'],
    ['100%.png', '100_.png'],
    ['%2e%2e.png', '_2e_2e.png'],
  ])('never lets %j break the quoted fallback', (name, fallback) => {
    const header = contentDisposition(name);
    expect(header).toContain(`filename="${fallback}"`);
    expect(header.match(/"/g)).toHaveLength(2);
  });

  it('keeps only the last path segment', () => {
    expect(contentDisposition('../../etc/passwd')).toBe('attachment; filename="passwd"');
    expect(contentDisposition('C:\\Users\\x\\evil.png')).toBe('attachment; filename="evil.png"');
  });

  it('cannot inject header lines', () => {
    const header = contentDisposition('a.png\r\nSet-Cookie: x=1');
    expect(header).not.toMatch(/[\r\n]/);
  });

  it('encodes the RFC 8187 non-attr-chars of filename*', () => {
    expect(contentDisposition("é'()*.png")).toBe(
      `attachment; filename="_'()*.png"; filename*=UTF-8''%C3%A9%27%28%29%2A.png`,
    );
  });

  it('survives a lone surrogate', () => {
    expect(contentDisposition('a\ud800.png')).toContain("filename*=UTF-8''a%EF%BF%BD.png");
  });

  it('names an empty name "download"', () => {
    expect(contentDisposition('')).toBe('attachment; filename="download"');
    expect(contentDisposition('dir/')).toBe('attachment; filename="download"');
  });

  it('always yields one header line whose filename a browser decodes back', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', minLength: 1 }), (raw) => {
        // eslint-disable-next-line no-control-regex -- the names baseName would produce
        const name = raw.replace(/[/\\\x00-\x1f\x7f]/g, '').trim();
        fc.pre(name.length > 0);
        const header = contentDisposition(name);
        // eslint-disable-next-line no-control-regex -- checking that none are present
        expect(header).not.toMatch(/[\x00-\x1f\x7f]/);
        expect(header).toMatch(/^attachment; filename="[\x20-\x7e]*"(; filename\*=UTF-8''\S+)?$/);
        expect(decodedName(header)).toBe(name);
      }),
    );
  });
});
