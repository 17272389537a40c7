import fc from 'fast-check';
import {
  KEY_PREFIX,
  MAX_URL_LENGTH,
  NEW_FILE_EXTENSION_MAX,
  fileNameOf,
  hostedUrl,
  hostedUrlPattern,
  isFileKey,
  newFileKey,
  parseHostedUrl,
} from '../../../libs/contracts/file';

const CDN = 'https://cdn.waybill.test';
const USER = '0b6f1c1e-6a7e-4a63-9d6e-1c9f3a8d2b10';
const FILE = '5d8c2a3e-3f1b-4c47-8d7e-0a1b2c3d4e5f';
const KEY = `${KEY_PREFIX}/${USER}/${FILE}.png`;
const GOOD = `${CDN}/${KEY}`;

const keyOf = (url: unknown, base = CDN) => {
  const parsed = parseHostedUrl(url, base);
  return parsed.ok ? parsed.key : undefined;
};

describe('newFileKey', () => {
  it('groups by user and names the file by a fresh UUID with the extension', () => {
    const key = newFileKey(USER, 'png');
    expect(key).toMatch(new RegExp(`^uploads/${USER}/[0-9a-f-]{36}\\.png$`));
    expect(isFileKey(key)).toBe(true);
    expect(newFileKey(USER, 'png')).not.toBe(key);
  });

  it('uses the given id', () => {
    expect(newFileKey(USER, 'pdf', FILE)).toBe(`uploads/${USER}/${FILE}.pdf`);
  });

  it.each([
    ['a user id that is not a UUID', '../etc', 'png'],
    ['an upper-case user id', USER.toUpperCase(), 'png'],
    ['an extension with a dot', USER, 'png.html'],
    ['an extension with a slash', USER, 'x/y'],
    ['an empty extension', USER, ''],
    ['an upper-case extension', USER, 'PNG'],
    ['an extension longer than a hosted URL leaves room for', USER, 'jpeg2'],
  ])('refuses %s', (_name, user, ext) => {
    expect(() => newFileKey(user, ext)).toThrow();
  });
});

