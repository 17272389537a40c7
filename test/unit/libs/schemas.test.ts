import fc from 'fast-check';
import Joi from '../../../libs/joi';
import joiToJson from 'joi-to-json';
import { getCountries, getExampleNumber } from 'libphonenumber-js/max';
import examples from 'libphonenumber-js/mobile/examples';
import { ComponentSchemas } from '../../../services/gateway/json-schema';
import {
  HTTPS_URL_PATTERN,
  countryCode,
  e164Phone,
  email,
  httpsUrl,
  isHttpsUrl,
  kilograms,
  naira,
  linkedPage,
  plainText,
  uuid,
} from '../../../libs/schemas';
import { validate, VALIDATION_OPTIONS } from '../../../libs/validation';
import { textsAboutMatching } from '../helpers';

/** The `pattern` the OpenAPI document states for a joi schema. */
const documentedPattern = (schema: Joi.Schema) =>
  new RegExp((joiToJson(schema, 'open-api-3.1') as { pattern: string }).pattern);

describe('uuid', () => {
  it.each([
    ['a v1', 'e3e70682-c209-1cac-a29f-6fbed82c07cd'],
    ['a v4', '3f1c2a8e-9b7d-4c6e-8f0a-1b2c3d4e5f60'],
    ['a v5', '6f1d7c2a-8b3e-5f5a-9c0d-1e2f3a4b5c6d'],
    ['a v7', '01890a5d-ac96-774b-bcce-b302099a8057'],
    ['the nil UUID', '00000000-0000-0000-0000-000000000000'],
  ])('accepts %s, as the document says (format: uuid)', (_name, id) => {
    expect(uuid().validate(id)).toEqual({ value: id });
  });

  it('answers upper-case ids in lower case', () => {
    expect(uuid().validate('E3E70682-C209-1CAC-A29F-6FBED82C07CD').value).toBe(
      'e3e70682-c209-1cac-a29f-6fbed82c07cd',
    );
  });

  it.each([
    ['{e3e70682-c209-1cac-a29f-6fbed82c07cd}'],
    ['e3e70682c2091caca29f6fbed82c07cd'],
    [' e3e70682-c209-1cac-a29f-6fbed82c07cd'],
    ['e3e70682-c209-1cac-a29f-6fbed82c07cg'],
  ])('refuses %j with the message it always had', (id) => {
    expect(uuid().label('keyId').validate(id).error?.message).toBe('"keyId" must be a valid GUID');
  });

  it('accepts exactly what the documented pattern matches (property)', () => {
    const pattern = documentedPattern(uuid());
    const hex = fc.constantFrom(...'0123456789abcdefABCDEFg-'.split(''));
    const candidates = fc.oneof(
      fc.uuid({ version: [1, 2, 3, 4, 5, 6, 7, 8] }),
      fc.string({ unit: hex, minLength: 30, maxLength: 40 }),
      fc.string(),
    );
    fc.assert(
      fc.property(candidates, (text) => {
        expect(uuid().validate(text).error === undefined).toBe(pattern.test(text));
      }),
      { numRuns: 3000 },
    );
  });
});

describe('countryCode', () => {
  it('accepts two letters of either case and answers them upper-case', () => {
    expect(countryCode().validate('ng').value).toBe('NG');
  });

  it.each([[''], [' NG'], ['N1'], ['NGA']])('refuses %j', (code) => {
    expect(countryCode().validate(code).error).toBeDefined();
  });

  it('accepts exactly what the documented pattern matches (property)', () => {
    const pattern = documentedPattern(countryCode());
    const chars = fc.constantFrom(...'aZq1 -é\n'.split(''));
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: chars, maxLength: 3 }), fc.string()), (text) => {
        expect(countryCode().validate(text).error === undefined).toBe(pattern.test(text));
      }),
      { numRuns: 3000 },
    );
  });
});

describe('email', () => {
  const accepts = (text: string) => email().validate(text, VALIDATION_OPTIONS);

  it('takes an address as RFC 5321 writes most, stored lower-case', () => {
    expect(accepts('Ada.Obi+orders@Example.COM').value).toBe('ada.obi+orders@example.com');
    expect(accepts(`${'a'.repeat(64)}@${'b'.repeat(63)}.ng`).error).toBeUndefined();
    expect(accepts("o'neil_x-1@mail.shop-2.co").error).toBeUndefined();
  });

  it.each([
    // The document's pattern refuses them; joi's email() took them (trimmed, Unicode).
    [' ada@example.com'],
    ['ada@example.com\n'],
    ['adé@example.com'],
    ['ada@exämple.com'],
    ['a..b@example.com'],
    ['ada@example'],
    ['ada@example.1ng'],
    ['ada@-example.com'],
    ['"ada obi"@example.com'],
    ['ada@[192.0.2.1]'],
    [`${'a'.repeat(65)}@example.com`],
    [`ada@${'b'.repeat(64)}.com`],
  ])('refuses %j, as the document does', (text) => {
    expect(accepts(text).error?.message).toBe('value must be a valid email');
  });
});

