import { clipForJson } from '../../../libs/text';

/** The bytes a string takes in a JSON answer, its quotes aside: what `clipForJson` bounds. */
const sent = (text: string) => Buffer.byteLength(JSON.stringify(text)) - 2;

/** Whether the text holds half of a surrogate pair (JSON would write it as `\udXXX`). */
const loneSurrogate = (text: string) => /\p{Cs}/u.test(text);

describe('clipForJson', () => {
  it('leaves text that fits as it is', () => {
    expect(clipForJson('', 512)).toBe('');
    expect(clipForJson('{"error":"try later"}', 512)).toBe('{"error":"try later"}');
    expect(clipForJson('x'.repeat(512), 512)).toBe('x'.repeat(512));
    expect(clipForJson('line 1\r\nline 2\tend', 512)).toBe('line 1\r\nline 2\tend');
  });

  it('cuts by the bytes sent, not by characters, and says so with …', () => {
    expect(clipForJson('x'.repeat(513), 512)).toBe(`${'x'.repeat(509)}…`);
    // Three bytes each in UTF-8: 169 of them and the ellipsis, where 512 characters were 1.5 KB.
    expect(clipForJson('漢'.repeat(512), 512)).toBe(`${'漢'.repeat(169)}…`);
    expect(clipForJson('ж'.repeat(512), 512)).toBe(`${'ж'.repeat(254)}…`);
    // JSON writes a quote or a backslash in two bytes.
    expect(clipForJson('"'.repeat(300), 512)).toBe(`${'"'.repeat(254)}…`);
  });

  it('cuts before an emoji that would cross the limit, never inside it', () => {
    const crossing = clipForJson(`${'x'.repeat(507)}😀tail`, 512);
    expect(crossing).toBe(`${'x'.repeat(507)}…`);
    expect(loneSurrogate(crossing)).toBe(false);
    expect(clipForJson(`${'x'.repeat(505)}😀😀`, 512)).toBe(`${'x'.repeat(505)}😀…`);
    const emoji = clipForJson('😀'.repeat(200), 512);
    expect(emoji).toBe(`${'😀'.repeat(127)}…`);
  });

  it('shows control characters as their pictures rather than six bytes of escape each', () => {
    expect(clipForJson('\u0000\u001b[31mfailed\u001b[0m\u007f\u0085', 512)).toBe(
      '␀␛[31mfailed␛[0m␡\ufffd',
    );
    const binary = clipForJson('\u0001'.repeat(512), 512);
    expect(binary).toBe(`${'␁'.repeat(169)}…`);
    expect(JSON.stringify(binary)).not.toContain('\\u');
  });

  it('shows undecodable bytes and lone surrogates as U+FFFD', () => {
    const undecodable = Buffer.from([0x41, 0xff, 0xfe, 0xe6, 0xbc, 0x42]).toString('utf8');
    expect(clipForJson(undecodable, 512)).toBe('A\ufffd\ufffd\ufffdB');
    expect(clipForJson('\ufffd'.repeat(512), 512)).toBe(`${'\ufffd'.repeat(169)}…`);
    // What an older version kept when its cut fell inside a pair.
    expect(clipForJson(`ok ${'😀'.slice(0, 1)}`, 512)).toBe('ok \ufffd');
    expect(clipForJson(`${'😀'.slice(1)}ok`, 512)).toBe('\ufffdok');
  });

  it('keeps every text within the limit, cut by at most one character, and is stable', () => {
    const pieces = ['a', '"', '\\', '\n', '\u0007', '\u0085', 'é', '漢', '😀', '😀'.slice(0, 1)];
    let seed = 7;
    const next = () => (seed = (seed * 48271) % 2147483647);
    for (let round = 0; round < 300; round++) {
      const length = next() % 700;
      const text = Array.from({ length }, () => pieces[next() % pieces.length]).join('');
      for (const max of [16, 256, 512]) {
        const clipped = clipForJson(text, max);
        expect(sent(clipped)).toBeLessThanOrEqual(max);
        expect(loneSurrogate(clipped)).toBe(false);
        expect(clipForJson(clipped, max)).toBe(clipped);
        // A cut falls as late as the limit allows: one more character would not fit.
        if (clipped.endsWith('…')) expect(sent(clipped)).toBeGreaterThan(max - 4);
      }
    }
  });
});