describe('hostedUrl', () => {
  it('is <CDN_BASE_URL>/<key>', () => {
    expect(hostedUrl(KEY, CDN)).toBe(GOOD);
  });

  it('keeps a base path and drops trailing slashes and a default port', () => {
    expect(hostedUrl(KEY, 'https://cdn.example.com/files/')).toBe(
      `https://cdn.example.com/files/${KEY}`,
    );
    expect(hostedUrl(KEY, 'https://CDN.example.com:443')).toBe(`https://cdn.example.com/${KEY}`);
    expect(hostedUrl(KEY, 'http://127.0.0.1:7870/waybill')).toBe(
      `http://127.0.0.1:7870/waybill/${KEY}`,
    );
  });

  it('refuses a key that is not of our layout', () => {
    expect(() => hostedUrl('../secret', CDN)).toThrow();
  });

  it('round-trips through parseHostedUrl for any key and base', () => {
    const hex = (n: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${n}}$`));
    const uuid = fc.tuple(hex(8), hex(4), hex(4), hex(4), hex(12)).map((parts) => parts.join('-'));
    const base = fc.constantFrom(
      'https://cdn.waybill.test',
      'https://cdn.example.com/files',
      'http://localhost:8080',
      'https://cdn.example.com/a/b/',
    );
    const ext = fc.stringMatching(new RegExp(`^[a-z0-9]{1,${NEW_FILE_EXTENSION_MAX}}$`));
    fc.assert(
      fc.property(uuid, uuid, ext, base, (user, id, e, b) => {
        const key = newFileKey(user, e, id);
        expect(parseHostedUrl(hostedUrl(key, b), b)).toEqual({ ok: true, key });
      }),
    );
  });
});

describe('parseHostedUrl', () => {
  it('maps our URL to its key', () => {
    expect(parseHostedUrl(GOOD, CDN)).toEqual({ ok: true, key: KEY });
  });

  it('accepts URLs under a base path', () => {
    const base = 'https://cdn.example.com/files';
    expect(keyOf(`${base}/${KEY}`, base)).toBe(KEY);
    expect(keyOf(`https://cdn.example.com/${KEY}`, base)).toBeUndefined();
    expect(keyOf(`https://cdn.example.com/filesx/${KEY}`, base)).toBeUndefined();
  });

  it('accepts a non-default port that CDN_BASE_URL names, and only it', () => {
    const base = 'http://127.0.0.1:7870';
    expect(keyOf(`${base}/${KEY}`, base)).toBe(KEY);
    expect(keyOf(`http://127.0.0.1:7871/${KEY}`, base)).toBeUndefined();
    expect(keyOf(`http://127.0.0.1/${KEY}`, base)).toBeUndefined();
  });

  const hostile: [string, unknown][] = [
    // not a string, or not a URL at all
    ['a number', 42],
    ['null', null],
    ['an object', { url: GOOD }],
    ['an empty string', ''],
    ['a bare key', KEY],
    ['a path', `/${KEY}`],
    ['too long', `${GOOD}${'a'.repeat(MAX_URL_LENGTH)}`],
    // other hosts
    ['another host', `https://evil.example/${KEY}`],
    ['a sub-domain of ours', `https://x.cdn.waybill.test/${KEY}`],
    ['our host as a sub-domain of theirs', `https://cdn.waybill.test.evil.example/${KEY}`],
    ['our host as a prefix', `https://cdn.waybill.testevil/${KEY}`],
    ['user info before our host', `https://evil@cdn.waybill.test/${KEY}`],
    ['our host as user info', `https://cdn.waybill.test@evil.example/${KEY}`],
    ['our host as user info with a password', `https://cdn.waybill.test:x@evil.example/${KEY}`],
    ['an empty user info', `https://@cdn.waybill.test/${KEY}`],
    ['a trailing dot in the host', `https://cdn.waybill.test./${KEY}`],
    ['an upper-case host', `https://CDN.waybill.test/${KEY}`],
    ['a mixed-case host', `https://cdn.Waybill.test/${KEY}`],
    ['a percent-encoded host', `https://cdn%2ewaybill.test/${KEY}`],
    ['an IDN look-alike host (Cyrillic с)', `https://\u0441dn.waybill.test/${KEY}`],
    ['a punycode host', `https://xn--dn-tlc.waybill.test/${KEY}`],
    ['a full-width dot in the host', `https://cdn\uff0ewaybill.test/${KEY}`],
    // ports and schemes
    ['the default port spelt out', `https://cdn.waybill.test:443/${KEY}`],
    ['another port', `https://cdn.waybill.test:8443/${KEY}`],
    ['an empty port', `https://cdn.waybill.test:/${KEY}`],
    ['http instead of https', `http://cdn.waybill.test/${KEY}`],
    ['an upper-case scheme', `HTTPS://cdn.waybill.test/${KEY}`],
    ['file://', `file:///${KEY}`],
    ['file:// with our host', `file://cdn.waybill.test/${KEY}`],
    ['ftp://', `ftp://cdn.waybill.test/${KEY}`],
    ['gopher://', `gopher://cdn.waybill.test/${KEY}`],
    ['data:', `data:image/png;base64,iVBORw0KGgo=`],
    ['javascript:', 'javascript:alert(1)'],
    ['a protocol-relative URL', `//cdn.waybill.test/${KEY}`],
    ['a protocol-relative foreign URL', `//evil.example/${KEY}`],
    ['a missing slash after the scheme', `https:/cdn.waybill.test/${KEY}`],
    ['a third slash after the scheme', `https:///cdn.waybill.test/${KEY}`],
    ['backslashes after the scheme', `https:\\\\cdn.waybill.test\\${KEY}`],
    // IP literals and local addresses
    ['an IPv4 literal', `http://127.0.0.1/${KEY}`],
    ['an IPv4 literal with our port', `http://127.0.0.1:7870/waybill/${KEY}`],
    ['a decimal IPv4', `http://2130706433/${KEY}`],
    ['a hex IPv4', `http://0x7f000001/${KEY}`],
    ['an IPv6 literal', `http://[::1]/${KEY}`],
    ['a mapped IPv6 literal', `http://[::ffff:127.0.0.1]/${KEY}`],
    ['the metadata service', 'http://169.254.169.254/latest/meta-data/'],
    ['localhost', `http://localhost/${KEY}`],
    // paths: traversal and encodings
    ['a dot-dot segment', `${CDN}/uploads/${USER}/../${USER}/${FILE}.png`],
    ['a leading dot-dot segment', `${CDN}/../${KEY}`],
    ['a dot segment', `${CDN}/uploads/./${USER}/${FILE}.png`],
    ['%2e%2e', `${CDN}/uploads/${USER}/%2e%2e/${USER}/${FILE}.png`],
    ['%2E%2E', `${CDN}/uploads/%2E%2E/uploads/${USER}/${FILE}.png`],
    ['.%2e', `${CDN}/uploads/.%2e/${KEY}`],
    ['a double-encoded dot-dot', `${CDN}/uploads/%252e%252e/${KEY}`],
    ['an encoded slash', `${CDN}/uploads%2f${USER}%2f${FILE}.png`],
    ['an encoded backslash', `${CDN}/uploads%5c${USER}/${FILE}.png`],
    ['an encoded key character', `${CDN}/uploads/${USER}/${FILE}%2epng`],
    ['an encoded NUL', `${CDN}/${KEY}%00.png`],
    ['an overlong UTF-8 dot', `${CDN}/uploads/%c0%ae%c0%ae/${KEY}`],
    ['a backslash in the path', `${CDN}/uploads\\${USER}\\${FILE}.png`],
    ['a backslash dot-dot', `${CDN}/uploads/${USER}/..\\${FILE}.png`],
    ['a double slash', `${CDN}//${KEY}`],
    ['a double slash inside', `${CDN}/uploads//${USER}/${FILE}.png`],
    ['a trailing slash', `${GOOD}/`],
    ['no path', CDN],
    ['only a slash', `${CDN}/`],
    ['a path outside uploads/', `${CDN}/private/${USER}/${FILE}.png`],
    ['a key without a user', `${CDN}/uploads/${FILE}.png`],
    ['a key with an extra segment', `${CDN}/uploads/${USER}/x/${FILE}.png`],
    ['a key without an extension', `${CDN}/uploads/${USER}/${FILE}`],
    ['a key with two extensions', `${CDN}/uploads/${USER}/${FILE}.png.html`],
    ['an upper-case key', `${CDN}/uploads/${USER.toUpperCase()}/${FILE}.png`],
    ['a fullwidth solidus', `${CDN}/uploads\uff0f${USER}/${FILE}.png`],
    ['a unicode dot-dot look-alike', `${CDN}/uploads/\u2025/${KEY}`],
    ['a one-dot leader', `${CDN}/uploads/\u2024\u2024/${KEY}`],
    // query strings, fragments and whitespace
    ['a query string', `${GOOD}?x=1`],
    ['an empty query string', `${GOOD}?`],
    ['a query string naming another URL', `${GOOD}?url=https://evil.example/`],
    ['a fragment', `${GOOD}#x`],
    ['a fragment hiding the real path', `${CDN}/#/${KEY}`],
    ['a query before the path', `${CDN}?/${KEY}`],
    ['a leading space', ` ${GOOD}`],
    ['a trailing space', `${GOOD} `],
    ['a tab inside', `https://cdn.waybill.\ttest/${KEY}`],
    ['a newline inside', `${CDN}/uploads/\n${USER}/${FILE}.png`],
    ['a CR LF (header injection)', `${GOOD}\r\nLocation: https://evil.example`],
    ['a NUL byte', `${GOOD}\u0000`],
    ['a zero-width space', `https://cdn.waybill.test\u200b/${KEY}`],
    ['a right-to-left override', `${CDN}/uploads/${USER}/\u202e${FILE}.png`],
  ];

  it.each(hostile)('refuses %s', (_name, url) => {
    const parsed = parseHostedUrl(url, CDN);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.reason).toEqual(expect.any(String));
  });

  it('gives a reason a client can act on', () => {
    expect(parseHostedUrl(`https://evil.example/${KEY}`, CDN)).toEqual({
      ok: false,
      reason: 'host must be exactly cdn.waybill.test',
    });
    expect(parseHostedUrl(`http://cdn.waybill.test/${KEY}`, CDN)).toEqual({
      ok: false,
      reason: 'only https://cdn.waybill.test/ URLs are hosted files',
    });
    expect(parseHostedUrl(`${CDN}/uploads/%2e%2e/${KEY}`, CDN)).toEqual({
      ok: false,
      reason: 'url must not contain percent-encoded characters',
    });
  });

  it('never returns a key outside our layout, whatever the input', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.webUrl({ withQueryParameters: true, withFragments: true }),
          fc.string().map((s) => `${CDN}/${s}`),
          fc.string().map((s) => `${CDN}/uploads/${USER}/${s}`),
        ),
        (url) => {
          const parsed = parseHostedUrl(url, CDN);
          if (parsed.ok) {
            expect(isFileKey(parsed.key)).toBe(true);
            expect(url).toBe(`${CDN}/${parsed.key}`);
          }
        },
      ),
    );
  });
});

describe('fileNameOf', () => {
  it('is the last segment of the key', () => {
    expect(fileNameOf(KEY)).toBe(`${FILE}.png`);
  });
});

describe('hostedUrlPattern', () => {
  it.each([[CDN], ['https://cdn.example.com/files/'], ['http://127.0.0.1:7870/waybill']])(
    'matches exactly the URLs parseHostedUrl accepts, for %s (property)',
    (base) => {
      const pattern = new RegExp(hostedUrlPattern(base));
      const good = hostedUrl(KEY, base);
      const mutated = fc
        .tuple(fc.nat(good.length), fc.string({ maxLength: 3 }), fc.nat(3))
        .map(([at, insert, drop]) => good.slice(0, at) + insert + good.slice(at + drop));
      const candidates = fc.oneof(
        mutated,
        fc.stringMatching(pattern),
        fc.uuid().map((id) => `${good.slice(0, -40)}${id}.jpg`),
      );
      fc.assert(
        fc.property(candidates, (url) => {
          expect(pattern.test(url)).toBe(parseHostedUrl(url, base).ok);
        }),
        { numRuns: 3000 },
      );
    },
  );
});