describe('httpsUrl', () => {
  const accepts = (text: string) =>
    httpsUrl().validate(text, VALIDATION_OPTIONS).error === undefined;

  it.each([
    ['https://cdn.example.com/icons/bike.png'],
    ['https://cdn.example.com:8443/a/b%20c.png?v=2&size=64#top'],
    ["https://example.com/o'neil/(1)/*;x=y/@me/~a/..."],
    ['https://localhost/'],
  ])('takes %j, as a browser writes it', (url) => {
    expect(accepts(url)).toBe(true);
    expect(new URL(url).href).toBe(url);
  });

  it.each([
    // A browser would rewrite them: what was stored would not be what it opens.
    ['HTTPS://a.com/'],
    ['https://A.com/'],
    ['https://a.com'],
    ['https://a.com:443/'],
    ['https://a.com/./x'],
    ['https://a.com/%2e%2E/x'],
    ['https:x'],
    ['https:\\\\a.com/'],
    ['https://01.2.3.4/'],
    // Not URIs of RFC 3986 (the answer's format: uri), though a browser opens them.
    ['https://a.com/a b'],
    ['https://a.com/é'],
    ['https://a.com/%zz'],
    ['https://a.com/{x}'],
    ['https://a.com/a|b'],
    ['https://a.com/\tx'],
    ["https://a.com/?q='x'"],
    // Nothing to open, or more than a place.
    ['https://'],
    ['https://user:secret@a.com/'],
    ['http://a.com/'],
    // No IP address, private or not.
    ['https://10.0.0.1/'],
    ['https://192.168.1.1:8443/x'],
    ['https://[::1]/'],
    [`https://a.com/${'a'.repeat(2048 - 'https://a.com/'.length + 1)}`],
  ])('refuses %j, and so does isHttpsUrl', (url) => {
    expect(accepts(url)).toBe(false);
    expect(isHttpsUrl(url)).toBe(false);
  });

  it('is the rule isHttpsUrl applies outside joi, to the character (property)', () => {
    const urlish = fc.oneof(
      textsAboutMatching(HTTPS_URL_PATTERN.source),
      fc.string().map((tail) => `https://${tail}`),
      fc.webUrl({ withQueryParameters: true, withFragments: true }),
      fc.nat({ max: 40 }).map((n) => `https://a.com/${'a'.repeat(2048 - 14 - 20 + n)}`),
    );
    fc.assert(
      fc.property(urlish, (url) => {
        expect(isHttpsUrl(url)).toBe(accepts(url));
      }),
      { numRuns: 5000 },
    );
  });

  it('describes only URLs that are their own href: stored as sent, opened as stored (property)', () => {
    const paths = fc
      .array(fc.constantFrom('a', '.', '..', '%2e', '%2E', '...', '.a', '', 'x%2e'), {
        maxLength: 4,
      })
      .map((segments) => `https://a.com/${segments.join('/')}`);
    fc.assert(
      fc.property(fc.oneof(textsAboutMatching(HTTPS_URL_PATTERN.source), paths), (url) => {
        fc.pre(HTTPS_URL_PATTERN.test(url));
        expect(new URL(url).href).toBe(url);
      }),
      { numRuns: 20000 },
    );
  });
});

describe('plainText', () => {
  const schema = plainText(20);

  it.each([
    ['Running shoes'],
    ['Две пары, размер 42'],
    ['👟 x2'],
    ['one\ntwo\tthree'],
    ['\u000btrimmed tab'],
  ])('accepts %j', (text) => {
    expect(schema.validate(text).error).toBeUndefined();
  });

  it.each([
    ['nul\u0000'],
    ['bell\u0007'],
    ['escape\u001b[31m'],
    ['lone \ud800'],
    ['\udc00 low'],
    ['vertical\u000btab'],
  ])('refuses %j with a message naming the field', (text) => {
    const { error } = schema.label('name').validate(text);
    expect(error?.message).toBe(
      '"name" must be plain text: no control characters other than tabs and line breaks',
    );
  });

  it('trims and bounds the length', () => {
    expect(schema.validate('  shoes  ').value).toBe('shoes');
    expect(schema.validate('x'.repeat(21)).error).toBeDefined();
  });

  it('accepts exactly what the document’s pattern does, blanks around it included (property)', () => {
    const pattern = new RegExp(
      (schema.describe() as { metas?: Record<string, { pattern?: string }>[] }).metas
        ?.map((m) => Object.values(m)[0]?.pattern)
        .find((p) => p !== undefined) ?? 'no pattern',
    );
    fc.assert(
      fc.property(
        fc.string({
          unit: fc.constantFrom(
            'a',
            ' ',
            '\t',
            '\n',
            '\u000b',
            '\u000c',
            '\u0001',
            '\u0085',
            '\u00a0',
          ),
          maxLength: 20,
        }),
        (text) => {
          // The pattern is the rule on control characters; emptiness is joi's own (`allow('')`).
          expect(plainText(20).allow('').validate(text).error === undefined).toBe(
            pattern.test(text),
          );
          if (text.trim() !== '') {
            expect(schema.validate(text).error === undefined).toBe(pattern.test(text));
          }
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('never takes more than 3 bytes of JSON per character it accepts (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 20 }), (text) => {
        const { value, error } = plainText(20).validate(text);
        if (error) return;
        const bytes = Buffer.byteLength(JSON.stringify(value)) - 2;
        expect(bytes).toBeLessThanOrEqual(3 * value.length);
      }),
      { numRuns: 5000 },
    );
  });
});

describe('naira and kilograms', () => {
  const accepts = (schema: Joi.Schema, value: unknown) =>
    schema.validate(value, VALIDATION_OPTIONS).error === undefined;

  it('take any amount to the kobo and any weight to the gram, as JSON spells them', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1e13 }), (units) => {
        expect(accepts(naira(), units / 100)).toBe(true);
        expect(accepts(kilograms(), units / 1000)).toBe(true);
      }),
    );
  });

  it('refuse a fraction of a kobo or of a gram instead of rounding it', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1e12 }),
        fc.integer({ min: 1, max: 9 }),
        (units, tenth) => {
          expect(accepts(naira(), (units * 10 + tenth) / 1000)).toBe(false);
          expect(accepts(kilograms(), (units * 10 + tenth) / 10_000)).toBe(false);
        },
      ),
    );
    const { error } = naira().validate(1.005, VALIDATION_OPTIONS);
    expect(error?.message).toBe('value is NGN to the kobo: at most 2 decimal places');
  });

  it('say so in the document, as multipleOf', () => {
    const components = new ComponentSchemas();
    expect(components.convert(naira().min(0))).toMatchObject({ type: 'number', multipleOf: 0.01 });
    expect(components.convert(kilograms())).toMatchObject({ type: 'number', multipleOf: 0.001 });
  });
});

describe('e164Phone', () => {
  const schema = e164Phone().label('phone');
  const MESSAGE = 'phone must be a valid phone number in E.164 form, like +2348012345678';

  it.each([
    ['a Nigerian mobile', '+2348012345678'],
    ['a Nigerian mobile of another network', '+2349031234567'],
    ['a London line', '+442071838750'],
    ['a British mobile', '+447911123456'],
    ['a US number', '+12015550123'],
  ])('accepts %s as sent', (_name, phone) => {
    expect(schema.validate(phone, VALIDATION_OPTIONS)).toEqual({ value: phone });
  });

  it.each([
    ['too short for its country', '+2341234'],
    ['of a country code no country has', '+99912345678'],
    ['of the right length in a range Nigeria does not use', '+2342000000000'],
    ['with the national trunk prefix kept', '+23408012345678'],
    ['spaced', '+234 801 234 5678'],
    ['with spaces around', ' +2348012345678 '],
    ['national', '08012345678'],
    ['without its +', '2348012345678'],
  ])('refuses a number %s, saying what to send', (_name, phone) => {
    expect(schema.validate(phone, VALIDATION_OPTIONS).error?.message).toBe(MESSAGE);
  });

  it("accepts every country's example mobile number", () => {
    const refused = getCountries()
      .map((country) => getExampleNumber(country, examples)?.number)
      .filter((phone): phone is NonNullable<typeof phone> => phone !== undefined)
      .filter((phone) => schema.validate(phone, VALIDATION_OPTIONS).error !== undefined);
    expect(refused).toEqual([]);
  });

  it('accepts nothing the documented pattern refuses (property)', () => {
    const document = new ComponentSchemas().convert(e164Phone());
    expect(document.description).toMatch(/numbering plan/);
    const pattern = new RegExp(document.pattern as string);
    const digits = fc.string({
      unit: fc.constantFrom(...'0123456789'),
      minLength: 5,
      maxLength: 16,
    });
    const candidates = fc.oneof(
      fc.constantFrom(...getCountries()).map((c) => getExampleNumber(c, examples)?.number ?? ''),
      digits.map((d) => `+${d}`),
      digits.map((d) => ` +${d}`),
      fc.string(),
    );
    let accepted = 0;
    fc.assert(
      fc.property(candidates, (text) => {
        if (schema.validate(text, VALIDATION_OPTIONS).error) return;
        accepted++;
        expect(pattern.test(text)).toBe(true);
      }),
      { numRuns: 3000 },
    );
    expect(accepted).toBeGreaterThan(100);
  });
});

describe('linkedPage', () => {
  it('ignores what else a link carries in its query, and keeps the page’s own params', () => {
    const params = linkedPage(Joi.object({ reference: Joi.string().required() }));
    const read = validate(params, {
      reference: 'ck-1',
      fbclid: 'IwAR0x',
      utm_source: 'sms',
      'a[b]': '1',
    });
    // Gone, not kept as undefined: a handler spreading its params passes nothing on.
    expect(Object.keys(read as object)).toEqual(['reference']);
    expect(() => validate(params, { fbclid: 'IwAR0x' })).toThrow(/reference/);
  });
});
